package runtime

import (
	"context"
	goruntime "runtime"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// oneSignal is a one-slot signal between a task and a goroutine, on
// Suspend and Waker alone: signal wakes the waiter, or is kept for the
// next wait.
type oneSignal struct {
	mu     sync.Mutex
	set    bool
	waiter Waker
	has    bool
}

func (s *oneSignal) signal() {
	s.mu.Lock()
	if s.has {
		w := s.waiter
		s.has = false
		s.mu.Unlock()
		w.Wake()
		return
	}
	s.set = true
	s.mu.Unlock()
}

func (s *oneSignal) wait(ctx context.Context) error {
	return Suspend(ctx, func(w Waker) bool {
		s.mu.Lock()
		defer s.mu.Unlock()
		if s.set {
			s.set = false
			return false
		}
		s.waiter, s.has = w, true
		return true
	})
}

// A plain goroutine woken by a task gets the P soon, although the worker
// has tasks to run all the time: the worker yields its P once the waking
// task switches back (see callerWorker). Before, the goroutine waited in
// the P's runnext until Go preempted the worker, 10-20 ms per wake-up: 50
// round trips between the goroutine and a task took over half a second at
// GOMAXPROCS 1; with the yield, well under a millisecond each.
func TestGoroutineWokenByABusyWorkerRunsSoon(t *testing.T) {
	for _, pinned := range []bool{false, true} {
		name := "unpinned"
		if pinned {
			name = "pinned"
		}
		t.Run(name, func(t *testing.T) {
			defer goruntime.GOMAXPROCS(goruntime.GOMAXPROCS(1))
			rt := newRuntime(t, Config{Workers: 1, PinnedWorkers: pinned})
			const trips = 50
			var toGoroutine, toTask oneSignal
			var stop atomic.Bool
			h := SpawnOn(rt, func(ctx context.Context) (int, error) {
				for range 4 {
					Spawn(ctx, func(ctx context.Context) (int, error) {
						for !stop.Load() {
							if err := Yield(ctx); err != nil {
								return 0, err
							}
						}
						return 0, nil
					})
				}
				defer stop.Store(true)
				for range trips {
					toGoroutine.signal()
					if err := toTask.wait(ctx); err != nil {
						return 0, err
					}
				}
				return 0, nil
			})
			// Judged on the median trip: waiting for preemption makes
			// every trip 10-20 ms, while a machine busy with other
			// work (CI runs packages side by side) stretches a few
			// trips only, by a time slice each; it failed a total
			// bound of 300 ms with 389 ms.
			var took [trips]time.Duration
			for i := range trips {
				start := time.Now()
				if err := toGoroutine.wait(context.Background()); err != nil {
					t.Fatal(err)
				}
				toTask.signal()
				took[i] = time.Since(start)
			}
			if _, err := h.Join(context.Background()); err != nil {
				t.Fatal(err)
			}
			slices.Sort(took[:])
			median := took[trips/2]
			t.Logf("%d round trips: median %v, longest %v", trips, median, took[trips-1])
			if median > 2*time.Millisecond {
				t.Errorf("the median of %d round trips took %v: the woken goroutine waited for preemption", trips, median)
			}
		})
	}
}
