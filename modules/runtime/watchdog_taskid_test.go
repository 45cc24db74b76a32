package runtime

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// slowStopCtx is a context whose AfterFunc registration takes hold to
// stop: Go's context package calls the stop of a parent that implements
// AfterFunc (its afterFuncer interface) when a context.AfterFunc on it is
// stopped, and the runtime stops the one it set on a task's spawn context
// when the task completes, on the worker, after the task's function has
// returned.
type slowStopCtx struct {
	context.Context
	hold time.Duration
}

func (c slowStopCtx) AfterFunc(f func()) func() bool {
	stop := context.AfterFunc(c.Context, f)
	return func() bool {
		time.Sleep(c.hold)
		return stop()
	}
}

// A worker held while it completes a task whose function has returned
// (here by its spawn context's AfterFunc stop) is reported with that
// task's id, once per task. The worker's loop pooled the task's coroutine
// before it completed the task, and the watchdog, which samples the task
// the coroutine runs, reported TaskID 0; and since every completion then
// looked the same (the pooled coroutine, no task), only the first of
// several in a row was reported at all. IOInterval 1 keeps every
// completion out of runInline (which completes a task on its coroutine,
// still named there), so each goes through the loop.
func TestStallWhileCompletingATaskNamesIt(t *testing.T) {
	var (
		mu     sync.Mutex
		stalls []StallInfo
	)
	rt := newRuntime(t, Config{Workers: 1, IOInterval: 1, StallThreshold: 10 * time.Millisecond, OnStall: func(s StallInfo) {
		mu.Lock()
		stalls = append(stalls, s)
		mu.Unlock()
	}})
	const (
		rounds = 3
		hold   = 100 * time.Millisecond
	)
	var ids []uint64
	lag := startLagProbe()
	_, err := BlockOn(rt, func(ctx context.Context) (int, error) {
		for range rounds {
			// Queued behind the completion: the stall has work waiting.
			Spawn(ctx, func(context.Context) (int, error) { return 0, nil })
			var id atomic.Uint64
			h := Spawn(slowStopCtx{ctx, hold}, func(ctx context.Context) (int, error) {
				id.Store(Current(ctx).ID())
				return 0, nil
			})
			if _, err := h.Join(ctx); err != nil {
				return 0, err
			}
			ids = append(ids, id.Load())
		}
		return 0, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	most := lag()
	mu.Lock()
	defer mu.Unlock()
	checkStallsName(t, stalls, ids, hold, "", most)
}

// checkStallsName checks that every stall names one of the tasks ids and
// that each of them, having held its worker for hold while it completed
// (how: after Goexit, say), is named by one. That a hold is seen at all
// needs the watchdog to sample within it: where goroutines waited longer
// than half a hold to run (lag, from startLagProbe; a loaded machine), a
// missing report skips the test instead of failing it.
func checkStallsName(t *testing.T, stalls []StallInfo, ids []uint64, hold time.Duration, how string, lag time.Duration) {
	t.Helper()
	reported := map[uint64]bool{}
	for _, s := range stalls {
		if !slices.Contains(ids, s.TaskID) {
			t.Errorf("stall reported with TaskID %d, want one of the completing tasks %v: %+v", s.TaskID, ids, s)
		}
		reported[s.TaskID] = true
	}
	for _, id := range ids {
		if !reported[id] {
			if lag > hold/2 {
				t.Skipf("task %d's hold of %v was not reported, but goroutines waited up to %v to run: the watchdog could not sample within it (reports: %+v)", id, hold, lag, stalls)
			}
			t.Errorf("task %d held its worker for %v while it completed%s, and no stall named it (reports: %+v; goroutines waited up to %v to run)", id, hold, how, stalls, lag)
		}
	}
}

// startLagProbe measures, until the returned function is called, how
// much later than asked a goroutine sleeping 2 ms at a time wakes: what
// the watchdog's own sampling goroutine may suffer on a loaded machine.
// The function returns the largest lag seen.
func startLagProbe() func() time.Duration {
	stop := make(chan struct{})
	done := make(chan time.Duration)
	go func() {
		var most time.Duration
		for {
			select {
			case <-stop:
				done <- most
				return
			default:
			}
			start := time.Now()
			time.Sleep(2 * time.Millisecond)
			most = max(most, time.Since(start)-2*time.Millisecond)
		}
	}()
	return func() time.Duration {
		close(stop)
		return <-done
	}
}

// The same for a task that called runtime.Goexit: the worker completes it
// (with ErrGoexit) in onExit, where its goroutine ends, or, on a pinned
// worker, when its coroutine retires. Both stopped naming the task (they
// cleared the worker's current coroutine) before they completed it, so a
// stall there was not reported at all.
func TestStallWhileCompletingAGoexitTaskNamesIt(t *testing.T) {
	for _, pinned := range []bool{false, true} {
		name := "loop"
		if pinned {
			name = "pinned"
		}
		t.Run(name, func(t *testing.T) {
			var (
				mu     sync.Mutex
				stalls []StallInfo
			)
			rt := newRuntime(t, Config{Workers: 1, IOInterval: 1, PinnedWorkers: pinned, StallThreshold: 10 * time.Millisecond, OnStall: func(s StallInfo) {
				mu.Lock()
				stalls = append(stalls, s)
				mu.Unlock()
			}})
			const (
				rounds = 2
				hold   = 100 * time.Millisecond
			)
			var ids []uint64
			lag := startLagProbe()
			_, err := BlockOn(rt, func(ctx context.Context) (int, error) {
				for range rounds {
					// Queued behind the completion: the stall has work
					// waiting.
					Spawn(ctx, func(context.Context) (int, error) { return 0, nil })
					var id atomic.Uint64
					h := Spawn(slowStopCtx{ctx, hold}, func(ctx context.Context) (int, error) {
						id.Store(Current(ctx).ID())
						goexitNow()
						return 0, nil
					})
					if _, err := h.Join(ctx); !errors.Is(err, ErrGoexit) {
						return 0, fmt.Errorf("Join of a task that called Goexit = %v, want ErrGoexit", err)
					}
					ids = append(ids, id.Load())
				}
				return 0, nil
			})
			if err != nil {
				t.Fatal(err)
			}
			most := lag()
			mu.Lock()
			defer mu.Unlock()
			checkStallsName(t, stalls, ids, hold, " after Goexit", most)
		})
	}
}
