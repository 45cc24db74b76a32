package runtime

import (
	"context"
	"errors"
	"math"
	goruntime "runtime"
	"time"
)

// Sleep pauses the calling task for at least d, on its worker's timer wheel:
// it wakes no earlier than asked and, on an idle machine, within about one
// TimerResolution after. It returns ctx.Err() at once if ctx is cancelled
// first. Outside a task it sleeps the calling goroutine on a Go timer. A
// zero or negative d returns ctx.Err() without waiting; in a task it is
// charged to the task's cooperative budget, as any operation that completes
// at once (see Consume), so a loop of them lets the worker's other tasks
// run. A nil ctx is refused with ErrNilContext, as by every call of the
// runtime that takes a context.
func Sleep(ctx context.Context, d time.Duration) error {
	if ctx == nil {
		return ErrNilContext
	}
	if d <= 0 {
		// Charged: a loop of Sleep(ctx, 0) held its worker for good
		// (found by a reviewer).
		return ConsumeCurrent(ctx)
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if t := taskFor(ctx); t != nil {
		// What SleepUntil(ctx, time.Now().Add(d)) does, without its
		// frame on the sleeping task's stack (see newCoro).
		now := t.rt.now()
		at := now + d
		if at < now {
			at = math.MaxInt64 // d overflows the clock: forever
		}
		c := t.coro.Load()
		c.kind, c.sleepUntil = kindSleep, at
		return t.suspend(ctx)
	}
	return sleepGoroutine(ctx, time.Now().Add(d))
}

// SleepUntil is Sleep until the instant deadline. A deadline that has
// passed is charged to the task's budget, as Sleep's zero d: so is the
// tick of an Interval that is behind.
func SleepUntil(ctx context.Context, deadline time.Time) error {
	if ctx == nil {
		return ErrNilContext
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if t := taskFor(ctx); t != nil {
		now := time.Now()
		if !deadline.After(now) {
			if t.charge() {
				return t.yieldSpent(ctx)
			}
			return nil
		}
		c := t.coro.Load()
		c.kind, c.sleepUntil = kindSleep, t.rt.wheelTime(deadline, now)
		return t.suspend(ctx)
	}
	return sleepGoroutine(ctx, deadline)
}

// sleepGoroutine is SleepUntil for a plain goroutine. It is a function of
// its own so that its timer, select and defer do not enlarge SleepUntil's
// frame, which sits on a sleeping task's stack.
//
//go:noinline
func sleepGoroutine(ctx context.Context, deadline time.Time) error {
	d := time.Until(deadline)
	if d <= 0 {
		return nil
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// Yield lets the worker run its other ready tasks (and poll its ring) before
// resuming the caller. It returns ctx.Err(). Outside a task it calls
// runtime.Gosched. In a cancelled task it returns at once, but charges the
// cooperative budget as Consume does: a loop of Yields that ignores their
// error still lets the worker's other tasks run.
//
// In a task, as Suspend's waits do, Yield on a context that Close's
// cancellation of the tasks does not reach (one that derives from no task
// of this runtime but can be cancelled) returns ErrClosed once Close has
// begun: a loop such as "for Yield(reqCtx) == nil" then ends and lets
// Close finish, instead of holding it for ever.
func Yield(ctx context.Context) error {
	if ctx == nil {
		return ErrNilContext
	}
	if err := ctx.Err(); err != nil {
		// A loop of Yields that ignores their error must still let the
		// worker's other tasks run, as a loop of Consumes does.
		if t := taskFor(ctx); t != nil && t.charge() {
			return t.yieldSpent(ctx)
		}
		return err
	}
	if t := taskFor(ctx); t != nil {
		c := t.coro.Load()
		c.budget = 0
		c.yieldReason = reasonYield
		c.yield(struct{}{})
		if err := ctx.Err(); err != nil {
			return err
		}
		if ctx != context.Context(t) && t.rt.closing.Load() && ctx.Done() != nil && closeMisses(t, ctx) {
			return ErrClosed
		}
		return nil
	}
	goruntime.Gosched()
	return ctx.Err()
}

// MissedTickBehavior says what an Interval does when ticks were missed
// because the caller came back late.
type MissedTickBehavior int

const (
	// Burst fires the missed ticks back to back until it has caught up
	// with the schedule (the default).
	Burst MissedTickBehavior = iota
	// Delay restarts the schedule from now: the next tick is one period
	// after the late one was taken. As in tokio, a tick counts as late
	// when it is taken more than 5 ms after its instant (in a task, 5 ms
	// plus the runtime's Config.TimerResolution, by which its timer wheel
	// may fire late by design); one taken within that keeps the schedule,
	// so timer jitter does not make it drift.
	Delay
	// Skip drops the missed ticks and keeps the original schedule: the next
	// tick is the next multiple of the period after now.
	Skip
)

// Interval ticks every period; Tick waits for the next tick. The first tick
// completes at once. Ticks are scheduled on the timer wheel of the worker
// running the task. An Interval is used by one task (or goroutine) at a
// time. Create one with NewInterval: the zero Interval has no period, and
// its Tick returns ErrPeriod.
type Interval struct {
	period time.Duration
	next   time.Time
	missed MissedTickBehavior
}

// ErrPeriod is returned by NewInterval for a period that is not positive, and
// by Tick on an Interval not made by NewInterval (the zero Interval).
var ErrPeriod = errors.New("faio/runtime: interval period must be positive")

// delayTolerance is how late a tick may be taken before an Interval with
// MissedTickBehavior Delay counts it as late and restarts its schedule from
// now: the 5 ms of tokio's Interval (in a task, plus the runtime's
// TimerResolution: see Tick).
const delayTolerance = 5 * time.Millisecond

// NewInterval returns an Interval whose first tick is now.
func NewInterval(period time.Duration, missed MissedTickBehavior) (*Interval, error) {
	if period <= 0 {
		return nil, ErrPeriod
	}
	if missed < Burst || missed > Skip {
		return nil, errors.New("faio/runtime: unknown MissedTickBehavior")
	}
	return &Interval{period: period, next: time.Now(), missed: missed}, nil
}

// Tick waits for the next tick and returns the instant it was scheduled
// for, or ctx.Err() if ctx is cancelled first (the tick is not consumed).
// On the zero Interval it returns ErrPeriod at once.
func (iv *Interval) Tick(ctx context.Context) (time.Time, error) {
	if iv.period <= 0 {
		// Without this the zero Interval would "tick" at once, forever.
		return time.Time{}, ErrPeriod
	}
	if err := SleepUntil(ctx, iv.next); err != nil {
		return time.Time{}, err
	}
	tick := iv.next
	tolerance := delayTolerance
	if t := taskFor(ctx); t != nil {
		// The wheel rounds the instant up to its resolution: with a
		// coarse one (20 ms), every tick of a 30 ms Delay interval
		// came late by design, restarted the schedule and came 40 ms
		// after the last.
		tolerance += t.rt.cfg.TimerResolution
	}
	iv.next = iv.after(tick, time.Now(), tolerance)
	return tick, nil
}

// after returns the instant of the tick that follows tick, taken at now;
// tolerance is how late a tick may be taken before Delay counts it late.
func (iv *Interval) after(tick, now time.Time, tolerance time.Duration) time.Time {
	switch next := tick.Add(iv.period); {
	case iv.missed == Delay:
		// tokio's rule: late by more than the tolerance, even by
		// less than a period, restarts the schedule from now.
		if now.Sub(tick) > tolerance {
			return now.Add(iv.period)
		}
		return next
	case !next.Before(now) || iv.missed == Burst:
		return next
	default: // Skip
		missed := now.Sub(tick) / iv.period
		return tick.Add((missed + 1) * iv.period)
	}
}

// Reset restarts the schedule: the next tick is one period from now. It does
// not make the zero Interval usable: Tick still returns ErrPeriod.
func (iv *Interval) Reset() { iv.next = time.Now().Add(iv.period) }

// Timeout runs op with a context that expires after d: the per-call
// timeout, for when wrapping the context by hand would be noise. The
// deadline is enforced on the worker's timer wheel like any context
// deadline; an I/O operation that hits it is cancelled in the kernel and op
// returns context.DeadlineExceeded once the kernel has let go of its buffer.
//
//	n, err := runtime.Timeout(ctx, time.Second, func(ctx context.Context) (int, error) {
//		return conn.Read(ctx, buf)
//	})
//
// A nil ctx is refused with ErrNilContext, and a nil op with ErrNilFunc.
func Timeout[T any](ctx context.Context, d time.Duration, op func(context.Context) (T, error)) (T, error) {
	if ctx == nil {
		var zero T
		return zero, ErrNilContext
	}
	if op == nil {
		var zero T
		return zero, ErrNilFunc
	}
	ctx, cancel := context.WithTimeout(ctx, d)
	defer cancel()
	return op(ctx)
}
