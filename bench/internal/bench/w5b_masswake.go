package bench

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/faio-go/faio"
)

// W5b: Sleepers tasks all sleep until one deadline, SleepMargin after the
// run starts (spawning them must end before it), and each records when it
// woke. The measurement is the time from the deadline to the last wake-up
// (ns_per_op divides it by Sleepers); the latencies are each sleeper's
// lateness. Peak RSS shows what a sleeping task costs against a sleeping
// goroutine. No sleeper may wake before the deadline, and every one must
// wake.

func massWakeFaio(env *Env) (Measurement, error) {
	s := env.Sizes
	woke := make([]time.Time, s.Sleepers)
	var errs firstError
	var deadline, spawned time.Time
	err := withRuntime(env, func(rt *faio.Runtime) error {
		_, err := timeBlockOn(rt, func(ctx context.Context) error {
			deadline = time.Now().Add(s.SleepMargin)
			spawnEach(ctx, s.Sleepers, &errs, func(ctx context.Context, i int) error {
				if err := faio.SleepUntil(ctx, deadline); err != nil {
					return err
				}
				woke[i] = time.Now()
				return nil
			})
			spawned = time.Now()
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
	return massWakeResult(s, deadline, spawned, woke)
}

func massWakeGoroutines(env *Env) (Measurement, error) {
	s := env.Sizes
	woke := make([]time.Time, s.Sleepers)
	deadline := time.Now().Add(s.SleepMargin)
	var wg sync.WaitGroup
	wg.Add(s.Sleepers)
	for i := range s.Sleepers {
		go func() {
			time.Sleep(time.Until(deadline))
			woke[i] = time.Now()
			wg.Done()
		}()
	}
	spawned := time.Now()
	wg.Wait()
	return massWakeResult(s, deadline, spawned, woke)
}

// massWakeResult checks that every sleeper woke, none early, and that the
// spawning ended before the deadline (else the figure would include it).
func massWakeResult(s Sizes, deadline, spawned time.Time, woke []time.Time) (Measurement, error) {
	if spawned.After(deadline) {
		return Measurement{}, fmt.Errorf("%w: spawning %d sleepers took past the deadline (sleep_margin %v too short)", ErrValidation, s.Sleepers, s.SleepMargin)
	}
	late := make([]time.Duration, len(woke))
	var last time.Time
	for i, w := range woke {
		if w.IsZero() {
			return Measurement{}, fmt.Errorf("%w: sleeper %d never woke", ErrValidation, i)
		}
		if w.Before(deadline) {
			return Measurement{}, fmt.Errorf("%w: sleeper %d woke %v early", ErrValidation, i, deadline.Sub(w))
		}
		late[i] = w.Sub(deadline)
		if w.After(last) {
			last = w
		}
	}
	return withLatencies(Measurement{Ops: int64(len(woke)), Elapsed: last.Sub(deadline)}, late), nil
}
