package runtime

import "github.com/faio-go/faio/modules/driver"

// autoBackend is what BackendAuto tries first: io_uring, on Linux.
const autoBackend = BackendIOUring

func newRing(w *worker) (engine, error) {
	return driver.NewRing(driver.RingConfig[*Task]{
		Entries:       w.rt.cfg.RingEntries,
		SubmitBatch:   w.rt.cfg.SubmitBatch,
		SQPollIdle:    w.rt.cfg.SQPollIdle,
		FileIOThreads: w.rt.cfg.FileIOThreads,
		Worker:        w.id,
		Done:          w.ioDone,
		Failed:        w.rt.reportIOError,
	})
}
