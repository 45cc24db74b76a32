// Package uring is a pure-Go binding to Linux io_uring, written from the
// kernel ABI over golang.org/x/sys/unix. It is mechanism only, in the style
// of liburing: it sets up rings, hands out submission entries, submits,
// waits and reaps, and has one small Prep method per operation. It has no
// policy, allocates nothing per operation and starts no goroutines; the
// faio runtime builds on it.
//
// # How the parts fit
//
// New creates a Ring (io_uring_setup plus the mappings of its two queues).
// The program takes a zeroed entry with GetSQE, fills it with a Prep method
// (PrepRead, PrepSend, PrepTimeout ...), tags it with SetUserData and
// optionally SetFlags (SQELink, SQEDrain, SQEAsync, SQEFixedFile), and
// repeats. Submit hands the batch to the kernel with one io_uring_enter;
// SubmitAndWait, SubmitAndWaitTimeout and WaitCQE also wait for
// completions. Completions come back as CQEs carrying the user data and a
// result; read them with PeekCQE/WaitCQE and CQESeen, or in batches with
// ForEachCQE or PeekBatch and CQAdvance. CQE.Err turns a negative result
// into a syscall.Errno (errors.Is(err, syscall.ECONNRESET) works).
//
// Probe tells which opcodes the running kernel supports; Features which
// Feat* behaviours it has. RegisterFiles, RegisterBuffers and
// RegisterEventFd (and their Unregister counterparts) register resources.
//
// A Ring belongs to one goroutine at a time: it is not safe for concurrent
// use. Close unmaps and closes it; afterwards every method fails with
// ErrClosed.
//
// # Memory the kernel uses
//
// An SQE carries addresses, not Go pointers: the kernel reads and writes
// caller memory (buffers, iovec arrays and the buffers they point to,
// sockaddrs and their lengths, statx structs, timespecs, NUL-terminated
// paths) asynchronously, until the request's CQE has been posted. The
// garbage collector cannot see those addresses, so:
//
//   - The caller must keep every such object referenced from a live Go
//     variable (the faio runtime keeps them in its in-flight operation
//     record) until it has reaped the CQE, even when the request was
//     cancelled: a cancelled request is finished only when its own CQE
//     arrives.
//   - The memory must not move. The Prep methods make the compiler place
//     every pointer they receive on the heap, where Go never moves objects,
//     so a buffer declared as a local variable is moved to the heap at its
//     declaration rather than left on a stack that may be copied.
//   - Buffers being written must not be changed, and buffers being read
//     into must not be read, until the CQE.
//
// Helpers build such objects outside the hot path: BytePtrFromString for
// paths, SockaddrFromAddrPort and AddrPortFromSockaddr for socket
// addresses, unix.NsecToTimespec for timespecs. RegisterBuffers is the one
// place where the Ring itself keeps caller memory alive, because the
// registration outlives any single request.
//
// # Overflow
//
// When completions arrive faster than they are reaped and the CQ ring is
// full, kernels with FeatNoDrop hold them back and set a flag; PeekCQE,
// WaitCQE, ForEachCQE, PeekBatch and Submit notice the flag and flush the
// backlog into the ring (Backlogs counts how often). Nothing is lost, but
// a multishot request may end early when the CQ is full: its last CQE,
// without More, can carry a result like the others, and the request must
// be armed again (see PrepRecvMultishot). If
// the kernel ever has to drop completions, the drop is counted (Overflow)
// and reported once as an *OverflowError matching ErrCQOverflow.
//
// # Timeouts
//
// Wait timeouts use IORING_ENTER_EXT_ARG where the kernel has it
// (FeatExtArg, 5.11+) and an internal timeout SQE otherwise; that SQE's
// user data is ^uint64(0), which callers must not use, and its CQE is
// consumed by the ring. A wait that times out returns ErrTimeout, which
// matches syscall.ETIME. Interruption by signals (Go's preemption signal
// among them) is retried internally.
package uring
