//go:build !linux

package runtime

import (
	"errors"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/faio-go/faio/modules/timerwheel"
)

// Outside Linux there is no io_uring: every runtime runs on the portable
// backend, and Submit returns ErrNoRing. This file is the part of the
// worker's engine that the portable backend needs: its wait and wake-up,
// and the removal of wheel entries that other goroutines ask for.

// autoBackend is what BackendAuto chooses: the portable backend.
const autoBackend = BackendPortable

// Op is an io_uring operation. Outside Linux there is none: Op cannot be
// implemented, and Submit returns ErrNoRing.
type Op interface {
	linuxOnly()
}

// Err returns the error of a failed completion (a negative Res), wrapping
// the errno; nil otherwise.
func (r Result) Err() error {
	if r.Res >= 0 {
		return nil
	}
	return syscall.Errno(-r.Res)
}

type ioEngine struct {
	w    *worker
	port *portableEngine

	cancelMu     sync.Mutex
	cancelN      atomic.Int32
	timerCancels []timerwheel.Handle // guarded by cancelMu
}

func newIOEngine(w *worker, _ int, backend Backend) (*ioEngine, error) {
	if backend != BackendPortable {
		return nil, errors.New("faio/runtime: io_uring exists only on Linux; use BackendAuto or BackendPortable")
	}
	p := newPortableEngine()
	return &ioEngine{w: w, port: &p}, nil
}

func (e *ioEngine) wait(timeout time.Duration) {
	e.port.wait(timeout)
	e.reap()
}

func (e *ioEngine) wake() { e.port.wake() }

// reap removes the wheel entries asked for; no task is made runnable.
func (e *ioEngine) reap() int {
	e.processCancels()
	return 0
}

func (e *ioEngine) processCancels() {
	if e.cancelN.Load() == 0 {
		return
	}
	e.cancelMu.Lock()
	for _, h := range e.timerCancels {
		e.w.wheel.Cancel(h)
	}
	e.timerCancels = e.timerCancels[:0]
	e.cancelN.Store(0)
	e.cancelMu.Unlock()
}

// requestTimerCancel asks the worker to remove a wheel entry it owns; the
// worker does so at its next drive.
func (e *ioEngine) requestTimerCancel(h timerwheel.Handle) {
	e.cancelMu.Lock()
	e.timerCancels = append(e.timerCancels, h)
	e.cancelN.Add(1)
	e.cancelMu.Unlock()
}

func (e *ioEngine) quiesce() {}
func (e *ioEngine) close()   {}

// startIO and requestCancel serve Submit's waits, which cannot exist here.
func (w *worker) startIO(*Task, uint64)       { panic("faio/runtime: Submit without io_uring") }
func (w *worker) requestCancel(*Task, uint64) { panic("faio/runtime: Submit without io_uring") }
