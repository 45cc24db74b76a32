package sync

import (
	"context"
	"sync"

	"github.com/faio-go/faio/modules/runtime"
)

// A Barrier lets a fixed number of parties wait for each other: each calls
// Wait, and all of them return once the last has arrived. The barrier then
// starts a new generation, so it can be used again and again. Create one
// with NewBarrier: the zero Barrier has no parties, and its Wait panics.
type Barrier struct {
	n       int
	mu      sync.Mutex
	arrived int // parties of the current generation waiting
	waiters waitList
}

// NewBarrier returns a barrier for n parties. It panics if n < 1.
func NewBarrier(n int) *Barrier {
	if n < 1 {
		panic("faio/sync: Barrier needs at least one party")
	}
	return &Barrier{n: n}
}

// Wait arrives at the barrier and waits until n parties of this generation
// have arrived. It returns true for exactly one of them, the last to
// arrive (the leader), which does not wait at all, and false for the
// others.
//
// If ctx is done before the generation is complete, Wait withdraws the
// caller's arrival and returns ctx.Err(): the generation then needs another
// party. A generation that completed counts everyone in it: a party whose
// ctx is done at the same moment returns nil, not ctx.Err(). Wait with a
// done ctx returns ctx.Err() without arriving.
//
// Wait panics on a Barrier not made by NewBarrier, whose generation could
// never be complete.
func (b *Barrier) Wait(ctx context.Context) (leader bool, err error) {
	if b.n == 0 {
		panic("faio/sync: Wait on a Barrier not made by NewBarrier")
	}
	if err := runtime.Consume(ctx); err != nil {
		return false, err
	}
	b.mu.Lock()
	if b.arrived+1 == b.n {
		b.dropEnded()
	}
	if b.arrived+1 == b.n {
		b.trip()
		return true, nil
	}
	b.mu.Unlock()

	// Arrive in register, after the task switched away: a party counted
	// but not yet listed would miss the wake-up of its generation.
	w := new(waiter)
	err = runtime.Suspend(ctx, func(wk runtime.Waker) bool {
		b.mu.Lock()
		w.waker = wk
		if b.arrived+1 == b.n {
			b.dropEnded()
		}
		if b.arrived+1 == b.n {
			// The others arrived in the meantime: w leads. Waking our
			// own Waker rather than declining the wait lets a racing
			// cancellation find w.leader set below.
			w.leader = true
			w.state = waiterDone
			b.trip()
			wk.Wake()
			return true
		}
		b.arrived++
		w.state = waiterQueued
		b.waiters.pushBack(w)
		b.mu.Unlock()
		return true
	})
	if err != nil {
		b.mu.Lock()
		switch w.state {
		case waiterQueued:
			b.waiters.remove(w)
			b.arrived--
		case waiterDone:
			err = nil
		}
		b.mu.Unlock()
	}
	return w.leader && err == nil, err
}

// trip completes the current generation: b.mu is held, and released.
func (b *Barrier) trip() {
	ws := b.waiters.takeAll()
	b.arrived = 0
	b.mu.Unlock()
	wakeAll(ws)
}

// dropEnded withdraws the parties whose wait was cancelled (only trip
// wakes a queued party) but whose task has not run yet: a generation must
// not count a party whose context ended before it completed. b.mu is held.
func (b *Barrier) dropEnded() {
	for w := b.waiters.head; w != nil; {
		next := w.next
		if w.waker.Ended() {
			b.waiters.remove(w)
			w.state = waiterFresh // withdrawn: its Wait returns ctx.Err()
			b.arrived--
		}
		w = next
	}
}
