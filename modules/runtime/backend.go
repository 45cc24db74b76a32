package runtime

import (
	"errors"
	"log"
	"sync"
	"time"

	"github.com/faio-go/faio/modules/driver"
)

// Backend is what a runtime's workers sleep on and run I/O with, chosen by
// Config.IOBackend and overridden by the environment variable EnvBackend
// (FAIO_BACKEND=auto|io_uring|portable). BackendAuto, the default, uses
// io_uring where the kernel allows it and falls back to BackendPortable
// where it does not (a seccomp filter as in Docker's default profile, a
// kernel without it, gVisor); BackendIOUring makes New fail without it. On
// the portable backend Submit returns ErrNoRing and package aio does its
// I/O as plain Go does; scheduling, timers, sync and channels are the same
// on both. See package driver, which implements them.
type Backend = driver.Backend

// The backends; see Backend.
const (
	BackendAuto     = driver.BackendAuto
	BackendIOUring  = driver.BackendIOUring
	BackendPortable = driver.BackendPortable
	EnvBackend      = driver.EnvBackend
)

// ErrNoRing is returned by Submit on a runtime whose backend has no
// io_uring (BackendPortable).
var ErrNoRing = errors.New("faio/runtime: Submit needs io_uring, and this runtime runs on the portable backend")

// Op is one io_uring operation (see driver.Op): Prep fills the submission
// entry, and the Op keeps the memory it references reachable until its
// completion has been reaped. An Op is one request with one result: link
// flags are cleared from its entry, and a multishot request (accept,
// receive or poll that stays armed) completes with EINVAL without running.
type Op = driver.Op

// Result is the completion of an Op: Res is the kernel's result (a count,
// an fd, ...), Flags the CQE flags. Result.Err turns a negative Res into
// the errno.
type Result = driver.Result

// fallbackNotice makes the default fallback notice print once per process.
var fallbackNotice sync.Once

// fellBack tells the user, once, that Auto chose the portable backend.
func (rt *Runtime) fellBack(err error) {
	if f := rt.cfg.OnBackendFallback; f != nil {
		f(err)
		return
	}
	fallbackNotice.Do(func() {
		log.Printf("faio: io_uring is unavailable (%v); running on the portable backend (set %s=portable to choose it and silence this notice)", err, EnvBackend)
	})
}

// Backend returns the backend the runtime runs on: BackendIOUring or
// BackendPortable, never BackendAuto, but for a nil or zero Runtime (not
// made by New), which runs on none: there it returns BackendAuto, the zero
// Backend.
func (rt *Runtime) Backend() Backend {
	if rt == nil {
		return BackendAuto
	}
	return rt.backend
}

// engine is a worker's driver: a driver.Ring on io_uring, a
// driver.Portable otherwise.
type engine interface {
	Wait(timeout time.Duration)
	Wake()
	Reap() int
	TryReap() (int, bool)                             // from a peer: see driver.Ring.TryReap
	StartHeld(op Op, t *Task, gen uint64) driver.OpID // see driver.Ring.StartHeld
	Unhold()
	Cancel(id driver.OpID)
	CancelPending() bool
	Stranded() int // from any goroutine: see driver.Ring.Stranded
	Counts() (submitted, completed uint64)
	Quiesce()
	Close()
}

// newEngine creates worker w's driver for the runtime's backend; a test
// stands in a refusal of io_uring for it.
var newEngine = func(w *worker, backend Backend) (engine, error) {
	if backend == BackendPortable {
		return driver.NewPortable[*Task](), nil
	}
	return newRing(w)
}

// startIO runs on worker w right after t suspended for an I/O: it starts
// the operation on w's ring, which it leaves held. The caller publishes
// the wait and then calls w.io.Unhold: until then no peer reaping the ring
// (reapStuckPeers) may hand the completion to ioDone, whose claim of a
// wait not yet published would fail, losing the result.
func (w *worker) startIO(t *Task, gen uint64) {
	c := t.coro.Load()
	c.ioRes, c.ioFlags = 0, 0
	c.ioWorker.Store(w)
	c.ioID.Store(uint64(w.io.StartHeld(c.ioOp, t, gen)))
}

// ioDone is the driver's completion callback for worker w's ring, run by w
// or by a peer reaping the ring of w stuck (reapStuckPeers): it hands the
// result to the task waiting for it, whose wait is published (startIO).
func (w *worker) ioDone(t *Task, gen uint64, r Result) bool {
	// Store the result before publishing the wake-up: the claim hands the
	// task to whoever runs it next.
	c := t.coro.Load()
	c.ioRes, c.ioFlags, c.ioDone = r.Res, r.Flags, true
	to := uint64(stWoken)
	if t.wstate.Load()&stIOCancel != 0 {
		to = stCancelled
	}
	if won, _ := t.claim(gen, to); won {
		w.pushWoken(t)
		return true
	}
	return false
}

// requestCancel asks worker w to cancel operation id: Wake and
// cancellation race through claim for other waits, but an I/O wait may
// only end with its completion, so cancellation is a request the worker
// turns into an ASYNC_CANCEL.
func (w *worker) requestCancel(id driver.OpID) {
	w.io.Cancel(id)
	if w.parked.Load() {
		w.unpark()
	}
}
