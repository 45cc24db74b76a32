package main

/*
#cgo CFLAGS: -I${SRCDIR}/../include -Wall -Werror
#include "capi.h"
*/
import "C"

import (
	"context"
	"errors"
	"syscall"

	"github.com/faio-go/faio/modules/channel"
	"github.com/faio-go/faio/modules/runtime"
	"github.com/faio-go/faio/modules/uring"
)

// The error codes of faio.h, as Go constants. Taking them from the header
// (not retyping them) keeps the two from drifting apart.
const (
	codeOK          int32 = C.FAIO_OK
	codeEINVAL      int32 = C.FAIO_EINVAL
	codeEBADHANDLE  int32 = C.FAIO_EBADHANDLE
	codeESHUTDOWN   int32 = C.FAIO_ESHUTDOWN
	codeEWOULDBLOCK int32 = C.FAIO_EWOULDBLOCK_WORKER
	codeEBUSY       int32 = C.FAIO_EBUSY
	codeEAGAIN      int32 = C.FAIO_EAGAIN
	codeECLOSED     int32 = C.FAIO_ECLOSED
	codeECANCELED   int32 = C.FAIO_ECANCELED
	codeENOTLOCKED  int32 = C.FAIO_ENOTLOCKED
	codeENOTWORKER  int32 = C.FAIO_ENOTWORKER
	codeENOMEM      int32 = C.FAIO_ENOMEM
	codeEINTERNAL   int32 = C.FAIO_EINTERNAL
	codeENOURING    int32 = C.FAIO_ENOURING
)

// errorCode maps an error of the Go packages to a faio.h code: nil is 0,
// an errno (wrapped anywhere in err) is passed through negated, and the
// sentinels of runtime, channel and context get their FAIO_E* code.
func errorCode(err error) int32 {
	var errno syscall.Errno
	switch {
	case err == nil:
		return codeOK
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return codeECANCELED
	case errors.Is(err, channel.ErrClosed):
		return codeECLOSED
	case errors.Is(err, channel.ErrFull), errors.Is(err, channel.ErrEmpty):
		return codeEAGAIN
	case errors.Is(err, runtime.ErrClosed):
		return codeESHUTDOWN
	case errors.Is(err, runtime.ErrOnWorker):
		return codeEWOULDBLOCK
	case errors.Is(err, runtime.ErrInvalidConfig):
		return codeEINVAL
	case errors.Is(err, runtime.ErrNoRing), setupRefused(err):
		return codeENOURING
	case errors.Is(err, errTooManyHandles):
		return codeENOMEM
	case errors.As(err, &errno) && errno != 0:
		return -int32(errno)
	}
	return codeEINTERNAL
}

// setupRefused reports whether err is io_uring_setup refusing a ring for a
// reason outside the caller's arguments: blocked (EPERM) or missing
// (ENOSYS).
func setupRefused(err error) bool {
	var ue *uring.Error
	return errors.As(err, &ue) && ue.Op == "io_uring_setup" && (ue.Errno == syscall.EPERM || ue.Errno == syscall.ENOSYS)
}
