package runtime

import (
	"context"
	"runtime/pprof"
	"testing"
	"unsafe"
)

// labelsOf returns the profiler labels of ctx's goroutine-independent
// label set, applied to the calling goroutine and read back: the pointer
// the goroutine carries after pprof.SetGoroutineLabels(ctx).
func labelsOf(ctx context.Context) unsafe.Pointer {
	saved := getProfLabel()
	defer setProfLabel(saved)
	pprof.SetGoroutineLabels(ctx)
	return getProfLabel()
}

// A task's labels never come from the previous task of its pooled
// coroutine, and a task starts with the labels its spawner had.
func TestProfilerLabelsDoNotLeakBetweenTasks(t *testing.T) {
	// One worker, so every task below runs on the same pooled coroutine.
	rt := newRuntime(t, Config{Workers: 1})
	labelled := pprof.WithLabels(context.Background(), pprof.Labels("request", "a"))
	want := labelsOf(labelled)

	// Task 1 sets labels on its goroutine and leaves them there.
	if _, err := BlockOn(rt, func(ctx context.Context) (int, error) {
		pprof.SetGoroutineLabels(labelled)
		return 0, nil
	}); err != nil {
		t.Fatal(err)
	}
	// Task 2, spawned from this unlabelled goroutine, must start with none.
	got, err := BlockOn(rt, func(ctx context.Context) (unsafe.Pointer, error) {
		return getProfLabel(), nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if got != nil {
		t.Fatalf("task started with the labels %p of an earlier task on its coroutine", got)
	}
	if n := rt.Stats().Coroutines; n != 1 {
		t.Fatalf("%d coroutines created, want 1: the test did not exercise reuse", n)
	}

	// A task spawned by a labelled task starts with its spawner's labels,
	// and pprof.Do inside a task reaches the tasks spawned within it.
	type seen struct{ child, inDo, after unsafe.Pointer }
	s, err := BlockOn(rt, func(ctx context.Context) (seen, error) {
		pprof.SetGoroutineLabels(labelled)
		child, _ := Spawn(ctx, func(context.Context) (unsafe.Pointer, error) {
			return getProfLabel(), nil
		}).Join(ctx)
		var inDo unsafe.Pointer
		pprof.Do(ctx, pprof.Labels("phase", "do"), func(dctx context.Context) {
			inDo, _ = Spawn(dctx, func(context.Context) (unsafe.Pointer, error) {
				return getProfLabel(), nil
			}).Join(dctx)
		})
		after, _ := Spawn(ctx, func(context.Context) (unsafe.Pointer, error) {
			return getProfLabel(), nil
		}).Join(ctx)
		return seen{child, inDo, after}, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if s.child != want {
		t.Errorf("child of a labelled task has labels %p, want the spawner's %p", s.child, want)
	}
	if s.inDo == nil || s.inDo == want {
		t.Errorf("child spawned inside pprof.Do has labels %p, want the Do's own set", s.inDo)
	}
	if s.after != nil {
		// pprof.Do restored the task's labels from its ctx (none).
		t.Errorf("child spawned after pprof.Do has labels %p, want none", s.after)
	}

	// A root started from a labelled goroutine starts with its labels.
	saved := getProfLabel()
	pprof.SetGoroutineLabels(labelled)
	got, err = BlockOn(rt, func(ctx context.Context) (unsafe.Pointer, error) {
		return getProfLabel(), nil
	})
	setProfLabel(saved)
	if err != nil {
		t.Fatal(err)
	}
	if got != want {
		t.Errorf("root task has labels %p, want its starter's %p", got, want)
	}
}
