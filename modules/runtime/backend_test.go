package runtime

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// refuseRings makes ring setup fail as under a seccomp filter, for one test.
func refuseRings(t *testing.T) error {
	refused := fmt.Errorf("faio/uring: io_uring_setup: %w", syscall.EPERM)
	old := newEngine
	newEngine = func(w *worker, b Backend) (engine, error) {
		if b == BackendPortable {
			return old(w, b)
		}
		return nil, fmt.Errorf("faio/driver: worker %d: %w", w.id, refused)
	}
	t.Cleanup(func() { newEngine = old })
	t.Setenv(EnvBackend, "") // the operator's choice would hide the fallback
	return refused
}

// Where io_uring is refused, BackendAuto falls back to the portable
// backend and says so once through the hook; BackendIOUring fails with
// the kernel's reason.
func TestAutoFallsBackWhereIOUringIsRefused(t *testing.T) {
	refused := refuseRings(t)
	var notices []error
	rt := newRuntime(t, Config{Workers: 2, OnBackendFallback: func(err error) { notices = append(notices, err) }})
	if rt.Backend() != BackendPortable || rt.Stats().Backend != BackendPortable {
		t.Fatalf("Backend = %v, Stats.Backend = %v; want portable", rt.Backend(), rt.Stats().Backend)
	}
	if len(notices) != 1 || !errors.Is(notices[0], refused) {
		t.Fatalf("fallback notices = %v, want one carrying %v", notices, refused)
	}
	if _, err := New(Config{IOBackend: BackendIOUring}); !errors.Is(err, syscall.EPERM) {
		t.Fatalf("New with BackendIOUring where io_uring is refused = %v, want EPERM", err)
	}
}

// Without a hook, the fallback notice goes to the log once per process,
// however many runtimes fall back.
func TestFallbackNoticeLoggedOnce(t *testing.T) {
	refuseRings(t)
	fallbackNotice = sync.Once{}
	var buf bytes.Buffer
	log.SetOutput(&buf)
	t.Cleanup(func() { log.SetOutput(nil) })
	for range 3 {
		rt := newRuntime(t, Config{Workers: 1})
		if rt.Backend() != BackendPortable {
			t.Fatalf("Backend = %v", rt.Backend())
		}
	}
	if n := strings.Count(buf.String(), "running on the portable backend"); n != 1 {
		t.Fatalf("%d notices logged, want 1:\n%s", n, buf.String())
	}
	if !strings.Contains(buf.String(), "operation not permitted") || !strings.Contains(buf.String(), "FAIO_BACKEND=portable") {
		t.Fatalf("notice does not give the reason and the way to choose: %s", buf.String())
	}
}

// FAIO_BACKEND overrides the Config; a bad value is a config error.
func TestBackendEnvironmentOverride(t *testing.T) {
	t.Setenv(EnvBackend, "portable")
	rt := newRuntime(t, Config{Workers: 1, IOBackend: BackendIOUring})
	if rt.Backend() != BackendPortable {
		t.Fatalf("FAIO_BACKEND=portable: Backend = %v", rt.Backend())
	}
	t.Setenv(EnvBackend, "epoll")
	if _, err := New(Config{}); !errors.Is(err, ErrInvalidConfig) || !strings.Contains(err.Error(), "FAIO_BACKEND") {
		t.Fatalf("FAIO_BACKEND=epoll: New = %v", err)
	}
	t.Setenv(EnvBackend, "")
	if _, err := New(Config{IOBackend: Backend(7)}); !errors.Is(err, ErrInvalidConfig) {
		t.Fatalf("IOBackend 7: New = %v", err)
	}
}

// On the portable backend the scheduler, timers and wake-ups work as on
// io_uring (the whole suite runs there too: FAIO_BACKEND=portable); Submit
// is refused with ErrNoRing.
func TestPortableBackendRunsTasksAndTimers(t *testing.T) {
	rt := newRuntime(t, Config{Workers: 2, IOBackend: BackendPortable})
	if rt.Backend() != BackendPortable {
		t.Skipf("FAIO_BACKEND chose %v", rt.Backend())
	}
	if _, err := SubmitOn(context.Background(), rt, nopOp{}); err != ErrNoRing {
		t.Fatalf("SubmitOn = %v, want ErrNoRing", err)
	}
	got, err := BlockOn(rt, func(ctx context.Context) (int, error) {
		if _, err := Submit(ctx, nopOp{}); !errors.Is(err, ErrNoRing) {
			return 0, fmt.Errorf("Submit = %v, want ErrNoRing", err)
		}
		// Sleepers on both workers, woken by their wheels while the
		// workers sleep on Go primitives; a Wake from a goroutine.
		var hs []*JoinHandle[time.Duration]
		for i := range 100 {
			hs = append(hs, Spawn(ctx, func(ctx context.Context) (time.Duration, error) {
				start := time.Now()
				err := Sleep(ctx, time.Duration(1+i%20)*time.Millisecond)
				return time.Since(start), err
			}))
		}
		for i, h := range hs {
			d, err := h.Join(ctx)
			if err != nil || d < time.Duration(1+i%20)*time.Millisecond {
				return 0, fmt.Errorf("sleep %d: %v after %v", i, err, d)
			}
		}
		err := Suspend(ctx, func(w Waker) bool {
			go func() { time.Sleep(time.Millisecond); w.Wake() }()
			return true
		})
		return 42, err
	})
	if got != 42 || err != nil {
		t.Fatalf("BlockOn = %d, %v", got, err)
	}
}

// Where FAIO_TEST_WANT_BACKEND names a backend (mage test sets it when it
// runs the tests under a seccomp filter refusing io_uring), a runtime with
// the default Config runs on that backend: BackendAuto fell back.
func TestBackendChosen(t *testing.T) {
	want := os.Getenv("FAIO_TEST_WANT_BACKEND")
	if want == "" {
		t.Skip("FAIO_TEST_WANT_BACKEND is not set")
	}
	rt := newRuntime(t, Config{})
	if got := rt.Backend().String(); got != want {
		t.Fatalf("Backend = %s, want %s", got, want)
	}
}
