package runtime

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// The schedule rule itself, on fixed instants: tokio's. A tick taken more
// than 5 ms after its instant is late; Delay then restarts the schedule
// from the moment it was taken, even when less than a period was missed.
// Burst and Skip keep their grids.
func TestIntervalScheduleRule(t *testing.T) {
	const period = 40 * time.Millisecond
	tick := time.Now()
	for _, tc := range []struct {
		missed MissedTickBehavior
		late   time.Duration // when the tick is taken, after its instant
		want   time.Duration // next tick, after tick
	}{
		{Delay, 0, period},
		{Delay, delayTolerance, period}, // within the tolerance: on schedule
		{Delay, delayTolerance + time.Nanosecond, delayTolerance + time.Nanosecond + period},
		{Delay, period / 2, period/2 + period},
		{Delay, period, 2 * period},
		{Delay, 3*period + period/4, 4*period + period/4},
		{Burst, 0, period},
		{Burst, period / 2, period},
		{Burst, 3*period + period/4, period},
		{Skip, 0, period},
		{Skip, period / 2, period},
		{Skip, period, period},
		{Skip, 3*period + period/4, 4 * period},
	} {
		iv := &Interval{period: period, missed: tc.missed}
		if got := iv.after(tick, tick.Add(tc.late), delayTolerance).Sub(tick); got != tc.want {
			name := [...]string{Burst: "Burst", Delay: "Delay", Skip: "Skip"}[tc.missed]
			t.Errorf("%s, tick taken %v late: next tick %v after it, want %v", name, tc.late, got, tc.want)
		}
	}
}

// Delay, end to end: the second tick is taken half a period late, which is
// past the tolerance, so the third comes one period after the second was
// taken, not on the original grid (a wait of half a period). From a plain
// goroutine and from a task. The bounds are lower bounds only: Tick never
// returns early, but on a loaded machine it may return late.
func TestIntervalDelayLateByLessThanPeriod(t *testing.T) {
	const period = 40 * time.Millisecond
	check := func(ctx context.Context) error {
		iv, err := NewInterval(period, Delay)
		if err != nil {
			return err
		}
		first, err := iv.Tick(ctx) // at once
		if err != nil {
			return err
		}
		if err := Sleep(ctx, period+period/2); err != nil {
			return err
		}
		before := time.Now() // the late tick is taken after this
		late, err := iv.Tick(ctx)
		if err != nil {
			return err
		}
		if want := first.Add(period); !late.Equal(want) {
			return fmt.Errorf("second tick scheduled %v after the first, want %v", late.Sub(first), period)
		}
		next, err := iv.Tick(ctx)
		if err != nil {
			return err
		}
		if d := next.Sub(before); d < period {
			return fmt.Errorf("a tick taken %v late: next tick scheduled %v after it was taken, want at least a period (%v)",
				before.Sub(late), d, period)
		}
		if d := time.Since(before); d < period {
			return fmt.Errorf("next tick returned %v after the late one was taken, want at least a period (%v)", d, period)
		}
		return nil
	}
	fromGoroutineAndTask(t, context.Background(), check)
}

// The zero Interval has no period. Its Tick returns ErrPeriod at once,
// every time, whatever its MissedTickBehavior and also after Reset, instead
// of "ticking" at once forever, which turned a loop over Tick into a spin.
// From a plain goroutine and from a task.
func TestIntervalZeroValue(t *testing.T) {
	check := func(ctx context.Context) error {
		for _, m := range []MissedTickBehavior{Burst, Delay, Skip} {
			var iv Interval
			iv.missed = m
			for i := range 3 {
				if i == 2 {
					iv.Reset()
				}
				tick, err := iv.Tick(ctx)
				if !errors.Is(err, ErrPeriod) || !tick.IsZero() {
					return fmt.Errorf("missed=%d: Tick %d on the zero Interval = %v, %v; want the zero time, ErrPeriod", m, i, tick, err)
				}
			}
		}
		return nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	fromGoroutineAndTask(t, ctx, check)
}

// fromGoroutineAndTask runs check from a plain goroutine with ctx, then
// from a task on a runtime of one worker, and reports each failure.
func fromGoroutineAndTask(t *testing.T, ctx context.Context, check func(context.Context) error) {
	t.Helper()
	if err := check(ctx); err != nil {
		t.Errorf("goroutine: %v", err)
	}
	rt := newRuntime(t, Config{Workers: 1})
	if _, err := BlockOn(rt, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, check(ctx)
	}); err != nil {
		t.Errorf("task: %v", err)
	}
}
