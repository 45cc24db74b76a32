package runtime

import (
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/faio-go/faio/modules/timerwheel"
	"github.com/faio-go/faio/modules/uring"
	"golang.org/x/sys/unix"
)

// ioEngine is a worker's io_uring: the place the worker sleeps, the target
// of its wake-ups (a read kept pending on an eventfd) and, for file and
// network I/O, the ring its tasks' operations run on.
type ioEngine struct {
	w    *worker
	ring *uring.Ring     // nil on the portable backend
	port *portableEngine // the portable backend's wait and wake-up, else nil
	efd  int
	// efdBuf receives the eventfd counter. It lives in the worker's heap
	// object, referenced for the ring's whole life, so the kernel's write
	// into it is always into live, unmoving memory.
	efdBuf   [8]byte
	efdArmed bool
	// efdMu orders wake (any goroutine) against close: a wake that comes
	// late, after Close, must not write to a closed (maybe reused) fd.
	efdMu  sync.RWMutex
	reapFn func(*uring.CQE)
	reaped int

	// Operations in flight (ioop.go): the records, the entries prepared
	// and not yet submitted, and the cancellations other goroutines ask
	// for (ASYNC_CANCEL requests, wheel entries to remove), under cancelMu.
	recs          ioRecords
	pending       int
	cancelMu      sync.Mutex
	cancels       []cancelRequest
	cancelScratch []cancelRequest
	cancelN       atomic.Int32
	timerCancels  []timerwheel.Handle // guarded by cancelMu
}

// autoBackend is what BackendAuto tries first: io_uring, on Linux.
const autoBackend = BackendIOUring

// setupRing creates a worker's ring; a test stands in a refusal for it.
var setupRing = uring.New

// User data of the eventfd read; operation records use other values.
const wakeUserData = 1

func newIOEngine(w *worker, entries int, backend Backend) (*ioEngine, error) {
	if backend == BackendPortable {
		p := newPortableEngine()
		return &ioEngine{w: w, port: &p, efd: -1}, nil
	}
	ring, err := setupRing(uint32(entries), nil)
	if err != nil {
		return nil, fmt.Errorf("faio/runtime: worker %d: %w", w.id, err)
	}
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		ring.Close()
		return nil, fmt.Errorf("faio/runtime: worker %d: eventfd: %w", w.id, err)
	}
	e := &ioEngine{w: w, ring: ring, efd: efd}
	e.reapFn = e.complete
	if err := e.armWake(); err != nil {
		e.close()
		return nil, err
	}
	if _, err := ring.Submit(); err != nil {
		e.close()
		return nil, fmt.Errorf("faio/runtime: worker %d: submit: %w", w.id, err)
	}
	return e, nil
}

// armWake queues a read of the eventfd: a wake() completes it, which ends
// the worker's io_uring_enter.
func (e *ioEngine) armWake() error {
	sqe := e.ring.GetSQE()
	if sqe == nil {
		if _, err := e.ring.Submit(); err != nil {
			return err
		}
		if sqe = e.ring.GetSQE(); sqe == nil {
			return errors.New("faio/runtime: submission queue full")
		}
	}
	sqe.PrepRead(e.efd, e.efdBuf[:], 0)
	sqe.SetUserData(wakeUserData)
	e.efdArmed = true
	return nil
}

// wake interrupts the worker's sleep; safe from any goroutine.
func (e *ioEngine) wake() {
	if e.port != nil {
		e.port.wake()
		return
	}
	e.efdMu.RLock()
	defer e.efdMu.RUnlock()
	if e.efd < 0 {
		return
	}
	one := uint64(1)
	b := (*[8]byte)(unsafe.Pointer(&one))[:]
	for {
		_, err := unix.Write(e.efd, b)
		if err != syscall.EINTR {
			// EAGAIN means the counter is already huge: a wake is
			// pending anyway.
			return
		}
	}
}

// reap handles every ready completion without blocking and returns how many
// tasks they made runnable.
func (e *ioEngine) reap() int {
	e.processCancels()
	if e.ring == nil {
		return 0
	}
	if e.ring.CQReady() == 0 && e.ring.SQReady() == 0 {
		return 0
	}
	e.reaped = 0
	e.ring.ForEachCQE(e.reapFn)
	if !e.efdArmed {
		// Re-arm failures leave efdArmed false; the next reap retries.
		_ = e.armWake()
	}
	if e.ring.SQReady() > 0 {
		e.submit()
	}
	return e.reaped
}

func (e *ioEngine) complete(c *uring.CQE) {
	e.w.stats.ioCompleted.Add(1)
	switch {
	case c.UserData == wakeUserData:
		e.efdArmed = false
	case c.UserData >= firstRecord:
		if e.completeIO(c) {
			e.reaped++
		}
	}
}

// wait sleeps in io_uring_enter until a completion arrives or timeout
// passes (timeout < 0: no limit), then reaps.
func (e *ioEngine) wait(timeout time.Duration) {
	if e.port != nil {
		e.port.wait(timeout)
		e.reap()
		return
	}
	if !e.efdArmed {
		_ = e.armWake()
	}
	if e.ring.CQReady() == 0 {
		e.pending = 0
		_, err := e.ring.SubmitAndWaitTimeout(1, timeout)
		if err != nil && !errors.Is(err, syscall.ETIME) {
			e.enterFailed(err)
		}
	}
	e.reap()
}

// enterFailed handles an error of io_uring_enter. A passing one (a signal,
// the kernel short of memory or pushing back) is counted in Stats.IOErrors
// and the next enter retries. One that says the ring itself cannot be
// entered is fatal: see ringBroken.
func (e *ioEngine) enterFailed(err error) {
	if ringBroken(err) {
		panic(&RingError{Worker: e.w.id, Fd: e.ring.Fd(), Err: err})
	}
	e.w.rt.reportIOError(err)
}

// ringBroken reports whether an io_uring_enter error means that the ring's
// descriptor no longer names this ring: closed (EBADF), reused for another
// file (EOPNOTSUPP), the ring going away (ENXIO), or the call refused as
// malformed (EINVAL, EFAULT), which no retry changes.
func ringBroken(err error) bool {
	for _, errno := range []syscall.Errno{syscall.EBADF, syscall.EOPNOTSUPP, syscall.ENXIO, syscall.EINVAL, syscall.EFAULT} {
		if errors.Is(err, errno) {
			return true
		}
	}
	return false
}

// RingError is the panic value of a worker whose io_uring can no longer be
// entered, typically because the program closed the ring's file descriptor
// by mistake (a stray close of a reused descriptor number). The runtime
// cannot go on: operations in flight on that ring can neither complete nor
// be cancelled, and the kernel may still write into their buffers, so
// handing those buffers back with an error would be unsafe. Like Go's own
// netpoller, which throws when its epoll descriptor fails, the runtime
// stops the process with this message instead of spinning on the error.
type RingError struct {
	Worker int   // the worker that owns the ring
	Fd     int   // the ring's file descriptor number
	Err    error // the error io_uring_enter returned
}

func (e *RingError) Error() string {
	return fmt.Sprintf("faio: worker %d cannot enter its io_uring (fd %d): %v; the descriptor was closed or replaced "+
		"behind the runtime's back (a stray close of a reused descriptor number?). I/O in flight on that ring can "+
		"neither complete nor be cancelled, and the kernel may still write into its buffers, so the process stops",
		e.Worker, e.Fd, e.Err)
}

func (e *RingError) Unwrap() error { return e.Err }

// quiesce completes the pending eventfd read, so the kernel is done with
// efdBuf before the ring closes. Called by Close once the worker has left
// its loop.
func (e *ioEngine) quiesce() {
	for tries := 0; e.efdArmed && tries < 100; tries++ {
		e.wake()
		_, _ = e.ring.SubmitAndWaitTimeout(1, 10*time.Millisecond)
		e.ring.ForEachCQE(e.reapFn)
	}
}

func (e *ioEngine) close() {
	if e.ring != nil {
		e.ring.Close()
	}
	e.efdMu.Lock()
	defer e.efdMu.Unlock()
	if e.efd >= 0 {
		unix.Close(e.efd)
		e.efd = -1
	}
}
