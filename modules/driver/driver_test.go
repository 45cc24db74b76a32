package driver

import (
	"sync"
	"testing"
	"time"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestBackendFromEnv(t *testing.T) {
	for _, tc := range []struct {
		val  string
		want Backend
		ok   bool
		bad  bool
	}{
		{"", 0, false, false},
		{"auto", BackendAuto, true, false},
		{"io_uring", BackendIOUring, true, false},
		{"portable", BackendPortable, true, false},
		{"uring", 0, false, true},
		{"Portable", 0, false, true},
	} {
		t.Setenv(EnvBackend, tc.val)
		b, ok, err := BackendFromEnv()
		if (err != nil) != tc.bad || ok != tc.ok || b != tc.want {
			t.Errorf("%s=%q: BackendFromEnv() = %v, %v, %v", EnvBackend, tc.val, b, ok, err)
		}
	}
	if s := Backend(7).String(); s != "Backend(7)" || Backend(7).Valid() || !BackendPortable.Valid() {
		t.Errorf("Backend(7): %q, Valid %v", s, Backend(7).Valid())
	}
}

// A Portable driver's Wait ends with a Wake (sent before or during it) or
// its timeout, and a zero timeout only consumes a pending wake-up.
func TestPortableWaitWake(t *testing.T) {
	p := NewPortable[int]()
	p.Wake()
	p.Wake() // coalesces with the first
	start := time.Now()
	p.Wait(-1)
	if d := time.Since(start); d > time.Second {
		t.Fatalf("a pending Wake did not end Wait at once (%v)", d)
	}
	start = time.Now()
	p.Wait(20 * time.Millisecond)
	if d := time.Since(start); d < 20*time.Millisecond {
		t.Fatalf("Wait(20ms) returned after %v with no Wake pending", d)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		time.Sleep(10 * time.Millisecond)
		p.Wake()
	}()
	p.Wait(-1)
	wg.Wait()
	p.Wait(0) // nothing pending: returns at once
	if p.Reap() != 0 || p.CancelPending() {
		t.Fatal("a portable driver reports work")
	}
}
