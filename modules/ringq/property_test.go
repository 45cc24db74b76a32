package ringq

import (
	"math"
	"testing"

	"pgregory.net/rapid"
)

// TestLocalQueueMatchesModel drives a LocalQueue (and a second one it
// steals with) through random sequential operations and compares every
// result, and every slot, with a slice model.
func TestLocalQueueMatchesModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		caps := rapid.SampledFrom([]int{2, 4, 8, 16})
		start := rapid.OneOf(
			rapid.Just(uint32(0)),
			rapid.Uint32Range(math.MaxUint32-40, math.MaxUint32),
			rapid.Uint32(),
		).Draw(rt, "start")
		h := newHarness(rt, caps.Draw(rt, "qcap"), caps.Draw(rt, "dcap"), start)
		rt.Repeat(map[string]func(*rapid.T){
			"PushQ": func(rt *rapid.T) {
				h.pushQ(rapid.IntRange(0, numSinkModes-1).Draw(rt, "mode"))
			},
			"PushQNilSink": func(*rapid.T) { h.pushQNil() },
			"PushBatchQ": func(rt *rapid.T) {
				h.pushBatchQ(rapid.IntRange(0, 20).Draw(rt, "k"))
			},
			"PushD":  func(*rapid.T) { h.pushD() },
			"PopQ":   func(*rapid.T) { h.popQ() },
			"PopD":   func(*rapid.T) { h.popD() },
			"StealQ": func(*rapid.T) { h.stealQD() },
			"StealD": func(*rapid.T) { h.stealDQ() },
			"":       func(*rapid.T) { h.check() },
		})
	})
}

// TestGlobalQueueMatchesModel checks GlobalQueue against a slice model,
// with batches big enough to make the ring grow and shrink.
func TestGlobalQueueMatchesModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		q := NewGlobalQueue[int]()
		var model []int
		closed := false
		next, maxLen := 0, 0
		pushErr := func(err error) {
			if closed && err != ErrClosed || !closed && err != nil {
				rt.Fatalf("push on closed=%v queue: %v", closed, err)
			}
		}
		rt.Repeat(map[string]func(*rapid.T){
			"Push": func(*rapid.T) {
				next++
				err := q.Push(next)
				pushErr(err)
				if err == nil {
					model = append(model, next)
				}
			},
			"PushBatch": func(rt *rapid.T) {
				k := rapid.OneOf(rapid.IntRange(0, 20), rapid.IntRange(300, 1100)).Draw(rt, "k")
				items := make([]int, k)
				for i := range items {
					next++
					items[i] = next
				}
				err := q.PushBatch(items)
				pushErr(err)
				if err == nil {
					model = append(model, items...)
				}
			},
			"Pop": func(*rapid.T) {
				v, ok := q.Pop()
				if len(model) == 0 {
					if ok {
						rt.Fatalf("Pop on empty = %d, true", v)
					}
					return
				}
				if !ok || v != model[0] {
					rt.Fatalf("Pop = %d, %v; want %d", v, ok, model[0])
				}
				model = model[1:]
			},
			"PopBatch": func(rt *rapid.T) {
				n := rapid.OneOf(rapid.IntRange(-1, 20), rapid.IntRange(300, 1200)).Draw(rt, "n")
				got := q.PopBatch([]int{-1}, n)
				k := min(max(n, 0), len(model))
				if got[0] != -1 || len(got) != k+1 {
					rt.Fatalf("PopBatch(n=%d) appended %d items, want %d", n, len(got)-1, k)
				}
				for i, v := range got[1:] {
					if v != model[i] {
						rt.Fatalf("PopBatch item %d = %d, want %d", i, v, model[i])
					}
				}
				model = model[k:]
			},
			// Many single pushes and pops at low occupancy turn the ring
			// over, which is what lets it shrink after a burst.
			"Trickle": func(rt *rapid.T) {
				for range rapid.SampledFrom([]int{1, 7, 300, 2500}).Draw(rt, "pairs") {
					if !closed {
						next++
						if err := q.Push(next); err != nil {
							rt.Fatalf("Push: %v", err)
						}
						model = append(model, next)
					}
					v, ok := q.Pop()
					if len(model) == 0 {
						if ok {
							rt.Fatalf("Pop on empty = %d, true", v)
						}
						continue
					}
					if !ok || v != model[0] {
						rt.Fatalf("Pop = %d, %v; want %d", v, ok, model[0])
					}
					model = model[1:]
				}
			},
			// Close ends the interesting part of a run, so it is rare.
			"Close": func(rt *rapid.T) {
				if rapid.IntRange(0, 9).Draw(rt, "roll") == 0 {
					q.Close()
					closed = true
				}
			},
			"": func(rt *rapid.T) {
				if q.Len() != len(model) || q.Closed() != closed {
					rt.Fatalf("Len %d Closed %v, want %d %v", q.Len(), q.Closed(), len(model), closed)
				}
				maxLen = max(maxLen, len(model))
				checkGlobalSlots(rt, q, maxLen)
			},
		})
	})
}

// checkGlobalSlots verifies that only live slots hold items and that the
// ring is a power of two no bigger than growth to the largest size the
// queue ever had requires.
func checkGlobalSlots(rt *rapid.T, q *GlobalQueue[int], maxLen int) {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := int(q.count.Load())
	live := 0
	for _, v := range q.buf {
		if v != 0 {
			live++
		}
	}
	if live != n {
		rt.Fatalf("%d non-zero slots for %d items", live, n)
	}
	if c := len(q.buf); c&(c-1) != 0 || c < n || c > max(minGlobalCap, 2*maxLen) {
		rt.Fatalf("ring of %d slots for %d items (at most %d ever)", c, n, maxLen)
	}
}

// TestRingBufferMatchesModel checks RingBuffer against a slice model, for
// capacities that are not powers of two and for capacity 0.
func TestRingBufferMatchesModel(t *testing.T) {
	rapid.Check(t, func(rt *rapid.T) {
		capacity := rapid.IntRange(0, 9).Draw(rt, "capacity")
		r, err := NewRingBuffer[int](capacity)
		if err != nil {
			rt.Fatalf("NewRingBuffer(%d): %v", capacity, err)
		}
		var model []int
		next := 0
		rt.Repeat(map[string]func(*rapid.T){
			"Push": func(*rapid.T) {
				next++
				ok := r.Push(next)
				if ok != (len(model) < capacity) {
					rt.Fatalf("Push with %d of %d = %v", len(model), capacity, ok)
				}
				if ok {
					model = append(model, next)
				}
			},
			"Pop": func(*rapid.T) {
				pv, pok := r.Peek()
				v, ok := r.Pop()
				if pv != v || pok != ok {
					rt.Fatalf("Peek = %d, %v but Pop = %d, %v", pv, pok, v, ok)
				}
				if len(model) == 0 {
					if ok {
						rt.Fatalf("Pop on empty = %d, true", v)
					}
					return
				}
				if !ok || v != model[0] {
					rt.Fatalf("Pop = %d, %v; want %d", v, ok, model[0])
				}
				model = model[1:]
			},
			"": func(rt *rapid.T) {
				if r.Len() != len(model) || r.Cap() != capacity || r.Full() != (len(model) == capacity) {
					rt.Fatalf("Len %d Cap %d Full %v with model %v of %d", r.Len(), r.Cap(), r.Full(), model, capacity)
				}
				for i, v := range r.buf {
					live := (i-r.head+len(r.buf))%len(r.buf) < r.n
					if live != (v != 0) {
						rt.Fatalf("slot %d = %d, live %v", i, v, live)
					}
				}
			},
		})
	})
}
