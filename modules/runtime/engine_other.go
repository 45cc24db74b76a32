//go:build !linux

package runtime

import "github.com/faio-go/faio/modules/driver"

// autoBackend is what BackendAuto chooses outside Linux: the portable
// backend.
const autoBackend = BackendPortable

func newRing(*worker) (engine, error) { return nil, driver.ErrNoIOUring }
