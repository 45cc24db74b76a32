package main

import (
	"context"
	"testing"

	"github.com/faio-go/faio/modules/runtime"
)

// An unlock that looked the handle up just before faio_mutex_free removed
// it (a stray unlock racing the free) must not release the lock that free
// holds for good: it returned 0, and a faio_mutex_lock that had also looked
// the handle up before the removal then got the freed mutex (callback
// status 0, not FAIO_EBADHANDLE). Found by a reviewer; the C side of the
// race (faiocgo_mutex_unlock's lookup, then free) is played here in order.
func TestStrayUnlockAfterFreeKeepsTheFreedLock(t *testing.T) {
	_, s := newTestRuntime(t, 1)
	m := newMutexObj(s)
	if rc := m.free(); rc != codeOK {
		t.Fatalf("free = %d", rc)
	}
	if rc := m.unlock(); rc != codeEBADHANDLE {
		t.Errorf("stray unlock after free = %d, want FAIO_EBADHANDLE (%d)", rc, codeEBADHANDLE)
	}
	h := runtime.SpawnOn(s.rt, func(ctx context.Context) (int32, error) { return m.lock(ctx), nil })
	if rc, _ := h.Join(context.Background()); rc != codeEBADHANDLE {
		t.Errorf("late faio_mutex_lock of the freed mutex: callback status %d, want FAIO_EBADHANDLE (%d)", rc, codeEBADHANDLE)
	}
}
