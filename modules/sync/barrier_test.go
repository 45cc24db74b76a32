package sync

import (
	"context"
	"errors"
	"fmt"
	gosync "sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faio-go/faio/modules/runtime"
)

// Parties of both kinds go through many generations: in each one exactly
// one leader, and nobody leaves before everyone arrived.
func TestBarrierGenerations(t *testing.T) {
	const parties = 8
	generations := 200
	if raceEnabled {
		generations = 50
	}
	rt := newRuntime(t, 2)
	b := NewBarrier(parties)
	arrived := make([]atomic.Int32, generations)
	leaders := make([]atomic.Int32, generations)
	party := func(ctx context.Context) error {
		for g := range generations {
			arrived[g].Add(1)
			leader, err := b.Wait(ctx)
			if err != nil {
				return err
			}
			if n := arrived[g].Load(); n != parties {
				return fmt.Errorf("generation %d: left with %d of %d arrived", g, n, parties)
			}
			if leader {
				leaders[g].Add(1)
			}
		}
		return nil
	}
	var wg gosync.WaitGroup
	errs := make(chan error, parties/2)
	for range parties / 2 {
		wg.Go(func() { errs <- party(context.Background()) })
	}
	run(t, rt, func(ctx context.Context) error {
		return spawnN(ctx, parties/2, func(ctx context.Context, _ int) error { return party(ctx) })
	})
	wg.Wait()
	close(errs)
	for err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for g := range leaders {
		if n := leaders[g].Load(); n != 1 {
			t.Fatalf("generation %d had %d leaders", g, n)
		}
	}
}

// A party that gives up withdraws its arrival: the generation needs
// another one.
func TestBarrierCancelWithdraws(t *testing.T) {
	rt := newRuntime(t, 2)
	b := NewBarrier(3)
	run(t, rt, func(ctx context.Context) error {
		wait := func(ctx context.Context) (bool, error) { return b.Wait(ctx) }
		first := runtime.Spawn(ctx, wait)
		waitUntil(ctx, func() bool { return b.queued() == 1 })
		cctx, cancel := context.WithCancel(ctx)
		quitter := runtime.Spawn(cctx, wait)
		waitUntil(ctx, func() bool { return b.queued() == 2 })
		cancel()
		if _, err := quitter.Join(ctx); !errors.Is(err, context.Canceled) {
			return errors.Join(errors.New("cancelled party"), err)
		}
		if b.queued() != 1 || b.arrived != 1 {
			return errors.New("cancelled party still counted")
		}
		second := runtime.Spawn(ctx, wait)
		waitUntil(ctx, func() bool { return b.queued() == 2 })
		leader, err := b.Wait(ctx)
		if err != nil || !leader {
			return errors.Join(errors.New("last party is not the leader"), err)
		}
		for _, h := range []*runtime.JoinHandle[bool]{first, second} {
			if l, err := h.Join(ctx); err != nil || l {
				return errors.Join(errors.New("follower"), err)
			}
		}
		done, cancel2 := context.WithCancel(ctx)
		cancel2()
		if _, err := b.Wait(done); !errors.Is(err, context.Canceled) || b.arrived != 0 {
			return errors.Join(errors.New("Wait with a done ctx arrived"), err)
		}
		return nil
	})
	one := NewBarrier(1)
	if leader, err := one.Wait(context.Background()); !leader || err != nil {
		t.Fatal("a one-party barrier did not trip at once")
	}
	defer func() {
		if r := recover(); r != "faio/sync: Barrier needs at least one party" {
			t.Fatalf("recovered %v", r)
		}
	}()
	NewBarrier(0)
}

// The zero Barrier has no parties and could never trip: its Wait panics,
// naming the misuse, instead of waiting for good (it used to count the
// caller in and wait for an n that is 0).
func TestZeroBarrierWaitPanics(t *testing.T) {
	const want = "faio/sync: Wait on a Barrier not made by NewBarrier"
	var b Barrier
	// The timeout only bounds the test where Wait waits.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	func() {
		defer func() {
			if r := recover(); r != want {
				t.Errorf("goroutine: recovered %v, want %q", r, want)
			}
		}()
		_, _ = b.Wait(ctx)
	}()
	rt := newRuntime(t, 1)
	_, err := runtime.BlockOn(rt, func(tctx context.Context) (bool, error) {
		tctx, cancel := context.WithTimeout(tctx, time.Second)
		defer cancel()
		return b.Wait(tctx)
	})
	var pe *runtime.PanicError
	if !errors.As(err, &pe) || pe.Value != want {
		t.Fatalf("task: BlockOn = %v, want the task's panic", err)
	}
}
