package runtime

import (
	"context"
	"errors"
	"fmt"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// On pinned workers a task, once started, runs on one worker and one OS
// thread until it ends, however it is woken: by itself (Yield), by its
// worker's timers, by a task on another worker, or by a plain goroutine.
// Every task checks its worker and thread after each of 200 resumptions;
// at the end every worker's count of live tasks is back to zero. The 64
// tasks wait for a start signal once placed, so their placement is that of
// a spawner on a quiet runtime (a server's accept loop): half on each
// worker.
func TestPinnedTasksStayOnTheirWorkerAndThread(t *testing.T) {
	rt := newRuntime(t, Config{Workers: 2, PinnedWorkers: true})
	const tasks, steps = 64, 200
	var placed [2]atomic.Int64
	_, err := BlockOn(rt, func(ctx context.Context) (struct{}, error) {
		hs := make([]*JoinHandle[struct{}], tasks)
		starts := make([]baton, tasks)
		for i := range hs {
			hs[i] = Spawn(ctx, func(ctx context.Context) (struct{}, error) {
				home, tid := taskFor(ctx).worker, syscall.Gettid()
				placed[home.id].Add(1)
				if err := starts[i].wait(ctx); err != nil {
					return struct{}{}, err
				}
				check := func(step int, what string) error {
					if w := taskFor(ctx).worker; w != home {
						return fmt.Errorf("task %d, step %d (%s): resumed on worker %d, started on %d", i, step, what, w.id, home.id)
					}
					if got := syscall.Gettid(); got != tid {
						return fmt.Errorf("task %d, step %d (%s): resumed on thread %d, started on %d", i, step, what, got, tid)
					}
					return nil
				}
				for s := range steps {
					var what string
					var err error
					switch (i + s) % 4 {
					case 0:
						what, err = "yield", Yield(ctx)
					case 1:
						what, err = "sleep", Sleep(ctx, 50*time.Microsecond)
					case 2:
						// Woken by a task that may run on the
						// other worker.
						what = "woken by a task"
						var b baton
						h := Spawn(ctx, func(ctx context.Context) (struct{}, error) {
							if err := Yield(ctx); err != nil {
								return struct{}{}, err
							}
							b.signal()
							return struct{}{}, nil
						})
						if err = b.wait(ctx); err == nil {
							_, err = h.Join(ctx)
						}
					case 3:
						what = "woken by a goroutine"
						var b baton
						go b.signal()
						err = b.wait(ctx)
					}
					if err != nil {
						return struct{}{}, fmt.Errorf("task %d, step %d (%s): %w", i, s, what, err)
					}
					if err := check(s, what); err != nil {
						return struct{}{}, err
					}
				}
				return struct{}{}, nil
			})
		}
		for placed[0].Load()+placed[1].Load() < tasks {
			if err := Sleep(ctx, time.Millisecond); err != nil {
				return struct{}{}, err
			}
		}
		for i := range starts {
			starts[i].signal()
		}
		var errs []error
		for _, h := range hs {
			_, err := h.Join(ctx)
			errs = append(errs, err)
		}
		return struct{}{}, errors.Join(errs...)
	})
	if err != nil {
		t.Fatal(err)
	}
	a, b := placed[0].Load(), placed[1].Load()
	t.Logf("tasks started per worker: [%d %d]", a, b)
	if a+b != tasks || max(a, b)-min(a, b) > pinnedSpread+1 {
		t.Errorf("tasks started per worker: [%d %d], want %d spread within %d", a, b, tasks, pinnedSpread+1)
	}
	for _, w := range rt.workers {
		if n := w.load.Load(); n != 0 {
			t.Errorf("worker %d counts %d live tasks after every task ended", w.id, n)
		}
	}
}

// With more workers than spreadTarget compares at once, a spawner's tasks
// still reach every worker: 8 workers, 64 tasks that wait once placed, and
// every worker starts at least 4.
func TestPinnedSpawnReachesEveryWorker(t *testing.T) {
	const workers, tasks = 8, 64
	rt := newRuntime(t, Config{Workers: workers, PinnedWorkers: true})
	var started [workers]atomic.Int64
	_, err := BlockOn(rt, func(ctx context.Context) (struct{}, error) {
		gates := make([]baton, tasks)
		var hs []*JoinHandle[struct{}]
		for i := range tasks {
			hs = append(hs, Spawn(ctx, func(ctx context.Context) (struct{}, error) {
				started[taskFor(ctx).worker.id].Add(1)
				return struct{}{}, gates[i].wait(ctx)
			}))
		}
		for total := int64(0); total < tasks; {
			if err := Sleep(ctx, time.Millisecond); err != nil {
				return struct{}{}, err
			}
			total = 0
			for i := range started {
				total += started[i].Load()
			}
		}
		for i := range gates {
			gates[i].signal()
		}
		for _, h := range hs {
			if _, err := h.Join(ctx); err != nil {
				return struct{}{}, err
			}
		}
		return struct{}{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	var counts [workers]int64
	for i := range started {
		counts[i] = started[i].Load()
	}
	t.Logf("tasks started per worker: %v", counts)
	for i, n := range counts {
		if n < 4 {
			t.Errorf("worker %d started %d of %d tasks, want at least 4: %v", i, n, tasks, counts)
		}
	}
}

// A spawner and the first task it spawns start on the same worker, so a
// pair that talks (W2's ping-pong) does not pay a cross-thread wake-up per
// message; the tasks of a spawning loop alternate between the workers.
func TestPinnedSpawnPlacement(t *testing.T) {
	rt := newRuntime(t, Config{Workers: 2, PinnedWorkers: true})
	_, err := BlockOn(rt, func(ctx context.Context) (struct{}, error) {
		home := taskFor(ctx).worker
		var b baton
		h := Spawn(ctx, func(ctx context.Context) (*worker, error) {
			w := taskFor(ctx).worker
			return w, b.wait(ctx) // live until the loop below is done
		})
		if err := Yield(ctx); err != nil { // let it start
			return struct{}{}, err
		}
		var counts [2]int
		var hs []*JoinHandle[*worker]
		for range 10 {
			hs = append(hs, Spawn(ctx, func(ctx context.Context) (*worker, error) {
				return taskFor(ctx).worker, Sleep(ctx, 20*time.Millisecond)
			}))
		}
		b.signal()
		w, err := h.Join(ctx)
		if err != nil {
			return struct{}{}, err
		}
		if w != home {
			return struct{}{}, fmt.Errorf("the first task spawned started on worker %d, its spawner runs on %d", w.id, home.id)
		}
		for _, h := range hs {
			w, err := h.Join(ctx)
			if err != nil {
				return struct{}{}, err
			}
			counts[w.id]++
		}
		// The spawner and the first task lead by two: from then on the
		// tasks alternate, starting with the other worker.
		if other := counts[1-home.id]; other < 5 {
			return struct{}{}, fmt.Errorf("tasks per worker %v: %d of 10 on the spawner's peer, want at least 5", counts, other)
		}
		return struct{}{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A task that calls runtime.Goexit on a pinned worker fails with ErrGoexit,
// like on any worker, and takes nothing with it: a task suspended on the
// same worker before the Goexit still resumes there, the worker still
// runs new tasks, and Close ends the retired coroutine's goroutine too
// (newRuntime checks that no goroutine is left).
func TestPinnedGoexitFailsOnlyItsTask(t *testing.T) {
	rt := newRuntime(t, Config{Workers: 1, PinnedWorkers: true, OnTaskFailure: func(TaskFailure) {}})
	for round := range 3 {
		_, err := BlockOn(rt, func(ctx context.Context) (struct{}, error) {
			var b baton
			tid := syscall.Gettid()
			sleeper := Spawn(ctx, func(ctx context.Context) (int, error) {
				if err := b.wait(ctx); err != nil {
					return 0, err
				}
				return syscall.Gettid(), nil
			})
			if err := Yield(ctx); err != nil { // the sleeper suspends
				return struct{}{}, err
			}
			var deferred atomic.Bool
			h := Spawn(ctx, func(ctx context.Context) (struct{}, error) {
				defer deferred.Store(true)
				goruntime.Goexit()
				return struct{}{}, nil
			})
			if _, err := h.Join(ctx); !errors.Is(err, ErrGoexit) {
				return struct{}{}, fmt.Errorf("round %d: Join = %v, want ErrGoexit", round, err)
			}
			if !deferred.Load() {
				return struct{}{}, fmt.Errorf("round %d: the task's deferred call did not run", round)
			}
			b.signal()
			got, err := sleeper.Join(ctx)
			if err != nil {
				return struct{}{}, err
			}
			if got != tid {
				return struct{}{}, fmt.Errorf("round %d: the suspended task resumed on thread %d, the worker's is %d", round, got, tid)
			}
			return struct{}{}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
	if n := len(rt.workers[0].retired); n != 3 {
		t.Errorf("%d retired coroutines after three Goexits, want 3", n)
	}
}

// A deferred call that panics while a Goexit unwinds the task is
// recovered, and the Goexit then goes on: the task still fails with
// ErrGoexit and the pinned worker still runs (it used to end the process:
// the Goexit reached the worker's goroutine).
func TestPinnedGoexitWithPanickingDefer(t *testing.T) {
	rt := newRuntime(t, Config{Workers: 1, PinnedWorkers: true, OnTaskFailure: func(TaskFailure) {}})
	_, err := BlockOn(rt, func(ctx context.Context) (struct{}, error) {
		h := Spawn(ctx, func(ctx context.Context) (struct{}, error) {
			defer func() { panic("a deferred call panics during Goexit") }()
			goruntime.Goexit()
			return struct{}{}, nil
		})
		if _, err := h.Join(ctx); !errors.Is(err, ErrGoexit) {
			return struct{}{}, fmt.Errorf("Join = %v, want ErrGoexit", err)
		}
		if err := Sleep(ctx, time.Millisecond); err != nil { // the worker still runs
			return struct{}{}, err
		}
		return struct{}{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Tasks spawned while a pinned worker is stuck in one task (plain Go
// computing, here) do not wait for it: once the watchdog has seen the
// stall, Spawn places nothing there, and what it placed there before is
// taken by the other worker. A hog computes for 1 s on one worker while a
// task on the other spawns eight tasks; all eight start within 500 ms.
func TestPinnedSpawnsAvoidAStuckWorker(t *testing.T) {
	rt := newRuntime(t, Config{Workers: 2, PinnedWorkers: true, StallThreshold: 5 * time.Millisecond})
	const hog = time.Second
	_, err := BlockOn(rt, func(ctx context.Context) (struct{}, error) {
		var hogging atomic.Bool
		var hogWorker atomic.Int64
		// The root's first task stays with it; the second goes to the
		// other worker (see spreadTarget).
		hogH := Spawn(ctx, func(ctx context.Context) (struct{}, error) {
			hogWorker.Store(int64(taskFor(ctx).worker.id))
			hogging.Store(true)
			for start := time.Now(); time.Since(start) < hog; {
			}
			return struct{}{}, nil
		})
		spawner := Spawn(ctx, func(ctx context.Context) ([]time.Duration, error) {
			for !hogging.Load() {
				if err := Sleep(ctx, time.Millisecond); err != nil {
					return nil, err
				}
			}
			if int64(taskFor(ctx).worker.id) == hogWorker.Load() {
				return nil, errors.New("the spawner runs on the hog's worker")
			}
			// The tasks stay alive until all have started, so this
			// worker's load grows and Spawn looks at the other.
			start := time.Now()
			lat := make([]time.Duration, 8)
			gates := make([]baton, len(lat))
			var started atomic.Int64
			var hs []*JoinHandle[struct{}]
			for i := range lat {
				hs = append(hs, Spawn(ctx, func(ctx context.Context) (struct{}, error) {
					lat[i] = time.Since(start)
					started.Add(1)
					return struct{}{}, gates[i].wait(ctx)
				}))
				if err := Sleep(ctx, time.Millisecond); err != nil {
					return nil, err
				}
			}
			for started.Load() < int64(len(lat)) {
				if err := Sleep(ctx, time.Millisecond); err != nil {
					return nil, err
				}
			}
			for i := range gates {
				gates[i].signal()
			}
			for _, h := range hs {
				if _, err := h.Join(ctx); err != nil {
					return nil, err
				}
			}
			return lat, nil
		})
		lat, err := spawner.Join(ctx)
		if err != nil {
			return struct{}{}, err
		}
		if _, err := hogH.Join(ctx); err != nil {
			return struct{}{}, err
		}
		t.Logf("start latencies %v, stalls %d", lat, rt.Stats().Stalls)
		// The hog is over: no worker passes for stuck any more (the
		// mark is cleared when its worker resumes a task).
		for _, w := range rt.workers {
			if w.stuck() {
				return struct{}{}, fmt.Errorf("worker %d still counts as stuck after the hog ended", w.id)
			}
		}
		for i, d := range lat {
			if d > hog/2 {
				return struct{}{}, fmt.Errorf("task %d started %v after its spawn, behind the hog: %v", i, d, lat)
			}
		}
		return struct{}{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// FAIO_PINNED overrides Config.PinnedWorkers both ways; a bad value is a
// configuration error.
func TestPinnedFromEnvironment(t *testing.T) {
	for _, tc := range []struct {
		env     string
		cfg     bool
		want    bool
		wantErr bool
	}{
		{"1", false, true, false},
		{"0", true, false, false},
		{"", true, true, false},
		{"yes", false, false, true},
	} {
		t.Run(fmt.Sprintf("%s=%q,config=%v", EnvPinned, tc.env, tc.cfg), func(t *testing.T) {
			t.Setenv(EnvPinned, tc.env)
			c, err := Config{PinnedWorkers: tc.cfg}.withDefaults()
			if tc.wantErr {
				if !errors.Is(err, ErrInvalidConfig) {
					t.Fatalf("withDefaults: %v, want ErrInvalidConfig", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if c.PinnedWorkers != tc.want {
				t.Fatalf("PinnedWorkers = %v, want %v", c.PinnedWorkers, tc.want)
			}
		})
	}
}

// Many runtimes with pinned workers started and closed concurrently leave
// no thread locked and no goroutine behind (newRuntime checks the latter).
func TestPinnedRuntimesOpenAndClose(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	var wg sync.WaitGroup
	for range 4 {
		wg.Go(func() {
			for range 5 {
				rt, err := New(Config{Workers: 2, PinnedWorkers: true})
				if err != nil {
					t.Error(err)
					return
				}
				_, err = BlockOn(rt, func(ctx context.Context) (int, error) {
					return 0, Sleep(ctx, time.Millisecond)
				})
				if err != nil {
					t.Error(err)
				}
				if err := rt.Close(); err != nil {
					t.Error(err)
				}
			}
		})
	}
	wg.Wait()
	goleak.VerifyNone(t, ignore)
}

// On pinned workers a small LocalQueueCapacity is raised to what placing
// spawned tasks needs: at 8, a spawner's queue overflowed into the global
// queue, where the other worker started the tasks placed on this one
// ([62 2] started per worker; found by a reviewer).
func TestPinnedSpawnsSpreadWithASmallLocalQueue(t *testing.T) {
	t.Setenv(EnvPinned, "1")
	for round := 0; round < 5; round++ {
		rt := newRuntime(t, Config{Workers: 2, PinnedWorkers: true, LocalQueueCapacity: 8})
		const tasks = 64
		var started [2]atomic.Int64
		_, err := BlockOn(rt, func(ctx context.Context) (struct{}, error) {
			release := make(chan struct{})
			hs := make([]*JoinHandle[struct{}], tasks)
			for i := range hs {
				hs[i] = Spawn(ctx, func(ctx context.Context) (struct{}, error) {
					started[Current(ctx).WorkerID()].Add(1)
					return struct{}{}, Suspend(ctx, func(w Waker) bool {
						go func() { <-release; w.Wake() }()
						return true
					})
				})
			}
			for started[0].Load()+started[1].Load() < tasks {
				if err := Sleep(ctx, time.Millisecond); err != nil {
					return struct{}{}, err
				}
			}
			close(release)
			for _, h := range hs {
				if _, err := h.Join(ctx); err != nil {
					return struct{}{}, err
				}
			}
			return struct{}{}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if a, b := started[0].Load(), started[1].Load(); max(a, b)-min(a, b) > 3 {
			t.Fatalf("round %d: tasks started per worker [%d %d], want 64 spread within 3", round, a, b)
		}
		rt.Close()
	}
}
