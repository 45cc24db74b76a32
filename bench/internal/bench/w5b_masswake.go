package bench

import (
	"context"
	"errors"
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
//
// Where creating the sleepers takes longer than SleepMargin (a host whose
// page faults are slow needs about 15 s for the 3 GB of a million), the
// attempt is dropped once its sleepers have woken, and the run makes
// another attempt with twice the margin, up to massWakeAttempts in all;
// the JSON line records the margin that held (sleep_margin_s). Each later
// attempt runs in a fresh process: in the process of a dropped attempt,
// Go keeps the million dead goroutines (and their stacks) for reuse, and
// there the wake-ups took 1.0-3.1 s where first attempts took 0.75-0.94 s.
// A child reports failure only by its exit status, so the last overrun is
// the child's error (its message, on stderr, names the margin).

// massWakeAttempts bounds the attempts of one W5b run: 15 s, 30 s, then
// 60 s at full size. Two were not enough for CI's -quick run on a machine
// loaded by other work (100,000 sleepers took 1.7 s, then 3.5 s, to
// spawn: past 1.5 and 3 s).
const massWakeAttempts = 3

// errSpawnOverran reports an attempt whose spawning ended after its
// deadline.
var errSpawnOverran = errors.New("sleep_margin too short")

// massWake runs attempt with SleepMargin here and, where the spawning
// overran the margin, retry with twice the margin each time, up to
// massWakeAttempts attempts in all. A child process (Env.InProcess) makes the one attempt
// it was started for.
func massWake(env *Env, attempt func(margin time.Duration) (Measurement, error), retry func(margin time.Duration) (Measurement, error)) (Measurement, error) {
	margin := env.Sizes.SleepMargin
	// Every attempt in a fresh process, the first one too (as W5 and
	// W6d): in this process the goroutine side would run in what the
	// faio side's million coroutines (goroutines) left, and both sides
	// in what W1 ... W5 left.
	first := attempt
	if !env.InProcess {
		first = retry
	}
	m, err := first(margin)
	for i := 2; err != nil && errors.Is(err, errSpawnOverran) && !env.InProcess && i <= massWakeAttempts; i++ {
		fmt.Fprintf(env.Log, "faio-bench: W5b: %v; again in a new process with sleep_margin %v\n", err, 2*margin)
		margin *= 2
		m, err = retry(margin)
	}
	if err != nil {
		return Measurement{}, err
	}
	m.SleepMargin = margin
	return m, nil
}

// massWakeIsolated makes one W5b attempt of impl with the given margin in a
// child process.
func massWakeIsolated(env *Env, impl Impl, margin time.Duration) (Measurement, error) {
	child := *env
	child.Sizes.SleepMargin = margin
	return runIsolated(&child, "W5b", impl)
}

func massWakeFaio(env *Env) (Measurement, error) {
	return massWake(env, func(margin time.Duration) (Measurement, error) {
		return massWakeFaioOnce(env, margin)
	}, func(margin time.Duration) (Measurement, error) {
		return massWakeIsolated(env, Faio, margin)
	})
}

func massWakeFaioOnce(env *Env, margin time.Duration) (Measurement, error) {
	s := env.Sizes
	woke := make([]time.Time, s.Sleepers)
	var errs firstError
	var deadline, spawned time.Time
	err := withRuntime(env, func(rt *faio.Runtime) error {
		_, err := timeBlockOn(rt, func(ctx context.Context) error {
			deadline = time.Now().Add(margin)
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
	return massWakeResult(s, margin, deadline, spawned, woke)
}

func massWakeGoroutines(env *Env) (Measurement, error) {
	return massWake(env, func(margin time.Duration) (Measurement, error) {
		return massWakeGoroutinesOnce(env.Sizes, margin)
	}, func(margin time.Duration) (Measurement, error) {
		return massWakeIsolated(env, Goroutines, margin)
	})
}

func massWakeGoroutinesOnce(s Sizes, margin time.Duration) (Measurement, error) {
	woke := make([]time.Time, s.Sleepers)
	deadline := time.Now().Add(margin)
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
	return massWakeResult(s, margin, deadline, spawned, woke)
}

// massWakeResult checks that every sleeper woke, none early, and that the
// spawning ended before the deadline (else the figure would include it).
//
// An overrun is reported as errSpawnOverran, which massWake retries with a
// longer margin; after the last attempt it is a validation failure.
func massWakeResult(s Sizes, margin time.Duration, deadline, spawned time.Time, woke []time.Time) (Measurement, error) {
	if spawned.After(deadline) {
		return Measurement{}, fmt.Errorf("%w: %w: spawning %d sleepers ended %v after the start, past the deadline at %v", ErrValidation, errSpawnOverran, s.Sleepers, spawned.Sub(deadline.Add(-margin)).Round(time.Millisecond), margin)
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
