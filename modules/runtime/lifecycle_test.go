package runtime

import (
	"context"
	gosync "sync"
	"testing"
	"time"
)

// A SpawnOn that passed newTask's first closing check before Close began
// but counts its task on the root only once Close has found the root idle
// must fail with ErrClosed, not queue a task that no worker will run. That
// interleaving is forced here with two hooks; before, the task was queued
// after the workers' last look and its Join waited forever (a reviewer
// found it racing SpawnOn against Close at GOMAXPROCS=8, in about one
// race in 2,000).
func TestSpawnOnRacingCloseCompletes(t *testing.T) {
	rt, err := New(Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	inSpawn, spawnGo := make(chan struct{}), make(chan struct{})
	closeIdle, closeGo := make(chan struct{}), make(chan struct{})
	testHookRootKid = func() {
		close(inSpawn)
		<-spawnGo
	}
	testHookCloseIdle = func() {
		close(closeIdle)
		<-closeGo
	}
	defer func() { testHookRootKid, testHookCloseIdle = nil, nil }()

	spawned := make(chan *JoinHandle[int])
	go func() { spawned <- SpawnOn(rt, func(context.Context) (int, error) { return 1, nil }) }()
	<-inSpawn // past the first closing check
	testHookRootKid = nil
	closed := make(chan error)
	go func() { closed <- rt.Close() }()
	<-closeIdle // Close found the root idle
	close(spawnGo)
	h := <-spawned
	close(closeGo)
	if err := <-closed; err != nil {
		t.Fatal(err)
	}
	select {
	case <-h.Done():
	case <-time.After(5 * time.Second):
		t.Fatal("the task of a SpawnOn that raced Close never completed")
	}
	if _, err := h.Join(context.Background()); err != ErrClosed {
		t.Errorf("Join = %v, want ErrClosed", err)
	}
}

// Joins that time out, from a task and from a plain goroutine, leave no
// Wakers piling up on a task that runs on: a new Join drops those whose
// wait is over. Before, each timed-out Join left its Waker until the task
// ended (3,321 of 4,000 here, found by a reviewer).
func TestTimedOutJoinsLeaveNoWakers(t *testing.T) {
	rt := newRuntime(t, Config{Workers: 2})
	stop := make(chan struct{})
	h := SpawnOn(rt, func(ctx context.Context) (int, error) {
		for {
			select {
			case <-stop:
				return 1, nil
			default:
			}
			if err := Sleep(ctx, time.Millisecond); err != nil {
				return 0, err
			}
		}
	})
	joinBriefly := func(ctx context.Context) {
		c, cancel := context.WithTimeout(ctx, 10*time.Microsecond)
		defer cancel()
		if _, err := h.Join(c); err != context.DeadlineExceeded {
			t.Errorf("Join = %v, want DeadlineExceeded", err)
		}
	}
	if _, err := BlockOn(rt, func(ctx context.Context) (int, error) {
		for range 2000 {
			joinBriefly(ctx)
		}
		return 0, nil
	}); err != nil {
		t.Fatal(err)
	}
	for range 2000 {
		joinBriefly(context.Background())
	}
	h.task.mu.Lock()
	n := 0
	if h.task.ext != nil {
		n = len(h.task.ext.joiners)
	}
	h.task.mu.Unlock()
	close(stop)
	if v, err := h.Join(context.Background()); v != 1 || err != nil {
		t.Fatalf("final Join = %d, %v", v, err)
	}
	if n > 4 {
		t.Errorf("%d Wakers of timed-out Joins kept by a running task after 4,000 of them", n)
	}
}

// A context derived from a child that finished without ever suspending
// (so without entering its parent's list of children) does not put the
// finished child into that list, where it stayed for good: 1,000 such
// children piled up under a live parent (found by a reviewer).
func TestDerivingFromAFinishedChildDoesNotRelinkIt(t *testing.T) {
	rt := newRuntime(t, Config{Workers: 2})
	n, err := BlockOn(rt, func(ctx context.Context) (int, error) {
		for i := range 1000 {
			// Odd ones suspend: linked, then unlinked when they end.
			c, err := finishedChild(ctx, i%2 == 1, nil)
			if err != nil {
				return 0, err
			}
			_, cancel := context.WithCancel(c)
			cancel()
		}
		me := Current(ctx)
		me.mu.Lock()
		defer me.mu.Unlock()
		n := 0
		for k := me.children; k != nil; k = k.next {
			n++
		}
		if me.ext != nil {
			n += len(me.ext.afterFuncs) // followers of finished children
		}
		return n, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Errorf("%d finished children (or their followers) kept by their live parent", n)
	}
}

// A context derived from a child task follows the cancellation of the
// child's parent, whether it was derived while the child ran (and the
// child then finished and left the tree) or after the child finished, with
// or without the child ever suspending; and Done reaches a running child
// that never suspends, polling it.
func TestDerivedContextsOfAFinishedChildFollowItsParent(t *testing.T) {
	rt := newRuntime(t, Config{Workers: 2})
	type derived struct {
		before, after             context.Context
		cancelBefore, cancelAfter func()
	}
	for _, suspends := range []bool{false, true} {
		got := make(chan derived, 1)
		outer := SpawnOn(rt, func(ctx context.Context) (int, error) {
			var d derived
			child, err := finishedChild(ctx, suspends, func(c context.Context) {
				d.before, d.cancelBefore = context.WithCancel(c)
			})
			if err != nil {
				return 0, err
			}
			d.after, d.cancelAfter = context.WithCancel(child)
			got <- d
			// Until cancelled; it then returns, without cancelling the
			// derived contexts itself.
			_ = Sleep(ctx, time.Hour)
			return 0, nil
		})
		d := <-got
		defer d.cancelBefore()
		defer d.cancelAfter()
		outer.Cancel()
		for name, c := range map[string]context.Context{"derived while it ran": d.before, "derived after it finished": d.after} {
			select {
			case <-c.Done():
			case <-time.After(5 * time.Second):
				t.Errorf("suspended %v: a context %s was not cancelled with its parent", suspends, name)
			}
		}
		_, _ = outer.Join(context.Background())
	}

	// A running child that never suspends, polling Done.
	started := make(chan struct{})
	saw := make(chan bool, 1)
	outer := SpawnOn(rt, func(ctx context.Context) (int, error) {
		return Spawn(ctx, func(c context.Context) (int, error) {
			close(started)
			for end := time.Now().Add(5 * time.Second); time.Now().Before(end); {
				select {
				case <-c.Done():
					saw <- true
					return 0, nil
				default:
				}
			}
			saw <- false
			return 0, nil
		}).Join(ctx)
	})
	<-started
	outer.Cancel()
	if !<-saw {
		t.Error("Done of a running child that never suspends did not close with its parent's cancellation")
	}
	_, _ = outer.Join(context.Background())
}

// The context of a task that finished follows its parent's cancellation
// (Err), whether or not the task ever suspended: one that had suspended
// stayed marked as linked once out of the list, and answered nil for good
// (found by a reviewer).
func TestFinishedTaskErrFollowsItsParent(t *testing.T) {
	for _, suspends := range []bool{false, true} {
		rt := newRuntime(t, Config{Workers: 2})
		got := make(chan [2]error, 1)
		outer := SpawnOn(rt, func(ctx context.Context) (int, error) {
			child, err := finishedChild(ctx, suspends, nil)
			if err != nil {
				return 0, err
			}
			grandchild, err := Spawn(child, func(c context.Context) (context.Context, error) { return c, nil }).Join(ctx)
			if err != nil {
				return 0, err
			}
			_ = Sleep(ctx, time.Hour) // until cancelled
			got <- [2]error{child.Err(), grandchild.Err()}
			return 0, nil
		})
		time.Sleep(20 * time.Millisecond)
		outer.Cancel()
		errs := <-got
		if errs[0] != context.Canceled || errs[1] != context.Canceled {
			t.Errorf("suspended %v: after the parent's cancellation, finished child's Err = %v, its finished child's = %v; want context.Canceled", suspends, errs[0], errs[1])
		}
		_, _ = outer.Join(context.Background())
	}
}

// A wait that ends at its context's deadline returns once ctx.Err()
// reports the deadline too: the worker's wheel often fires before the Go
// timer behind the context, and callers tell a timeout from other ends by
// ctx.Err(). Before, about half of such waits returned with ctx.Err() still
// nil (found by a reviewer, through Receiver.All).
func TestDeadlineEndedWaitAgreesWithCtxErr(t *testing.T) {
	rt := newRuntime(t, Config{Workers: 2})
	type tally struct{ sleeps, suspends, early int }
	got, err := BlockOn(rt, func(ctx context.Context) (tally, error) {
		var n tally
		for i := range 300 {
			d := time.Duration(200+i%7*100) * time.Microsecond
			dctx, cancel := context.WithTimeout(ctx, d)
			if err := Sleep(dctx, time.Hour); err != context.DeadlineExceeded || dctx.Err() == nil {
				n.sleeps++
			}
			cancel()
			dctx, cancel = context.WithTimeout(ctx, d)
			err := Suspend(dctx, func(Waker) bool { return true }) // never woken
			if err != context.DeadlineExceeded || dctx.Err() == nil {
				n.suspends++
			}
			if dl, _ := dctx.Deadline(); time.Now().Before(dl) {
				n.early++
			}
			cancel()
		}
		return n, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got != (tally{}) {
		t.Errorf("of 300 each: %d Sleeps and %d Suspends ended at the deadline without ctx.Err() agreeing; %d ended early", got.sleeps, got.suspends, got.early)
	}
}

// finishedChild spawns a child of ctx's task that calls during (if not
// nil) with its context, suspends once if suspends is set (which links it
// into its parent's list until it ends), and returns; it returns the
// child's context once the child has finished.
func finishedChild(ctx context.Context, suspends bool, during func(context.Context)) (context.Context, error) {
	return Spawn(ctx, func(c context.Context) (context.Context, error) {
		if during != nil {
			during(c)
		}
		if suspends {
			return c, Sleep(c, time.Microsecond)
		}
		return c, nil
	}).Join(ctx)
}

// Stress for the flag orderings of linkSlow, unlink and AfterFunc: plain
// goroutines derive contexts from children while those children finish
// and leave the tree, on other threads. Whatever the interleaving, every
// derived context follows the parent's cancellation, and once the derived
// contexts are cancelled nothing of the children is left on the parent
// (neither in its list of children nor as a follower).
func TestDerivingWhileChildrenFinishStress(t *testing.T) {
	rt := newRuntime(t, Config{Workers: 2})
	const n = 400
	for _, keep := range []bool{false, true} {
		derived := make(chan context.Context, n)
		cancels := make(chan context.CancelFunc, n)
		ready := make(chan *Task, 1)
		outer := SpawnOn(rt, func(ctx context.Context) (int, error) {
			ctxs := make(chan context.Context, n)
			var wg gosync.WaitGroup
			for range n {
				wg.Add(1)
				go func() {
					defer wg.Done()
					d, cancel := context.WithCancel(<-ctxs) // races the child's end
					derived <- d
					cancels <- cancel
				}()
			}
			for i := range n {
				Spawn(ctx, func(c context.Context) (int, error) {
					ctxs <- c
					if i%3 == 0 {
						return 0, Sleep(c, time.Microsecond) // linked first
					}
					return 0, nil
				})
			}
			wg.Wait()
			if !keep {
				for range n {
					(<-cancels)()
				}
			}
			ready <- Current(ctx)
			_ = Sleep(ctx, time.Hour) // until cancelled
			return 0, nil
		})
		me := <-ready
		if !keep {
			// Wait for the children to have left the tree.
			deadline := time.Now().Add(5 * time.Second)
			for {
				me.mu.Lock()
				left := 0
				for k := me.children; k != nil; k = k.next {
					left++
				}
				if me.ext != nil {
					left += len(me.ext.afterFuncs)
				}
				me.mu.Unlock()
				if left == 0 {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("%d children or followers left on the parent after every derived context was cancelled", left)
				}
				time.Sleep(time.Millisecond)
			}
		}
		outer.Cancel()
		for range n {
			d := <-derived
			select {
			case <-d.Done():
			case <-time.After(5 * time.Second):
				t.Fatalf("keep %v: a derived context did not follow the parent's cancellation", keep)
			}
		}
		if keep {
			for range n {
				(<-cancels)()
			}
		}
		_, _ = outer.Join(context.Background())
	}
}
