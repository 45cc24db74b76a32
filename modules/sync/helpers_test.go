package sync

import (
	"context"
	goruntime "runtime"
	gosync "sync"
	"testing"

	"github.com/faio-go/faio/modules/runtime"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// newRuntime starts a runtime with the given number of workers, closed when
// the test ends.
func newRuntime(tb testing.TB, workers int) *runtime.Runtime {
	tb.Helper()
	rt, err := runtime.New(runtime.Config{Workers: workers})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(func() {
		if err := rt.Close(); err != nil {
			tb.Error(err)
		}
	})
	return rt
}

// run runs fn as a root task on rt and fails the test on error.
func run(tb testing.TB, rt *runtime.Runtime, fn func(ctx context.Context) error) {
	tb.Helper()
	_, err := runtime.BlockOn(rt, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, fn(ctx)
	})
	if err != nil {
		tb.Fatal(err)
	}
}

// spawnN runs fn(ctx, i) for i in [0, n) as tasks and returns the first
// error once all of them have finished.
func spawnN(ctx context.Context, n int, fn func(ctx context.Context, i int) error) error {
	hs := make([]*runtime.JoinHandle[struct{}], n)
	for i := range hs {
		hs[i] = runtime.Spawn(ctx, func(ctx context.Context) (struct{}, error) {
			return struct{}{}, fn(ctx, i)
		})
	}
	var first error
	for _, h := range hs {
		if _, err := h.Join(ctx); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// waitUntil polls cond until it holds, yielding in between; a condition
// that never comes true is left to the test binary's timeout, whose
// goroutine dump shows where things got stuck.
func waitUntil(ctx context.Context, cond func() bool) {
	for !cond() {
		if runtime.Current(ctx) != nil {
			_ = runtime.Yield(ctx)
		} else {
			goruntime.Gosched()
		}
	}
}

// queued returns how many live waiters are pushed on m. Meaningful only
// while no Unlock runs (fifo belongs to the holder).
func (m *Mutex) queued() int {
	n := 0
	for s := m.state.Load(); s != nil && s != &mutexLocked; s = s.next.Load() {
		if !s.dead.Load() {
			n++
		}
	}
	return n
}

func (s *Semaphore) queued() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.waiters.len
}

func (s *Semaphore) free() int64 { return s.state.Load() >> 1 }

func (rw *RWMutex) queued() (readers, writers int) {
	rw.mu.Lock()
	defer rw.mu.Unlock()
	return rw.readers.len, rw.writers.len
}

func (b *Barrier) queued() int {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.waiters.len
}

func (e *Event) queued() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.waiters.len
}

// goGroup runs plain goroutines that a task can wait for without blocking
// its worker (tests must never block a worker in plain Go code: a task
// woken into that worker's LIFO slot would wait with it). It collects the
// first error.
type goGroup struct {
	wg  WaitGroup
	mu  gosync.Mutex
	err error
}

func (g *goGroup) Go(f func() error) {
	g.wg.Add(1)
	go func() {
		defer g.wg.Done()
		if err := f(); err != nil {
			g.mu.Lock()
			if g.err == nil {
				g.err = err
			}
			g.mu.Unlock()
		}
	}()
}

// Wait waits for every goroutine started so far and returns the first
// error.
func (g *goGroup) Wait(ctx context.Context) error {
	if err := g.wg.Wait(ctx); err != nil {
		return err
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.err
}
