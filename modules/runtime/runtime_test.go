package runtime

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
)

// newRuntime starts a runtime for one test and checks at the end that Close
// left no goroutine behind.
func newRuntime(t testing.TB, cfg Config) *Runtime {
	t.Helper()
	// Goroutines alive now are not this test's.
	ignore := goleak.IgnoreCurrent()
	rt, err := New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := rt.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if tt, ok := t.(*testing.T); ok {
			awaitRetiredStopped()
			goleak.VerifyNone(tt, ignore)
		}
	})
	return rt
}

// awaitRetiredStopped waits (up to 5 s) until no goroutine is still
// stopping the coroutines that tasks retired by calling runtime.Goexit on a
// pinned worker (see worker.unpinAtShutdown). Close returns once that
// goroutine has signed off, the last thing it does before it ends, but it
// does so inside one nested Goexit per retired coroutine: a goroutine
// caught in that instant shows a stack goleak cannot parse when it has more
// than 100 frames ("...N frames elided...").
func awaitRetiredStopped() {
	buf := make([]byte, 1<<20)
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); {
		n := goruntime.Stack(buf, true)
		if !bytes.Contains(buf[:n], []byte("runtime.stopRetired(")) {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// skipIfPinned skips a test of how started tasks move between workers when
// FAIO_PINNED=1 pins the workers of every runtime (Config.PinnedWorkers):
// there, a task runs on the worker it started on until it ends.
func skipIfPinned(t *testing.T, why string) {
	t.Helper()
	if os.Getenv(EnvPinned) == "1" {
		t.Skip("pinned workers (" + EnvPinned + "=1): " + why)
	}
}

func TestBlockOnReturnsResult(t *testing.T) {
	rt := newRuntime(t, Config{Workers: 2})
	got, err := BlockOn(rt, func(ctx context.Context) (string, error) {
		if Current(ctx) == nil {
			return "", errors.New("ctx carries no task")
		}
		return "hello", nil
	})
	if err != nil || got != "hello" {
		t.Fatalf("BlockOn = %q, %v; want hello, nil", got, err)
	}
	wantErr := errors.New("boom")
	_, err = BlockOn(rt, func(ctx context.Context) (int, error) { return 0, wantErr })
	if !errors.Is(err, wantErr) {
		t.Fatalf("BlockOn error = %v, want %v", err, wantErr)
	}
}

func TestSpawnJoinNested(t *testing.T) {
	rt := newRuntime(t, Config{Workers: 2})
	var fib func(ctx context.Context, n int) (int, error)
	fib = func(ctx context.Context, n int) (int, error) {
		if n < 2 {
			return n, nil
		}
		a := Spawn(ctx, func(ctx context.Context) (int, error) { return fib(ctx, n-1) })
		b, err := fib(ctx, n-2)
		if err != nil {
			return 0, err
		}
		x, err := a.Join(ctx)
		return x + b, err
	}
	got, err := BlockOn(rt, func(ctx context.Context) (int, error) { return fib(ctx, 20) })
	if err != nil || got != 6765 {
		t.Fatalf("fib(20) = %d, %v; want 6765", got, err)
	}
}

// Every one of a million tasks, spawned in a tree, runs exactly once, and
// BlockOn returns only after the last of them (none is joined).
func TestMillionTasksRunOnceAndBlockOnWaitsForAll(t *testing.T) {
	const fanout, depth = 100, 3 // 100 + 100^2 + 100^3 = 1,010,100 tasks
	total := fanout + fanout*fanout + fanout*fanout*fanout
	if testing.Short() {
		total = 0
	}
	rt := newRuntime(t, Config{Workers: 2})
	runs := make([]atomic.Uint32, total+1)
	var next atomic.Int64
	var spawnTree func(ctx context.Context, level int)
	spawnTree = func(ctx context.Context, level int) {
		if level == depth || testing.Short() {
			return
		}
		for i := 0; i < fanout; i++ {
			Spawn(ctx, func(ctx context.Context) (struct{}, error) {
				runs[next.Add(1)].Add(1)
				spawnTree(ctx, level+1)
				return struct{}{}, nil
			})
		}
	}
	_, err := BlockOn(rt, func(ctx context.Context) (struct{}, error) {
		spawnTree(ctx, 0)
		return struct{}{}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n := next.Load(); n != int64(total) {
		t.Fatalf("BlockOn returned after %d of %d tasks ran", n, total)
	}
	for i := 1; i <= total; i++ {
		if c := runs[i].Load(); c != 1 {
			t.Fatalf("slot %d ran %d times", i, c)
		}
	}
	settled(t, rt, func(s Stats) bool { return s.Live == 0 && s.Completed >= uint64(total) })
}

func TestWorkStealingUsesBothWorkers(t *testing.T) {
	rt := newRuntime(t, Config{Workers: 2})
	// Pinned workers (FAIO_PINNED=1) spread the tasks when they are
	// spawned rather than by stealing.
	pinned := os.Getenv(EnvPinned) == "1"
	spread := func(s Stats) bool {
		return (pinned || s.Steals > 0 && s.Stolen > 0) && s.PerWorker[0].Polls > 0 && s.PerWorker[1].Polls > 0
	}
	// A batch takes tens of milliseconds; on a machine busy with other
	// work the second worker's thread may get no CPU for all of one, so
	// a few batches are allowed before the stats must show the spread.
	for range 5 {
		_, err := BlockOn(rt, func(ctx context.Context) (struct{}, error) {
			for i := 0; i < 2000; i++ {
				Spawn(ctx, func(ctx context.Context) (int, error) {
					x := 0
					for j := 0; j < 20000; j++ {
						x += j * j
					}
					return x, nil
				})
			}
			return struct{}{}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if spread(rt.Stats()) {
			return
		}
	}
	settled(t, rt, spread)
}

func TestPanicBecomesPanicError(t *testing.T) {
	rt := newRuntime(t, Config{Workers: 2})
	v, err := BlockOn(rt, func(ctx context.Context) (int, error) {
		h := Spawn(ctx, func(ctx context.Context) (int, error) { panic("kaboom") })
		_, err := h.Join(ctx)
		var pe *PanicError
		if !errors.As(err, &pe) || pe.Value != "kaboom" || len(pe.Stack) == 0 {
			return 0, errors.New("Join did not return the panic: " + errString(err))
		}
		return 7, nil
	})
	if err != nil || v != 7 {
		t.Fatalf("BlockOn = %d, %v", v, err)
	}
	// The runtime still works.
	if v, err := BlockOn(rt, func(ctx context.Context) (int, error) { return 1, nil }); err != nil || v != 1 {
		t.Fatalf("after panic: %d, %v", v, err)
	}
}

func TestGoexitInTaskFailsOnlyThatTask(t *testing.T) {
	rt := newRuntime(t, Config{Workers: 1})
	_, err := BlockOn(rt, func(ctx context.Context) (int, error) {
		h := Spawn(ctx, func(ctx context.Context) (int, error) {
			goexitNow()
			return 1, nil
		})
		_, err := h.Join(ctx)
		if !errors.Is(err, ErrGoexit) {
			return 0, errors.New("Join = " + errString(err))
		}
		return 0, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if v, err := BlockOn(rt, func(ctx context.Context) (int, error) { return 2, nil }); err != nil || v != 2 {
		t.Fatalf("after Goexit: %d, %v", v, err)
	}
}

func TestBlockOnFromTaskIsRefused(t *testing.T) {
	rt := newRuntime(t, Config{Workers: 1})
	_, err := BlockOn(rt, func(ctx context.Context) (int, error) {
		_, err := BlockOn(rt, func(ctx context.Context) (int, error) { return 0, nil })
		if !errors.Is(err, ErrOnWorker) {
			return 0, errors.New("nested BlockOn = " + errString(err))
		}
		if err := rt.Close(); !errors.Is(err, ErrOnWorker) {
			return 0, errors.New("Close from task = " + errString(err))
		}
		return 0, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

func TestConfigValidation(t *testing.T) {
	bad := []Config{
		{Workers: -1},
		{Workers: maxWorkers + 1},
		{LocalQueueCapacity: 100},
		{LocalQueueCapacity: 1},
		{GlobalQueueInterval: -5},
		{IOInterval: -1},
		{RingEntries: 3},
		{TimerResolution: -time.Millisecond},
		{PanicPolicy: 7},
		{StallThreshold: 1}, // a 1 ns ticker once crashed the process
		{StallThreshold: MinStallThreshold - 1},
		{SQPollIdle: -time.Millisecond},
		{SQPollIdle: time.Hour},
		{FileIOThreads: -1},
		// Past a worker's uint32 ticks: 1<<32 divided by zero on the
		// first tick, ending the process (found by a reviewer).
		{IOInterval: 1 << 32},
		{GlobalQueueInterval: 1 << 32},
		{IOInterval: 1<<32 + 61},
		// Past the kernel's INT_MAX: BackendAuto took the kernel's
		// refusal for io_uring being blocked.
		{FileIOThreads: 1 << 31},
	}
	for _, cfg := range bad {
		rt, err := New(cfg)
		if err == nil {
			rt.Close()
			t.Errorf("New(%+v) succeeded", cfg)
			continue
		}
		if !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("New(%+v) = %v, want ErrInvalidConfig", cfg, err)
		}
	}
	_, err := New(Config{Workers: -1, RingEntries: 3})
	if err == nil || !contains(err.Error(), "Workers") || !contains(err.Error(), "RingEntries") {
		t.Errorf("error should name every bad field: %v", err)
	}
}

func TestCloseIsIdempotentAndRefusesNewWork(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	rt, err := New(Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := BlockOn(rt, func(ctx context.Context) (int, error) { return 0, nil }); !errors.Is(err, ErrClosed) {
		t.Fatalf("BlockOn after Close = %v", err)
	}
	h := SpawnOn(rt, func(ctx context.Context) (int, error) { return 0, nil })
	if _, err := h.Join(context.Background()); !errors.Is(err, ErrClosed) {
		t.Fatalf("SpawnOn after Close: Join = %v", err)
	}
	if h.Spawned() || h.ID() != 0 {
		t.Fatalf("SpawnOn after Close: Spawned = %v, ID = %d; want false, 0", h.Spawned(), h.ID())
	}
	goleak.VerifyNone(t, ignore)
}

// Task ids are given when first asked for: unique within the runtime,
// stable once given (the handle's, the task's own and String agree, from
// any goroutine, also after the task ended), and never 0.
func TestTaskIDsAreUniqueAndStable(t *testing.T) {
	rt := newRuntime(t, Config{Workers: 2})
	const n = 200
	ids := make([]uint64, n)
	_, err := BlockOn(rt, func(ctx context.Context) (int, error) {
		hs := make([]*JoinHandle[uint64], n)
		for i := range hs {
			hs[i] = Spawn(ctx, func(ctx context.Context) (uint64, error) {
				if i%2 == 0 {
					Yield(ctx)
				}
				return Current(ctx).ID(), nil
			})
			if !hs[i].Spawned() {
				return 0, fmt.Errorf("task %d: Spawned = false", i)
			}
		}
		var wg sync.WaitGroup
		for i, h := range hs {
			// Asked from the task and from a goroutine at once.
			wg.Go(func() { ids[i] = h.ID() })
		}
		wg.Wait()
		for i, h := range hs {
			own, err := h.Join(ctx)
			if err != nil {
				return 0, err
			}
			if own != ids[i] || h.ID() != ids[i] || h.task.String() != "faio task "+itoa(ids[i]) {
				return 0, fmt.Errorf("task %d: own id %d, handle %d then %d, %s", i, own, ids[i], h.ID(), h.task.String())
			}
		}
		return 0, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[uint64]bool{}
	for i, id := range ids {
		if id == 0 || seen[id] {
			t.Fatalf("task %d: id %d is 0 or given twice", i, id)
		}
		seen[id] = true
	}
}

func TestSpawnWithoutTaskFails(t *testing.T) {
	h := Spawn(context.Background(), func(ctx context.Context) (int, error) { return 1, nil })
	if _, err := h.Join(context.Background()); !errors.Is(err, ErrNoRuntime) {
		t.Fatalf("Join = %v, want ErrNoRuntime", err)
	}
	select {
	case <-h.Done():
	default:
		t.Fatal("Done not closed for a failed spawn")
	}
}

func TestSpawnOnAndJoinFromGoroutine(t *testing.T) {
	rt := newRuntime(t, Config{Workers: 2})
	h := SpawnOn(rt, func(ctx context.Context) (int, error) {
		if err := Sleep(ctx, time.Millisecond); err != nil {
			return 0, err
		}
		return 42, nil
	})
	<-h.Done()
	if v, err := h.Join(context.Background()); err != nil || v != 42 {
		t.Fatalf("Join = %d, %v", v, err)
	}
}

func TestWaitAll(t *testing.T) {
	rt := newRuntime(t, Config{Workers: 2})
	boom := errors.New("boom")
	var childDone atomic.Bool
	vals, err := WaitAll(rt,
		func(ctx context.Context) (int, error) { return 1, nil },
		func(ctx context.Context) (int, error) { return 2, boom },
		func(ctx context.Context) (int, error) {
			Spawn(ctx, func(ctx context.Context) (int, error) {
				err := Sleep(ctx, 5*time.Millisecond)
				childDone.Store(true)
				return 0, err
			})
			return 3, nil
		},
	)
	if !errors.Is(err, boom) || len(vals) != 3 || vals[0] != 1 || vals[2] != 3 {
		t.Fatalf("WaitAll = %v, %v", vals, err)
	}
	if !childDone.Load() {
		t.Fatal("WaitAll returned before a spawned child finished")
	}
}

// settled waits (up to 5 s) for the counters to satisfy ok: they are
// published by the workers with a lag (see Stats).
func settled(t *testing.T, rt *Runtime, ok func(Stats) bool) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for {
		s := rt.Stats()
		if ok(s) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("stats never settled: %+v", s)
		}
		time.Sleep(time.Millisecond)
	}
}

func contains(s, sub string) bool {
	for i := 0; i+len(sub) <= len(s); i++ {
		if s[i:i+len(sub)] == sub {
			return true
		}
	}
	return false
}

func errString(err error) string {
	if err == nil {
		return "<nil>"
	}
	return err.Error()
}

// Close from a goroutine locked to its OS thread (as every cgo export is)
// must not switch coroutines on it.
func TestCloseFromLockedThread(t *testing.T) {
	done := make(chan error, 1)
	go func() {
		goruntime.LockOSThread()
		defer goruntime.UnlockOSThread()
		rt, err := New(Config{Workers: 2})
		if err != nil {
			done <- err
			return
		}
		_, err = BlockOn(rt, func(ctx context.Context) (int, error) {
			for i := 0; i < 100; i++ {
				Spawn(ctx, func(ctx context.Context) (int, error) { return 0, Sleep(ctx, time.Millisecond) })
			}
			return 0, nil
		})
		if err != nil {
			done <- err
			return
		}
		done <- rt.Close()
	}()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
}

// The errors for calls made in the wrong place say what to do instead.
func TestMisplacedCallErrorsPointTheRightWay(t *testing.T) {
	rt := newRuntime(t, Config{Workers: 1})
	if _, err := Submit(context.Background(), &readOp{fd: 0, buf: make([]byte, 1)}); !errors.Is(err, ErrNoRuntime) || !contains(err.Error(), "SubmitOn(ctx, rt, op)") {
		t.Errorf("Submit outside a task: %v; want ErrNoRuntime pointing to SubmitOn", err)
	}
	if _, err := Spawn(context.Background(), func(context.Context) (int, error) { return 0, nil }).Join(context.Background()); !errors.Is(err, ErrNoRuntime) || !contains(err.Error(), "SpawnOn(rt, fn)") {
		t.Errorf("Spawn outside a task: %v; want ErrNoRuntime pointing to SpawnOn", err)
	}
	closeErr, _ := BlockOn(rt, func(ctx context.Context) (error, error) { return rt.Close(), nil })
	if !errors.Is(closeErr, ErrOnWorker) || !contains(closeErr.Error(), "call Close from the goroutine that owns the runtime") {
		t.Errorf("Close in a task: %v; want ErrOnWorker saying where to call Close", closeErr)
	}
}

// A worker held by a task that never yields (or descheduled by Go) must not
// hold up the timers on its wheel: the other worker fires them once they
// are a tick overdue. Without that, the sleeper below wakes only when the
// hog lets go of the worker, a second later. If the other worker went to
// sleep before the timer was armed, the watchdog (on by default) is what
// wakes it.
func TestPeerFiresTimersOfBusyWorker(t *testing.T) {
	skipIfPinned(t, "a woken task runs only on its own worker, so the sleeper waits for the hog (the peer still fires the timer)")
	rt := newRuntime(t, Config{Workers: 2})
	for attempt := 0; ; attempt++ {
		if attempt == 20 {
			t.Fatal("the hog never ran on the sleeper's worker in 20 attempts")
		}
		var sameWorker, hogDone, wokeDuringHog atomic.Bool
		_, err := BlockOn(rt, func(ctx context.Context) (struct{}, error) {
			// The sleeper spawns the hog into its worker's LIFO slot,
			// so the hog runs there as soon as the sleeper suspends
			// (unless the other worker steals it first: try again).
			Spawn(ctx, func(ctx context.Context) (struct{}, error) {
				home := taskFor(ctx).worker
				Spawn(ctx, func(ctx context.Context) (struct{}, error) {
					if taskFor(ctx).worker != home {
						return struct{}{}, nil
					}
					sameWorker.Store(true)
					for start := time.Now(); time.Since(start) < time.Second; {
					}
					hogDone.Store(true)
					return struct{}{}, nil
				})
				err := Sleep(ctx, 10*time.Millisecond)
				wokeDuringHog.Store(!hogDone.Load())
				return struct{}{}, err
			})
			return struct{}{}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if !sameWorker.Load() {
			continue
		}
		if !wokeDuringHog.Load() {
			t.Fatal("the sleeper woke only after the hog released its worker")
		}
		if n := rt.Stats().PeerTimers; n == 0 {
			t.Fatalf("Stats().PeerTimers = 0 after a peer fired a timer")
		}
		return
	}
}

// Fresh tasks run back to back on the coroutine of the one that finished
// before them (runInline). Whatever each does, panic, Goexit, suspend,
// yield or return, it runs once and its outcome reaches its Join.
func TestInlineRunsKeepEveryTaskOutcome(t *testing.T) {
	for _, workers := range []int{1, 2} {
		rt := newRuntime(t, Config{Workers: workers})
		const n = 5000
		var ran [n]atomic.Int32
		_, err := BlockOn(rt, func(ctx context.Context) (int, error) {
			hs := make([]*JoinHandle[int], n)
			for i := range hs {
				hs[i] = Spawn(ctx, func(ctx context.Context) (int, error) {
					ran[i].Add(1)
					switch i % 5 {
					case 1:
						panic(i)
					case 2:
						goexitNow()
					case 3:
						if err := Sleep(ctx, time.Duration(i%3)*time.Millisecond); err != nil {
							return 0, err
						}
					case 4:
						if err := Yield(ctx); err != nil {
							return 0, err
						}
					}
					return i, nil
				})
			}
			for i, h := range hs {
				v, err := h.Join(ctx)
				var pe *PanicError
				switch i % 5 {
				case 1:
					if !errors.As(err, &pe) || pe.Value != i {
						return 0, fmt.Errorf("task %d: Join = %v, %v; want its panic", i, v, err)
					}
				case 2:
					if !errors.Is(err, ErrGoexit) {
						return 0, fmt.Errorf("task %d: Join = %v, %v; want ErrGoexit", i, v, err)
					}
				default:
					if err != nil || v != i {
						return 0, fmt.Errorf("task %d: Join = %v, %v", i, v, err)
					}
				}
			}
			return 0, nil
		})
		if err != nil {
			t.Fatalf("workers=%d: %v", workers, err)
		}
		for i := range ran {
			if got := ran[i].Load(); got != 1 {
				t.Fatalf("workers=%d: task %d ran %d times", workers, i, got)
			}
		}
	}
}

// A timer cancelled because its wait ended early must not count as overdue
// work: a task computing for 80 ms after such a wait, with nothing else in
// the runtime, is no stall. (Found by review: the wheel's published
// deadline used to keep the cancelled entry's, and the watchdog reported.)
func TestCancelledTimerIsNoStall(t *testing.T) {
	for _, workers := range []int{1, 2} {
		var stalls atomic.Int32
		var info atomic.Value
		rt := newRuntime(t, Config{Workers: workers, StallThreshold: 10 * time.Millisecond, OnStall: func(s StallInfo) {
			stalls.Add(1)
			info.Store(s)
		}})
		time.Sleep(20 * time.Millisecond) // let the workers park
		_, err := BlockOn(rt, func(ctx context.Context) (int, error) {
			cctx, cancel := context.WithTimeout(ctx, 3*time.Millisecond)
			defer cancel()
			h := Spawn(ctx, func(context.Context) (int, error) { return 1, nil })
			// Suspends with a wheel entry for the deadline, woken early.
			if _, err := h.Join(cctx); err != nil {
				return 0, err
			}
			cancel()
			for end := time.Now().Add(80 * time.Millisecond); time.Now().Before(end); {
			}
			return 0, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if n := stalls.Load(); n > 0 {
			t.Fatalf("workers=%d: %d stall(s) reported with no task and no live timer waiting: %+v", workers, n, info.Load())
		}
	}
}

// A worker's current may still name a coroutine that another worker has
// resumed since (it is cleared only before long work): localWorker must
// answer with the worker that really runs the calling coroutine, or a wake
// would push onto the other worker's own queue from a foreign thread.
//
// The check needs a task on worker 1 (localWorker looks at worker 0
// first). Each attempt queues eight tasks that each compute for 2 ms, so
// that worker 1 is woken to steal some even on a loaded machine; the tasks
// that run on worker 1 check.
func TestLocalWorkerIgnoresStaleCurrent(t *testing.T) {
	rt := newRuntime(t, Config{Workers: 2})
	var mu sync.Mutex // one check at a time: they share worker 0's current
	for attempt := 0; ; attempt++ {
		if attempt == 20 {
			t.Fatal("no task ran on worker 1 in 20 attempts")
		}
		checked, err := BlockOn(rt, func(ctx context.Context) (int, error) {
			var hs []*JoinHandle[int]
			for range 8 {
				hs = append(hs, Spawn(ctx, func(ctx context.Context) (int, error) {
					for start := time.Now(); time.Since(start) < 2*time.Millisecond; {
					}
					me := taskFor(ctx)
					if me.worker.id != 1 {
						return 0, nil
					}
					mu.Lock()
					defer mu.Unlock()
					// Make worker 0's current name this coroutine, as
					// if it had resumed it last and not cleared since.
					other := rt.workers[0]
					old := other.current.Swap(me.coro.Load())
					defer other.current.CompareAndSwap(me.coro.Load(), old)
					if w := rt.localWorker(); w != me.worker {
						return 0, fmt.Errorf("localWorker = worker %d, want %d (the one running the task)", w.id, me.worker.id)
					}
					return 1, nil
				}))
			}
			n := 0
			for _, h := range hs {
				c, err := h.Join(ctx)
				if err != nil {
					return n, err
				}
				n += c
			}
			return n, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if checked > 0 {
			return
		}
	}
}

// inTaskKey is TestInTask's context key.
type inTaskKey struct{}

// InTask agrees with OnTask whatever context it is given: the task's own,
// one derived from it, or an unrelated one inside the task; and a plain
// goroutine holding a task's context is not a task.
func TestInTask(t *testing.T) {
	rt := newRuntime(t, Config{Workers: 2})
	var leaked context.Context
	_, err := BlockOn(rt, func(ctx context.Context) (int, error) {
		derived, cancel := context.WithCancel(context.WithValue(ctx, inTaskKey{}, 1))
		defer cancel()
		for name, c := range map[string]context.Context{"task": ctx, "derived": derived, "background": context.Background()} {
			if !InTask(c) || !OnTask() {
				return 0, fmt.Errorf("in a task with the %s context: InTask = %v, OnTask = %v", name, InTask(c), OnTask())
			}
		}
		leaked = ctx
		return 0, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan [3]bool)
	go func() { done <- [3]bool{InTask(leaked), InTask(context.Background()), OnTask()} }()
	if got := <-done; got != [3]bool{} {
		t.Fatalf("in a plain goroutine: InTask(task's context), InTask(Background), OnTask = %v, want all false", got)
	}
	if InTask(leaked) || OnTask() {
		t.Fatal("the test goroutine counts as a task")
	}
}

// JoinHandle.Done is closed once the task has finished, whether it was
// called before the task finished, or only after (when nothing else had
// made the task allocate its rarely used state, the channel used to be
// made then and never closed).
func TestJoinHandleDoneBeforeAndAfterFinish(t *testing.T) {
	rt := newRuntime(t, Config{Workers: 2})
	closedWithin := func(ch <-chan struct{}) bool {
		select {
		case <-ch:
			return true
		case <-time.After(5 * time.Second):
			return false
		}
	}
	release := make(chan struct{})
	early := SpawnOn(rt, func(context.Context) (int, error) {
		<-release // blocks its worker briefly; fine for a test
		return 1, nil
	})
	earlyDone := early.Done()
	select {
	case <-earlyDone:
		t.Fatal("Done closed before the task finished")
	default:
	}
	close(release)
	if !closedWithin(earlyDone) {
		t.Fatal("Done called before the task finished never closed")
	}
	for i, join := range []bool{true, false} {
		late := SpawnOn(rt, func(context.Context) (int, error) { return 2, nil })
		if join {
			if _, err := late.Join(context.Background()); err != nil {
				t.Fatal(err)
			}
		} else {
			// Finished, as the workers' counts tell once published.
			for rt.Stats().Completed < uint64(i+2) {
				time.Sleep(time.Millisecond)
			}
		}
		if !closedWithin(late.Done()) {
			t.Fatalf("Done called after the task finished (joined: %v) never closed", join)
		}
	}
}

// Each stall is reported, also that of a task that a worker runs next on
// the same pooled coroutine within the same heartbeat: the watchdog took
// that one for the stall it had reported already, and the task waiting in
// the blocked worker's LIFO slot waited for the block to end. (Found when a
// faiohttp handler blocked in a plain select held up the watch for its
// client.) Here each of a chain of tasks spawns a child, which waits in its
// worker's LIFO slot, and blocks its worker until the child has run; then
// it spawns the next link and finishes, so that the next link runs on the
// same worker, usually inline on the same coroutine.
func TestStallOfTheNextTaskOnACoroutineIsReported(t *testing.T) {
	var stalls atomic.Int32
	rt := newRuntime(t, Config{Workers: 2, StallThreshold: 10 * time.Millisecond, OnStall: func(StallInfo) { stalls.Add(1) }})
	const links = 6
	failed := make(chan string, links)
	var link func(i int) func(context.Context) (struct{}, error)
	link = func(i int) func(context.Context) (struct{}, error) {
		return func(ctx context.Context) (struct{}, error) {
			ran := make(chan struct{})
			Spawn(ctx, func(context.Context) (struct{}, error) { close(ran); return struct{}{}, nil })
			select { // blocks the worker: the child must be taken by the other
			case <-ran:
			case <-time.After(3 * time.Second):
				// The child runs once this worker is free again.
				failed <- fmt.Sprintf("link %d: its child did not run within 3 s of its worker blocking (%d stalls reported)", i, stalls.Load())
			}
			if i+1 < links {
				Spawn(ctx, link(i+1))
			}
			return struct{}{}, nil
		}
	}
	if _, err := BlockOn(rt, link(0)); err != nil {
		t.Fatal(err)
	}
	close(failed)
	for msg := range failed {
		t.Error(msg)
	}
}

// A worker held by a plain Go call holds its ring's work too, which no
// other worker can take: an operation it prepared and has not submitted (a
// socket receive, submitted in batches) and a completion it has not
// reaped. The watchdog reports that as a stall, with no task queued: a
// task's Accept waited on such a worker for 3 s with no report (found by
// a new user). Each case: a child suspends in an operation on the one
// worker, the root blocks the worker, the operation's data arrives.
func TestStallWithIOOnTheWorkerIsReported(t *testing.T) {
	for _, tc := range []struct {
		name string
		op   func(fd int) Op
	}{
		// A receive waits for a batch, or for the worker to run out
		// of tasks, to be submitted.
		{"unsubmitted receive", func(fd int) Op { return &recvOp{fd: fd, buf: make([]byte, 8)} }},
		// A read counts in full and is submitted at once: its
		// completion waits to be reaped.
		{"unreaped read", func(fd int) Op { return &readOp{fd: fd, buf: make([]byte, 8), off: ^uint64(0)} }},
	} {
		t.Run(tc.name, func(t *testing.T) {
			a, b := socketPair(t)
			var stalls atomic.Int32
			var waiting atomic.Int64
			rt := newRingRuntime(t, Config{Workers: 1, SubmitBatch: 1, StallThreshold: 10 * time.Millisecond, OnStall: func(s StallInfo) {
				stalls.Add(1)
				waiting.Store(int64(s.Waiting))
			}})
			within(t, 10*time.Second, tc.name, func() {
				_, err := BlockOn(rt, func(ctx context.Context) (int, error) {
					h := Spawn(ctx, func(ctx context.Context) (int, error) {
						r, err := Submit(ctx, tc.op(a))
						return int(r.Res), err
					})
					if err := Yield(ctx); err != nil { // the child suspends in its operation
						return 0, err
					}
					go func() {
						time.Sleep(20 * time.Millisecond)
						unix.Write(b, []byte("hi"))
					}()
					time.Sleep(150 * time.Millisecond) // holds the worker
					n, err := h.Join(ctx)
					if err == nil && n != 2 {
						err = fmt.Errorf("read %d bytes, want 2", n)
					}
					return 0, err
				})
				if err != nil {
					t.Fatal(err)
				}
			})
			if stalls.Load() == 0 {
				t.Fatal("no stall reported while the worker held the operation")
			}
			if w := waiting.Load(); w < 1 {
				t.Errorf("stall reported with Waiting %d, want at least 1", w)
			}
		})
	}
}
