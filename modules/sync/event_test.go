package sync

import (
	"context"
	"errors"
	"testing"

	"github.com/faio-go/faio/modules/runtime"
)

func TestEventSetReset(t *testing.T) {
	var e Event
	ctx := context.Background()
	if e.IsSet() {
		t.Fatal("zero Event is set")
	}
	e.Set()
	e.Set()
	if !e.IsSet() {
		t.Fatal("Set did not set")
	}
	if err := e.Wait(ctx); err != nil {
		t.Fatal(err)
	}
	e.Reset()
	if e.IsSet() {
		t.Fatal("Reset did not clear")
	}
	done, cancel := context.WithCancel(ctx)
	cancel()
	if err := e.Wait(done); !errors.Is(err, context.Canceled) {
		t.Fatalf("Wait with a done ctx = %v", err)
	}
}

// Set releases every waiter, tasks and goroutines, and a waiter that gave
// up first leaves the list.
func TestEventWaiters(t *testing.T) {
	const n = 10
	rt := newRuntime(t, 2)
	var e Event
	run(t, rt, func(ctx context.Context) error {
		cctx, cancel := context.WithCancel(ctx)
		quitter := runtime.Spawn(cctx, func(ctx context.Context) (struct{}, error) {
			return struct{}{}, e.Wait(ctx)
		})
		waitUntil(ctx, func() bool { return e.queued() == 1 })
		cancel()
		if _, err := quitter.Join(ctx); !errors.Is(err, context.Canceled) {
			return errors.Join(errors.New("cancelled waiter"), err)
		}
		if e.queued() != 0 || e.state.Load()&eventWaiters != 0 {
			return errors.New("cancelled waiter still queued")
		}

		var gs goGroup
		h := runtime.Spawn(ctx, func(ctx context.Context) (struct{}, error) {
			return struct{}{}, spawnN(ctx, n, func(ctx context.Context, _ int) error { return e.Wait(ctx) })
		})
		for range n {
			gs.Go(func() error { return e.Wait(context.Background()) })
		}
		waitUntil(ctx, func() bool { return e.queued() == 2*n })
		e.Set()
		if err := gs.Wait(ctx); err != nil {
			return err
		}
		_, err := h.Join(ctx)
		return err
	})
}

// Rounds of Set and Reset against waiters arriving at random moments: every
// Wait returns nil, none is lost.
func TestEventStress(t *testing.T) {
	rounds, waiters := 300, 8
	if raceEnabled {
		rounds = 60
	}
	rt := newRuntime(t, 2)
	run(t, rt, func(ctx context.Context) error {
		for range rounds {
			var e Event
			var gs goGroup
			for range waiters / 2 {
				gs.Go(func() error { return e.Wait(context.Background()) })
			}
			h := runtime.Spawn(ctx, func(ctx context.Context) (struct{}, error) {
				return struct{}{}, spawnN(ctx, waiters/2, func(ctx context.Context, _ int) error { return e.Wait(ctx) })
			})
			_ = runtime.Yield(ctx)
			e.Set()
			e.Reset()
			e.Set()
			if err := gs.Wait(ctx); err != nil {
				return err
			}
			if _, err := h.Join(ctx); err != nil {
				return err
			}
		}
		return nil
	})
}

func TestPromise(t *testing.T) {
	rt := newRuntime(t, 2)
	var p Promise[string]
	if _, ok := p.Get(); ok {
		t.Fatal("zero Promise has a value")
	}
	run(t, rt, func(ctx context.Context) error {
		var got Promise[string]
		h := runtime.Spawn(ctx, func(ctx context.Context) (string, error) { return p.Wait(ctx) })
		go func() {
			v, _ := p.Wait(context.Background())
			_ = got.Set(v)
		}()
		waitUntil(ctx, func() bool { return p.ready.queued() == 2 })
		if err := p.Set("faio"); err != nil {
			return err
		}
		if err := p.Set("again"); !errors.Is(err, ErrAlreadySet) {
			return errors.Join(errors.New("second Set"), err)
		}
		v, err := h.Join(ctx)
		if err != nil || v != "faio" {
			return errors.Join(errors.New("task got "+v), err)
		}
		if v, _ := got.Wait(ctx); v != "faio" {
			return errors.New("goroutine got " + v)
		}
		if v, ok := p.Get(); !ok || v != "faio" {
			return errors.New("Get after Set")
		}
		done, cancel := context.WithCancel(ctx)
		cancel()
		var q Promise[int]
		if _, err := q.Wait(done); !errors.Is(err, context.Canceled) {
			return errors.Join(errors.New("Wait with a done ctx"), err)
		}
		return nil
	})
}
