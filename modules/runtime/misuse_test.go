package runtime

import (
	"context"
	"errors"
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// Bad input (a nil context, a nil or zero *Runtime, a nil or zero
// JoinHandle) gets a clear error and loses nothing: it never crashes the
// process, hangs or spins.

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

// misuse is a call with bad input and a check of its error.
type misuse struct {
	name string
	call func() error
}

// nilContextCalls are the runtime's entry points given a nil context; each
// returns what should be ErrNilContext, having checked that nothing ran.
func nilContextCalls(rt *Runtime) []misuse {
	var nilCtx context.Context
	noop := func(context.Context) (int, error) { return 1, nil }
	calls := []misuse{
		{"Consume", func() error { return Consume(nilCtx) }},
		{"ConsumeCurrent", func() error { return ConsumeCurrent(nilCtx) }},
		{"Suspend", func() error {
			registered := false
			err := Suspend(nilCtx, func(Waker) bool { registered = true; return false })
			if registered {
				return fmt.Errorf("register was called (and Suspend returned %v)", err)
			}
			return err
		}},
		{"Sleep", func() error { return Sleep(nilCtx, time.Millisecond) }},
		{"Sleep(0)", func() error { return Sleep(nilCtx, 0) }},
		{"SleepUntil", func() error { return SleepUntil(nilCtx, time.Now().Add(time.Millisecond)) }},
		{"Yield", func() error { return Yield(nilCtx) }},
		{"Interval.Tick", func() error {
			iv, err := NewInterval(time.Millisecond, Burst)
			if err != nil {
				return err
			}
			_, err = iv.Tick(nilCtx)
			return err
		}},
		{"Timeout", func() error {
			ran := false
			_, err := Timeout(nilCtx, time.Second, func(context.Context) (int, error) { ran = true; return 0, nil })
			if ran {
				return fmt.Errorf("op ran (and Timeout returned %v)", err)
			}
			return err
		}},
		{"Blocking", func() error {
			ran := false
			_, err := Blocking(nilCtx, func() (int, error) { ran = true; return 0, nil })
			if ran {
				return fmt.Errorf("f ran (and Blocking returned %v)", err)
			}
			return err
		}},
		{"Submit", func() error { _, err := Submit(nilCtx, nopOp{}); return err }},
		{"SubmitOn", func() error { _, err := SubmitOn(nilCtx, rt, nopOp{}); return err }},
		{"Spawn", func() error {
			ran := false
			h := Spawn(nilCtx, func(context.Context) (int, error) { ran = true; return 0, nil })
			_, err := h.Join(context.Background())
			if ran {
				return fmt.Errorf("the task ran (and Join returned %v)", err)
			}
			return err
		}},
		{"Join", func() error {
			// The result is not lost: a later Join with a context gets it.
			h := SpawnOn(rt, noop)
			_, err := h.Join(nilCtx)
			if v, jerr := h.Join(context.Background()); v != 1 || jerr != nil {
				return fmt.Errorf("Join(nil) = %v, then Join = %d, %v; want the result kept", err, v, jerr)
			}
			return err
		}},
		{"Join of a finished task", func() error {
			h := SpawnOn(rt, noop)
			<-h.Done()
			_, err := h.Join(nilCtx)
			return err
		}},
		{"WithRuntime", func() error {
			// It returns the nil it was given, which the calls refuse.
			if ctx := WithRuntime(nilCtx, rt); ctx != nil {
				return fmt.Errorf("WithRuntime(nil, rt) = %v, want nil", ctx)
			}
			return ErrNilContext
		}},
		{"RunNext", func() error {
			if RunNext(nilCtx) {
				return errors.New("RunNext(nil) ran a task")
			}
			return ErrNilContext
		}},
	}
	return calls
}

func checkMisuse(t *testing.T, where string, calls []misuse, errs []error, want error) {
	t.Helper()
	for i, c := range calls {
		if !errors.Is(errs[i], want) {
			t.Errorf("%s: %s = %v, want %v", where, c.name, errs[i], want)
		}
	}
}

func runMisuse(calls []misuse) []error {
	errs := make([]error, len(calls))
	for i, c := range calls {
		errs[i] = catch(c.call)
	}
	return errs
}

// A nil context is refused with ErrNilContext, from a plain goroutine and
// from a task (where it used to crash the process or fail the task with a
// nil pointer dereference). The sync and channel primitives and package
// aio go through these calls.
func TestNilContextIsRefused(t *testing.T) {
	rt := newRuntime(t, Config{Workers: 2})
	calls := nilContextCalls(rt)
	checkMisuse(t, "from a goroutine", calls, runMisuse(calls), ErrNilContext)

	errs, err := BlockOn(rt, func(ctx context.Context) ([]error, error) {
		return runMisuse(calls), nil
	})
	if err != nil {
		t.Fatalf("BlockOn: %v", err)
	}
	checkMisuse(t, "from a task", calls, errs, ErrNilContext)
	if !strings.Contains(ErrNilContext.Error(), "nil context") {
		t.Errorf("ErrNilContext = %q, want it to say nil context", ErrNilContext)
	}
}

// nilFuncCalls are the calls that run a function given by the caller,
// given a nil one; each returns what should be ErrNilFunc. ctx is a task's
// context or context.Background().
func nilFuncCalls(ctx context.Context, rt *Runtime) []misuse {
	var nilFn func(context.Context) (int, error)
	fn := func(context.Context) (int, error) { return 1, nil }
	calls := []misuse{
		{"Spawn", func() error {
			if Current(ctx) == nil {
				// From a goroutine Spawn fails for want of a task.
				return ErrNilFunc
			}
			_, err := Spawn(ctx, nilFn).Join(ctx)
			return err
		}},
		{"SpawnOn", func() error { _, err := SpawnOn(rt, nilFn).Join(ctx); return err }},
		{"Timeout", func() error { _, err := Timeout(ctx, time.Second, nilFn); return err }},
		{"Blocking", func() error {
			var f func() (int, error)
			_, err := Blocking(ctx, f)
			return err
		}},
		{"Suspend", func() error { return Suspend(ctx, nil) }},
	}
	if Current(ctx) == nil {
		// BlockOn and WaitAll refuse a task (ErrOnWorker) first.
		calls = append(calls,
			misuse{"BlockOn", func() error { _, err := BlockOn(rt, nilFn); return err }},
			misuse{"WaitAll", func() error {
				// None of them runs, the good one neither.
				ran := atomic.Bool{}
				good := func(context.Context) (int, error) { ran.Store(true); return 1, nil }
				_, err := WaitAll(rt, good, nilFn, fn)
				if ran.Load() {
					return fmt.Errorf("a function ran (and WaitAll returned %v)", err)
				}
				return err
			}})
	}
	return calls
}

// A nil function is refused with ErrNilFunc, from a plain goroutine and from
// a task: it used to fail the task with a nil pointer dereference, or, in
// Blocking from a goroutine and in Suspend's register, to crash the process.
func TestNilFuncIsRefused(t *testing.T) {
	rt := newRuntime(t, Config{Workers: 2})
	calls := nilFuncCalls(context.Background(), rt)
	checkMisuse(t, "from a goroutine", calls, runMisuse(calls), ErrNilFunc)

	errs, err := BlockOn(rt, func(ctx context.Context) ([]error, error) {
		calls := nilFuncCalls(ctx, rt)
		errs := runMisuse(calls)
		for i, c := range calls {
			if !errors.Is(errs[i], ErrNilFunc) {
				errs[i] = fmt.Errorf("%s: %w", c.name, errs[i])
			}
		}
		return errs, nil
	})
	if err != nil {
		t.Fatalf("BlockOn: %v", err)
	}
	for _, err := range errs {
		if !errors.Is(err, ErrNilFunc) {
			t.Errorf("from a task: %v, want ErrNilFunc", err)
		}
	}
	// The runtime is unharmed: a task runs as before.
	if v, err := BlockOn(rt, func(context.Context) (int, error) { return 7, nil }); v != 7 || err != nil {
		t.Errorf("BlockOn after the misuse = %d, %v; want 7, nil", v, err)
	}
}

// nilRuntimeCalls are the functions and methods taking or on a *Runtime,
// given rt, nil or zero; each returns what should be ErrNilRuntime.
func nilRuntimeCalls(rt *Runtime) []misuse {
	fn := func(context.Context) (int, error) { return 1, nil }
	return []misuse{
		{"BlockOn", func() error { _, err := BlockOn(rt, fn); return err }},
		{"WaitAll", func() error { _, err := WaitAll(rt, fn, fn); return err }},
		{"WaitAll of nothing", func() error { _, err := WaitAll[int](rt); return err }},
		{"SpawnOn", func() error {
			h := SpawnOn(rt, fn)
			select {
			case <-h.Done():
			default:
				return errors.New("the handle SpawnOn returned is not done")
			}
			_, err := h.Join(context.Background())
			return err
		}},
		{"SubmitOn", func() error { _, err := SubmitOn(context.Background(), rt, nopOp{}); return err }},
		{"RegisterFD", func() error { _, err := rt.RegisterFD(0); return err }},
		{"Close", func() error { return rt.Close() }},
		{"Close again", func() error { return rt.Close() }},
		{"Stats, Workers, Backend", func() error {
			if s := rt.Stats(); s.Workers != 0 || s.Live != 0 || s.Spawned != 0 {
				return fmt.Errorf("Stats = %+v, want zero counts", s)
			}
			if n := rt.Workers(); n != 0 {
				return fmt.Errorf("Workers = %d, want 0", n)
			}
			_ = rt.Backend()
			return ErrNilRuntime
		}},
		{"WithRuntime", func() error {
			if got := RuntimeOf(WithRuntime(context.Background(), rt)); got != nil {
				return fmt.Errorf("RuntimeOf(WithRuntime(ctx, rt)) = %p, want nil", got)
			}
			return ErrNilRuntime
		}},
	}
}

// A nil *Runtime, and the zero Runtime (not made by New), are refused with
// ErrNilRuntime by every function and method that takes one, from a plain
// goroutine and from a task.
func TestNilOrZeroRuntimeIsRefused(t *testing.T) {
	live := newRuntime(t, Config{Workers: 1})
	for _, bad := range []struct {
		name string
		rt   *Runtime
	}{{"nil", nil}, {"zero", new(Runtime)}} {
		calls := nilRuntimeCalls(bad.rt)
		checkMisuse(t, bad.name+" runtime, from a goroutine", calls, runMisuse(calls), ErrNilRuntime)

		errs, err := BlockOn(live, func(ctx context.Context) ([]error, error) {
			// BlockOn, WaitAll and Close refuse a bad rt before they
			// check that they are not in a task (ErrOnWorker).
			return runMisuse(calls), nil
		})
		if err != nil {
			t.Fatalf("BlockOn: %v", err)
		}
		checkMisuse(t, bad.name+" runtime, from a task", calls, errs, ErrNilRuntime)
	}
}

// A zero or nil JoinHandle fails at once with ErrNilHandle: Join used to
// wait for its context to end. Done is closed, Cancel does nothing, ID is 0.
func TestZeroJoinHandleFailsAtOnce(t *testing.T) {
	rt := newRuntime(t, Config{Workers: 1})
	check := func(where string, h *JoinHandle[int]) {
		t.Helper()
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		err := catch(func() error {
			if _, err := h.Join(ctx); !errors.Is(err, ErrNilHandle) {
				return fmt.Errorf("Join = %v, want ErrNilHandle", err)
			}
			select {
			case <-h.Done():
			default:
				return errors.New("Done is not closed")
			}
			h.Cancel()
			if id := h.ID(); id != 0 {
				return fmt.Errorf("ID = %d, want 0", id)
			}
			if h.Spawned() {
				return errors.New("Spawned = true")
			}
			return nil
		})
		if err != nil {
			t.Errorf("%s: %v", where, err)
		}
	}
	var nilHandle *JoinHandle[int]
	check("zero handle, from a goroutine", new(JoinHandle[int]))
	check("nil handle, from a goroutine", nilHandle)
	if _, err := BlockOn(rt, func(ctx context.Context) (int, error) {
		check("zero handle, from a task", new(JoinHandle[int]))
		check("nil handle, from a task", nilHandle)
		return 0, nil
	}); err != nil {
		t.Fatalf("BlockOn: %v", err)
	}
}

// The error for a context that names no runtime says "from a plain
// goroutine" once and names the calls as both the runtime and the faio
// facade spell them (no package prefix). Spawn and Submit given a context
// that names a runtime (WithRuntime) but is not a task's say what they
// need instead of "no runtime".
func TestNoRuntimeMessages(t *testing.T) {
	rt := newRuntime(t, Config{Workers: 1})
	msg := ErrNoRuntime.Error()
	if n := strings.Count(msg, "from a plain goroutine"); n != 1 {
		t.Errorf("ErrNoRuntime says \"from a plain goroutine\" %d times: %q", n, msg)
	}
	for _, want := range []string{"SpawnOn(rt, fn)", "SubmitOn(ctx, rt, op)", "WithRuntime(ctx, rt)"} {
		if !strings.Contains(msg, want) {
			t.Errorf("ErrNoRuntime = %q, want it to name %s", msg, want)
		}
	}
	if strings.Contains(msg, "runtime.") {
		t.Errorf("ErrNoRuntime = %q names the runtime package, which a facade user does not import", msg)
	}

	ctx := WithRuntime(context.Background(), rt)
	_, err := Spawn(ctx, func(context.Context) (int, error) { return 0, nil }).Join(context.Background())
	if !errors.Is(err, ErrNoRuntime) || !strings.Contains(err.Error(), "names a runtime") || !strings.Contains(err.Error(), "SpawnOn(rt, fn)") {
		t.Errorf("Spawn with a context from WithRuntime: %v; want ErrNoRuntime saying the context names a runtime but is no task's, and pointing to SpawnOn", err)
	}
	_, err = Submit(ctx, nopOp{})
	if !errors.Is(err, ErrNoRuntime) || !strings.Contains(err.Error(), "SubmitOn(ctx, rt, op)") || strings.Contains(err.Error(), "names no runtime") {
		t.Errorf("Submit with a context from WithRuntime: %v; want ErrNoRuntime pointing to SubmitOn, not saying it names no runtime", err)
	}
}

// PanicError's message is one line; the stack stays in its field (and
// in the default report of an unjoined failure: see failure_test.go).
func TestPanicErrorIsOneLine(t *testing.T) {
	rt := newRuntime(t, Config{Workers: 1})
	boom := errors.New("boom")
	_, err := BlockOn(rt, func(ctx context.Context) (int, error) {
		return Spawn(ctx, func(context.Context) (int, error) { panic(boom) }).Join(ctx)
	})
	var pe *PanicError
	if !errors.As(err, &pe) {
		t.Fatalf("BlockOn = %v, want a *PanicError", err)
	}
	if got, want := pe.Error(), "faio task panicked: boom"; got != want {
		t.Errorf("Error() = %q, want %q", got, want)
	}
	if !strings.Contains(string(pe.Stack), "misuse_test.go") {
		t.Errorf("Stack does not hold the panicking frame:\n%s", pe.Stack)
	}
	if !errors.Is(err, boom) {
		t.Errorf("errors.Is(err, boom) = false; Unwrap must still give the panic value")
	}
}

// Stats.Live is published in batches and may lag: its comment says so,
// and says what to use for an exact count, so that nobody builds a leak
// check on it that fails now and then.
func TestStatsLiveDocSaysItLags(t *testing.T) {
	f, err := parser.ParseFile(token.NewFileSet(), "stats.go", nil, parser.ParseComments)
	if err != nil {
		t.Fatal(err)
	}
	var doc string
	ast.Inspect(f, func(n ast.Node) bool {
		if field, ok := n.(*ast.Field); ok && len(field.Names) == 1 && field.Names[0].Name == "Live" {
			doc = field.Doc.Text() + field.Comment.Text()
		}
		return true
	})
	for _, want := range []string{"lag", "Close"} {
		if !strings.Contains(doc, want) {
			t.Errorf("the comment of Stats.Live, %q, does not mention %q", doc, want)
		}
	}
}

// A task that joins its own handle would wait for its own end: Join fails
// at once with ErrSelfJoin, with the task's context and with one derived
// from it, and the task's own result is untouched.
func TestSelfJoinFailsAtOnce(t *testing.T) {
	rt := newRuntime(t, Config{Workers: 2})
	_, err := BlockOn(rt, func(ctx context.Context) (int, error) {
		var self atomic.Pointer[JoinHandle[int]]
		// The task's context ends in 5 s, so that a Join that waits
		// fails the test rather than hang it.
		bounded, cancel := context.WithTimeout(ctx, 5*time.Second)
		defer cancel()
		h := Spawn(bounded, func(ctx context.Context) (int, error) {
			for self.Load() == nil {
				if err := Yield(ctx); err != nil {
					return 0, err
				}
			}
			start := time.Now()
			if _, err := self.Load().Join(ctx); !errors.Is(err, ErrSelfJoin) {
				return 0, fmt.Errorf("Join with the task's context = %v, want ErrSelfJoin", err)
			}
			dctx, cancel := context.WithTimeout(ctx, 2*time.Second)
			defer cancel()
			if _, err := self.Load().Join(dctx); !errors.Is(err, ErrSelfJoin) {
				return 0, fmt.Errorf("Join with a derived context = %v, want ErrSelfJoin", err)
			}
			if d := time.Since(start); d > time.Second {
				return 0, fmt.Errorf("the self-joins took %v", d)
			}
			return 7, nil
		})
		self.Store(h)
		return h.Join(ctx)
	})
	if err != nil {
		t.Fatal(err)
	}
}
