package uring

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// Buffer rule for every Prep method that takes memory (see the package
// documentation): the memory must stay referenced by the caller, and
// unmodified for writes, until the request's CQE has been reaped. The
// methods force such memory onto the heap, so it cannot move, but they do
// not keep it alive: the SQE holds only its address.

// CurrentPos as an offset asks for the file's current position, which the
// request then advances, like read(2)/write(2) instead of pread(2)/pwrite(2)
// (needs FeatRWCurPos; non-seekable files ignore the offset anyway).
const CurrentPos = ^uint64(0)

// PrepNop prepares a request that does nothing and completes with 0.
func (s *SQE) PrepNop() { s.prep(OpNop, -1, 0, 0, 0) }

// PrepRead prepares pread(fd, b, off); off CurrentPos reads at the file
// position. The kernel writes into b until the CQE: keep b referenced and
// unread until then. The result is the byte count (0 at end of file).
func (s *SQE) PrepRead(fd int, b []byte, off uint64) {
	p, n := bufAddr(b)
	s.prepPtr(OpRead, fd, p, n, off)
}

// PrepWrite prepares pwrite(fd, b, off); off CurrentPos writes at the file
// position. Keep b referenced and unchanged until the CQE.
func (s *SQE) PrepWrite(fd int, b []byte, off uint64) {
	p, n := bufAddr(b)
	s.prepPtr(OpWrite, fd, p, n, off)
}

// PrepReadv prepares preadv(fd, iovs, off). Both the iovec array and the
// buffers it points to must stay referenced until the CQE.
func (s *SQE) PrepReadv(fd int, iovs []unix.Iovec, off uint64) {
	s.prepPtr(OpReadv, fd, unsafe.Pointer(unsafe.SliceData(iovs)), uint32(len(iovs)), off)
}

// PrepWritev prepares pwritev(fd, iovs, off). Both the iovec array and the
// buffers it points to must stay referenced and unchanged until the CQE.
func (s *SQE) PrepWritev(fd int, iovs []unix.Iovec, off uint64) {
	s.prepPtr(OpWritev, fd, unsafe.Pointer(unsafe.SliceData(iovs)), uint32(len(iovs)), off)
}

// PrepReadFixed prepares a read into b, which must lie inside the buffer
// registered at index bufIndex by RegisterBuffers (the ring keeps the
// registered buffers alive itself).
func (s *SQE) PrepReadFixed(fd int, b []byte, off uint64, bufIndex uint16) {
	p, n := bufAddr(b)
	s.prepPtr(OpReadFixed, fd, p, n, off)
	s.BufIndex = bufIndex
}

// PrepWriteFixed prepares a write from b, which must lie inside the buffer
// registered at index bufIndex by RegisterBuffers.
func (s *SQE) PrepWriteFixed(fd int, b []byte, off uint64, bufIndex uint16) {
	p, n := bufAddr(b)
	s.prepPtr(OpWriteFixed, fd, p, n, off)
	s.BufIndex = bufIndex
}

// PrepFsync prepares fsync(fd), or fdatasync(fd) with FsyncDataSync.
func (s *SQE) PrepFsync(fd int, flags uint32) {
	s.prep(OpFsync, fd, 0, 0, 0)
	s.OpFlags = flags
}

// PrepOpenat prepares openat(dirfd, path, flags, mode); the result is the new
// descriptor. path must be NUL-terminated (see BytePtrFromString) and stay
// referenced until the CQE. Pass unix.O_CLOEXEC in flags unless the
// descriptor should survive exec.
func (s *SQE) PrepOpenat(dirfd int, path *byte, flags int, mode uint32) {
	s.prepPtr(OpOpenat, dirfd, unsafe.Pointer(path), mode, 0)
	s.OpFlags = uint32(flags)
}

// PrepClose prepares close(fd).
func (s *SQE) PrepClose(fd int) { s.prep(OpClose, fd, 0, 0, 0) }

// PrepStatx prepares statx(dirfd, path, flags, mask, stat). path (NUL
// terminated) and stat must stay referenced until the CQE; stat is filled
// when it arrives.
func (s *SQE) PrepStatx(dirfd int, path *byte, flags int, mask uint32, stat *unix.Statx_t) {
	escapeToHeap(unsafe.Pointer(stat))
	s.prepPtr(OpStatx, dirfd, unsafe.Pointer(path), mask, uint64(uintptr(unsafe.Pointer(stat))))
	s.OpFlags = uint32(flags)
}
