// Package runtime is faio-go's work-stealing scheduler: a pool of workers,
// each owning a local run queue, an io_uring and a timer wheel, that run
// tasks as pooled stackful coroutines whose handle is a context.Context.
//
// The package is being built; see the project README for its status.
package runtime
