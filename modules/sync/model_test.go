package sync

import (
	"context"
	"errors"
	goruntime "runtime"
	"testing"

	"github.com/faio-go/faio/modules/runtime"
	"pgregory.net/rapid"
)

// pendingAcquire is an Acquire the model expects to be queued.
type pendingAcquire struct {
	n      int64
	cancel func()
	done   <-chan error
}

// semModel is the reference for Semaphore: free permits and a FIFO of
// waiting requests, served from the head while they fit.
type semModel struct {
	free, held int64
	queue      []*pendingAcquire
}

// Sequences of TryAcquire, Acquire (from a task or a goroutine), Release
// and cancellation of a queued Acquire, one at a time, against semModel:
// every result, the free permits and the queue length agree after each
// step.
func TestSemaphoreModel(t *testing.T) {
	rt := newRuntime(t, 2)
	rapid.Check(t, func(t *rapid.T) {
		size := rapid.Int64Range(1, 8).Draw(t, "size")
		s := NewSemaphore(size)
		m := &semModel{free: size}
		grant := func() {
			for len(m.queue) > 0 && m.queue[0].n <= m.free {
				p := m.queue[0]
				m.queue = m.queue[1:]
				m.free -= p.n
				m.held += p.n
				if err := <-p.done; err != nil {
					t.Fatalf("Acquire(%d) the model granted returned %v", p.n, err)
				}
			}
		}
		check := func() {
			if s.free() != m.free || s.queued() != len(m.queue) {
				t.Fatalf("free %d queued %d, model free %d queued %d", s.free(), s.queued(), m.free, len(m.queue))
			}
		}
		t.Repeat(map[string]func(*rapid.T){
			"TryAcquire": func(t *rapid.T) {
				n := rapid.Int64Range(0, size).Draw(t, "n")
				want := len(m.queue) == 0 && m.free >= n
				if got := s.TryAcquire(n); got != want {
					t.Fatalf("TryAcquire(%d) = %v, model says %v", n, got, want)
				}
				if want {
					m.free -= n
					m.held += n
				}
				check()
			},
			"Acquire": func(t *rapid.T) {
				n := rapid.Int64Range(0, size).Draw(t, "n")
				p := &pendingAcquire{n: n}
				before := s.queued()
				if rapid.Bool().Draw(t, "task") {
					h := runtime.SpawnOn(rt, func(ctx context.Context) (struct{}, error) {
						return struct{}{}, s.Acquire(ctx, n)
					})
					done := make(chan error, 1)
					go func() { _, err := h.Join(context.Background()); done <- err }()
					p.cancel, p.done = h.Cancel, done
				} else {
					ctx, cancel := context.WithCancel(context.Background())
					done := make(chan error, 1)
					go func() { done <- s.Acquire(ctx, n) }()
					p.cancel, p.done = cancel, done
				}
				if len(m.queue) == 0 && m.free >= n {
					m.free -= n
					m.held += n
					if err := <-p.done; err != nil {
						t.Fatalf("Acquire(%d) with permits free returned %v", n, err)
					}
					p.cancel()
				} else {
					m.queue = append(m.queue, p)
					// Wait for the call to settle: queued, or
					// (wrongly) returned.
					for s.queued() == before {
						select {
						case err := <-p.done:
							t.Fatalf("Acquire(%d) returned %v, the model queues it", n, err)
						default:
							goruntime.Gosched()
						}
					}
				}
				check()
			},
			"Release": func(t *rapid.T) {
				if m.held == 0 {
					t.Skip("nothing held")
				}
				n := rapid.Int64Range(1, m.held).Draw(t, "n")
				s.Release(n)
				m.free += n
				m.held -= n
				grant()
				check()
			},
			"Cancel": func(t *rapid.T) {
				if len(m.queue) == 0 {
					t.Skip("nobody waiting")
				}
				i := rapid.IntRange(0, len(m.queue)-1).Draw(t, "i")
				p := m.queue[i]
				m.queue = append(m.queue[:i:i], m.queue[i+1:]...)
				p.cancel()
				if err := <-p.done; !errors.Is(err, context.Canceled) {
					t.Fatalf("cancelled Acquire(%d) returned %v", p.n, err)
				}
				grant()
				check()
			},
		})
		for _, p := range m.queue {
			p.cancel()
			<-p.done
		}
	})
}
