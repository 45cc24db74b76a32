// Package faio is the one import for programs that use faio-go, an
// asynchronous task runtime for Go on Linux io_uring: a work-stealing pool
// of workers runs lightweight tasks (pooled stackful coroutines whose
// handle is a context.Context); each worker owns an io_uring and a timer
// wheel; tasks wait on coroutine-aware locks, events and channels without
// blocking their worker.
//
//	rt, err := faio.New(faio.Config{})
//	...
//	defer rt.Close()
//	n, err := faio.BlockOn(rt, func(ctx context.Context) (int, error) {
//		h := faio.Spawn(ctx, func(ctx context.Context) (int, error) {
//			return 42, faio.Sleep(ctx, time.Millisecond)
//		})
//		return h.Join(ctx)
//	})
//
// Everything here is a type alias or a one-line wrapper of the modules
// that implement it, which stay importable on their own:
//
//	github.com/faio-go/faio/modules/runtime  the scheduler: Runtime, tasks, timers, Submit/Suspend
//	github.com/faio-go/faio/modules/sync     Mutex, RWMutex, Cond, Event, Promise, Semaphore, ...
//	github.com/faio-go/faio/modules/channel  NewChannel's Sender/Receiver, Select
//	github.com/faio-go/faio/modules/aio      File, TCP, UDP and Unix sockets over each worker's io_uring
//
// The methods and fields of the aliased types are documented in those
// packages: go doc shows only the alias here (go doc
// github.com/faio-go/faio/modules/aio Conn, for example).
//
// Libraries that build their own waits or io_uring operations use
// runtime.Suspend and runtime.Submit from the runtime module.
//
// Every call that may wait takes a ctx first. In a task it suspends the
// task; in a plain goroutine it blocks the goroutine. Cancelling ctx ends
// the wait with ctx.Err(); an I/O operation is cancelled in the kernel and
// returns only once the kernel is done with its buffer. A plain goroutine
// names the runtime its I/O runs on with WithRuntime.
//
// Bad input gets an error, not a crash: a nil ctx ErrNilContext, a nil
// *Runtime or the zero Runtime ErrNilRuntime, the zero JoinHandle
// ErrNilHandle; the call does nothing.
package faio
