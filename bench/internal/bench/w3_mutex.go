package bench

import (
	"context"
	"sync"
	"time"

	"github.com/faio-go/faio"
)

// W3: MutexTasks tasks each do MutexIters x (lock; counter++; unlock) on
// one mutex. The counter is a plain int, so a lost exclusion shows up as a
// final count below MutexTasks*MutexIters (and as a race under -race).

func mutexFaio(env *Env) (Measurement, error) {
	s := env.Sizes
	var mu faio.Mutex
	counter := 0
	var errs firstError
	var elapsed time.Duration
	err := withRuntime(env, func(rt *faio.Runtime) error {
		var err error
		elapsed, err = timeBlockOn(rt, func(ctx context.Context) error {
			spawnEach(ctx, s.MutexTasks, &errs, func(ctx context.Context, _ int) error {
				for range s.MutexIters {
					if err := mu.Lock(ctx); err != nil {
						return err
					}
					counter++
					mu.Unlock()
				}
				return nil
			})
			return nil
		})
		return err
	})
	return mutexResult(s, counter, elapsed, err, errs.get())
}

func mutexGoroutines(env *Env) (Measurement, error) {
	s := env.Sizes
	var mu sync.Mutex
	counter := 0
	start := time.Now()
	var wg sync.WaitGroup
	for range s.MutexTasks {
		wg.Go(func() {
			for range s.MutexIters {
				mu.Lock()
				counter++
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	return mutexResult(s, counter, time.Since(start), nil, nil)
}

func mutexResult(s Sizes, counter int, elapsed time.Duration, errs ...error) (Measurement, error) {
	for _, err := range errs {
		if err != nil {
			return Measurement{}, err
		}
	}
	ops := int64(s.MutexTasks) * int64(s.MutexIters)
	return Measurement{Ops: ops, Elapsed: elapsed}, checkEqual("mutex counter", int64(counter), ops)
}
