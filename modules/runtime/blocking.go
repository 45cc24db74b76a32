package runtime

import (
	"context"
	"errors"
	"unsafe"
)

// Blocking calls f on a goroutine of its own and returns its results,
// while the calling task is suspended and its worker runs other tasks. It
// is how a task calls code that blocks in plain Go: http.Client.Do, a cgo
// call, a sync.Mutex, a Go channel, a long computation. Called
// directly, such code holds the task's worker (see Hazards in the package
// documentation); on pinned workers, whose tasks only their own worker may
// run, the tasks that share that worker wait for it, the one that would
// unblock f among them. Like tokio's spawn_blocking, but with f's results
// returned in place.
//
// Blocking returns ctx.Err() at once when ctx ends first, like Join: a
// goroutine cannot be stopped, so f runs on and its results are dropped.
// Give f the context (pass it on to the calls it makes) so that it ends
// too. If ctx has ended already, f is not called.
//
// A panic in f is raised again in the calling task, with the same value
// (so the task's PanicPolicy applies); one raised after Blocking has
// returned on its context ends the program, as any goroutine's would.
//
// Close of the runtime ends the wait as it ends others (with ErrClosed
// when ctx derives from no task); on a context that can never be
// cancelled (context.Background()) Close waits for f.
//
// From a plain goroutine, Blocking calls f directly (unless ctx has ended).
// A nil ctx is refused with ErrNilContext, and a nil f with ErrNilFunc.
func Blocking[T any](ctx context.Context, f func() (T, error)) (T, error) {
	var zero T
	if ctx == nil {
		return zero, ErrNilContext
	}
	if f == nil {
		return zero, ErrNilFunc
	}
	if err := ctx.Err(); err != nil {
		return zero, err
	}
	if taskFor(ctx) == nil {
		return f()
	}
	// register runs on the worker, whose goroutine would pass on its own
	// profiler labels: f's goroutine gets the task's, as with go.
	b := &blockingCall[T]{labels: getProfLabel()}
	err := Suspend(ctx, func(wk Waker) bool {
		go b.run(f, wk)
		return true
	})
	if err != nil {
		// f still runs: b.panicked is not ours to read (b.run raises a
		// panic itself once it finds the wait over).
		return zero, err
	}
	if b.panicked {
		panic(b.pv)
	}
	return b.v, b.err
}

// blockingCall carries the results of Blocking's f from its goroutine to
// the task: written before Wake, read after a successful wait (the Wake's
// compare-and-swap orders them).
type blockingCall[T any] struct {
	v        T
	err      error
	panicked bool
	pv       any
	labels   unsafe.Pointer // the calling task's profiler labels
}

// errBlockingGoexit is the panic a task gets when Blocking's f called
// runtime.Goexit, which ended only f's goroutine.
var errBlockingGoexit = errors.New("faio/runtime: Blocking's function called runtime.Goexit")

func (b *blockingCall[T]) run(f func() (T, error), wk Waker) {
	setProfLabel(b.labels)
	completed := false
	defer func() {
		if !completed {
			b.pv, b.panicked = recover(), true
			if b.pv == nil {
				b.pv = errBlockingGoexit
			}
		}
		if !wk.Wake() && b.panicked {
			// The task returned on its context: nobody will see the
			// panic but the program, as with any goroutine.
			panic(b.pv)
		}
	}()
	b.v, b.err = f()
	completed = true
}
