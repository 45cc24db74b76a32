package runtime

import "context"

type runtimeKey struct{}

// WithRuntime returns a copy of ctx that carries rt, for plain goroutines
// that use faio's I/O (and other packages built on Submit): an operation
// given such a context blocks the calling goroutine, where a task's context
// would make the task suspend. Package aio then makes the system call in
// the goroutine (a socket waits in Go's netpoller); a raw Op goes to rt
// through SubmitOn. Inside a task, the task's own context already names its
// runtime.
//
//	ctx := runtime.WithRuntime(context.Background(), rt)
//	f, err := aio.Open(ctx, "data.bin") // from main, say
//
// Given a nil ctx it returns nil, which the calls it would be given refuse
// (with ErrNilContext), where context.WithValue would panic. Given a nil
// rt, or one not made by New (the zero Runtime), it returns a context that
// names no runtime (I/O given it fails with ErrNoRuntime).
func WithRuntime(ctx context.Context, rt *Runtime) context.Context {
	if ctx == nil {
		return nil
	}
	if !rt.usable() {
		rt = nil
	}
	return context.WithValue(ctx, runtimeKey{}, rt)
}

// RuntimeOf returns the runtime ctx belongs to: that of the task whose
// context ctx is or derives from, else the one WithRuntime attached, else
// nil.
func RuntimeOf(ctx context.Context) *Runtime {
	if ctx == nil {
		return nil
	}
	if t := Current(ctx); t != nil {
		return t.rt
	}
	rt, _ := ctx.Value(runtimeKey{}).(*Runtime)
	return rt
}

// OnTask reports whether the caller is a task, of any runtime, running on
// its coroutine: where a call that waits should suspend the task (Submit,
// Suspend) rather than block. Packages built on Submit use it to serve
// plain goroutines the way package os and net do, with the system call in
// the goroutine itself, instead of through a task (SubmitOn), which costs
// two cross-thread wake-ups per operation.
func OnTask() bool { return onCoroutine() }

// InTask is OnTask for a caller that holds a context: when ctx is, or
// derives from, the context of the calling task, it answers without
// OnTask's lookup of the calling goroutine (a counter, and for a
// coroutine a look at every worker's current one), which costs more on
// paths that run once per operation.
func InTask(ctx context.Context) bool {
	return Current(ctx).running() != nil || onCoroutine()
}

// Runtime returns the runtime the task runs on.
func (t *Task) Runtime() *Runtime { return t.rt }
