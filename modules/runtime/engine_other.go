//go:build !linux

package runtime

import "github.com/faio-go/faio/modules/driver"

// autoBackend is what BackendAuto chooses outside Linux: the portable
// backend.
const autoBackend = BackendPortable

func newRing(*worker) (engine, error) { return nil, driver.ErrNoIOUring }

// attachRing does nothing: outside Linux a worker runs on the portable
// backend, whose driver is not tied to a thread.
func attachRing(*worker) {}
