package uring

import "unsafe"

// PrepAccept prepares accept4(fd, addr, addrLen, flags); the result is the
// new socket. addr and addrLen may both be nil; otherwise set *addrLen to
// the size of *addr (unix.SizeofSockaddrAny) and keep both referenced until
// the CQE, when they hold the peer address (see AddrPortFromSockaddr).
// flags takes unix.SOCK_CLOEXEC and unix.SOCK_NONBLOCK.
func (s *SQE) PrepAccept(fd int, addr *RawSockaddrAny, addrLen *uint32, flags int) {
	escapeToHeap(unsafe.Pointer(addrLen))
	s.prepPtr(OpAccept, fd, unsafe.Pointer(addr), 0, uint64(uintptr(unsafe.Pointer(addrLen))))
	s.OpFlags = uint32(flags)
}

// PrepAcceptMultishot prepares an accept that stays armed and posts one CQE
// per connection, each with CQE.More set while it remains armed (kernel
// 5.19+). A CQE without More ends it (an error, or AsyncCancel). Every
// completion writes the same addr, so pass nil unless connections are
// reaped one at a time.
func (s *SQE) PrepAcceptMultishot(fd int, addr *RawSockaddrAny, addrLen *uint32, flags int) {
	s.PrepAccept(fd, addr, addrLen, flags)
	s.IoPrio |= acceptMultishot
}

// PrepConnect prepares connect(fd, addr, addrLen). Build addr with
// SockaddrFromAddrPort and keep it referenced until the CQE.
func (s *SQE) PrepConnect(fd int, addr *RawSockaddrAny, addrLen uint32) {
	s.prepPtr(OpConnect, fd, unsafe.Pointer(addr), 0, uint64(addrLen))
}

// PrepSend prepares send(fd, b, flags); flags are MSG_* (unix.MSG_NOSIGNAL
// is wise on sockets that may be closed by the peer). Keep b referenced and
// unchanged until the CQE; the result is the byte count sent.
func (s *SQE) PrepSend(fd int, b []byte, flags int) {
	p, n := bufAddr(b)
	s.prepPtr(OpSend, fd, p, n, 0)
	s.OpFlags = uint32(flags)
}

// Flags of PrepSendZC's zcFlags (the SQE's IoPrio field).
const (
	// SendZCPollFirst waits for room in the socket before the first try
	// (IORING_RECVSEND_POLL_FIRST).
	SendZCPollFirst uint16 = 1 << 0
	// SendZCReportUsage makes the notification's Res carry
	// NotifUsageZCCopied when the kernel copied the data after all
	// (IORING_SEND_ZC_REPORT_USAGE, kernel 6.2+).
	SendZCReportUsage uint16 = 1 << 3
	// NotifUsageZCCopied, in a notification's Res, says that the data was
	// copied rather than sent from the caller's memory (loopback, or a
	// device without scatter-gather).
	NotifUsageZCCopied int32 = -1 << 31
)

// PrepSendZC prepares a zero-copy send of b on socket fd (kernel 6.0+):
// the kernel transmits from b's pages instead of copying them. It posts two
// CQEs with the same UserData: the result (the byte count, CQE.More set
// when a notification follows) and, once the kernel no longer references
// b, a notification (CQEFNotif set, Res 0 or NotifUsageZCCopied). b must
// stay referenced and unchanged until the notification. A failed send
// posts its error, followed by a notification only if its More is set.
// flags are MSG_*; zcFlags SendZC*.
func (s *SQE) PrepSendZC(fd int, b []byte, flags int, zcFlags uint16) {
	p, n := bufAddr(b)
	s.prepPtr(OpSendZC, fd, p, n, 0)
	s.OpFlags = uint32(flags)
	s.IoPrio = zcFlags
}

// PrepRecv prepares recv(fd, b, flags). Keep b referenced until the CQE; the
// result is the byte count received, 0 when the peer has shut down.
func (s *SQE) PrepRecv(fd int, b []byte, flags int) {
	p, n := bufAddr(b)
	s.prepPtr(OpRecv, fd, p, n, 0)
	s.OpFlags = uint32(flags)
}

// PrepRecvMultishot prepares a receive that stays armed and posts one CQE per
// chunk of data, each landing in a buffer the kernel picks from group
// (provided with PrepProvideBuffers); CQE.BufferID names it and CQE.More says
// the request is still armed (kernel 6.0+). It ends with the first CQE
// without More: end of stream (Res 0), an error, ENOBUFS when the group ran
// dry, or data (Res > 0, a buffer) when the kernel stopped it for another
// reason, such as a full CQ. Data not yet received stays in the socket:
// re-arm after any CQE without More that is not end of stream. It sets
// SQEBufferSelect in Flags: a later SetFlags must include it.
func (s *SQE) PrepRecvMultishot(fd int, group uint16, flags int) {
	s.prep(OpRecv, fd, 0, 0, 0)
	s.OpFlags = uint32(flags)
	s.IoPrio = recvMultishot
	s.Flags = SQEBufferSelect
	s.BufIndex = group
}

// PrepProvideBuffers hands len(bufs)/size buffers of size bytes, carved from
// bufs in order, to buffer group group with IDs startID, startID+1, ... A
// request with SQEBufferSelect consumes one per completion; provide it
// again once its data has been used. bufs must stay referenced until the
// group is removed (PrepRemoveBuffers) or the ring is closed. It panics if
// size is not positive, like a division by zero.
func (s *SQE) PrepProvideBuffers(bufs []byte, size int, group, startID uint16) {
	if size <= 0 {
		panic("faio/uring: PrepProvideBuffers with non-positive buffer size")
	}
	nbufs := len(bufs) / size
	s.prepPtr(OpProvideBuffers, nbufs, unsafe.Pointer(unsafe.SliceData(bufs)), uint32(min(size, maxRW)), uint64(startID))
	s.BufIndex = group
}

// PrepRemoveBuffers removes up to nbufs unused buffers from group; the result
// is the number removed.
func (s *SQE) PrepRemoveBuffers(nbufs int, group uint16) {
	s.prep(OpRemoveBuffers, nbufs, 0, 0, 0)
	s.BufIndex = group
}

// PrepShutdown prepares shutdown(fd, how), how being unix.SHUT_RD, SHUT_WR or
// SHUT_RDWR.
func (s *SQE) PrepShutdown(fd int, how int) {
	s.prep(OpShutdown, fd, 0, uint32(how), 0)
}
