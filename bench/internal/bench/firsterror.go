package bench

import "sync/atomic"

// firstError keeps the first error reported by any of many concurrent
// tasks or goroutines. Recording costs nothing on the success path, so the
// timed loops of both implementations report failures the same way and no
// implementation pays for joining its tasks one by one.
type firstError struct {
	p atomic.Pointer[error]
}

// set records err if it is the first non-nil error.
func (f *firstError) set(err error) {
	if err != nil {
		f.p.CompareAndSwap(nil, &err)
	}
}

// get returns the first error recorded, or nil.
func (f *firstError) get() error {
	if p := f.p.Load(); p != nil {
		return *p
	}
	return nil
}
