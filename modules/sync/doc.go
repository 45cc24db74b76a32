// Package sync provides coroutine-aware synchronisation primitives for
// faio-go tasks: Mutex, Cond, Event, RWMutex, Semaphore, WaitGroup and
// Barrier. A task that waits on one of them suspends instead of blocking its
// worker; a plain goroutine that waits blocks as it would on package sync.
//
// The package is being built; see the project README for its status.
package sync
