package runtime

import (
	"context"
	"errors"
	goruntime "runtime"
	"sync/atomic"
	"testing"
	"time"
	"unsafe"
)

func TestProtectOnlyForTheCallingTask(t *testing.T) {
	rt, err := New(Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	var x, y int
	if h := rt.Protect(context.Background(), unsafe.Pointer(&x)); h != nil {
		t.Fatal("Protect outside a task returned an announcement")
	}
	_, _ = BlockOn(rt, func(ctx context.Context) (struct{}, error) {
		derived, cancel := context.WithCancel(ctx)
		defer cancel()
		h := rt.Protect(derived, unsafe.Pointer(&x))
		if h == nil {
			t.Fatal("Protect from a task, with a context derived from its own, returned nil")
		}
		if rt.Protect(ctx, unsafe.Pointer(&y)) != nil {
			t.Error("a second Protect on the same worker succeeded: the first announcement would be lost")
		}
		// Another task's context, used here, is not the caller's.
		other := Spawn(ctx, func(ctx context.Context) (context.Context, error) { return ctx, nil })
		octx, _ := other.Join(ctx)
		h.Release()
		if rt.Protect(octx, unsafe.Pointer(&y)) != nil {
			t.Error("Protect with the context of another, finished task succeeded")
		}
		h2 := rt.Protect(ctx, unsafe.Pointer(&y))
		if h2 == nil {
			t.Error("Protect after Release returned nil")
		} else {
			h2.Release()
		}
		return struct{}{}, nil
	})
	// A task of another runtime: rt would not see its announcement.
	other, err := New(Config{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer other.Close()
	_, _ = BlockOn(other, func(ctx context.Context) (struct{}, error) {
		if h := rt.Protect(ctx, unsafe.Pointer(&x)); h != nil {
			h.Release()
			t.Error("Protect on rt succeeded for a task of another runtime")
		}
		// The calling coroutine's own task, found without its context.
		h := other.Protect(context.Background(), unsafe.Pointer(&x))
		if h == nil {
			t.Error("Protect with context.Background from a task of the runtime returned nil")
		} else {
			h.Release()
		}
		return struct{}{}, nil
	})
	var nilRT *Runtime
	if nilRT.Protect(context.Background(), unsafe.Pointer(&x)) != nil {
		t.Error("Protect on a nil runtime succeeded")
	}
	rt.WaitUnprotected(unsafe.Pointer(&x)) // nothing announces x: returns
	nilRT.WaitUnprotected(unsafe.Pointer(&x))
}

// WaitUnprotected returns only once the announcement is released, from
// whichever worker made it.
func TestWaitUnprotectedWaitsForRelease(t *testing.T) {
	rt, err := New(Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	var obj int
	for round := range 20 {
		var released, returned atomic.Bool
		protected := make(chan struct{})
		release := make(chan struct{})
		done := make(chan struct{})
		go func() {
			defer close(done)
			_, _ = BlockOn(rt, func(ctx context.Context) (struct{}, error) {
				h := rt.Protect(ctx, unsafe.Pointer(&obj))
				if h == nil {
					t.Error("Protect returned nil")
					close(protected)
					return struct{}{}, nil
				}
				close(protected)
				<-release // holds the worker: a test only
				released.Store(true)
				h.Release()
				return struct{}{}, nil
			})
		}()
		<-protected
		waited := make(chan struct{})
		go func() {
			rt.WaitUnprotected(unsafe.Pointer(&obj))
			returned.Store(true)
			if !released.Load() {
				t.Errorf("round %d: WaitUnprotected returned before Release", round)
			}
			close(waited)
		}()
		time.Sleep(time.Millisecond)
		if returned.Load() {
			t.Fatalf("round %d: WaitUnprotected returned while the object was announced", round)
		}
		close(release)
		<-waited
		<-done
	}
}

// A task that ends inside its section, by returning, panicking or calling
// runtime.Goexit, ends its announcement: a destroyer waiting for it
// would otherwise wait for ever.
func TestTaskThatEndsInsideItsSectionEndsItsAnnouncement(t *testing.T) {
	for _, policy := range []PanicPolicy{PanicReturn, PanicCrash} {
		rt, err := New(Config{Workers: 1, PanicPolicy: policy})
		if err != nil {
			t.Fatal(err)
		}
		ends := map[string]func(){
			"return": func() {},
			"panic":  func() { panic("inside the section") },
			"Goexit": goruntime.Goexit,
		}
		for how, end := range ends {
			if how == "panic" && policy == PanicCrash {
				continue // it would end the test's process
			}
			var obj int
			task := SpawnOn(rt, func(ctx context.Context) (struct{}, error) {
				if rt.Protect(ctx, unsafe.Pointer(&obj)) == nil {
					return struct{}{}, errors.New("Protect returned nil")
				}
				end()
				return struct{}{}, nil
			})
			_, err := task.Join(context.Background())
			if how == "return" && err != nil {
				t.Fatalf("policy %d, %s: %v", policy, how, err)
			}
			waited := make(chan struct{})
			go func() {
				rt.WaitUnprotected(unsafe.Pointer(&obj))
				close(waited)
			}()
			select {
			case <-waited:
			case <-time.After(10 * time.Second):
				t.Fatalf("policy %d: a task that ended by %s inside its section left its announcement: WaitUnprotected waits for ever", policy, how)
			}
		}
		rt.Close()
	}
}
