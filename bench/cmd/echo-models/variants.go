package main

import "github.com/faio-go/faio/modules/uring"

// A variant is one server model. Exactly one of uring, epoll and goProcs
// is set.
type variant struct {
	name    string
	uring   *uringConfig
	epoll   *epollConfig
	goProcs int // gonet: GOMAXPROCS
}

// coop are the io_uring_setup flags of the -coop variants.
const coop = uring.SetupCoopTaskrun | uring.SetupTaskrunFlag

// variants are the server models, in the order -variant all runs them.
// The io_uring and epoll servers run each thread as a goroutine locked to
// its OS thread, under the default GOMAXPROCS; thread 0 also reads the
// client's stdout through its ring or epoll instance, so a one-thread
// server is that one thread (and the Go runtime's housekeeping). They read
// at most 512 bytes at a time; the Go servers run W7's goroutine handler
// (bench.EchoConn), which reads up to 4096. A message is 64 bytes.
var variants = []variant{
	// single: one ring, waited on with io_uring_enter (at least one
	// completion) and reaped in batches. Each connection has one
	// single-shot IORING_OP_RECV in flight; its completion submits an
	// IORING_OP_SEND of the bytes received, whose completion submits the
	// next recv. A single-shot accept is re-armed after each connection.
	// The baseline of the io_uring variants.
	{name: "single", uring: &uringConfig{threads: 1}},

	// pollfirst: single with IORING_RECVSEND_POLL_FIRST on every recv: the
	// kernel arms its poll handler at once instead of first trying a
	// receive, which would find the socket empty (the client sends the
	// next message only once the echo is back).
	{name: "pollfirst", uring: &uringConfig{threads: 1, pollFirst: true}},

	// linked: single with two receive buffers per connection: when a recv
	// completes, the send of its bytes and the next recv (into the other
	// buffer) go to the kernel in the same submission, rather than the
	// recv waiting for the send's completion. The two are independent
	// requests (no IOSQE_IO_LINK); a recv that completes before the
	// previous send has fails the run, since the next recv would reuse the
	// buffer being sent.
	{name: "linked", uring: &uringConfig{threads: 1, twoBufs: true}},

	// multishot: single with one multishot recv per connection, armed
	// once, into buffers the kernel picks from a group of 1024 provided
	// buffers (IORING_OP_PROVIDE_BUFFERS). Each completion submits a send
	// straight from the buffer picked; the send's completion gives the
	// buffer back to the group (PROVIDE_BUFFERS with
	// IOSQE_CQE_SKIP_SUCCESS, so no CQE).
	{name: "multishot", uring: &uringConfig{threads: 1, multishot: true}},

	// fixed: single with the connections registered as fixed files
	// (IORING_REGISTER_FILES_UPDATE at accept and close) and named by
	// index in the recvs and sends (IOSQE_FIXED_FILE), which spares the
	// kernel a file-table lookup and a reference count per request.
	{name: "fixed", uring: &uringConfig{threads: 1, fixed: true}},

	// multishot+fixed: multishot and fixed together.
	{name: "multishot+fixed", uring: &uringConfig{threads: 1, multishot: true, fixed: true}},

	// single-coop: single on a ring set up with IORING_SETUP_COOP_TASKRUN
	// and IORING_SETUP_TASKRUN_FLAG: the kernel no longer interrupts the
	// thread to run completion work (an IPI when it runs elsewhere); the
	// work waits for the thread's next io_uring_enter, which the flag in
	// the SQ ring tells it to make.
	{name: "single-coop", uring: &uringConfig{threads: 1, flags: coop}},

	// multishot-coop: multishot on single-coop's ring: whether multishot
	// receive still saves anything once COOP_TASKRUN has cut the
	// interrupts (faio's rings use it).
	{name: "multishot-coop", uring: &uringConfig{threads: 1, multishot: true, flags: coop}},

	// uring-poll: the readiness model on io_uring: a multishot
	// IORING_OP_POLL_ADD (POLLIN) per non-blocking connection, and on each
	// of its completions read(2) until EAGAIN and write(2) of what was
	// read, as system calls of their own. epoll's model with the ring in
	// epoll's place.
	{name: "uring-poll", uring: &uringConfig{threads: 1, poll: true}},

	// single2: single on two threads, each with its own ring. Thread 0
	// accepts, keeps every other connection and hands the others to
	// thread 1 through a pipe, which thread 1 reads through its ring. It
	// uses a second CPU, as faio with two workers does.
	{name: "single2", uring: &uringConfig{threads: 2}},

	// single2-coop: single2 with single-coop's ring flags on both rings.
	{name: "single2-coop", uring: &uringConfig{threads: 2, flags: coop}},

	// epoll: the classic readiness server on one epoll instance:
	// non-blocking connections registered edge-triggered
	// (EPOLLIN|EPOLLRDHUP|EPOLLET), and on each event read(2) until EAGAIN
	// and write(2) of what was read. The listener (accept4 until EAGAIN)
	// and the client's stdout are level-triggered.
	{name: "epoll", epoll: &epollConfig{threads: 1}},

	// epoll-sr: epoll that stops reading at a short read instead of at
	// EAGAIN, saving the read that would fail (safe under edge triggering:
	// data that arrives later raises a new event).
	{name: "epoll-sr", epoll: &epollConfig{threads: 1, stopShort: true}},

	// epoll2: epoll on two threads, each with its own epoll instance,
	// with the connections dealt as in single2.
	{name: "epoll2", epoll: &epollConfig{threads: 2}},

	// gonet1: Go's net package the way a Go programmer writes an echo
	// server, a goroutine per connection doing Read and Write, with
	// GOMAXPROCS 1: Go's runtime and netpoller (epoll) in the place of
	// faio's: W7's goroutine handler (bench.EchoConn), minus faio-bench's
	// bookkeeping.
	{name: "gonet1", goProcs: 1},

	// gonet2: gonet1 with GOMAXPROCS 2. The reference of the table's
	// ratios.
	{name: "gonet2", goProcs: 2},
}

// serve runs the variant's server for trial t.
func (v *variant) serve(t *trial) (served, error) {
	switch {
	case v.uring != nil:
		return serveThreads(t, v.uring.threads, false, uringThreads(v.uring))
	case v.epoll != nil:
		return serveThreads(t, v.epoll.threads, true, epollThreads(v.epoll))
	}
	return serveGo(t, v.goProcs)
}

func lookupVariant(name string) *variant {
	for i := range variants {
		if variants[i].name == name {
			return &variants[i]
		}
	}
	return nil
}

func variantNames() []string {
	names := make([]string, len(variants))
	for i, v := range variants {
		names[i] = v.name
	}
	return names
}
