package sync

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/faio-go/faio/modules/runtime"
)

// catch calls f and turns a panic into an error, so that a crash of the
// code under test fails the test instead of ending the test binary.
func catch(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panicked: %v", r)
		}
	}()
	return f()
}

// nilContextCalls call every wait of the package with a nil context. Each
// returns the call's error, or an error saying what the call changed:
// nothing may be locked, taken or counted by a refused call.
func nilContextCalls() map[string]func() error {
	var nilCtx context.Context
	return map[string]func() error{
		"Mutex.Lock": func() error {
			var m Mutex
			err := m.Lock(nilCtx)
			if !m.TryLock() {
				return fmt.Errorf("Lock(nil) = %v and left the mutex locked", err)
			}
			return err
		},
		"RWMutex.RLock": func() error {
			var rw RWMutex
			err := rw.RLock(nilCtx)
			if !rw.TryLock() {
				return fmt.Errorf("RLock(nil) = %v and left a reader in", err)
			}
			return err
		},
		"RWMutex.Lock": func() error {
			var rw RWMutex
			err := rw.Lock(nilCtx)
			if !rw.TryLock() {
				return fmt.Errorf("Lock(nil) = %v and left the lock held", err)
			}
			return err
		},
		"Cond.Wait": func() error {
			var c Cond
			var mu Mutex
			_ = mu.TryLock()
			err := c.Wait(nilCtx, &mu, nil)
			if mu.TryLock() {
				return fmt.Errorf("Wait(nil) = %v and returned with mu unlocked", err)
			}
			return err
		},
		"Cond.Wait, pred true": func() error {
			var c Cond
			var mu Mutex
			_ = mu.TryLock()
			err := c.Wait(nilCtx, &mu, func() bool { return true })
			if mu.TryLock() {
				return fmt.Errorf("Wait(nil) = %v and returned with mu unlocked", err)
			}
			return err
		},
		"Event.Wait": func() error { var e Event; return e.Wait(nilCtx) },
		"Event.Wait, set": func() error {
			var e Event
			e.Set()
			return e.Wait(nilCtx)
		},
		"Promise.Wait": func() error { var p Promise[int]; _, err := p.Wait(nilCtx); return err },
		"Semaphore.Acquire": func() error {
			s := NewSemaphore(2)
			err := s.Acquire(nilCtx, 1)
			if !s.TryAcquire(2) {
				return fmt.Errorf("Acquire(nil) = %v and took permits", err)
			}
			return err
		},
		"WaitGroup.Wait": func() error {
			var wg WaitGroup
			wg.Add(1)
			return wg.Wait(nilCtx)
		},
		"Latch.Wait": func() error { return NewLatch(1).Wait(nilCtx) },
		"Barrier.Wait": func() error {
			b := NewBarrier(2)
			_, err := b.Wait(nilCtx)
			b.mu.Lock()
			arrived := b.arrived
			b.mu.Unlock()
			if arrived != 0 {
				return fmt.Errorf("Wait(nil) = %v and arrived", err)
			}
			return err
		},
	}
}

// Every wait refuses a nil context with runtime.ErrNilContext, from a
// plain goroutine and from a task, and changes nothing; it used to crash
// with a nil pointer dereference in the runtime.
func TestNilContextIsRefused(t *testing.T) {
	check := func(where string, errs map[string]error) {
		t.Helper()
		for name, err := range errs {
			if !errors.Is(err, runtime.ErrNilContext) {
				t.Errorf("%s: %s = %v, want runtime.ErrNilContext", where, name, err)
			}
		}
	}
	runAll := func() map[string]error {
		errs := make(map[string]error)
		for name, call := range nilContextCalls() {
			errs[name] = catch(call)
		}
		return errs
	}
	check("from a goroutine", runAll())
	rt := newRuntime(t, 1)
	var errs map[string]error
	run(t, rt, func(ctx context.Context) error {
		errs = runAll()
		return nil
	})
	check("from a task", errs)
}
