package runtime

import "context"

// CoopBudget is how many operations a task may complete without suspending
// (a free lock, a ready channel, a finished I/O) between two visits to its
// worker's loop. tokio uses the same number.
const CoopBudget = 128

// Consume charges one unit of the calling task's cooperative budget. faio
// primitives call it on every operation that completes without suspending;
// when the budget is spent, Consume yields the task (as Yield does, but
// even once ctx is done), so a task looping on always-ready operations, or
// on operations that fail at once because it was cancelled, cannot starve
// the other tasks of its worker. The budget refills whenever the task is
// resumed. Outside a task, or with a context that is not the task's own
// (nor derived from it), Consume charges nothing. It returns ctx.Err(), or
// ErrNilContext for a nil ctx: so every primitive that starts with Consume
// refuses a nil context before it does anything.
func Consume(ctx context.Context) error {
	// The common case, in direct calls: ctx is the task's own context and
	// the caller is that task.
	if t, ok := ctx.(*Task); ok && t.isRunning() {
		if t.charge() {
			return t.yieldSpent(ctx)
		}
		return t.Err()
	}
	return consumeSlow(ctx)
}

// charge takes one unit of the running task's budget and reports whether
// the budget is spent (the caller then yields). Only the task's own
// coroutine calls it.
func (t *Task) charge() bool {
	c := t.coro.Load()
	c.budget++
	return c.budget >= CoopBudget
}

// consumeSlow is Consume for a context derived from the task's, or a
// caller that is not the task.
func consumeSlow(ctx context.Context) error {
	if ctx == nil {
		// Here, off Consume's fast path, which falls through for nil.
		return ErrNilContext
	}
	// Only the task's own context (or one derived from it) is charged:
	// the general lookup of taskFor (coroOf, for every plain
	// goroutine) would tax each goroutine-side channel or lock operation
	// for a budget that does not apply to them.
	if t := Current(ctx).running(); t != nil && t.charge() {
		return t.yieldSpent(ctx)
	}
	return ctx.Err()
}

// ConsumeCurrent is Consume for a caller that runs on a task (InTask
// reported so) with a context that may not be the task's: a net.Conn
// adapter's deadline context, or any context made from
// context.Background. It charges the budget of the task running on the
// calling goroutine, found from the goroutine when ctx does not lead to
// it (coroOf), and yields that task when the budget is spent.
// Outside a task it charges nothing. It returns ctx.Err(), or
// ErrNilContext for a nil ctx.
func ConsumeCurrent(ctx context.Context) error {
	if t, ok := ctx.(*Task); ok && t.isRunning() {
		return Consume(ctx) // the fast path, without taskFor's lookups
	}
	if ctx == nil {
		return ErrNilContext
	}
	if t := taskFor(ctx); t != nil && t.charge() {
		return t.yieldSpent(ctx)
	}
	return ctx.Err()
}

// yieldSpent yields t, the running task, whose budget is spent, and
// returns ctx.Err(). Unlike Yield it switches even when the task's context
// has ended: a cancelled task that loops on operations failing at once
// (and ignores their errors) must still let its worker's other tasks run.
func (t *Task) yieldSpent(ctx context.Context) error {
	c := t.coro.Load()
	c.budget = 0
	c.yieldReason = reasonYield
	c.yield(struct{}{})
	return ctx.Err()
}
