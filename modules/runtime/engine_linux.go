package runtime

import (
	"errors"
	"fmt"
	"syscall"

	"github.com/faio-go/faio/modules/driver"
	"github.com/faio-go/faio/modules/uring"
)

// autoBackend is what BackendAuto tries first: io_uring, on Linux.
const autoBackend = BackendIOUring

func newRing(w *worker) (engine, error) {
	var flags uint32
	if w.rt.cfg.PinnedWorkers {
		// The worker's thread is the ring's only submitter (see
		// worker.pin): completions can wait for it to enter the kernel.
		flags = uring.SetupCoopTaskrun | uring.SetupTaskrunFlag
	}
	cfg := driver.RingConfig[*Task]{
		Flags:         flags,
		Entries:       w.rt.cfg.RingEntries,
		SubmitBatch:   w.rt.cfg.SubmitBatch,
		SQPollIdle:    w.rt.cfg.SQPollIdle,
		FileIOThreads: w.rt.cfg.FileIOThreads,
		Worker:        w.id,
		Done:          w.ioDone,
		Failed:        w.rt.reportIOError,
	}
	r, err := driver.NewRing(cfg)
	if err != nil && flags != 0 && errors.Is(err, syscall.EINVAL) {
		// A kernel older than 5.19 does not know the flags (EINVAL); a
		// pinned worker runs as well without them, its ring signalling
		// its eventfd. Other errors are the ring's own, reported as is.
		cfg.Flags = 0
		r, err = driver.NewRing(cfg)
	}
	return r, err
}

// attachRing attaches pinned worker w's ring to the thread w.pin just
// locked (driver.Ring.Attach); the portable backend has nothing to attach.
func attachRing(w *worker) {
	r, ok := w.io.(*driver.Ring[*Task])
	if !ok {
		return
	}
	if err := r.Attach(); err != nil {
		// The ring was created and checked by New; attaching it
		// enables it and arms its wake-up, which fails only if its
		// descriptor was closed behind the runtime's back: stop as
		// Wait would then, with a *driver.RingError.
		var re *driver.RingError
		if errors.As(err, &re) {
			panic(re)
		}
		panic(fmt.Sprintf("faio/runtime: worker %d cannot attach its ring to its thread: %v", w.id, err))
	}
}
