package runtime

import (
	"context"
	"errors"
	"fmt"
	"runtime/pprof"
	"sync"
	"testing"
	"time"
	"unsafe"
)

// parentKey is TestTaskContextAnswersFromItsParent's context key.
type parentKey struct{}

// A task's context answers Deadline, Value and Err from the context it was
// spawned with, whichever kind that is: its spawning task's own (nothing is
// stored then but the tree parent), a context derived from a task's, with
// or without a Done channel, or Background (SpawnOn and BlockOn roots, and
// a spawn from a context that outlived its task).
func TestTaskContextAnswersFromItsParent(t *testing.T) {
	rt := newRuntime(t, Config{Workers: 2})
	dl := time.Now().Add(time.Hour)
	type answer struct {
		name     string
		deadline time.Time
		hasDL    bool
		value    any
		err      error
	}
	ask := func(name string, ctx context.Context) answer {
		d, ok := ctx.Deadline()
		return answer{name, d, ok, ctx.Value(parentKey{}), ctx.Err()}
	}
	var leaked context.Context
	got, err := BlockOn(rt, func(ctx context.Context) ([]answer, error) {
		var out []answer
		out = append(out, ask("root", ctx))
		vctx := context.WithValue(ctx, parentKey{}, "v")
		dctx, cancel := context.WithDeadline(vctx, dl)
		defer cancel()
		// external, no Done of its own: WithValue over the task.
		a, err := Spawn(vctx, func(ctx context.Context) (answer, error) {
			// Its child, spawned with the child's own context, asks
			// through the tree parent.
			return Spawn(ctx, func(ctx context.Context) (answer, error) {
				return ask("grandchild of WithValue", ctx), nil
			}).Join(ctx)
		}).Join(ctx)
		if err != nil {
			return nil, err
		}
		out = append(out, a)
		// external, with a deadline and a Done channel.
		b, err := Spawn(dctx, func(ctx context.Context) (answer, error) {
			return ask("child of WithDeadline", ctx), nil
		}).Join(ctx)
		if err != nil {
			return nil, err
		}
		out = append(out, b)
		leaked = vctx
		return out, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// Spawned from a context whose task has finished: a top-level task
	// that keeps that context (Value), now cancelled by nothing.
	late, err := Spawn(leaked, func(ctx context.Context) (answer, error) {
		return ask("spawned from an outlived context", ctx), nil
	}).Join(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	on, err := SpawnOn(rt, func(ctx context.Context) (answer, error) {
		return ask("SpawnOn", ctx), nil
	}).Join(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	got = append(got, late, on)
	want := []answer{
		{name: "root"},
		{name: "grandchild of WithValue", value: "v"},
		{name: "child of WithDeadline", deadline: dl, hasDL: true, value: "v"},
		{name: "spawned from an outlived context", value: "v"},
		{name: "SpawnOn"},
	}
	if len(got) != len(want) {
		t.Fatalf("%d answers, want %d", len(got), len(want))
	}
	for i := range want {
		g, w := got[i], want[i]
		if g.name != w.name || !g.deadline.Equal(w.deadline) || g.hasDL != w.hasDL || g.value != w.value || g.err != w.err {
			t.Errorf("%s: Deadline = %v, %v; Value = %v; Err = %v; want %v, %v; %v; %v",
				w.name, g.deadline, g.hasDL, g.value, g.err, w.deadline, w.hasDL, w.value, w.err)
		}
	}
}

// A task's own fields set at spawn (its context parent, its profiler
// labels) are read by the task and by other goroutines while those
// goroutines make the task allocate the rest of its rarely used state
// (JoinHandle.Done, and the context's Done and AfterFunc): under -race this
// checks that the lazily allocated part
// is never read without its lock. The answers must stay right meanwhile.
func TestTaskContextReadWhileDoneIsCalled(t *testing.T) {
	rt := newRuntime(t, Config{Workers: 2})
	labelled := pprof.WithLabels(context.Background(), pprof.Labels("k", "v"))
	want := labelsOf(labelled)
	_, err := BlockOn(rt, func(ctx context.Context) (struct{}, error) {
		vctx := context.WithValue(ctx, parentKey{}, "v")
		var wg sync.WaitGroup
		errs := make(chan error, 2*200)
		for i := range 200 {
			parent := ctx
			if i%2 == 1 {
				parent = vctx
			}
			// A third of the tasks start without labels, and so
			// without anything stored beside them at spawn.
			wantLabels := want
			if i%3 == 0 {
				wantLabels = nil
				pprof.SetGoroutineLabels(context.Background())
			} else {
				pprof.SetGoroutineLabels(labelled)
			}
			started := make(chan context.Context, 1)
			h := Spawn(parent, func(ctx context.Context) (struct{}, error) {
				started <- ctx
				if got := getProfLabel(); got != wantLabels {
					return struct{}{}, fmt.Errorf("task %d started with labels %p, want %p", i, got, wantLabels)
				}
				if i%2 == 1 && ctx.Value(parentKey{}) != "v" {
					return struct{}{}, fmt.Errorf("task %d lost its parent's value", i)
				}
				return struct{}{}, Yield(ctx)
			})
			wg.Add(2)
			go func() {
				// At once, while the task may be starting on the
				// other worker.
				defer wg.Done()
				<-h.Done()
			}()
			go func() {
				defer wg.Done()
				c := <-started
				stop := context.AfterFunc(c, func() {})
				_ = c.Done()
				_, _ = c.Deadline()
				if i%2 == 1 && c.Value(parentKey{}) != "v" {
					errs <- fmt.Errorf("a goroutine asking task %d lost its parent's value", i)
				}
				stop()
			}()
			if _, err := h.Join(ctx); err != nil {
				return struct{}{}, err
			}
		}
		wg.Wait()
		close(errs)
		var all []error
		for err := range errs {
			all = append(all, err)
		}
		return struct{}{}, errors.Join(all...)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A task costs one object of at most 144 bytes when its function returns
// only an error (JoinHandle[struct{}]), the size a spawn allocates: each
// size class above it costs a million-task spawn loop collections (W1:
// 192 bytes took about 6% longer than 160).
func TestTaskFitsItsSizeClass(t *testing.T) {
	if n := unsafe.Sizeof(JoinHandle[struct{}]{}); n > 144 {
		t.Errorf("JoinHandle[struct{}] is %d bytes, over 144", n)
	}
	if n := unsafe.Sizeof(Waker{}); n > 16 {
		t.Errorf("Waker is %d bytes, over two words", n)
	}
	// A sleeping task also holds its coroutine's state.
	if n := unsafe.Sizeof(coro{}); n > 160 {
		t.Errorf("coro is %d bytes, over 160", n)
	}
}
