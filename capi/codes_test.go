package main

import (
	"context"
	"fmt"
	"io/fs"
	"syscall"
	"testing"

	"github.com/faio-go/faio/modules/channel"
	"github.com/faio-go/faio/modules/runtime"
)

func TestErrorCode(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want int32
	}{
		{nil, codeOK},
		{context.Canceled, codeECANCELED},
		{fmt.Errorf("op: %w", context.DeadlineExceeded), codeECANCELED},
		{channel.ErrClosed, codeECLOSED},
		{&channel.SendError[uintptr]{Value: 3}, codeECLOSED},
		{channel.ErrFull, codeEAGAIN},
		{channel.ErrEmpty, codeEAGAIN},
		{runtime.ErrClosed, codeESHUTDOWN},
		{runtime.ErrOnWorker, codeEWOULDBLOCK},
		{fmt.Errorf("%w: workers", runtime.ErrInvalidConfig), codeEINVAL},
		{errTooManyHandles, codeENOMEM},
		{syscall.EBADF, -int32(syscall.EBADF)},
		{&fs.PathError{Op: "open", Path: "x", Err: syscall.ENOENT}, -int32(syscall.ENOENT)},
		{fmt.Errorf("io_uring: %w", syscall.EPERM), -int32(syscall.EPERM)},
		{fmt.Errorf("something else"), codeEINTERNAL},
	} {
		if got := errorCode(tc.err); got != tc.want {
			t.Errorf("errorCode(%v) = %d, want %d", tc.err, got, tc.want)
		}
	}
}

// The faio codes sit below every errno, so a negated errno passed through
// never reads as one of them.
func TestCodesBelowErrnos(t *testing.T) {
	for _, c := range []int32{codeEINVAL, codeEBADHANDLE, codeESHUTDOWN, codeEWOULDBLOCK, codeEBUSY,
		codeEAGAIN, codeECLOSED, codeECANCELED, codeENOTLOCKED, codeENOTWORKER, codeENOMEM, codeEINTERNAL, codeENOURING} {
		if c > -10000 {
			t.Errorf("code %d overlaps the errno range", c)
		}
	}
}
