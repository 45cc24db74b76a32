package main

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faio-go/faio/modules/runtime"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// goJob stands for the jobs of the exports with Go in place of C: it waits
// (as a lock or sleep job does), then runs callback as a C callback runs,
// with the worker's frame as the thread's marker, and returns what the
// callback started.
type goJob struct {
	wait     func(ctx context.Context) error
	callback func(s *rtState, token uint64, status int32)
}

func (j *goJob) run(ctx context.Context, s *rtState) started {
	var err error
	if j.wait != nil {
		err = j.wait(ctx)
	}
	f := s.frameFor(ctx)
	j.callback(s, f.token, errorCode(err))
	return f.take()
}

func newTestRuntime(t *testing.T, workers int) (uint64, *rtState) {
	t.Helper()
	h, rc := newRuntime(runtime.Config{Workers: workers})
	if rc != codeOK {
		t.Fatalf("newRuntime: %d", rc)
	}
	s, _ := runtimeOf(h)
	t.Cleanup(func() { freeRuntime(h, 0) })
	return h, s
}

// Jobs started inside a callback start only when it returns, as children
// of its task: blockOn waits for the whole tree.
func TestDeferredJobsAreChildren(t *testing.T) {
	h, _ := newTestRuntime(t, 2)
	const fanout, depth = 4, 5
	var ran atomic.Int64
	var early atomic.Int64
	var node func(level int, parentsKids *atomic.Int64) job
	node = func(level int, parentsKids *atomic.Int64) job {
		// Leaves wait a little, so blockOn returning early would show.
		var wait func(context.Context) error
		if level == depth {
			wait = func(ctx context.Context) error { return runtime.Sleep(ctx, 2*time.Millisecond) }
		}
		return &goJob{wait: wait, callback: func(s *rtState, token uint64, status int32) {
			if status != codeOK {
				t.Errorf("status %d", status)
			}
			ran.Add(1)
			if parentsKids != nil {
				parentsKids.Add(1)
			}
			if level == depth {
				return
			}
			var kids atomic.Int64
			for range fanout {
				if rc := s.start(token, node(level+1, &kids)); rc != codeOK {
					t.Errorf("start: %d", rc)
				}
			}
			// Deferred: none of them may have run yet.
			if kids.Load() != 0 {
				early.Add(1)
			}
		}}
	}
	if rc := blockOn(h, node(0, nil), 0); rc != codeOK {
		t.Fatalf("blockOn: %d", rc)
	}
	want := int64(0)
	for l, n := 0, int64(1); l <= depth; l, n = l+1, n*fanout {
		want += n
	}
	if ran.Load() != want {
		t.Errorf("%d jobs ran before blockOn returned, want %d", ran.Load(), want)
	}
	if early.Load() != 0 {
		t.Error("a deferred job ran inside its parent's callback")
	}
}

// A job started inside a callback does not run before the callback
// returns, even when the runtime has idle workers.
func TestDeferredJobWaitsForCallback(t *testing.T) {
	h, _ := newTestRuntime(t, 2)
	var child atomic.Bool
	var seenEarly atomic.Bool
	root := &goJob{callback: func(s *rtState, token uint64, status int32) {
		s.start(token, &goJob{callback: func(*rtState, uint64, int32) { child.Store(true) }})
		time.Sleep(20 * time.Millisecond) // an idle worker would have run it by now
		seenEarly.Store(child.Load())
	}}
	if rc := blockOn(h, root, 0); rc != codeOK {
		t.Fatalf("blockOn: %d", rc)
	}
	if seenEarly.Load() || !child.Load() {
		t.Errorf("child ran early: %v, ran at all: %v", seenEarly.Load(), child.Load())
	}
}

// From outside any callback (marker 0) and from a callback of another
// runtime, a job starts at once as an independent task of its runtime.
func TestStartOutsideAndAcrossRuntimes(t *testing.T) {
	_, a := newTestRuntime(t, 1)
	hb, _ := newTestRuntime(t, 1)
	done := make(chan *rtState, 2)
	if rc := a.start(0, &goJob{callback: func(s *rtState, _ uint64, _ int32) { done <- s }}); rc != codeOK {
		t.Fatalf("start: %d", rc)
	}
	if s := <-done; s != a {
		t.Error("job ran on the wrong runtime")
	}
	// A callback on b starts a job on a: not deferred into b's frame.
	var deferred atomic.Int64
	root := &goJob{callback: func(s *rtState, token uint64, _ int32) {
		a.start(token, &goJob{callback: func(s *rtState, _ uint64, _ int32) { done <- s }})
		f := frameOf(token)
		if f.first != nil {
			deferred.Add(1)
		}
	}}
	if rc := blockOn(hb, root, 0); rc != codeOK {
		t.Fatalf("blockOn: %d", rc)
	}
	if s := <-done; s != a || deferred.Load() != 0 {
		t.Errorf("cross-runtime job: ran on a: %v, deferred: %d", s == a, deferred.Load())
	}
}

func TestBlockingCallsRefuseInsideCallbacks(t *testing.T) {
	h, s := newTestRuntime(t, 1)
	token := s.frames[0].token
	if rc := blockOn(h, &goJob{callback: func(*rtState, uint64, int32) {}}, token); rc != codeEWOULDBLOCK {
		t.Errorf("blockOn with a marker = %d, want %d", rc, codeEWOULDBLOCK)
	}
	if rc := freeRuntime(h, token); rc != codeEWOULDBLOCK {
		t.Errorf("freeRuntime with a marker = %d, want %d", rc, codeEWOULDBLOCK)
	}
	if _, rc := runtimeOf(h); rc != codeOK {
		t.Error("a refused free freed the runtime")
	}
}

// Shutdown invokes every accepted callback exactly once: waiting jobs see
// the cancellation, and the jobs their callbacks try to start during the
// shutdown are refused with FAIO_ESHUTDOWN, so no accepted one is left
// uncalled.
func TestShutdownInvokesEveryCallback(t *testing.T) {
	h, s := newTestRuntime(t, 2)
	const n = 200
	var calls [n]atomic.Int32
	var status [n]atomic.Int32
	var followUps atomic.Int32
	for i := range n {
		j := &goJob{
			wait: func(ctx context.Context) error { return runtime.Sleep(ctx, time.Hour) },
			callback: func(s *rtState, token uint64, st int32) {
				calls[i].Add(1)
				status[i].Store(st)
				// Refused: the runtime is closing.
				if rc := s.start(token, &goJob{callback: func(*rtState, uint64, int32) { followUps.Add(1) }}); rc != codeESHUTDOWN {
					followUps.Add(-1000)
				}
			},
		}
		if rc := s.start(0, j); rc != codeOK {
			t.Fatalf("start: %d", rc)
		}
	}
	if rc := freeRuntime(h, 0); rc != codeOK {
		t.Fatalf("freeRuntime: %d", rc)
	}
	for i := range n {
		if calls[i].Load() != 1 || status[i].Load() != codeECANCELED {
			t.Fatalf("job %d: %d calls, status %d; want 1 call with %d", i, calls[i].Load(), status[i].Load(), codeECANCELED)
		}
	}
	if followUps.Load() != 0 {
		t.Errorf("jobs started during shutdown were not refused with FAIO_ESHUTDOWN (%d: -1000 per start not refused so, +1 per callback run)", followUps.Load())
	}
	if rc := s.start(0, &goJob{}); rc != codeESHUTDOWN {
		t.Errorf("start after free = %d, want %d", rc, codeESHUTDOWN)
	}
}

func TestFreeRuntimeOnce(t *testing.T) {
	h, rc := newRuntime(runtime.Config{Workers: 1})
	if rc != codeOK {
		t.Fatal(rc)
	}
	s, _ := runtimeOf(h)
	var wg sync.WaitGroup
	var ok, bad atomic.Int32
	for range 6 {
		wg.Go(func() {
			switch freeRuntime(h, 0) {
			case codeOK:
				ok.Add(1)
			case codeEBADHANDLE:
				bad.Add(1)
			}
		})
	}
	wg.Wait()
	if ok.Load() != 1 || bad.Load() != 5 {
		t.Errorf("%d frees succeeded and %d failed, want 1 and 5", ok.Load(), bad.Load())
	}
	if _, rc := runtimeOf(h); rc != codeEBADHANDLE {
		t.Error("runtime handle alive after free")
	}
	for _, f := range s.frames {
		if frameOf(f.token) != nil {
			t.Error("frame handle alive after free")
		}
	}
	if rc := blockOn(h, &goJob{}, 0); rc != codeEBADHANDLE {
		t.Errorf("blockOn after free = %d, want %d", rc, codeEBADHANDLE)
	}
}

func TestNewRuntimeBadConfig(t *testing.T) {
	for _, cfg := range []runtime.Config{
		{Workers: -1},
		{LocalQueueCapacity: 3},
		{RingEntries: 1 << 20},
		{TimerResolution: -time.Millisecond},
	} {
		if h, rc := newRuntime(cfg); rc != codeEINVAL || h != 0 {
			t.Errorf("newRuntime(%+v) = %#x, %d; want 0, %d", cfg, h, rc, codeEINVAL)
		}
	}
}

// A callback chain that never waits still lets the other tasks of its
// worker run: each inline job charges the cooperative budget.
func TestInlineChainYields(t *testing.T) {
	h, _ := newTestRuntime(t, 1)
	const limit = 100000
	var steps, stepsAtFlag atomic.Int64
	stepsAtFlag.Store(-1)
	var chain func() job
	chain = func() job {
		return &goJob{callback: func(s *rtState, token uint64, _ int32) {
			if steps.Add(1) < limit && stepsAtFlag.Load() < 0 {
				s.start(token, chain())
			}
		}}
	}
	root := &goJob{callback: func(s *rtState, token uint64, _ int32) {
		// The first is spawned as a child, the last (the chain) runs
		// inline in this task.
		s.start(token, &goJob{callback: func(*rtState, uint64, int32) { stepsAtFlag.Store(steps.Load()) }})
		s.start(token, chain())
	}}
	if rc := blockOn(h, root, 0); rc != codeOK {
		t.Fatalf("blockOn: %d", rc)
	}
	if n := stepsAtFlag.Load(); n < 0 || n >= limit {
		t.Errorf("the other task ran after %d chain steps; want it to run while the chain goes on", n)
	}
}

// A lock that looked a mutex's handle up just before faio_mutex_free
// removed it finds the mutex held for good: it returns FAIO_EBADHANDLE,
// blocking or not, instead of waiting forever (found by a reviewer: a
// faio_mutex_lock_blocking racing faio_mutex_free hung in about one race
// in 40).
func TestLateLocksOfAFreedMutexFail(t *testing.T) {
	_, s := newTestRuntime(t, 2)
	for _, wait := range []bool{false, true} {
		m := newMutexObj(s)
		blocking := make(chan int32, 1)
		inTask := make(chan int32, 1)
		late := func() {
			go func() { blocking <- m.lockBlocking() }()
			runtime.SpawnOn(s.rt, func(ctx context.Context) (int, error) {
				inTask <- m.lock(ctx)
				return 0, nil
			})
		}
		if !wait {
			// The late locks start after the free.
			if m.free() != codeOK {
				t.Fatal("free of an idle mutex refused")
			}
			late()
		} else {
			// The late locks wait already when the free comes; the
			// mutex is held meanwhile, so free must wait for the holder
			// to be this test's own TryLock, released by free's.
			if !m.mu.TryLock() {
				t.Fatal("TryLock")
			}
			late()
			time.Sleep(20 * time.Millisecond)
			// As free does, with the lock already taken: end the waits.
			m.setFreed()
		}
		for name, ch := range map[string]chan int32{"lockBlocking": blocking, "lock in a task": inTask} {
			select {
			case rc := <-ch:
				if rc != codeEBADHANDLE {
					t.Errorf("waiting %v: %s = %d, want FAIO_EBADHANDLE", wait, name, rc)
				}
			case <-time.After(5 * time.Second):
				t.Fatalf("waiting %v: %s of a freed mutex still blocked", wait, name)
			}
		}
	}
}
