package runtime

import (
	"bytes"
	"context"
	"errors"
	"log"
	"os"
	goruntime "runtime"
	"strings"
	"sync"
	"testing"
	"time"
)

// failureLog collects the reports of Config.OnTaskFailure.
type failureLog struct {
	mu  sync.Mutex
	got []TaskFailure
}

func (l *failureLog) hook(f TaskFailure) {
	l.mu.Lock()
	l.got = append(l.got, f)
	l.mu.Unlock()
}

func (l *failureLog) all() []TaskFailure {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]TaskFailure(nil), l.got...)
}

var errBoom = errors.New("boom")

// A child that fails while nobody joins it is reported by the time the
// BlockOn it ran under returns, once; joined failures and cancellations are
// not reported.
func TestUnjoinedFailuresReportedAtBlockOnEnd(t *testing.T) {
	var fl failureLog
	rt := newRuntime(t, Config{Workers: 2, OnTaskFailure: fl.hook})
	var errID, panicID uint64
	v, err := BlockOn(rt, func(ctx context.Context) (int, error) {
		errID = Spawn(ctx, func(ctx context.Context) (int, error) { return 0, errBoom }).ID()
		panicID = Spawn(ctx, func(ctx context.Context) (int, error) { panic("kaboom") }).ID()
		// Joined failures are the joiner's to handle: not reported,
		// whether the Join starts before or after the failure.
		early := Spawn(ctx, func(ctx context.Context) (int, error) {
			_ = Sleep(ctx, time.Millisecond)
			return 0, errors.New("joined early")
		})
		if _, err := early.Join(ctx); err == nil {
			return 0, errors.New("early join saw no error")
		}
		late := Spawn(ctx, func(ctx context.Context) (int, error) { return 0, errors.New("joined late") })
		_ = Sleep(ctx, 2*time.Millisecond)
		if _, err := late.Join(ctx); err == nil {
			return 0, errors.New("late join saw no error")
		}
		// A cancelled task returning its context's error has not failed.
		c := Spawn(ctx, func(ctx context.Context) (int, error) { return 0, Sleep(ctx, time.Hour) })
		Yield(ctx)
		c.Cancel()
		return 42, nil
	})
	if v != 42 || err != nil {
		t.Fatalf("BlockOn = %d, %v; want 42, nil", v, err)
	}
	got := fl.all()
	if len(got) != 2 {
		t.Fatalf("reported %d failures at BlockOn's end, want 2: %+v", len(got), got)
	}
	byID := map[uint64]error{got[0].ID: got[0].Err, got[1].ID: got[1].Err}
	if !errors.Is(byID[errID], errBoom) {
		t.Errorf("task %d reported as %v, want boom", errID, byID[errID])
	}
	var pe *PanicError
	if !errors.As(byID[panicID], &pe) || pe.Value != "kaboom" || !bytes.Contains(pe.Stack, []byte("failure_test.go")) {
		t.Errorf("panicking task %d reported as %v, want a *PanicError with its stack", panicID, byID[panicID])
	}
	// Nothing is reported twice: not by the garbage collector, not by
	// Close.
	goruntime.GC()
	goruntime.GC()
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	if n := len(fl.all()); n != 2 {
		t.Errorf("%d reports after GC and Close, want still 2", n)
	}
}

// The default report goes to the standard logger, with the panic's stack.
func TestUnjoinedPanicLoggedByDefault(t *testing.T) {
	var buf bytes.Buffer
	var mu sync.Mutex
	log.SetOutput(writerFunc(func(p []byte) (int, error) {
		mu.Lock()
		defer mu.Unlock()
		return buf.Write(p)
	}))
	defer log.SetOutput(os.Stderr)
	rt := newRuntime(t, Config{Workers: 1})
	id, _ := BlockOn(rt, func(ctx context.Context) (uint64, error) {
		return Spawn(ctx, func(ctx context.Context) (int, error) { panic("nobody catches me") }).ID(), nil
	})
	mu.Lock()
	out := buf.String()
	mu.Unlock()
	for _, want := range []string{"faio: task " + itoa(id) + " failed and nobody joined it", "nobody catches me", "failure_test.go"} {
		if !strings.Contains(out, want) {
			t.Errorf("log lacks %q:\n%s", want, out)
		}
	}
}

// A handle dropped unjoined is reported when the collector finds it
// unreachable; one kept to the end is reported by Close.
func TestUnjoinedFailuresReportedOnDropAndClose(t *testing.T) {
	var fl failureLog
	rt := newRuntime(t, Config{Workers: 2, OnTaskFailure: fl.hook})
	ended := make(chan struct{})
	dropped := SpawnOn(rt, func(ctx context.Context) (int, error) {
		defer close(ended)
		return 0, errBoom
	}).ID()
	<-ended
	deadline := time.Now().Add(10 * time.Second)
	for len(fl.all()) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("a failed task whose handle was dropped was never reported")
		}
		goruntime.GC()
		time.Sleep(time.Millisecond)
	}
	if got := fl.all(); got[0].ID != dropped || !errors.Is(got[0].Err, errBoom) {
		t.Fatalf("reported %+v, want task %d with boom", got, dropped)
	}

	kept := SpawnOn(rt, func(ctx context.Context) (int, error) { return 0, errBoom })
	<-kept.Done()
	goruntime.GC()
	if n := len(fl.all()); n != 1 {
		t.Fatalf("%d reports while the failed task's handle is still held, want 1", n)
	}
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	got := fl.all()
	if len(got) != 2 || got[1].ID != kept.ID() {
		t.Fatalf("after Close: %+v, want the kept task %d reported", got, kept.ID())
	}
}

type writerFunc func([]byte) (int, error)

func (f writerFunc) Write(p []byte) (int, error) { return f(p) }
