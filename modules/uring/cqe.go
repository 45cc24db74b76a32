package uring

import "unsafe"

// CQE is a completion queue entry, laid out exactly as struct io_uring_cqe
// (16 bytes). The pointers PeekCQE, WaitCQE, PeekBatch and ForEachCQE hand
// out point into the ring: read what you need, then release the entry with
// CQESeen or CQAdvance; after that the kernel may overwrite it. The methods
// take a value, so they work as well on a copy saved before release.
type CQE struct {
	UserData uint64 // SQE.UserData of the request
	Res      int32  // result: >= 0 success (bytes, fd, mask ...), < 0 a negated errno
	Flags    uint32 // CQEF* flags; the upper 16 bits may hold a buffer ID
}

var (
	_ [unsafe.Sizeof(CQE{}) - 16]byte
	_ [16 - unsafe.Sizeof(CQE{})]byte
)

// Err returns nil if the request succeeded, else the syscall.Errno it failed
// with (see ResultError). A zero-copy send's notification (CQEFNotif) is
// never an error: its Res is 0 or NotifUsageZCCopied, which is negative.
// It never allocates.
func (c CQE) Err() error {
	if c.Flags&CQEFNotif != 0 {
		return nil
	}
	return ResultError(c.Res)
}

// More reports whether the multishot request that posted this CQE stays
// armed and will post more (IORING_CQE_F_MORE). When it is false the
// request is finished and its buffers may be released.
func (c CQE) More() bool { return c.Flags&CQEFMore != 0 }

// BufferID returns the ID of the provided buffer the kernel filled, for
// requests prepared with SQEBufferSelect (PrepRecvMultishot). ok is false
// when the CQE carries no buffer.
func (c CQE) BufferID() (id uint16, ok bool) {
	if c.Flags&CQEFBuffer == 0 {
		return 0, false
	}
	return uint16(c.Flags >> cqeBufferShift), true
}
