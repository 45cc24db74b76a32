package faio_test

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/faio-go/faio"
)

// catch calls f and turns a panic into an error, so that a crash of the
// code under test fails the test instead of ending the test binary.
func catch(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panicked: %v", r)
		}
	}()
	return f()
}

// Through the facade, bad input gets the facade's errors: a nil context,
// a nil or zero *Runtime, a zero JoinHandle. None crashes or hangs.
func TestFacadeRefusesBadInput(t *testing.T) {
	rt, err := faio.New(faio.Config{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	var nilCtx context.Context
	fn := func(context.Context) (int, error) { return 1, nil }

	nilCtxCalls := map[string]func() error{
		"Sleep": func() error { return faio.Sleep(nilCtx, time.Millisecond) },
		"Mutex.Lock": func() error {
			var mu faio.Mutex
			return mu.Lock(nilCtx)
		},
		"Sender.Send": func() error {
			tx, _ := faio.NewChannel[int](1)
			return tx.Send(nilCtx, 1)
		},
		"Receiver.Recv": func() error {
			_, rx := faio.NewChannel[int](1)
			_, err := rx.Recv(nilCtx)
			return err
		},
		"JoinHandle.Join": func() error {
			h := faio.SpawnOn(rt, fn)
			_, err := h.Join(nilCtx)
			return err
		},
	}
	runAll := func(where string) {
		for name, call := range nilCtxCalls {
			if err := catch(call); !errors.Is(err, faio.ErrNilContext) {
				t.Errorf("%s: %s with a nil context = %v, want faio.ErrNilContext", where, name, err)
			}
		}
	}
	runAll("from a goroutine")
	if _, err := faio.BlockOn(rt, func(ctx context.Context) (int, error) {
		runAll("from a task")
		return 0, nil
	}); err != nil {
		t.Fatal(err)
	}

	for _, bad := range []struct {
		name string
		rt   *faio.Runtime
	}{{"nil", nil}, {"zero", new(faio.Runtime)}} {
		if err := catch(func() error { _, err := faio.BlockOn(bad.rt, fn); return err }); !errors.Is(err, faio.ErrNilRuntime) {
			t.Errorf("BlockOn on a %s runtime = %v, want faio.ErrNilRuntime", bad.name, err)
		}
		if err := catch(func() error { _, err := faio.SpawnOn(bad.rt, fn).Join(context.Background()); return err }); !errors.Is(err, faio.ErrNilRuntime) {
			t.Errorf("SpawnOn on a %s runtime: Join = %v, want faio.ErrNilRuntime", bad.name, err)
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	var zero faio.JoinHandle[int]
	if _, err := zero.Join(ctx); !errors.Is(err, faio.ErrNilHandle) {
		t.Errorf("Join of a zero JoinHandle = %v, want faio.ErrNilHandle at once", err)
	}
}

// The facade's user reads "SpawnOn" and "WithRuntime", which it spells
// the same, and a Spawn given WithRuntime's context from a plain goroutine
// is told that Spawn needs a task's context.
func TestFacadeNoRuntimeMessages(t *testing.T) {
	rt, err := faio.New(faio.Config{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	if msg := faio.ErrNoRuntime.Error(); strings.Count(msg, "from a plain goroutine") != 1 || strings.Contains(msg, "runtime.") || !strings.Contains(msg, "WithRuntime(ctx, rt)") {
		t.Errorf("ErrNoRuntime = %q; want \"from a plain goroutine\" once, WithRuntime named, and no package prefix", msg)
	}
	_, err = faio.Spawn(faio.WithRuntime(context.Background(), rt), func(context.Context) (int, error) { return 0, nil }).Join(context.Background())
	if !errors.Is(err, faio.ErrNoRuntime) || !strings.Contains(err.Error(), "names a runtime") || !strings.Contains(err.Error(), "SpawnOn") {
		t.Errorf("Spawn(WithRuntime(ctx, rt), fn) from a goroutine: %v; want it to say the context names a runtime but is not a task's, and to point to SpawnOn", err)
	}
}

// A panic's error is one line for log.Print; the stack stays in Stack.
func TestFacadePanicErrorIsOneLine(t *testing.T) {
	rt, err := faio.New(faio.Config{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	_, err = faio.BlockOn(rt, func(context.Context) (int, error) { panic("boom") })
	var pe *faio.PanicError
	if !errors.As(err, &pe) || err.Error() != "faio task panicked: boom" || len(pe.Stack) == 0 {
		t.Errorf("BlockOn of a panicking task = %q; want a *PanicError reading \"faio task panicked: boom\", with its Stack", err)
	}
}
