package bench

import (
	"context"
	goruntime "runtime"
	"sync"
	"time"

	"github.com/faio-go/faio"
)

// W8: YieldTasks tasks each yield to the scheduler Yields times (faio's
// Yield, runtime.Gosched for goroutines). Each counts its completed yields
// in a local and stores the count once at the end (adjacent counters
// written on every yield from two Ps would measure false sharing, not the
// scheduler); the total must be YieldTasks*Yields.

func yieldFaio(env *Env) (Measurement, error) {
	s := env.Sizes
	counts := make([]int64, s.YieldTasks)
	var errs firstError
	var elapsed time.Duration
	err := withRuntime(env, func(rt *faio.Runtime) error {
		var err error
		elapsed, err = timeBlockOn(rt, func(ctx context.Context) error {
			spawnEach(ctx, s.YieldTasks, &errs, func(ctx context.Context, i int) error {
				var n int64
				defer func() { counts[i] = n }()
				for range s.Yields {
					if err := faio.Yield(ctx); err != nil {
						return err
					}
					n++
				}
				return nil
			})
			return nil
		})
		return err
	})
	if err == nil {
		err = errs.get()
	}
	if err != nil {
		return Measurement{}, err
	}
	return yieldResult(s, counts, elapsed)
}

func yieldGoroutines(env *Env) (Measurement, error) {
	s := env.Sizes
	counts := make([]int64, s.YieldTasks)
	start := time.Now()
	var wg sync.WaitGroup
	for i := range s.YieldTasks {
		wg.Go(func() {
			var n int64
			for range s.Yields {
				goruntime.Gosched()
				n++
			}
			counts[i] = n
		})
	}
	wg.Wait()
	return yieldResult(s, counts, time.Since(start))
}

func yieldResult(s Sizes, counts []int64, elapsed time.Duration) (Measurement, error) {
	var total int64
	for _, c := range counts {
		total += c
	}
	ops := int64(s.YieldTasks) * int64(s.Yields)
	return Measurement{Ops: ops, Elapsed: elapsed}, checkEqual("yields done", total, ops)
}
