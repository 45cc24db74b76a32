package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Cancelling a task in an I/O wait (its own context: stSelfCancel) races
// the completion, the task's end and the reuse of its coroutine by another
// task's I/O: a stale load in cancelWait would send ASYNC_CANCEL for the
// other task's operation, whose recv would then fail though nobody
// cancelled it.
func TestStressSelfCancelIONeverHitsAnotherTask(t *testing.T) {
	rt := newRingRuntime(t, Config{Workers: 2})
	const pairs = 32
	type sp struct{ a, b int }
	victims := make([]sp, pairs)
	targets := make([]sp, pairs)
	for i := range pairs {
		victims[i].a, victims[i].b = socketPair(t)
		targets[i].a, targets[i].b = socketPair(t)
		unix.SetNonblock(targets[i].b, true)
	}
	deadline := time.Now().Add(2 * time.Second)
	rounds := 0
	for time.Now().Before(deadline) {
		rounds++
		_, err := BlockOn(rt, func(ctx context.Context) (int, error) {
			var hs []*JoinHandle[int]
			var vs []*JoinHandle[int]
			for i := range pairs {
				// The target: a recv that is cancelled, racing its data.
				h := Spawn(ctx, func(ctx context.Context) (int, error) {
					buf := make([]byte, 1)
					_, err := Submit(ctx, &recvOp{fd: targets[i].a, buf: buf})
					return 0, err
				})
				hs = append(hs, h)
				// The victim: a recv that nobody cancels, likely on the
				// coroutine a finished target leaves.
				v := Spawn(ctx, func(ctx context.Context) (int, error) {
					buf := make([]byte, 1)
					Yield(ctx)
					res, err := Submit(ctx, &recvOp{fd: victims[i].a, buf: buf})
					if err != nil || res.Res != 1 {
						return 0, fmt.Errorf("victim %d: recv = %d, %v", i, res.Res, err)
					}
					return 0, nil
				})
				vs = append(vs, v)
			}
			var wg sync.WaitGroup
			wg.Go(func() {
				for i, h := range hs {
					if i%2 == 0 {
						unix.Write(targets[i].b, []byte{1})
					}
					h.Cancel()
				}
			})
			wg.Go(func() {
				for i := range vs {
					unix.Write(victims[i].b, []byte{1})
				}
			})
			wg.Wait()
			for _, h := range hs {
				if _, err := h.Join(ctx); err != nil && !errors.Is(err, context.Canceled) {
					return 0, err
				}
			}
			for _, v := range vs {
				if _, err := v.Join(ctx); err != nil {
					return 0, err
				}
			}
			return 0, nil
		})
		if err != nil {
			t.Fatalf("round %d: %v", rounds, err)
		}
		// Drain what cancelled recvs left behind.
		for i := range pairs {
			unix.SetNonblock(targets[i].a, true)
			var p [64]byte
			for {
				if k, _ := unix.Read(targets[i].a, p[:]); k <= 0 {
					break
				}
			}
			unix.SetNonblock(targets[i].a, false)
		}
	}
	t.Logf("%d rounds", rounds)
}
