package runtime

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// A worker owes its finished children's count to their parent only while
// it runs another child of that parent (worker.owe). Here the last child
// of a BlockOn root starts an unrelated task that spins without yielding,
// on the same (only) worker: BlockOn must return while it spins, not when
// it ends. Had the worker kept owing the root's count, BlockOn would wait
// for the spinner's ten seconds.
func TestTreeIsLeftBeforeAnUnrelatedTaskRuns(t *testing.T) {
	rt := newRuntime(t, Config{Workers: 1})
	const kids = 200
	var finished atomic.Int64
	var returned atomic.Bool
	spun := make(chan time.Duration, 1)
	spinner := func(ctx context.Context) (struct{}, error) {
		start := time.Now()
		for !returned.Load() && time.Since(start) < 10*time.Second {
		}
		spun <- time.Since(start)
		return struct{}{}, nil
	}
	_, err := BlockOn(rt, func(ctx context.Context) (struct{}, error) {
		for range kids {
			Spawn(ctx, func(ctx context.Context) (struct{}, error) {
				if finished.Add(1) == kids {
					SpawnOn(rt, spinner)
				}
				return struct{}{}, nil
			})
		}
		return struct{}{}, nil
	})
	returned.Store(true)
	if err != nil {
		t.Fatal(err)
	}
	if n := finished.Load(); n != kids {
		t.Fatalf("BlockOn returned after %d of %d children", n, kids)
	}
	if d := <-spun; d >= 10*time.Second {
		t.Fatalf("BlockOn returned only once the unrelated task stopped spinning (%v)", d)
	}
}

// Children counted in advance by their parent's own spawns (addOwnKid),
// children spawned with the parent's context by other tasks and by plain
// goroutines, and children that finish on whichever worker: BlockOn
// returns once every one of them has finished, never before, and the tree
// is empty afterwards.
func TestTreeCountsEveryKindOfSpawn(t *testing.T) {
	rt := newRuntime(t, Config{Workers: 2})
	const rounds, fanout = 20, 150
	for range rounds {
		var spawned, done atomic.Int64
		child := func(ctx context.Context) (struct{}, error) {
			if spawned.Load()%7 == 0 {
				_ = Yield(ctx)
			}
			done.Add(1)
			return struct{}{}, nil
		}
		// A debt never paid, or a credit never returned, would make
		// BlockOn wait for ever: that fails here instead of hanging.
		var err error
		within(t, 10*time.Second, "BlockOn", func() {
			_, err = BlockOn(rt, func(ctx context.Context) (struct{}, error) {
				var wg sync.WaitGroup
				for i := range fanout {
					switch i % 3 {
					case 0: // by the parent itself
						spawned.Add(1)
						Spawn(ctx, child)
					case 1: // by a plain goroutine, with the parent's context
						spawned.Add(1)
						wg.Add(1)
						go func() {
							defer wg.Done()
							Spawn(ctx, child)
						}()
					case 2: // by a child, with the parent's context
						spawned.Add(2)
						Spawn(ctx, func(context.Context) (struct{}, error) {
							Spawn(ctx, child)
							done.Add(1)
							return struct{}{}, nil
						})
					}
				}
				wg.Wait()
				return struct{}{}, nil
			})
		})
		if err != nil {
			t.Fatal(err)
		}
		if s, d := spawned.Load(), done.Load(); d != s {
			t.Fatalf("BlockOn returned after %d of %d tasks finished", d, s)
		}
	}
	settled(t, rt, func(s Stats) bool { return s.Live == 0 })
	// Every count owed to the root is paid once the workers turn to
	// something else, or to nothing.
	for deadline := time.Now().Add(5 * time.Second); rt.root.kids.Load() != 0; {
		if time.Now().After(deadline) {
			t.Fatalf("the root still counts %d children", rt.root.kids.Load())
		}
		time.Sleep(time.Millisecond)
	}
}

// A task's context may outlive the task. Spawning with it once the task has
// finished, and everything under it with it, starts the new task at the top
// level. It used to become the finished task's child again, which made that
// task leave the tree a second time when the child ended: its parent's
// list of children lost its head, and its count a live child, so that the
// BlockOn around them returned while a task under it still ran.
func TestSpawnWithTheContextOfAFinishedTask(t *testing.T) {
	rt := newRuntime(t, Config{Workers: 2})
	ctxA := make(chan context.Context, 1)
	release := make(chan struct{})
	var bLinked atomic.Bool
	blockOn := make(chan error, 1)
	go func() {
		_, err := BlockOn(rt, func(ctx context.Context) (struct{}, error) {
			// B sleeps (so it is in the tree's list) until released.
			Spawn(ctx, func(ctx context.Context) (struct{}, error) {
				for {
					if err := Sleep(ctx, time.Millisecond); err != nil {
						return struct{}{}, err
					}
					bLinked.Store(true)
					select {
					case <-release:
						return struct{}{}, nil
					default:
					}
				}
			})
			// A sleeps too, then hands its context out and ends.
			a := Spawn(ctx, func(ctx context.Context) (struct{}, error) {
				for !bLinked.Load() {
					if err := Sleep(ctx, time.Millisecond); err != nil {
						return struct{}{}, err
					}
				}
				ctxA <- ctx
				return struct{}{}, nil
			})
			_, err := a.Join(ctx)
			return struct{}{}, err
		})
		blockOn <- err
	}()
	ctx := <-ctxA
	a := Current(ctx)
	for deadline := time.Now().Add(5 * time.Second); a.kids.Load() != kidsFinished; {
		if time.Now().After(deadline) {
			t.Fatalf("A never finished: kids = %#x", a.kids.Load())
		}
		time.Sleep(time.Millisecond)
	}
	v, err := Spawn(ctx, func(context.Context) (int, error) { return 7, nil }).Join(context.Background())
	if v != 7 || err != nil {
		t.Fatalf("late child: %d, %v", v, err)
	}
	select {
	case err := <-blockOn:
		t.Fatalf("BlockOn returned (%v) while a task under it still ran", err)
	case <-time.After(100 * time.Millisecond):
	}
	close(release)
	if err := <-blockOn; err != nil {
		t.Fatal(err)
	}
	settled(t, rt, func(s Stats) bool { return s.Live == 0 })
}
