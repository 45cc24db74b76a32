//go:build !linux

package driver

import (
	"errors"
	"syscall"
)

// Op is an io_uring operation. Outside Linux there is none: Op cannot be
// implemented, and no Ring exists.
type Op interface {
	linuxOnly()
}

// Err returns the error of a failed completion (a negative Res), wrapping
// the errno; nil otherwise.
func (r Result) Err() error {
	if r.Res >= 0 {
		return nil
	}
	return syscall.Errno(-r.Res)
}

// ErrNoIOUring is NewRing's error outside Linux.
var ErrNoIOUring = errors.New("faio/driver: io_uring exists only on Linux; use BackendAuto or BackendPortable")
