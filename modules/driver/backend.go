package driver

import (
	"fmt"
	"os"
	"time"
)

// Backend is what a runtime's workers sleep on and run I/O with.
type Backend int

const (
	// BackendAuto uses io_uring where the kernel allows it and falls back
	// to BackendPortable where it does not (a seccomp filter refusing
	// io_uring, as Docker's and containerd's default profiles do; a kernel
	// without it; gVisor). It is the default.
	BackendAuto Backend = iota
	// BackendIOUring requires io_uring: a runtime fails to start without
	// it.
	BackendIOUring
	// BackendPortable needs no io_uring. Workers sleep on Go primitives
	// until their next timer or a wake-up, and there is no ring to submit
	// operations to: packages built on the runtime do their I/O with plain
	// system calls (package aio: a task's socket waits for readiness in the
	// runtime's epoll instance, which the workers poll, a goroutine's in
	// Go's netpoller; files run on a bounded pool of goroutines), with the
	// calling task suspended meanwhile. Scheduling, timers, sync and
	// channels are the same on both backends.
	BackendPortable
)

// EnvBackend names the environment variable that overrides a runtime's
// configured backend for operators: "auto", "io_uring" or "portable".
const EnvBackend = "FAIO_BACKEND"

func (b Backend) String() string {
	switch b {
	case BackendAuto:
		return "auto"
	case BackendIOUring:
		return "io_uring"
	case BackendPortable:
		return "portable"
	}
	return fmt.Sprintf("Backend(%d)", int(b))
}

// Valid reports whether b is one of the three backends.
func (b Backend) Valid() bool { return b >= BackendAuto && b <= BackendPortable }

// BackendFromEnv returns the backend FAIO_BACKEND asks for; ok is false
// when the variable is unset or empty, and err says what is wrong with a
// value that names no backend.
func BackendFromEnv() (b Backend, ok bool, err error) {
	v, ok := os.LookupEnv(EnvBackend)
	if !ok || v == "" {
		return 0, false, nil
	}
	for _, b := range []Backend{BackendAuto, BackendIOUring, BackendPortable} {
		if v == b.String() {
			return b, true, nil
		}
	}
	return 0, false, fmt.Errorf("%s=%q, want auto, io_uring or portable", EnvBackend, v)
}

// Result is the completion of an Op: Res is the kernel's result (a count,
// an fd, ...; a negated errno when it failed), Flags the CQE flags.
type Result struct {
	Res   int32
	Flags uint32
}

// OpID names an operation in flight on a Ring, for Cancel. An OpID whose
// operation has completed names nothing: cancelling it does nothing, even
// when its record has been reused.
type OpID uint64

// Portable is the driver of a worker without io_uring: a one-slot channel
// that Wake fills and Wait drains, with a reusable timer for the next
// deadline. It has no ring: Start panics (the scheduler refuses
// submissions on the portable backend before they get here), and the rest
// of the ring's methods do nothing. T is the owner type of Ring's
// operations, so both kinds satisfy the same interface.
type Portable[T any] struct {
	wakeCh chan struct{}
	timer  *time.Timer
}

// NewPortable returns a portable driver.
func NewPortable[T any]() *Portable[T] {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return &Portable[T]{wakeCh: make(chan struct{}, 1), timer: t}
}

// Wait sleeps until Wake is called or timeout passes (timeout < 0: no
// limit; 0: only consume a pending wake-up). A Wake that came before Wait
// ends the next Wait at once.
func (p *Portable[T]) Wait(timeout time.Duration) {
	switch {
	case timeout < 0:
		<-p.wakeCh
	case timeout == 0:
		select {
		case <-p.wakeCh:
		default:
		}
	default:
		p.timer.Reset(timeout)
		select {
		case <-p.wakeCh:
		case <-p.timer.C:
		}
		p.timer.Stop()
	}
}

// Wake ends the current or next Wait; safe from any goroutine.
func (p *Portable[T]) Wake() {
	select {
	case p.wakeCh <- struct{}{}:
	default: // a wake-up is pending already
	}
}

// Start panics: there is no ring.
func (p *Portable[T]) Start(Op, T, uint64) OpID {
	panic("faio/driver: an operation started on the portable backend")
}

// StartHeld panics: there is no ring.
func (p *Portable[T]) StartHeld(Op, T, uint64) OpID {
	panic("faio/driver: an operation started on the portable backend")
}

// Unhold does nothing.
func (p *Portable[T]) Unhold() {}

// Reap returns 0: nothing completes on a portable driver.
func (p *Portable[T]) Reap() int { return 0 }

// TryReap reports false: there is nothing to reap for another worker.
func (p *Portable[T]) TryReap() (int, bool) { return 0, false }

// Cancel does nothing: no operation is ever in flight.
func (p *Portable[T]) Cancel(OpID) {}

// CancelPending returns false.
func (p *Portable[T]) CancelPending() bool { return false }

// Stranded returns 0: the portable backend's waits end in Go's netpoller
// or its blocking pool, which wake the task without its worker.
func (p *Portable[T]) Stranded() int { return 0 }

// Counts returns zeros.
func (p *Portable[T]) Counts() (submitted, completed uint64) { return 0, 0 }

// Quiesce does nothing.
func (p *Portable[T]) Quiesce() {}

// Close does nothing.
func (p *Portable[T]) Close() {}
