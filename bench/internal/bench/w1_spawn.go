package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/faio-go/faio"
)

// W1: spawn Spawns tasks that do nothing but mark themselves done, and
// wait for all of them. The mark (one byte per task, no sharing) is what
// validation checks: every task ran.

func spawnFaio(env *Env) (Measurement, error) {
	n := env.Sizes.Spawns
	done := make([]byte, n)
	var elapsed time.Duration
	err := withRuntime(env, func(rt *faio.Runtime) error {
		var err error
		elapsed, err = timeBlockOn(rt, func(ctx context.Context) error {
			for i := range n {
				faio.Spawn(ctx, func(context.Context) (struct{}, error) {
					done[i] = 1
					return struct{}{}, nil
				})
			}
			return nil
		})
		return err
	})
	if err != nil {
		return Measurement{}, err
	}
	return Measurement{Ops: int64(n), Elapsed: elapsed}, checkAllDone(done)
}

func spawnGoroutines(env *Env) (Measurement, error) {
	n := env.Sizes.Spawns
	done := make([]byte, n)
	start := time.Now()
	// One Add for all, and Done without a defer: the cheapest way to
	// start and wait for n goroutines.
	var wg sync.WaitGroup
	wg.Add(n)
	for i := range n {
		go func() {
			done[i] = 1
			wg.Done()
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	return Measurement{Ops: int64(n), Elapsed: elapsed}, checkAllDone(done)
}

// checkAllDone reports the tasks that did not mark themselves done.
func checkAllDone(done []byte) error {
	missing, first := 0, -1
	for i, d := range done {
		if d != 1 {
			if first < 0 {
				first = i
			}
			missing++
		}
	}
	if missing > 0 {
		return fmt.Errorf("%w: %d of %d tasks did not run (first: #%d)", ErrValidation, missing, len(done), first)
	}
	return nil
}
