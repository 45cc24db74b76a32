package runtime

import (
	"context"
	"errors"
)

// Submit runs op on the io_uring of the worker running the calling task and
// returns its completion. The task suspends; its worker batches the
// submission with others (Config.SubmitBatch) and requeues the task when
// the completion arrives. Submit never fails for a full submission queue:
// it waits for room.
//
// Cancellation is safe for op's memory: when ctx is cancelled (or its
// deadline passes) the worker submits IORING_OP_ASYNC_CANCEL for op and
// Submit returns only after op's own completion has been reaped, with
// ctx.Err() if the operation was cancelled, or with its real result if it
// completed first. So a buffer given to Submit is the caller's again when
// Submit returns, whatever happened.
//
// Submit must be called from a task; from a plain goroutine use SubmitOn.
// There it returns ErrNoRuntime, or, when ctx names a runtime (one from
// WithRuntime, or a task's context handed to the goroutine), an error
// saying so, for which errors.Is(err, ErrNoRuntime) holds too. On the
// portable backend there is no ring: Submit returns ErrNoRing. A nil ctx
// is refused with ErrNilContext; op does not start.
func Submit(ctx context.Context, op Op) (Result, error) {
	if ctx == nil {
		return Result{}, ErrNilContext
	}
	t := taskFor(ctx)
	if t == nil {
		if RuntimeOf(ctx) != nil {
			return Result{}, errSubmitNoTask
		}
		return Result{}, ErrNoRuntime
	}
	if t.rt.backend == BackendPortable {
		return Result{}, ErrNoRing
	}
	if err := ctx.Err(); err != nil {
		return Result{}, err
	}
	c := t.coro.Load()
	c.kind = kindIO
	c.ioOp = op
	c.ioDone = false
	err := t.suspend(ctx)
	c.ioOp = nil
	if !c.ioDone {
		// Cancelled before the operation was prepared: nothing ran.
		return Result{}, err
	}
	res := Result{Res: c.ioRes, Flags: c.ioFlags}
	if err != nil && res.Res < 0 {
		// Cancelled, and the kernel's answer is the cancellation (or
		// another failure the caller asked not to wait for).
		return res, err
	}
	// Completed, possibly before a cancellation took effect: the real
	// result is what happened.
	return res, nil
}

// SubmitOn runs op on rt from a plain goroutine (or any context): a task
// is spawned to submit it (ErrNoRing at once on the portable backend), and
// SubmitOn waits for that task, even when ctx
// is cancelled, so op's memory is free again when it returns. A nil ctx is
// refused with ErrNilContext, and a nil rt, or one not made by New, with
// ErrNilRuntime (from a task too); op does not start.
func SubmitOn(ctx context.Context, rt *Runtime, op Op) (Result, error) {
	if ctx == nil {
		return Result{}, ErrNilContext
	}
	if !rt.usable() {
		return Result{}, ErrNilRuntime
	}
	if taskFor(ctx) != nil {
		return Submit(ctx, op)
	}
	if rt.backend == BackendPortable {
		return Result{}, ErrNoRing
	}
	if err := ctx.Err(); err != nil {
		// Like Submit: an operation whose context has ended does not
		// start (the spawned task would not see ctx in time).
		return Result{}, err
	}
	h := SpawnOn(rt, func(tctx context.Context) (Result, error) { return Submit(tctx, op) })
	res, err := h.Join(ctx)
	if err != nil && ctx.Err() != nil {
		// Joined again whether or not the task has completed: one that
		// completed after Join gave up on ctx holds the operation's
		// result, which was dropped (a read's bytes, an accept's
		// descriptor; found by a reviewer). Cancel then does nothing.
		h.Cancel()
		res, err = h.Join(context.Background())
		if err == nil {
			return res, nil
		}
		if errors.Is(err, context.Canceled) {
			err = ctx.Err()
		}
	} else if err != nil && rt.closing.Load() && errors.Is(err, context.Canceled) {
		// ctx is live: Close cancelled the task that submitted op.
		err = ErrClosed
	}
	return res, err
}
