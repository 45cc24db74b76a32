package channel

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

// nilContextCalls call every operation that takes a context with a nil
// one. Each returns the call's error, or an error saying what the call
// lost: a refused Send sends nothing, a refused Recv takes nothing.
func nilContextCalls() map[string]func() error {
	var nilCtx context.Context
	return map[string]func() error{
		"Send": func() error {
			tx, rx := New[int](1)
			err := tx.Send(nilCtx, 1)
			if v, rerr := rx.TryRecv(); rerr == nil {
				return fmt.Errorf("Send(nil) = %v and sent %d", err, v)
			}
			return err
		},
		"Recv": func() error {
			tx, rx := New[int](1)
			_ = tx.TrySend(7)
			_, err := rx.Recv(nilCtx)
			if v, rerr := rx.TryRecv(); rerr != nil || v != 7 {
				return fmt.Errorf("Recv(nil) = %v and took the value (TryRecv after: %d, %v)", err, v, rerr)
			}
			return err
		},
		"Recv, empty": func() error {
			_, rx := New[int](0)
			_, err := rx.Recv(nilCtx)
			return err
		},
		"Select": func() error {
			tx, rx := New[int](1)
			_ = tx.TrySend(7)
			var got int
			i, err := Select(nilCtx, rx.RecvCase(&got))
			if v, rerr := rx.TryRecv(); i >= 0 || rerr != nil || v != 7 {
				return fmt.Errorf("Select(nil) = %d, %v and took the value (TryRecv after: %d, %v)", i, err, v, rerr)
			}
			return err
		},
		"AllErr": func() error {
			tx, rx := New[int](1)
			_ = tx.TrySend(7)
			var last error
			for v, err := range rx.AllErr(nilCtx) {
				if err == nil {
					return fmt.Errorf("AllErr(nil) yielded %d", v)
				}
				last = err
			}
			return last
		},
	}
}

// Every operation refuses a nil context with runtime.ErrNilContext, from a
// plain goroutine and from a task, and loses nothing; Send and Recv used
// to crash with a nil pointer dereference in the runtime.
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
	errs, err := runtime.BlockOn(rt, func(ctx context.Context) (map[string]error, error) {
		return runAll(), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	check("from a task", errs)
}
