package runtime

import (
	"errors"
	"fmt"
	"log"
	"os"
	"sync"
	"time"
)

// Backend is what a runtime's workers sleep on and run I/O with.
type Backend int

const (
	// BackendAuto uses io_uring where the kernel allows it and falls back
	// to BackendPortable where it does not (a seccomp filter refusing
	// io_uring, as Docker's and containerd's default profiles do; a kernel
	// without it; gVisor). It is the default.
	BackendAuto Backend = iota
	// BackendIOUring requires io_uring: New fails without it.
	BackendIOUring
	// BackendPortable needs no io_uring. Workers sleep on Go primitives
	// until their next timer or a wake-up; Submit is refused (ErrNoRing),
	// and packages built on it do their I/O as plain Go does (package
	// aio: sockets wait in Go's netpoller, files run on a bounded pool of
	// goroutines), with the calling task suspended meanwhile. Scheduling,
	// timers, sync and channels are the same on both backends.
	BackendPortable
)

// EnvBackend names the environment variable that overrides
// Config.IOBackend for operators: "auto", "io_uring" or "portable".
const EnvBackend = "FAIO_BACKEND"

// ErrNoRing is returned by Submit on a runtime whose backend has no
// io_uring (BackendPortable).
var ErrNoRing = errors.New("faio/runtime: Submit needs io_uring, and this runtime runs on the portable backend")

func (b Backend) String() string {
	switch b {
	case BackendAuto:
		return "auto"
	case BackendIOUring:
		return "io_uring"
	case BackendPortable:
		return "portable"
	}
	return fmt.Sprintf("Backend(%d)", int(b))
}

// backendFromEnv returns the backend FAIO_BACKEND asks for, if set.
func backendFromEnv() (Backend, bool, error) {
	v, ok := os.LookupEnv(EnvBackend)
	if !ok || v == "" {
		return 0, false, nil
	}
	for _, b := range []Backend{BackendAuto, BackendIOUring, BackendPortable} {
		if v == b.String() {
			return b, true, nil
		}
	}
	return 0, false, fmt.Errorf("%s=%q, want auto, io_uring or portable", EnvBackend, v)
}

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
// BackendPortable, never BackendAuto.
func (rt *Runtime) Backend() Backend { return rt.backend }

// portableEngine is the wait and wake-up of a worker without io_uring:
// a one-slot channel that wake fills and wait drains, with a reusable
// timer for the next deadline.
type portableEngine struct {
	wakeCh chan struct{}
	timer  *time.Timer
}

func newPortableEngine() portableEngine {
	t := time.NewTimer(time.Hour)
	t.Stop()
	return portableEngine{wakeCh: make(chan struct{}, 1), timer: t}
}

func (p *portableEngine) wait(timeout time.Duration) {
	switch {
	case timeout < 0:
		<-p.wakeCh
	case timeout == 0:
		select {
		case <-p.wakeCh:
		default:
		}
	default:
		p.timer.Reset(timeout)
		select {
		case <-p.wakeCh:
		case <-p.timer.C:
		}
		p.timer.Stop()
	}
}

func (p *portableEngine) wake() {
	select {
	case p.wakeCh <- struct{}{}:
	default: // a wake-up is pending already
	}
}
