// Command capi is libfaio.so, the C ABI of faio-go declared in
// include/faio.h. Build it from the repository root with
//
//	go build -buildmode=c-shared -o build/libfaio.so ./capi
//
// A c-shared library must be package main with a main function, which is
// never called. The package builds only inside the repository: its cgo
// preamble includes ../include/faio.h, so that the compiler checks every
// function against the public header.
//
// # How the parts fit
//
// shim.c defines every function of faio.h. It checks pointer arguments and
// calls a Go export (faiocgo_*) with integers only: handles, user data,
// callback pointers and channel items cross as uint64/uintptr, never as
// pointers the Go runtime could mistake for its own. It also owns the
// thread-local callback marker (see below) and the trampolines through
// which Go invokes C callbacks.
//
// Handles are entries of a generation-checked table (handles.go): a 64-bit
// value made of a slot index and the slot's generation, so a freed, stale or
// forged handle is refused with FAIO_EBADHANDLE instead of being followed.
//
// Every asynchronous call becomes a job (drive.go): a task body, a lock, a
// channel operation, a sleep or an I/O operation. A job runs in a faio task,
// waits there the faio way (the task suspends, the worker runs others) and
// ends by invoking its C callback exactly once, with FAIO_ECANCELED if the
// runtime shut down first.
//
// # Why calls made inside a callback are deferred
//
// A C callback runs inside a cgo call made by a task, so any faio function
// it calls is a Go export running on that task's goroutine, locked to its
// thread. Resuming or switching a coroutine there is fatal ("coro: OS thread
// locking must match"), and runtime.Spawn may yield the calling task. So an
// export never starts a task itself when called from a callback: it records
// the job in the worker's frame, and when the callback returns, the task
// that invoked it (now back in plain Go) spawns the recorded jobs as its
// children and runs the last one itself. That also makes faio_block_on
// structured: everything a callback starts is a descendant of the root task.
//
// The exports know whether they run inside a callback from the marker
// shim.c keeps in a __thread variable: the trampolines set it to the
// worker's frame handle for exactly the duration of a callback. The
// blocking calls refuse with FAIO_EWOULDBLOCK_WORKER when it is set; from
// host threads (marker unset) they block the thread in Go, which faio's
// primitives allow for plain goroutines.
package main
