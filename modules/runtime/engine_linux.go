package runtime

import (
	"errors"
	"syscall"

	"github.com/faio-go/faio/modules/driver"
	"github.com/faio-go/faio/modules/uring"
)

// autoBackend is what BackendAuto tries first: io_uring, on Linux.
const autoBackend = BackendIOUring

func newRing(w *worker) (engine, error) {
	// COOP_TASKRUN: the kernel posts a completion when the thread that
	// submitted the operation next enters or leaves the kernel, or wakes
	// that thread if it sleeps, instead of interrupting it at once. A
	// worker submits from whatever thread Go runs it on; if it has moved
	// since, its completions wait for that thread to wake up (at once) or,
	// if it computes, to enter the kernel (Go preempts it within about
	// 10 ms; see driver.RingConfig.Flags).
	// Measured on W7 (bench/): the server's CPU per round trip went from
	// 1.26x to 1.03x of Go's net, and round-trip tails under CPU hogs that
	// move the workers between threads were no worse than without it.
	flags := uring.SetupCoopTaskrun | uring.SetupTaskrunFlag
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
	if err != nil && errors.Is(err, syscall.EINVAL) {
		// A kernel older than 5.19 does not know the flags (EINVAL); a
		// worker runs as well without them, its ring interrupting the
		// submitting thread. Other errors are the ring's own.
		cfg.Flags = 0
		r, err = driver.NewRing(cfg)
	}
	return r, err
}
