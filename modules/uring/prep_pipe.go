package uring

// NoOffset as an offset of PrepSplice means none: the descriptor is a pipe
// (which has no offset), or the transfer is at its file position, which
// it advances.
const NoOffset int64 = -1

// PrepSplice prepares splice(fdIn, offIn, fdOut, offOut, n, flags): it
// moves up to n bytes from fdIn to fdOut, one of which must be a pipe,
// without copying them through user memory. offIn and offOut are offsets
// in regular files (not changing their file positions), or NoOffset.
// flags are unix.SPLICE_F_* (SPLICE_F_MOVE, SPLICE_F_NONBLOCK: the pipe
// does not wait, SPLICE_F_MORE) and SpliceFdInFixed. The result is the byte
// count, 0 at the end of fdIn. The kernel runs splice in its async
// workers, blocking there as the system call would (kernel 5.7+).
//
// As io_uring_prep_splice lays it out: Fd is fdOut, Off offOut, Addr the
// input offset (splice_off_in), Len n, OpFlags flags (splice_flags) and
// SpliceFdIn fdIn.
func (s *SQE) PrepSplice(fdIn int, offIn int64, fdOut int, offOut int64, n uint32, flags uint32) {
	s.prep(OpSplice, fdOut, uint64(offIn), min(n, maxRW), uint64(offOut))
	s.SpliceFdIn = fdField(fdIn)
	s.OpFlags = flags
}

// PrepTee prepares tee(fdIn, fdOut, n, flags): it duplicates up to n bytes
// from pipe fdIn into pipe fdOut without consuming them (kernel 5.8+).
// Fields as for PrepSplice, without offsets.
func (s *SQE) PrepTee(fdIn, fdOut int, n uint32, flags uint32) {
	s.prep(OpTee, fdOut, 0, min(n, maxRW), 0)
	s.SpliceFdIn = fdField(fdIn)
	s.OpFlags = flags
}
