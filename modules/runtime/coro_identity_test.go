package runtime

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// coroCount sums the live-coroutine counters.
func coroCount() int64 {
	var n int64
	for i := range coroBuckets {
		n += int64(coroBuckets[i].Load())
	}
	return n
}

// Which goroutine is a coroutine, under concurrent use: tasks of two
// runtimes, moving between workers (they yield and sleep), each find
// themselves with a context not their own (taskFor) while plain goroutines,
// one of them holding a task's context, keep being told that they are not
// tasks. More tasks sleep at once than the workers keep idle coroutines
// for, so coroutines end while others run. Once both runtimes are closed,
// every coroutine they made has been counted out and no worker of theirs is
// left for coroOf to look at.
func TestCoroutineIdentity(t *testing.T) {
	before := coroCount()
	const tasks, rounds = 3 * maxIdleCoros, 20
	var stop atomic.Bool
	var goroutines sync.WaitGroup
	var leaked atomic.Pointer[context.Context]
	var failed atomic.Pointer[string]
	fail := func(format string, args ...any) {
		msg := fmt.Sprintf(format, args...)
		failed.CompareAndSwap(nil, &msg)
	}
	for range 2 {
		goroutines.Go(func() {
			for !stop.Load() {
				if OnTask() {
					fail("a plain goroutine passed for a task (OnTask)")
				}
				if p := leaked.Load(); p != nil && InTask(*p) {
					fail("a plain goroutine holding a task's context passed for a task (InTask)")
				}
			}
		})
	}
	var runtimes sync.WaitGroup
	for r := range 2 {
		rt, err := New(Config{Workers: 2})
		if err != nil {
			t.Fatal(err)
		}
		runtimes.Go(func() {
			defer func() {
				if err := rt.Close(); err != nil {
					fail("Close: %v", err)
				}
			}()
			_, err := BlockOn(rt, func(ctx context.Context) (struct{}, error) {
				leaked.CompareAndSwap(nil, &ctx)
				for i := range tasks {
					Spawn(ctx, func(ctx context.Context) (struct{}, error) {
						err := identityRounds(ctx, r, i, rounds)
						if err != nil {
							fail("%v", err)
						}
						return struct{}{}, err
					})
				}
				return struct{}{}, nil
			})
			if err != nil {
				fail("BlockOn: %v", err)
			}
		})
	}
	runtimes.Wait()
	stop.Store(true)
	goroutines.Wait()
	if p := failed.Load(); p != nil {
		t.Fatal(*p)
	}
	if after := coroCount(); after != before {
		t.Errorf("%d live coroutines counted after both runtimes closed, %d before they started", after, before)
	}
	if ws := allWorkers.list.Load(); ws != nil && len(*ws) != 0 {
		t.Errorf("%d workers of closed runtimes still registered", len(*ws))
	}
}

// identityRounds is a task of TestCoroutineIdentity: it checks that it is
// found to be itself, between yields and short sleeps.
func identityRounds(ctx context.Context, r, i, rounds int) error {
	me := Current(ctx)
	for k := range rounds {
		if got := taskFor(context.Background()); got != me {
			return fmt.Errorf("runtime %d task %d round %d: taskFor gave task %p, want %p", r, i, k, got, me)
		}
		if !OnTask() {
			return fmt.Errorf("runtime %d task %d round %d: OnTask is false in a task", r, i, k)
		}
		var err error
		if k%2 == 0 {
			err = Yield(ctx)
		} else {
			err = Sleep(ctx, time.Duration(i%7)*100*time.Microsecond)
		}
		if err != nil {
			return err
		}
	}
	return nil
}
