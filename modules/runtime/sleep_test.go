package runtime

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"
)

// The timing API held against package time and context, as a user calls
// it: from a plain goroutine and from tasks, on one and two workers, on
// io_uring and on the portable backend. A wait never ends before its time;
// the bounds on lateness are generous (a loaded machine runs these).

// fromEverywhere runs check from a plain goroutine, then from a task on
// runtimes of one and two workers, on the default backend and on the
// portable one, and reports each failure with where it happened.
func fromEverywhere(t *testing.T, check func(context.Context) error) {
	t.Helper()
	if err := check(context.Background()); err != nil {
		t.Errorf("goroutine: %v", err)
	}
	for _, b := range []Backend{BackendAuto, BackendPortable} {
		for _, n := range []int{1, 2} {
			rt := newRuntime(t, Config{Workers: n, IOBackend: b})
			if _, err := BlockOn(rt, func(ctx context.Context) (struct{}, error) {
				return struct{}{}, check(ctx)
			}); err != nil {
				t.Errorf("task (%v, %d workers): %v", rt.Backend(), n, err)
			}
		}
	}
}

// lateBound is how late a wait may end on a loaded machine before a test
// calls it a hang or a lost wake-up.
const lateBound = 2 * time.Second

// Durations at the edges: zero and negative return at once, a nanosecond
// or a microsecond is never cut short, and the longest ones (which
// overflow the wheel's clock or its range) sleep until their context ends
// it, with the context's error, as time.NewTimer and select would.
func TestTimingSleepDurationEdges(t *testing.T) {
	fromEverywhere(t, func(ctx context.Context) error {
		for _, d := range []time.Duration{0, -1, math.MinInt64, 1, time.Microsecond, 3 * time.Millisecond} {
			start := time.Now()
			if err := Sleep(ctx, d); err != nil {
				return fmt.Errorf("Sleep(%v) = %v", d, err)
			}
			if el := time.Since(start); el < d {
				return fmt.Errorf("Sleep(%v) returned after %v", d, el)
			}
		}
		for _, d := range []time.Duration{math.MaxInt64, math.MaxInt64 - 1, 1 << 62, 1 << 40} {
			const to = 20 * time.Millisecond
			start := time.Now()
			c, cancel := context.WithTimeout(ctx, to)
			err := Sleep(c, d)
			el := time.Since(start)
			cancel()
			if !errors.Is(err, context.DeadlineExceeded) || el < to || el > lateBound {
				return fmt.Errorf("Sleep(%v) under a %v timeout = %v after %v", d, to, err, el)
			}
			c, cancel = context.WithCancel(ctx)
			stop := time.AfterFunc(10*time.Millisecond, cancel)
			start = time.Now()
			err = Sleep(c, d)
			el = time.Since(start)
			stop.Stop()
			if !errors.Is(err, context.Canceled) || el > lateBound {
				return fmt.Errorf("Sleep(%v) cancelled after 10ms = %v after %v", d, err, el)
			}
			// Cancelled before the call: at once, whatever d.
			for _, d := range []time.Duration{d, 1, 0, -1} {
				if err := Sleep(c, d); !errors.Is(err, context.Canceled) {
					return fmt.Errorf("Sleep(%v) on a cancelled context = %v", d, err)
				}
			}
		}
		return nil
	})
}

// SleepUntil at the edges: instants in the past (the zero Time, the
// earliest representable one) return at once; one a few milliseconds
// ahead, with or without a monotonic reading, is never cut short; ones
// too far for any clock sleep until the context ends.
func TestTimingSleepUntilEdges(t *testing.T) {
	fromEverywhere(t, func(ctx context.Context) error {
		now := time.Now()
		for _, dl := range []time.Time{{}, now.Add(math.MinInt64), time.Unix(0, 0), now.Add(-time.Hour), now, now.Round(0)} {
			if err := SleepUntil(ctx, dl); err != nil {
				return fmt.Errorf("SleepUntil(%v) = %v", dl, err)
			}
		}
		soon := time.Now().Add(5 * time.Millisecond)
		for _, dl := range []time.Time{soon, soon.Round(0), soon.UTC()} {
			if err := SleepUntil(ctx, dl); err != nil {
				return fmt.Errorf("SleepUntil(%v) = %v", dl, err)
			}
			if n := time.Now(); n.Before(dl) {
				return fmt.Errorf("SleepUntil(%v) returned at %v, before it", dl, n)
			}
		}
		for _, dl := range []time.Time{now.Add(math.MaxInt64), time.Unix(1<<62, 0), now.Add(time.Hour).Round(0)} {
			const to = 20 * time.Millisecond
			start := time.Now()
			c, cancel := context.WithTimeout(ctx, to)
			err := SleepUntil(c, dl)
			el := time.Since(start)
			cancel()
			if !errors.Is(err, context.DeadlineExceeded) || el < to || el > lateBound {
				return fmt.Errorf("SleepUntil(%v) under a %v timeout = %v after %v", dl, to, err, el)
			}
		}
		c, cancel := context.WithCancel(ctx)
		cancel()
		if err := SleepUntil(c, now.Add(-time.Hour)); !errors.Is(err, context.Canceled) {
			return fmt.Errorf("SleepUntil(the past) on a cancelled context = %v", err)
		}
		return nil
	})
}

// A context deadline shorter than the wait ends it at the deadline, never
// before, with an error that errors.Is context.DeadlineExceeded, and the
// context says so too when the call returns: Sleep, SleepUntil, Timeout,
// Join, and a task whose own context has its spawner's deadline.
func TestTimingDeadlineShorterThanWait(t *testing.T) {
	fromEverywhere(t, func(ctx context.Context) error {
		for i := range 12 {
			d := time.Duration(i%4) * time.Millisecond
			start := time.Now()
			c, cancel := context.WithTimeout(ctx, d)
			var err error
			switch i % 3 {
			case 0:
				err = Sleep(c, time.Hour)
			case 1:
				err = SleepUntil(c, time.Now().Add(time.Hour))
			default:
				iv, _ := NewInterval(time.Hour, Burst)
				if _, err = iv.Tick(c); err == nil {
					_, err = iv.Tick(c)
				}
			}
			el, cerr := time.Since(start), c.Err()
			cancel()
			if !errors.Is(err, context.DeadlineExceeded) || cerr != context.DeadlineExceeded || el < d || el > lateBound {
				return fmt.Errorf("wait %d under a %v timeout = %v, ctx.Err() %v, after %v", i%3, d, err, cerr, el)
			}
			start = time.Now()
			_, err = Timeout(ctx, d, func(c context.Context) (int, error) { return 0, Sleep(c, time.Hour) })
			if el := time.Since(start); !errors.Is(err, context.DeadlineExceeded) || el < d || el > lateBound {
				return fmt.Errorf("Timeout(%v) of a Sleep(hour) = %v after %v", d, err, el)
			}
		}
		if Current(ctx) == nil {
			return nil
		}
		const to = 10 * time.Millisecond
		h := Spawn(ctx, func(ctx context.Context) (int, error) { return 0, Sleep(ctx, time.Hour) })
		start := time.Now()
		c, cancel := context.WithTimeout(ctx, to)
		_, err := h.Join(c)
		el, cerr := time.Since(start), c.Err()
		cancel()
		h.Cancel()
		if _, jerr := h.Join(ctx); !errors.Is(jerr, context.Canceled) {
			return fmt.Errorf("the joined task after Cancel: %v", jerr)
		}
		if !errors.Is(err, context.DeadlineExceeded) || cerr != context.DeadlineExceeded || el < to || el > lateBound {
			return fmt.Errorf("Join under a %v timeout = %v, ctx.Err() %v, after %v", to, err, cerr, el)
		}
		start = time.Now()
		c, cancel = context.WithTimeout(ctx, to)
		defer cancel()
		h2 := Spawn(c, func(ctx context.Context) (error, error) {
			err := Sleep(ctx, time.Hour)
			return ctx.Err(), err
		})
		cerr, err = h2.Join(ctx)
		if el := time.Since(start); !errors.Is(err, context.DeadlineExceeded) || cerr != context.DeadlineExceeded || el < to || el > lateBound {
			return fmt.Errorf("a task spawned with a %v timeout: Sleep(its own ctx, hour) = %v, ctx.Err() %v, after %v", to, err, cerr, el)
		}
		return nil
	})
}

// Yield returns ctx.Err(), as documented, cancelled or past its deadline.
func TestYieldReturnsContextError(t *testing.T) {
	fromEverywhere(t, func(ctx context.Context) error {
		if err := Yield(ctx); err != nil {
			return fmt.Errorf("Yield = %v", err)
		}
		c, cancel := context.WithCancel(ctx)
		cancel()
		if err := Yield(c); err != context.Canceled {
			return fmt.Errorf("Yield on a cancelled context = %v", err)
		}
		c, cancel = context.WithTimeout(ctx, -1)
		defer cancel()
		if err := Yield(c); err != context.DeadlineExceeded {
			return fmt.Errorf("Yield past the deadline = %v", err)
		}
		return nil
	})
}

// An Interval never ticks early: Tick returns at or after the instant it
// reports, ticks are at least a period apart while the caller keeps up,
// and a cancelled Tick consumes nothing. Periods too long for any clock
// (math.MaxInt64) tick once and then wait for the context, after Reset too;
// a period of 1 ns ticks without error.
func TestTimingIntervalNeverEarly(t *testing.T) {
	fromEverywhere(t, func(ctx context.Context) error {
		for _, m := range []MissedTickBehavior{Burst, Delay, Skip} {
			const period = 3 * time.Millisecond
			iv, err := NewInterval(period, m)
			if err != nil {
				return err
			}
			var prev time.Time
			for i := range 6 {
				tick, err := iv.Tick(ctx)
				if err != nil {
					return err
				}
				if now := time.Now(); now.Before(tick) {
					return fmt.Errorf("missed=%d: tick %d returned at %v, before its instant %v", m, i, now, tick)
				}
				if i > 0 && tick.Sub(prev) < period {
					return fmt.Errorf("missed=%d: tick %d only %v after the one before", m, i, tick.Sub(prev))
				}
				prev = tick
			}
			c, cancel := context.WithCancel(ctx)
			cancel()
			want := iv.next
			if _, err := iv.Tick(c); err != context.Canceled {
				return fmt.Errorf("missed=%d: Tick on a cancelled context = %v", m, err)
			}
			if tick, err := iv.Tick(ctx); err != nil || !tick.Equal(want) {
				return fmt.Errorf("missed=%d: the tick after a cancelled Tick = %v, %v; want the one it left, %v", m, tick, err, want)
			}
		}
		for _, p := range []time.Duration{math.MaxInt64, 1 << 62} {
			for _, m := range []MissedTickBehavior{Burst, Delay, Skip} {
				iv, err := NewInterval(p, m)
				if err != nil {
					return err
				}
				if _, err := iv.Tick(ctx); err != nil {
					return fmt.Errorf("period %v, missed=%d: first tick: %v", p, m, err)
				}
				for _, reset := range []bool{false, true} {
					if reset {
						iv.Reset()
					}
					c, cancel := context.WithTimeout(ctx, 5*time.Millisecond)
					_, err = iv.Tick(c)
					cancel()
					if !errors.Is(err, context.DeadlineExceeded) {
						return fmt.Errorf("period %v, missed=%d, reset %v: second tick = %v", p, m, reset, err)
					}
				}
			}
		}
		for _, m := range []MissedTickBehavior{Burst, Delay, Skip} {
			iv, _ := NewInterval(1, m)
			for range 50 {
				tick, err := iv.Tick(ctx)
				if err != nil || time.Now().Before(tick) {
					return fmt.Errorf("1ns period, missed=%d: tick %v, %v", m, tick, err)
				}
			}
		}
		return nil
	})
}

// Close while tasks sleep in every way there is: each ends with
// context.Canceled, Close returns promptly, and newRuntime's leak check
// finds nothing left.
func TestCloseEndsEverySleeper(t *testing.T) {
	for _, b := range []Backend{BackendAuto, BackendPortable} {
		for _, n := range []int{1, 2} {
			rt := newRuntime(t, Config{Workers: n, IOBackend: b})
			var started sync.WaitGroup
			var hs []*JoinHandle[int]
			for i := range 200 {
				started.Add(1)
				hs = append(hs, SpawnOn(rt, func(ctx context.Context) (int, error) {
					started.Done()
					switch i % 4 {
					case 0:
						return 0, Sleep(ctx, time.Hour)
					case 1:
						return 0, SleepUntil(ctx, time.Now().Add(math.MaxInt64))
					case 2:
						c, cancel := context.WithTimeout(ctx, time.Hour)
						defer cancel()
						return 0, Sleep(c, math.MaxInt64)
					default:
						iv, _ := NewInterval(time.Hour, Skip)
						if _, err := iv.Tick(ctx); err != nil {
							return 0, err
						}
						_, err := iv.Tick(ctx)
						return 0, err
					}
				}))
			}
			started.Wait()
			within(t, 5*time.Second, "Close with 200 sleepers", func() {
				if err := rt.Close(); err != nil {
					t.Errorf("Close: %v", err)
				}
			})
			for i, h := range hs {
				if _, err := h.Join(context.Background()); !errors.Is(err, context.Canceled) {
					t.Errorf("%v, %d workers: sleeper %d ended with %v, want context.Canceled", rt.Backend(), n, i, err)
				}
			}
		}
	}
}

// Sleeps race their own timer, their context's deadline and a
// cancellation from another goroutine, thousands of times: whichever
// wins, the outcome is consistent (nil only once the sleep is over,
// DeadlineExceeded only past the deadline and with ctx.Err() saying so,
// Canceled only when cancelled) and no wake-up is lost.
func TestSleepRacesItsDeadlineAndCancel(t *testing.T) {
	for _, b := range []Backend{BackendAuto, BackendPortable} {
		for _, n := range []int{1, 2} {
			rt := newRuntime(t, Config{Workers: n, IOBackend: b})
			hs := make([]*JoinHandle[int], 0, 2000)
			for i := range cap(hs) {
				d := time.Duration(rand.IntN(500)) * time.Microsecond
				to := time.Duration(rand.IntN(500)) * time.Microsecond
				after := time.Duration(rand.IntN(500)) * time.Microsecond
				hs = append(hs, SpawnOn(rt, func(ctx context.Context) (int, error) {
					start := time.Now()
					c, cancel := context.WithDeadline(ctx, start.Add(to))
					defer cancel()
					stop := time.AfterFunc(after, cancel)
					defer stop.Stop()
					var err error
					if i%2 == 0 {
						err = SleepUntil(c, start.Add(d))
					} else {
						err = Sleep(c, d)
					}
					el, cerr := time.Since(start), c.Err()
					switch {
					case err == nil:
						if el < d {
							return 0, fmt.Errorf("a sleep of %v returned nil after %v", d, el)
						}
					case errors.Is(err, context.DeadlineExceeded):
						if cerr != context.DeadlineExceeded || el < to {
							return 0, fmt.Errorf("DeadlineExceeded after %v (deadline %v), ctx.Err() %v", el, to, cerr)
						}
					case errors.Is(err, context.Canceled):
						if cerr != context.Canceled {
							return 0, fmt.Errorf("Canceled, but ctx.Err() %v", cerr)
						}
					default:
						return 0, err
					}
					return 0, nil
				}))
			}
			within(t, 20*time.Second, "2000 racing sleeps", func() {
				for _, h := range hs {
					if _, err := h.Join(context.Background()); err != nil {
						t.Errorf("%v, %d workers: %v", rt.Backend(), n, err)
					}
				}
			})
		}
	}
}

// context.AfterFunc on a task's context, and Task.AfterFunc, against the
// task's cancellation from another goroutine: as with any context, stop
// reports true exactly when f will never run, and f runs at most once.
func TestAfterFuncStopRacesCancel(t *testing.T) {
	rt := newRuntime(t, Config{Workers: 2})
	for round := range 200 {
		h, ctx := spawnSleeper(rt)
		var ran atomic.Int32
		var stop func() bool
		if round%2 == 0 {
			stop = context.AfterFunc(ctx, func() { ran.Add(1) })
		} else {
			stop = Current(ctx).AfterFunc(func() { ran.Add(1) })
		}
		stopped := make(chan bool)
		go func() { stopped <- stop() }()
		h.Cancel()
		s := <-stopped
		if _, err := h.Join(context.Background()); !errors.Is(err, context.Canceled) {
			t.Fatalf("round %d: the sleeper ended with %v", round, err)
		}
		// f runs on a goroutine of its own (context.AfterFunc): wait
		// for it when stop said it would run.
		for deadline := time.Now().Add(lateBound); !s && ran.Load() == 0 && time.Now().Before(deadline); {
			time.Sleep(100 * time.Microsecond)
		}
		if r := ran.Load(); s == (r == 1) || r > 1 {
			t.Fatalf("round %d: stop() = %v, f ran %d times", round, s, r)
		}
	}
}

// TimerResolution at its extremes (1 ns, 1 s) still never wakes a sleep
// early and still enforces a context deadline; out of range it is a
// config error.
func TestTimingResolutionExtremes(t *testing.T) {
	for _, res := range []time.Duration{1, time.Second} {
		rt := newRuntime(t, Config{Workers: 2, TimerResolution: res})
		if _, err := BlockOn(rt, func(ctx context.Context) (int, error) {
			for _, d := range []time.Duration{1, 2 * time.Millisecond} {
				start := time.Now()
				if err := Sleep(ctx, d); err != nil {
					return 0, err
				}
				if el := time.Since(start); el < d || el > res+lateBound {
					return 0, fmt.Errorf("resolution %v: Sleep(%v) took %v", res, d, el)
				}
			}
			const to = 30 * time.Millisecond
			start := time.Now()
			c, cancel := context.WithTimeout(ctx, to)
			defer cancel()
			err := Sleep(c, time.Hour)
			if el := time.Since(start); !errors.Is(err, context.DeadlineExceeded) || el < to || el > res+lateBound {
				return 0, fmt.Errorf("resolution %v: Sleep(hour) under a %v timeout = %v after %v", res, to, err, el)
			}
			return 0, nil
		}); err != nil {
			t.Error(err)
		}
	}
	for _, res := range []time.Duration{-1, time.Second + 1} {
		if _, err := New(Config{TimerResolution: res}); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("TimerResolution %v: New = %v, want ErrInvalidConfig", res, err)
		}
	}
}

// wallShifted returns t with its wall clock reading moved by d and its
// monotonic reading kept: the instant of t as time.Now() would have read
// it had the wall clock been d ahead. ok is false unless t has a monotonic
// reading and package time lays Time out as this expects (a wall word
// with the seconds from bit 30, a monotonic ext word), checked on the
// result.
func wallShifted(t time.Time, d time.Duration) (_ time.Time, ok bool) {
	type layout struct {
		wall uint64
		ext  int64
		loc  *time.Location
	}
	const hasMonotonic, nsecShift = 1 << 63, 30
	if unsafe.Sizeof(t) != unsafe.Sizeof(layout{}) || d%time.Second != 0 {
		return t, false
	}
	u := t
	p := (*layout)(unsafe.Pointer(&u))
	if p.wall&hasMonotonic == 0 {
		return t, false
	}
	p.wall += uint64(int64(d/time.Second)) << nsecShift
	return u, u.Sub(t) == 0 && u.Round(0).Equal(t.Round(0).Add(d)) && u.Round(0).Sub(t.Round(0)) == d
}

// runtimeBeforeClockStep returns a runtime of one worker that started
// as if the wall clock had been stepped by step since New (its start's
// wall reading step behind, its monotonic reading unchanged), or skips
// the test where package time lays out Time in a way wallShifted does not
// know.
func runtimeBeforeClockStep(t *testing.T, step time.Duration) *Runtime {
	t.Helper()
	if _, ok := wallShifted(time.Now(), step); !ok {
		t.Skip("cannot simulate a wall clock step: package time lays out Time differently")
	}
	testHookStart = func(start time.Time) time.Time {
		shifted, _ := wallShifted(start, -step)
		return shifted
	}
	defer func() { testHookStart = nil }()
	return newRuntime(t, Config{Workers: 1})
}

// A deadline without a monotonic clock reading (from time.Unix, t.UTC(),
// t.Round(0), a decoded time) is a wall clock instant. Package time and
// package context turn it into a duration against the wall clock when
// they arm their timer, as time.Until does; a task's waits must too, even
// after the wall clock was stepped (NTP, settimeofday, a suspend and
// resume, which stops the monotonic clock only) since its runtime
// started. Against the wall reading taken by New, a step of an hour back
// woke SleepUntil at once and ended a wait under such a context deadline
// at once with context.Canceled, its context still live; a step forward
// made SleepUntil an hour late.
func TestTimingWallClockDeadlineAfterAClockStep(t *testing.T) {
	for _, step := range []time.Duration{-time.Hour, time.Hour} {
		rt := runtimeBeforeClockStep(t, step)
		const d = 20 * time.Millisecond
		_, err := BlockOn(rt, func(ctx context.Context) (struct{}, error) {
			for i, dl := range []time.Time{time.Now().Add(d).Round(0), time.Now().UTC().Add(d)} {
				c, cancel := context.WithTimeout(ctx, lateBound)
				err := SleepUntil(c, dl)
				cancel()
				if n := time.Now(); err != nil || n.Before(dl) {
					return struct{}{}, fmt.Errorf("SleepUntil(a wall clock instant %v ahead) = %v, %v before it", d, err, dl.Sub(n))
				}
				c, cancel = context.WithDeadline(ctx, dl.Add(d))
				if i == 0 {
					err = Sleep(c, time.Hour)
				} else {
					err = Suspend(c, func(Waker) bool { return true })
				}
				cerr := c.Err()
				cancel()
				if n := time.Now(); !errors.Is(err, context.DeadlineExceeded) || cerr != context.DeadlineExceeded || n.Before(dl.Add(d)) {
					return struct{}{}, fmt.Errorf("a wait under a wall clock deadline %v ahead = %v, ctx.Err() %v, %v before it", d, err, cerr, dl.Add(d).Sub(n))
				}
			}
			return struct{}{}, nil
		})
		if err != nil {
			t.Errorf("the wall clock stepped by %v since New: %v", step, err)
		}
	}
}

// The deadline of a wait's context goes on the wheel where wheelTime puts
// it against now, also after a wall clock step since New: exactly, and
// without reading the clock, for a deadline with a monotonic clock reading
// (context.WithTimeout's); give or take the time the call takes for a
// wall clock one.
func TestDeadlineOnWheel(t *testing.T) {
	for _, step := range []time.Duration{0, -time.Hour, time.Hour} {
		rt := runtimeBeforeClockStep(t, step)
		now := time.Now()
		for _, d := range []time.Duration{-time.Second, 0, time.Millisecond, time.Hour, math.MaxInt64} {
			dl := now.Add(d)
			want := rt.wheelTime(dl, now)
			if got := rt.deadlineOnWheel(dl); dl != dl.Round(0) && got != want {
				t.Errorf("step %v: deadline now%+v (monotonic) on the wheel at %v, want %v", step, d, got, want)
			}
			// The wall and monotonic clocks may disagree by microseconds
			// over the call.
			if got := rt.deadlineOnWheel(dl.Round(0)); got < want-time.Millisecond || got > want+time.Second && want < math.MaxInt64-time.Second {
				t.Errorf("step %v: deadline now%+v (wall clock) on the wheel at %v, want %v (within a millisecond before, a second after)", step, d, got, want)
			}
		}
	}
}

// A Delay interval keeps its schedule when its ticks come only as late as
// the timer wheel's resolution makes them, as its doc promises of timer
// jitter. With a resolution of 100 ms the ticks of a 110 ms interval came
// up to 100 ms late by design, counted as late (more than 5 ms), restarted
// the schedule and, the wheel rounding the next instant up again, came
// 200 ms after the last: the interval ran at half its rate, 10 ticks
// taking 2 s instead of 1.1. The bound allows 500 ms of the machine's own
// lateness (a loaded CI machine, the race detector).
func TestTimingIntervalDelayKeepsScheduleOnACoarseWheel(t *testing.T) {
	const res, period, ticks = 100 * time.Millisecond, 110 * time.Millisecond, 10
	rt := newRuntime(t, Config{Workers: 1, TimerResolution: res})
	if _, err := BlockOn(rt, func(ctx context.Context) (struct{}, error) {
		iv, err := NewInterval(period, Delay)
		if err != nil {
			return struct{}{}, err
		}
		first, err := iv.Tick(ctx)
		if err != nil {
			return struct{}{}, err
		}
		var last time.Time
		for range ticks {
			if last, err = iv.Tick(ctx); err != nil {
				return struct{}{}, err
			}
		}
		if got, want := last.Sub(first), ticks*period; got > want+5*res {
			return struct{}{}, fmt.Errorf("tick %d of a %v Delay interval came %v after the first, want about %v", ticks, period, got, want)
		}
		return struct{}{}, nil
	}); err != nil {
		t.Error(err)
	}
}

// A Sleep on a worker busy with a task that yields every few milliseconds
// (a CPU-bound loop playing fair) wakes once the task's slice that runs
// at its deadline has ended: the worker looks at its timers between any
// two task runs, not every few runs. Counted in the busy task's slices,
// not in time, so a loaded machine, which only lengthens the slices, does
// not change the count: each slice lasts at least step, so a nap of 10 ms
// is due by the end of the 4th, and the sleeper runs after at most one
// more (the local queue's turn, see localTurn). Looking every 4th tick
// instead (timerCheckTicks = 4) woke it after 7 slices, 11 ms late, every
// time: the sleeper wakes on a tick that looks, so each nap ends in the
// same phase of the 4 ticks.
func TestTimingSleepAmidLongSlicesWakesWithinASlice(t *testing.T) {
	const step, nap, naps = 3 * time.Millisecond, 10 * time.Millisecond, 15
	for _, b := range []Backend{BackendAuto, BackendPortable} {
		rt := newRuntime(t, Config{Workers: 1, IOBackend: b})
		var sliced atomic.Int64
		ran := make([]int64, 0, naps)
		_, err := BlockOn(rt, func(ctx context.Context) (struct{}, error) {
			stop := make(chan struct{})
			busy := Spawn(ctx, func(ctx context.Context) (struct{}, error) {
				for {
					select {
					case <-stop:
						return struct{}{}, nil
					default:
					}
					for start := time.Now(); time.Since(start) < step; {
					}
					sliced.Add(1)
					if err := Yield(ctx); err != nil {
						return struct{}{}, err
					}
				}
			})
			defer func() { close(stop); busy.Join(ctx) }()
			for range naps {
				n := sliced.Load()
				if err := Sleep(ctx, nap); err != nil {
					return struct{}{}, err
				}
				ran = append(ran, sliced.Load()-n)
			}
			return struct{}{}, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		sorted := slices.Sorted(slices.Values(ran))
		limit := int64((nap+step-1)/step) + 1
		if median := sorted[len(sorted)/2]; median > limit {
			t.Errorf("%v: a %v Sleep amid a task yielding every %v lasted a median of %d of its slices (each: %v), want at most %d", rt.Backend(), nap, step, median, ran, limit)
		}
	}
}
