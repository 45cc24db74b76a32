package main

import (
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/faio-go/faio/modules/uring"
	"golang.org/x/sys/unix"
)

// uringConfig is what sets the io_uring variants apart (see variants.go).
type uringConfig struct {
	threads   int    // threads, each with its own ring: 1 or 2
	flags     uint32 // io_uring_setup flags
	pollFirst bool   // recv with IORING_RECVSEND_POLL_FIRST
	twoBufs   bool   // linked: the next recv goes in with the send
	multishot bool   // one multishot recv per connection, provided buffers
	fixed     bool   // connections registered as fixed files
	poll      bool   // multishot POLL_ADD, then read(2) and write(2)
}

const (
	ringEntries  = 512  // SQ entries
	cqEntries    = 4096 // CQ entries
	bufSize      = 512  // bytes per receive: a 64-byte message fits whole
	nProvided    = 1024 // provided buffers (multishot)
	bufGroup     = 1    // their group ID
	fileSlots    = 2048 // fixed-file table size
	pipeBufSize  = 4096 // reads of the client's stdout and the hand-off pipe
	batchSize    = 256  // CQEs reaped at a time
	drainTimeout = 5 * time.Second
)

// Kinds of request, in the top 4 bits of the user data. Below them a send
// has its byte count (bits 44-55) and provided-buffer ID (28-43); every
// request on a connection has the connection's index (0-27).
const (
	kAccept     uint64 = iota + 1
	kClient            // read of the client's stdout (thread 0)
	kHandOff           // read of the hand-off pipe (thread 1)
	kAbort             // read of the trial's abort pipe
	kRecv              // recv, single-shot or multishot
	kSend              // send
	kPoll              // multishot POLL_ADD (uring-poll)
	kPollRemove        // POLL_REMOVE of a closed connection's poll
	kProvide           // PROVIDE_BUFFERS of the whole pool, at start
	kReprovide         // PROVIDE_BUFFERS of one buffer after its send: no CQE unless it fails
	kCancel            // ASYNC_CANCEL of everything, at the end
)

func ud(kind uint64, conn int) uint64 { return kind<<60 | uint64(conn) }

func sendUD(conn int, bid uint16, n int) uint64 {
	return kSend<<60 | uint64(n)<<44 | uint64(bid)<<28 | uint64(conn)
}

func udKind(u uint64) uint64 { return u >> 60 }
func udConn(u uint64) int    { return int(u & (1<<28 - 1)) }
func udBid(u uint64) uint16  { return uint16(u >> 28) }
func udLen(u uint64) int32   { return int32(u >> 44 & 0xfff) }

// A uringConn is a connection of an io_uring thread.
type uringConn struct {
	fd      int
	slot    int       // fixed-file index, -1 if none
	bufs    [2][]byte // receive buffers (single-shot recv); linked alternates
	cur     int       // the buffer the next recv fills
	sending bool      // linked: a send is in flight
	closed  bool
}

// A uringThread is one thread of an io_uring server: a ring and the
// connections it serves. Every piece of memory a request of the ring may
// use (receive buffers, the provided-buffer pool, the pipe buffers) is
// reachable from it until shutdown has reaped every request, or, if that
// fails, for the life of the process (strand).
type uringThread struct {
	cfg  *uringConfig
	t    *trial
	ring *uring.Ring

	lfd      int    // thread 0: the listener (-1 on thread 1)
	handOff  int    // thread 0: write end of the hand-off pipe (-1 if none); thread 1: read end
	handAcc  []byte // thread 1: a partial descriptor from the hand-off pipe
	accepted int64  // thread 0: connections accepted
	inEOF    bool   // no more connections: the client's stdout (thread 0) or the hand-off pipe (thread 1) ended

	conns    []*uringConn
	live     int
	pool     []byte // multishot: nProvided buffers of bufSize
	pipeBuf  []byte // the read of the client's stdout or of the hand-off pipe
	abortBuf []byte // the read of the abort pipe
	readBuf  []byte // uring-poll: read(2) buffer
	batch    []*uring.CQE

	inflight int // requests that will post a CQE not reaped yet
	enters   atomic.Int64
	echoed   int64
}

// uringThreads returns the newThreadFunc of io_uring variant cfg.
func uringThreads(cfg *uringConfig) newThreadFunc {
	return func(t *trial, id, lfd, handOff int) (thread, error) {
		ring, err := uring.New(ringEntries, &uring.Params{CQEntries: cqEntries, Flags: cfg.flags})
		if err != nil {
			return nil, fmt.Errorf("thread %d: %w", id, err)
		}
		th := &uringThread{
			cfg: cfg, t: t, ring: ring, lfd: lfd, handOff: handOff,
			pipeBuf: make([]byte, pipeBufSize), abortBuf: make([]byte, 8),
			batch: make([]*uring.CQE, batchSize),
		}
		if cfg.poll {
			th.readBuf = make([]byte, bufSize)
		}
		if err := th.setup(id); err != nil {
			ring.Close() // nothing submitted yet
			return nil, fmt.Errorf("thread %d: %w", id, err)
		}
		return th, nil
	}
}

// setup registers the fixed-file table, provides the buffer pool and arms
// the first reads: the abort pipe, and the listener (thread 0) or the
// hand-off pipe (thread 1).
func (th *uringThread) setup(id int) error {
	if th.cfg.fixed {
		table := make([]int32, fileSlots)
		for i := range table {
			table[i] = -1
		}
		if err := th.ring.RegisterFiles(table); err != nil {
			return fmt.Errorf("register files: %w", err)
		}
	}
	if th.cfg.multishot {
		th.pool = make([]byte, nProvided*bufSize)
		e, err := th.sqe(true)
		if err != nil {
			return err
		}
		e.PrepProvideBuffers(th.pool, bufSize, bufGroup, 0)
		e.SetUserData(ud(kProvide, 0))
	}
	if err := th.armRead(kAbort, th.t.abort, th.abortBuf); err != nil {
		return err
	}
	if id == 0 {
		return th.armAccept()
	}
	return th.armRead(kHandOff, th.handOff, th.pipeBuf)
}

func (th *uringThread) readClient() error { return th.armRead(kClient, th.t.stdout, th.pipeBuf) }

func (th *uringThread) counts() (int64, int64) { return th.accepted, th.echoed }

func (th *uringThread) enterCounter() *atomic.Int64 { return &th.enters }

// sqe returns a free SQE, submitting the queue if it is full. A counted
// request posts a CQE when it ends; only successful PROVIDE_BUFFERS with
// IOSQE_CQE_SKIP_SUCCESS do not.
func (th *uringThread) sqe(counted bool) (*uring.SQE, error) {
	for {
		if e := th.ring.GetSQE(); e != nil {
			if counted {
				th.inflight++
			}
			return e, nil
		}
		if _, err := th.ring.Submit(); err != nil {
			return nil, fmt.Errorf("submitting a full SQ: %w", err)
		}
	}
}

// loop waits for at least one completion per io_uring_enter and handles
// the CQEs in batches.
func (th *uringThread) loop() error {
	for !th.inEOF || th.live > 0 {
		if _, err := th.ring.SubmitAndWait(1); err != nil {
			return fmt.Errorf("io_uring_enter: %w", err)
		}
		th.enters.Add(1)
		for {
			n := th.ring.PeekBatch(th.batch)
			if n == 0 {
				break
			}
			var err error
			for _, c := range th.batch[:n] {
				th.reaped(c)
				if err == nil {
					err = th.handle(c)
				}
			}
			th.ring.CQAdvance(uint32(n))
			if err != nil {
				return err
			}
		}
	}
	return nil
}

// reaped counts the end of a request.
func (th *uringThread) reaped(c *uring.CQE) {
	if !c.More() && udKind(c.UserData) != kReprovide {
		th.inflight--
	}
}

func (th *uringThread) handle(c *uring.CQE) error {
	switch udKind(c.UserData) {
	case kAccept:
		if c.Res < 0 {
			return fmt.Errorf("accept: %w", uring.ResultError(c.Res))
		}
		if err := th.accept(int(c.Res)); err != nil {
			return err
		}
		return th.armAccept()
	case kClient:
		if c.Res <= 0 {
			th.inEOF = true
			if c.Res < 0 {
				return fmt.Errorf("read of the client's stdout: %w", uring.ResultError(c.Res))
			}
			return nil
		}
		if err := th.t.clientLines(th.pipeBuf[:c.Res]); err != nil {
			return err
		}
		return th.armRead(kClient, th.t.stdout, th.pipeBuf)
	case kHandOff:
		if c.Res <= 0 {
			th.inEOF = true
			if c.Res < 0 {
				return fmt.Errorf("read of the hand-off pipe: %w", uring.ResultError(c.Res))
			}
			return nil
		}
		for _, fd := range takeFds(&th.handAcc, th.pipeBuf[:c.Res]) {
			if err := th.addConn(fd); err != nil {
				return err
			}
		}
		return th.armRead(kHandOff, th.handOff, th.pipeBuf)
	case kAbort:
		return th.t.aborted()
	case kRecv:
		if th.cfg.multishot {
			return th.onRecvMultishot(c)
		}
		return th.onRecv(c)
	case kSend:
		return th.onSend(c)
	case kPoll:
		return th.onPoll(c)
	case kPollRemove:
		// ENOENT: the poll had ended already.
		if c.Res < 0 && c.Res != -int32(unix.ENOENT) {
			return fmt.Errorf("poll remove on connection %d: %w", udConn(c.UserData), uring.ResultError(c.Res))
		}
		return nil
	case kProvide, kReprovide:
		if c.Res < 0 {
			return fmt.Errorf("provide buffers: %w", uring.ResultError(c.Res))
		}
		return nil
	}
	return fmt.Errorf("CQE with unknown user data %#x", c.UserData)
}

func (th *uringThread) armAccept() error {
	e, err := th.sqe(true)
	if err != nil {
		return err
	}
	flags := unix.SOCK_CLOEXEC
	if th.cfg.poll {
		flags |= unix.SOCK_NONBLOCK // read(2) and write(2) must not block
	}
	e.PrepAccept(th.lfd, nil, nil, flags)
	e.SetUserData(ud(kAccept, 0))
	return nil
}

// armRead reads pipe fd into buf (which th keeps) at the pipe's position.
func (th *uringThread) armRead(kind uint64, fd int, buf []byte) error {
	e, err := th.sqe(true)
	if err != nil {
		return err
	}
	e.PrepRead(fd, buf, ^uint64(0))
	e.SetUserData(ud(kind, 0))
	return nil
}

// accept takes a new connection: thread 0 keeps the odd ones and, with two
// threads, hands the even ones to thread 1.
func (th *uringThread) accept(fd int) error {
	if err := setNoDelay(fd); err != nil {
		unix.Close(fd)
		return err
	}
	th.accepted++
	if th.handOff >= 0 && th.accepted%2 == 0 {
		return handOff(th.handOff, fd)
	}
	return th.addConn(fd)
}

// addConn starts serving connection fd.
func (th *uringThread) addConn(fd int) error {
	i := len(th.conns)
	c := &uringConn{fd: fd, slot: -1}
	th.conns = append(th.conns, c)
	th.live++
	if !th.cfg.multishot && !th.cfg.poll {
		c.bufs[0] = make([]byte, bufSize)
		if th.cfg.twoBufs {
			c.bufs[1] = make([]byte, bufSize)
		}
	}
	if th.cfg.fixed {
		if i >= fileSlots {
			return fmt.Errorf("more than %d connections: out of fixed-file slots", fileSlots)
		}
		if _, err := th.ring.RegisterFilesUpdate(uint32(i), []int32{int32(fd)}); err != nil {
			return fmt.Errorf("register file of connection %d: %w", i, err)
		}
		c.slot = i
	}
	if th.cfg.poll {
		return th.armPoll(i)
	}
	return th.armRecv(i)
}

// closeConn closes connection i, whose peer has shut down.
func (th *uringThread) closeConn(i int) error {
	c := th.conns[i]
	if c.closed {
		return nil
	}
	c.closed = true
	th.live--
	var err error
	if th.cfg.poll {
		var e *uring.SQE
		if e, err = th.sqe(true); err == nil {
			e.PrepPollRemove(ud(kPoll, i))
			e.SetUserData(ud(kPollRemove, i))
		}
	}
	if c.slot >= 0 {
		if _, uerr := th.ring.RegisterFilesUpdate(uint32(c.slot), []int32{-1}); uerr != nil {
			err = errors.Join(err, fmt.Errorf("unregister file of connection %d: %w", i, uerr))
		}
	}
	unix.Close(c.fd)
	return err
}

// target returns the descriptor, or fixed-file index, that requests on c
// name, and the SQE flags that go with it.
func (th *uringThread) target(c *uringConn) (int, uint8) {
	if c.slot >= 0 {
		return c.slot, uring.SQEFixedFile
	}
	return c.fd, 0
}

func (th *uringThread) armRecv(i int) error {
	c := th.conns[i]
	fd, flags := th.target(c)
	e, err := th.sqe(true)
	if err != nil {
		return err
	}
	if th.cfg.multishot {
		e.PrepRecvMultishot(fd, bufGroup, 0)
		e.SetFlags(flags | uring.SQEBufferSelect)
	} else {
		e.PrepRecv(fd, c.bufs[c.cur], 0)
		e.SetFlags(flags)
		if th.cfg.pollFirst {
			e.IoPrio |= uring.RecvSendPollFirst
		}
	}
	e.SetUserData(ud(kRecv, i))
	return nil
}

// send sends b, which is a receive buffer of connection i or provided
// buffer bid, both kept by th.
func (th *uringThread) send(i int, b []byte, bid uint16) error {
	fd, flags := th.target(th.conns[i])
	e, err := th.sqe(true)
	if err != nil {
		return err
	}
	e.PrepSend(fd, b, unix.MSG_NOSIGNAL|unix.MSG_WAITALL)
	e.SetFlags(flags)
	e.SetUserData(sendUD(i, bid, len(b)))
	return nil
}

// provide gives provided buffer bid back to the group after its send.
func (th *uringThread) provide(bid uint16) error {
	e, err := th.sqe(false)
	if err != nil {
		return err
	}
	off := int(bid) * bufSize
	e.PrepProvideBuffers(th.pool[off:off+bufSize], bufSize, bufGroup, bid)
	e.SetFlags(uring.SQECQESkipSuccess)
	e.SetUserData(ud(kReprovide, 0))
	return nil
}

func (th *uringThread) armPoll(i int) error {
	e, err := th.sqe(true)
	if err != nil {
		return err
	}
	e.PrepPollMultishot(th.conns[i].fd, unix.POLLIN)
	e.SetUserData(ud(kPoll, i))
	return nil
}

// onRecv handles a single-shot recv: send what came, or close at the end
// of the stream.
func (th *uringThread) onRecv(cq *uring.CQE) error {
	i := udConn(cq.UserData)
	c := th.conns[i]
	switch {
	case cq.Res < 0:
		return fmt.Errorf("recv on connection %d: %w", i, uring.ResultError(cq.Res))
	case cq.Res == 0:
		return th.closeConn(i)
	}
	th.echoed += int64(cq.Res)
	b := c.bufs[c.cur][:cq.Res]
	if !th.cfg.twoBufs {
		return th.send(i, b, 0) // its completion arms the next recv
	}
	if c.sending {
		// The next recv would go into the buffer being sent.
		return fmt.Errorf("connection %d: a recv completed while the previous send was in flight", i)
	}
	c.sending = true
	if err := th.send(i, b, 0); err != nil {
		return err
	}
	c.cur ^= 1
	return th.armRecv(i)
}

// onRecvMultishot handles a completion of a multishot recv: send the
// provided buffer it filled, or close at the end of the stream.
func (th *uringThread) onRecvMultishot(cq *uring.CQE) error {
	i := udConn(cq.UserData)
	switch {
	case cq.Res == -int32(unix.ENOBUFS):
		return fmt.Errorf("recv (multishot) on connection %d: the %d provided buffers ran out", i, nProvided)
	case cq.Res < 0:
		return fmt.Errorf("recv (multishot) on connection %d: %w", i, uring.ResultError(cq.Res))
	case cq.Res == 0:
		return th.closeConn(i)
	}
	bid, ok := cq.BufferID()
	if !ok {
		return fmt.Errorf("recv (multishot) on connection %d: a CQE without a buffer", i)
	}
	th.echoed += int64(cq.Res)
	off := int(bid) * bufSize
	if err := th.send(i, th.pool[off:off+int(cq.Res)], bid); err != nil {
		return err
	}
	if !cq.More() {
		return th.armRecv(i) // the kernel ended the multishot: arm it again
	}
	return nil
}

// onSend handles a send: check it sent everything, give a provided buffer
// back, and arm the next recv where no recv is armed.
func (th *uringThread) onSend(cq *uring.CQE) error {
	i, want := udConn(cq.UserData), udLen(cq.UserData)
	c := th.conns[i]
	if th.cfg.multishot {
		if err := th.provide(udBid(cq.UserData)); err != nil {
			return err
		}
	}
	switch {
	case cq.Res < 0:
		return fmt.Errorf("send on connection %d: %w", i, uring.ResultError(cq.Res))
	case cq.Res != want:
		return fmt.Errorf("send on connection %d: sent %d of %d bytes", i, cq.Res, want)
	}
	switch {
	case c.closed, th.cfg.multishot:
		return nil
	case th.cfg.twoBufs:
		c.sending = false
		return nil
	}
	return th.armRecv(i)
}

// onPoll handles a readiness completion (uring-poll): echo what the
// connection has, with read(2) and write(2).
func (th *uringThread) onPoll(cq *uring.CQE) error {
	i := udConn(cq.UserData)
	c := th.conns[i]
	if c.closed {
		return nil // the poll's end, cancelled by closeConn's POLL_REMOVE
	}
	if cq.Res < 0 {
		return fmt.Errorf("poll on connection %d: %w", i, uring.ResultError(cq.Res))
	}
	n, eof, err := echoReady(c.fd, th.readBuf, false)
	th.echoed += n
	if err != nil {
		return fmt.Errorf("connection %d: %w", i, err)
	}
	if eof {
		return th.closeConn(i)
	}
	if !cq.More() {
		return th.armPoll(i)
	}
	return nil
}

// shutdown cancels and reaps every request still in flight, closes the
// ring and the connections left open.
func (th *uringThread) shutdown() error {
	err := th.drain()
	if err != nil {
		strand(th) // the kernel may still write to th's buffers
	}
	if cerr := th.ring.Close(); cerr != nil {
		err = errors.Join(err, fmt.Errorf("closing the ring: %w", cerr))
	}
	for _, c := range th.conns {
		if !c.closed {
			unix.Close(c.fd)
		}
	}
	return err
}

// drain cancels the requests still in flight (the accept, the abort read,
// and after a failure anything) and reaps their CQEs, so that no request
// uses th's memory once the ring is closed.
func (th *uringThread) drain() error {
	if th.inflight == 0 {
		return nil
	}
	e, err := th.sqe(true)
	if err != nil {
		return err
	}
	e.PrepAsyncCancel(0, uring.CancelAny|uring.CancelAll)
	e.SetUserData(ud(kCancel, 0))
	deadline := time.Now().Add(drainTimeout)
	for th.inflight > 0 {
		wait := time.Until(deadline)
		if wait <= 0 {
			return fmt.Errorf("%d requests still in flight %v after cancelling them", th.inflight, drainTimeout)
		}
		if _, err := th.ring.SubmitAndWaitTimeout(1, wait); err != nil && !errors.Is(err, uring.ErrTimeout) {
			return fmt.Errorf("io_uring_enter, cancelling %d requests: %w", th.inflight, err)
		}
		n := th.ring.PeekBatch(th.batch)
		for _, c := range th.batch[:n] {
			th.reaped(c)
		}
		th.ring.CQAdvance(uint32(n))
	}
	return nil
}
