package aio

import (
	"context"
	"errors"
	"fmt"
	"github.com/faio-go/faio/modules/runtime"
	"os"
	"sync"
	"sync/atomic"
	"unsafe"

	"github.com/faio-go/faio/modules/uring"
	"golang.org/x/sys/unix"
)

// fdGuard owns one file descriptor of a File, Conn, Listener or UDPConn and
// makes use-after-Close safe: a descriptor number is reused by the kernel as
// soon as it is closed, so an operation that raced with Close could
// otherwise read from, write to or close somebody else's file.
//
// state counts references (in units of guardRef) plus the guardClosing bit.
// The owner holds one reference from creation until Close; every operation
// takes one for as long as it may touch the descriptor (from before it is
// prepared until its completion has been reaped). Close sets guardClosing,
// after which no reference is granted, and drops the owner's reference.
// Whoever drops the last reference closes the descriptor: Close itself when
// nothing is in flight, otherwise the last operation to finish. So the
// descriptor is closed exactly once, and only when no operation can still
// name it.
//
// An operation that finishes after Close began reports the "closed" error of
// its kind (net.ErrClosed, fs.ErrClosed), whatever the kernel said: its
// result is an artefact of the shutdown.
//
// A zero fdGuard (that of a zero-value File, Conn, Listener or UDPConn)
// guards nothing: its fd 0 is not its own, so it grants no reference and
// its close fails with os.ErrInvalid. state tells it apart: init stores
// guardRef, and a guard that was closed keeps guardClosing, so only a
// guard never initialised has state 0 (valid).
type fdGuard struct {
	state atomic.Uint64
	fd    int
	rt    *runtime.Runtime
	// socket: Close shuts the socket down first when operations are in
	// flight, which wakes them (a receive returns 0, an accept EINVAL, a
	// send EPIPE) on whichever worker's ring they wait. Without it Close
	// would have to find every ring holding one of them; regular files
	// need nothing, their operations always finish on their own.
	socket bool
	// pipe: a File that may wait forever but has no shutdown (a pipe, a
	// FIFO, a terminal). Its operations wait only where Close can end
	// them: a goroutine's in the netpoller, whose deadline Close sets in
	// the past, a task's in the runtime's readiness poller, whose
	// registration Close closes (submitPoll keeps them off the ring).
	pipe bool

	// poll is the descriptor's netpoller registration once an operation
	// waited for it there (a plain goroutine's, or a portable-backend
	// task's; direct.go); its os.File then owns the descriptor.
	poll atomic.Pointer[poller]
	// rfd is the descriptor's registration with the runtime's readiness
	// poller once a portable-backend task waited for it (direct.go); noRFD
	// (under mu) says the poller refused it.
	rfd   atomic.Pointer[runtime.FD]
	noRFD bool
	// rfdClosed says the poller refused it because the runtime was
	// closing.
	rfdClosed atomic.Bool

	// recvHint decides whether a task's receive is tried on the spot
	// before the ring (recvTry, recvTried in direct.go).
	recvHint atomic.Int32

	mu       sync.Mutex    // guards the fields below and poll's and rfd's creation
	isClosed bool          // the descriptor has been closed
	closeErr error         // what close(2) said
	closer   runtime.Waker // Close waiting for the last reference
}

const (
	guardClosing = 1
	guardRef     = 2
)

func (g *fdGuard) init(rt *runtime.Runtime, fd int, socket bool) {
	g.rt, g.fd, g.socket = rt, fd, socket
	g.state.Store(guardRef)
}

// valid reports whether g was initialised (see fdGuard): false for the
// zero fdGuard of a zero value, whose methods must then fail with
// os.ErrInvalid without touching descriptor 0.
func (g *fdGuard) valid() bool { return g.state.Load() != 0 }

// incref takes a reference for an operation; false once Close has begun,
// and for a zero fdGuard, which has no descriptor.
func (g *fdGuard) incref() bool {
	for {
		s := g.state.Load()
		if s&guardClosing != 0 || s == 0 {
			return false
		}
		if g.state.CompareAndSwap(s, s+guardRef) {
			return true
		}
	}
}

// protect is incref for a section of a task that neither suspends nor
// yields (a read from the page cache): it announces g on the task's
// worker (runtime.Hazard) instead of updating state, whose cache line
// every worker reading the descriptor would otherwise pass around. It
// returns nil, and the caller takes a reference instead, when the caller
// is not a task of g's runtime (whose close waits only for the
// announcements of its own workers), when its worker announces something
// else already, and once Close has begun (incref then fails). The last reference's close
// waits for every announcement of g to end (unprotected).
func (g *fdGuard) protect(ctx context.Context) *runtime.Hazard {
	h := g.rt.Protect(ctx, unsafe.Pointer(g))
	if h == nil {
		return nil
	}
	// After the announcement, which Close's close waits out: either
	// this load sees guardClosing, or that wait sees the announcement.
	if s := g.state.Load(); s&guardClosing != 0 || s == 0 {
		h.Release()
		return nil
	}
	return h
}

// unprotected returns once no worker announces g (see protect). Close
// has begun, so no new announcement is used; one under way ends with a
// system call that does not block.
func (g *fdGuard) unprotected() {
	g.rt.WaitUnprotected(unsafe.Pointer(g))
}

// closing reports whether Close has begun.
func (g *fdGuard) closing() bool { return g.state.Load()&guardClosing != 0 }

// decref drops a reference; the last one after Close closes the descriptor.
// ctx is the caller's, used (without its cancellation) to run the close
// through the ring.
func (g *fdGuard) decref(ctx context.Context) {
	if g.state.Add(^uint64(guardRef-1)) == guardClosing {
		g.destroy(ctx)
	}
}

// decrefNow is decref for callers without a context of their own (a task
// must not wait for another task with a context that is not its own): the
// last reference closes with close(2) on the spot.
func (g *fdGuard) decrefNow() {
	if g.state.Add(^uint64(guardRef-1)) == guardClosing {
		g.unprotected()
		if ok, err := g.closeFD(); ok {
			g.closed(err)
			return
		}
		g.closed(unix.Close(g.fd))
	}
}

// errAlreadyClosed is returned by close to the second caller of Close;
// the types turn it into their own "closed" error.
var errAlreadyClosed = errors.New("faio/aio: descriptor already closed")

// close begins closing, drops the owner's reference and waits until the
// descriptor is closed, returning close(2)'s error. A second call returns
// errAlreadyClosed. If ctx is done first, close returns ctx.Err(); the
// descriptor is then closed by the last operation to finish. close of a
// zero fdGuard returns os.ErrInvalid at once and changes nothing: it has
// no owner's reference to drop, and no descriptor.
func (g *fdGuard) close(ctx context.Context) error {
	var s uint64
	for {
		s = g.state.Load()
		if s == 0 {
			return os.ErrInvalid
		}
		if s&guardClosing != 0 {
			return errAlreadyClosed
		}
		if g.state.CompareAndSwap(s, s|guardClosing) {
			break
		}
	}
	if f := g.rfd.Load(); f != nil {
		// Tasks waiting for readiness return now (see readiness for a
		// registration made while Close begins).
		f.Close()
	}
	if g.socket && s > guardRef {
		// Still referenced by the owner, so the descriptor is open. The
		// errno is irrelevant: shutdown wakes the waiters even where it
		// reports ENOTCONN (an unconnected UDP socket).
		_ = unix.Shutdown(g.fd, unix.SHUT_RDWR)
	}
	if g.pipe && s > guardRef {
		// Goroutines waiting in the netpoller return now. A poller made
		// after this load is made by an operation that then sees
		// closing before it waits (pollWait), and one that clears its
		// own deadline after this store sets it again.
		if p := g.poll.Load(); p != nil && p.pollable {
			_ = p.f.SetDeadline(aLongTimeAgo)
		}
	}
	g.decref(ctx)
	if done, err := g.closeResult(); done {
		// Nothing was in flight: closed already, whatever ctx says.
		return err
	}
	err := runtime.Suspend(ctx, func(w runtime.Waker) bool {
		g.mu.Lock()
		defer g.mu.Unlock()
		if g.isClosed {
			return false
		}
		g.closer = w
		return true
	})
	if done, cerr := g.closeResult(); done {
		return cerr
	}
	return err
}

func (g *fdGuard) closeResult() (bool, error) {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.isClosed, g.closeErr
}

// destroy closes the descriptor, and wakes Close: through its netpoller
// File if it has one, else through the ring of the calling task, and with
// close(2) otherwise (a plain goroutine, the portable backend, a closed
// runtime).
// Cancellation of ctx must not leave the descriptor open, so the close runs
// without it.
//
// The descriptor is closed exactly once: each path below closes it at most
// once, and a path that may have closed it never hands it to another. That
// matters most for the ring: once an entry naming the number has been
// prepared, the kernel may close it whatever SubmitOn reports, and a
// close(2) after that would close a number the kernel may already have
// given to another file. So close(2) follows the ring's close only when
// the close never reached the ring (closeOp.prepared is false: SubmitOn
// refused it up front, as on the portable backend or a closed runtime).
// An error after it reached the ring (not expected, with a context that
// cannot be cancelled, but not ruled out by SubmitOn's contract either)
// is reported to Close and leaves the number alone: at worst the
// descriptor leaks, which is better than closing somebody else's.
func (g *fdGuard) destroy(ctx context.Context) {
	g.unprotected()
	if ok, err := g.closeFD(); ok {
		g.closed(err)
		return
	}
	if !runtime.OnTask() {
		g.closed(unix.Close(g.fd)) // a goroutine closes as os does
		return
	}
	op := closeOps.Get().(*closeOp)
	op.fd = g.fd
	op.prepared.Store(false)
	res, serr := submitClose(context.WithoutCancel(ctx), g.rt, op)
	// SubmitOn returns only once op is no longer in flight (it waits for
	// the completion, or never started it), so prepared is final here.
	reached := op.prepared.Load()
	switch {
	case serr == nil:
		closeOps.Put(op)
		g.closed(res.Err())
	case !reached:
		// Refused before any entry named the number (no ring: the
		// portable backend, a closed runtime): nothing closed it, so
		// close(2) here, which does not wait for a disk or a peer, is
		// its only close.
		closeOps.Put(op)
		g.closed(unix.Close(g.fd))
	default:
		// The ring's close may have run: never close the number again.
		// op is not pooled either, in case the ring still holds it.
		g.closed(fmt.Errorf("faio/aio: close of descriptor %d on the ring failed after it was submitted, and the descriptor may or may not be closed (it is not closed again, since its number may have been reused): %w", g.fd, serr))
	}
}

// submitClose is how destroy submits its ring close; a test stands in one
// that fails after the close has run, or before it reached the ring.
var submitClose = runtime.SubmitOn

// closeOp is close(2) on the ring. prepared records that the worker filled
// a submission entry with it: from then on the kernel may close the
// descriptor, whatever SubmitOn reports (see destroy).
type closeOp struct {
	fd       int
	prepared atomic.Bool
}

// Prep fills sqe with the close and notes that the close reached the ring.
func (o *closeOp) Prep(sqe *uring.SQE) {
	o.prepared.Store(true)
	sqe.PrepClose(o.fd)
}

// closed records the outcome of close(2) and wakes Close.
func (g *fdGuard) closed(err error) {
	g.mu.Lock()
	g.isClosed, g.closeErr = true, err
	w := g.closer
	g.closer = runtime.Waker{}
	g.mu.Unlock()
	w.Wake()
}

var closeOps = sync.Pool{New: func() any { return new(closeOp) }}

// opLock serialises the operations of one kind on a descriptor (the reads
// of a Conn, the position-based I/O of a File), so that a Write is not
// interleaved with another and an operation struct embedded in its owner
// is used by one operation at a time. Waiters suspend (or block, outside
// tasks) in FIFO order; a cancelled waiter gives up its place.
type opLock struct {
	mu      sync.Mutex
	held    bool
	waiters []runtime.Waker // waiters[head:] wait, oldest first
	head    int
}

// lock acquires l, or returns ctx.Err() and leaves l unchanged.
func (l *opLock) lock(ctx context.Context) error {
	l.mu.Lock()
	if !l.held {
		l.held = true
		l.mu.Unlock()
		return nil
	}
	l.mu.Unlock()
	return runtime.Suspend(ctx, func(w runtime.Waker) bool {
		l.mu.Lock()
		defer l.mu.Unlock()
		if !l.held {
			l.held = true
			return false
		}
		if l.head > 0 && l.head >= len(l.waiters)/2 {
			// Reclaim the slots of waiters already served, so a lock
			// that is never free does not grow its queue forever.
			n := copy(l.waiters, l.waiters[l.head:])
			clear(l.waiters[n:])
			l.waiters, l.head = l.waiters[:n], 0
		}
		l.waiters = append(l.waiters, w)
		return true
	})
}

// unlock hands l to the first waiter still waiting, or frees it. A Waker
// whose waiter was cancelled refuses the hand-off (Wake returns false) and
// the next one is tried, so the lock is never handed to nobody.
func (l *opLock) unlock() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for l.head < len(l.waiters) {
		w := l.waiters[l.head]
		l.waiters[l.head] = runtime.Waker{}
		l.head++
		if w.Wake() {
			return
		}
	}
	l.waiters, l.head = l.waiters[:0], 0
	l.held = false
}
