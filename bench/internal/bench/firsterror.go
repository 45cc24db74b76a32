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
		f.store(err)
	}
}

// store is set's slow path, a function of its own: taking err's address
// moves err to the heap on entry, and set runs once per task in the
// spawning workloads, where an allocation for every nil error would be
// charged to faio's side alone.
//
//go:noinline
func (f *firstError) store(err error) {
	f.p.CompareAndSwap(nil, &err)
}

// get returns the first error recorded, or nil.
func (f *firstError) get() error {
	if p := f.p.Load(); p != nil {
		return *p
	}
	return nil
}
