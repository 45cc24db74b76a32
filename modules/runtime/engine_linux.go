package runtime

import "github.com/faio-go/faio/modules/driver"

// autoBackend is what BackendAuto tries first: io_uring, on Linux.
const autoBackend = BackendIOUring

func newRing(w *worker) (engine, error) {
	return driver.NewRing(driver.RingConfig[*Task]{
		Entries:     w.rt.cfg.RingEntries,
		SubmitBatch: w.rt.cfg.SubmitBatch,
		Worker:      w.id,
		Done:        w.ioDone,
		Failed:      w.rt.reportIOError,
	})
}
