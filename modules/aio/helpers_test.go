package aio

import (
	"context"
	goruntime "runtime"
	"testing"
	"time"

	"github.com/faio-go/faio/modules/runtime"
	"go.uber.org/goleak"
)

// newRuntime starts a runtime for one test and checks at the end that Close
// left no goroutine behind.
func newRuntime(t testing.TB, cfg runtime.Config) *runtime.Runtime {
	t.Helper()
	// Goroutines alive now are not this test's; every other one must be
	// gone once the runtime has closed.
	ignore := goleak.IgnoreCurrent()
	rt, err := runtime.New(cfg)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() {
		if err := rt.Close(); err != nil {
			t.Errorf("Close: %v", err)
		}
		if tt, ok := t.(*testing.T); ok {
			goleak.VerifyNone(tt, ignore)
		}
	})
	return rt
}

// goroutineCtx is the context a plain goroutine uses for I/O on rt.
func goroutineCtx(rt *runtime.Runtime) context.Context {
	return runtime.WithRuntime(context.Background(), rt)
}

// within fails the test if f does not return by the deadline: a hang is
// reported, not waited for.
func within(t *testing.T, d time.Duration, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	select {
	case <-done:
	case <-time.After(d):
		t.Fatalf("%s did not finish within %v", what, d)
	}
}

func benchRuntime(b *testing.B, workers int) *runtime.Runtime {
	rt, err := runtime.New(runtime.Config{Workers: workers})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rt.Close() })
	return rt
}

func withProcs(b *testing.B, n int) {
	old := goruntime.GOMAXPROCS(n)
	b.Cleanup(func() { goruntime.GOMAXPROCS(old) })
}
