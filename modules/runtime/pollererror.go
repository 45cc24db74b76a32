package runtime

import "fmt"

// PollerError is the error of the readiness waits (FD.Wait, RegisterFD)
// of a runtime whose readiness poller can no longer be used: its epoll
// descriptor was closed or replaced behind the runtime's back, typically by
// a stray close of a reused descriptor number elsewhere in the program.
// Such a descriptor sends no event when it goes, so without this check the
// waits would hang silently, and a poller reading an epoll instance that
// took its number over would steal that instance's events. It is the
// readiness poller's driver.RingError: the poller stops using the number,
// the waits fail with this error instead of hanging, and the runtime's
// Close leaves the number alone (it may be another file's now) and
// returns the error. Unlike a ring, the poller has no operation in flight
// whose buffers the kernel could still write, so the process goes on.
type PollerError struct {
	Fd  int   // the number of the poller's epoll descriptor
	Err error // what showed it: epoll_wait's or epoll_ctl's error
}

func (e *PollerError) Error() string {
	return fmt.Sprintf("faio: the runtime's readiness poller can no longer use its epoll instance (fd %d): %v; the descriptor was closed or "+
		"replaced behind the runtime's back (a stray close of a reused descriptor number?). Waits for readiness fail with this error, "+
		"and the runtime will not close that number", e.Fd, e.Err)
}

func (e *PollerError) Unwrap() error { return e.Err }
