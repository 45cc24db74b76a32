// Package driver is what a faio worker sleeps on and runs its I/O with:
// one per worker, owned by that worker's goroutine except for Wake and
// Cancel, which any goroutine may call, and TryReap, with which another
// worker reaps a Ring for an owner held by a task that blocks.
//
// There are two kinds. A Ring (Linux) is an io_uring: operations (Op) run
// on the ring, batched, with their completions handed back through a
// callback when the worker reaps, and the worker sleeps in Go's
// netpoller on an eventfd that the ring signals for each completion posted
// while it sleeps, and a wake-up writes (a thread-bound ring sleeps in
// io_uring_enter instead). A
// Portable driver needs no io_uring: the worker sleeps on Go primitives
// until its next timer or a wake-up, and there is no ring to run
// operations on.
//
// The package knows nothing of tasks: an operation is started for an owner
// (a value of the type parameter T, the scheduler's task) and a generation
// number the scheduler gives it, and the completion callback receives both
// back, so the scheduler decides whom it resumes. Which backend a runtime
// uses, and the FAIO_BACKEND override, are described by Backend.
package driver
