package bench

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"github.com/faio-go/faio"
)

// W5: Timers tasks each sleep a pseudo-random duration in
// [MinSleep, MaxSleep] (fixed seed, whole microseconds) and record their
// lateness: the time they actually slept minus the time they asked for.
// The measurement is the wall time of the whole run; the latencies are the
// lateness percentiles. No sleep may end early, and every one must end.
//
// Each run happens in a fresh child process (see runIsolated) unless
// Env.InProcess says this is that child. Go keeps the descriptor and stack
// of every goroutine that ends for the next one to start, and W5 starts
// tens of thousands that live at once (faio's coroutines are goroutines
// too): in one process, the side that ran second started on the first
// side's and spent 25-35% less time spawning (goroutines after faio:
// 341-366 ms of wall time against 461-467 ms first, 3 runs each; faio
// after goroutines: 409-413 ms against 505-529 ms first).

// timerSeed fixes the sleep durations, so both implementations sleep the
// same ones.
const timerSeed = 5

// notFired marks a lateness slot whose timer never fired.
const notFired = time.Duration(math.MinInt64)

// sleepDurations returns the durations of the W5 sleeps.
func sleepDurations(s Sizes) []time.Duration {
	rng := rand.New(rand.NewPCG(timerSeed, timerSeed))
	span := int64((s.MaxSleep - s.MinSleep) / time.Microsecond)
	ds := make([]time.Duration, s.Timers)
	for i := range ds {
		ds[i] = s.MinSleep + time.Duration(rng.Int64N(span+1))*time.Microsecond
	}
	return ds
}

// newLateness returns n lateness slots marked notFired.
func newLateness(n int) []time.Duration {
	late := make([]time.Duration, n)
	for i := range late {
		late[i] = notFired
	}
	return late
}

func timersFaio(env *Env) (Measurement, error) {
	if !env.InProcess {
		return runIsolated(env, "W5", Faio)
	}
	ds := sleepDurations(env.Sizes)
	late := newLateness(len(ds))
	var errs firstError
	var elapsed time.Duration
	err := withRuntime(env, func(rt *faio.Runtime) error {
		var err error
		elapsed, err = timeBlockOn(rt, func(ctx context.Context) error {
			spawnEach(ctx, len(ds), &errs, func(ctx context.Context, i int) error {
				start := time.Now()
				if err := faio.Sleep(ctx, ds[i]); err != nil {
					return err
				}
				late[i] = time.Since(start) - ds[i]
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
	return timersResult(late, elapsed)
}

func timersGoroutines(env *Env) (Measurement, error) {
	if !env.InProcess {
		return runIsolated(env, "W5", Goroutines)
	}
	ds := sleepDurations(env.Sizes)
	late := newLateness(len(ds))
	start := time.Now()
	var wg sync.WaitGroup
	for i, d := range ds {
		wg.Go(func() {
			start := time.Now()
			time.Sleep(d)
			late[i] = time.Since(start) - d
		})
	}
	wg.Wait()
	return timersResult(late, time.Since(start))
}

// timersResult checks that every timer fired and none early, then
// summarises the lateness.
func timersResult(late []time.Duration, elapsed time.Duration) (Measurement, error) {
	missing, early := 0, 0
	var earliest time.Duration
	for _, l := range late {
		switch {
		case l == notFired:
			missing++
		case l < 0:
			early++
			earliest = min(earliest, l)
		}
	}
	if missing > 0 || early > 0 {
		return Measurement{}, fmt.Errorf("%w: of %d timers, %d never fired and %d fired early (up to %v early)",
			ErrValidation, len(late), missing, early, -earliest)
	}
	return withLatencies(Measurement{Ops: int64(len(late)), Elapsed: elapsed}, late), nil
}
