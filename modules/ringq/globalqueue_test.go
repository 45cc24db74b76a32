package ringq

import (
	"errors"
	"slices"
	"testing"
)

func TestGlobalQueueFIFO(t *testing.T) {
	q := NewGlobalQueue[int]()
	if v, ok := q.Pop(); ok || q.Len() != 0 {
		t.Fatalf("new queue: Pop = %d, %v; Len %d", v, ok, q.Len())
	}
	for v := 1; v <= 3; v++ {
		if err := q.Push(v); err != nil {
			t.Fatal(err)
		}
	}
	if err := q.PushBatch(seq(4, 6)); err != nil {
		t.Fatal(err)
	}
	if err := q.PushBatch(nil); err != nil {
		t.Fatal(err)
	}
	if q.Len() != 6 {
		t.Fatalf("Len = %d, want 6", q.Len())
	}
	if v, ok := q.Pop(); !ok || v != 1 {
		t.Fatalf("Pop = %d, %v; want 1", v, ok)
	}
	got := q.PopBatch(make([]int, 0, 8), 3)
	if !slices.Equal(got, []int{2, 3, 4}) {
		t.Fatalf("PopBatch(3) = %v", got)
	}
	if got := q.PopBatch([]int{0}, 10); !slices.Equal(got, []int{0, 5, 6}) {
		t.Fatalf("PopBatch(10) appended %v", got)
	}
	if got := q.PopBatch(nil, 10); got != nil {
		t.Fatalf("PopBatch on empty = %v", got)
	}
}

func TestGlobalQueuePopBatchNonPositive(t *testing.T) {
	q := NewGlobalQueue[int]()
	q.PushBatch(seq(1, 3))
	for _, n := range []int{0, -1} {
		if got := q.PopBatch(nil, n); len(got) != 0 {
			t.Fatalf("PopBatch(n=%d) = %v", n, got)
		}
	}
	if q.Len() != 3 {
		t.Fatalf("Len = %d, want 3", q.Len())
	}
}

func TestGlobalQueueCloseDrains(t *testing.T) {
	q := NewGlobalQueue[int]()
	q.PushBatch(seq(1, 4))
	q.Close()
	q.Close() // idempotent
	if !q.Closed() {
		t.Fatal("Closed = false after Close")
	}
	if err := q.Push(5); !errors.Is(err, ErrClosed) {
		t.Fatalf("Push after Close = %v", err)
	}
	if err := q.PushBatch([]int{6}); !errors.Is(err, ErrClosed) {
		t.Fatalf("PushBatch after Close = %v", err)
	}
	if err := q.PushBatch(nil); !errors.Is(err, ErrClosed) {
		t.Fatalf("empty PushBatch after Close = %v", err)
	}
	got := q.PopBatch(nil, 2)
	for v, ok := q.Pop(); ok; v, ok = q.Pop() {
		got = append(got, v)
	}
	if !slices.Equal(got, seq(1, 4)) || q.Len() != 0 {
		t.Fatalf("drained %v, Len %d", got, q.Len())
	}
}

// The ring grows for a burst and gives the memory back once it has turned
// over at low occupancy.
func TestGlobalQueueShrinksAfterBurst(t *testing.T) {
	q := NewGlobalQueue[int]()
	const burst = 10 * minGlobalCap
	for v := 1; v <= burst; v++ {
		if err := q.Push(v); err != nil {
			t.Fatal(err)
		}
	}
	grown := len(q.buf)
	if grown < burst || grown >= 2*burst {
		t.Fatalf("ring of %d for %d items", grown, burst)
	}
	for v := 1; v <= burst; v++ {
		if got, ok := q.Pop(); !ok || got != v {
			t.Fatalf("Pop = %d, %v; want %d", got, ok, v)
		}
	}
	// Light traffic for two turnovers of the big ring: the first window
	// still saw the burst, the second did not.
	for range 2 * grown {
		q.Push(1)
		q.Pop()
	}
	if len(q.buf) != minGlobalCap {
		t.Fatalf("ring of %d after the burst passed, want %d", len(q.buf), minGlobalCap)
	}
}

// A queue that keeps swinging between empty and a large backlog must not
// reallocate on each swing.
func TestGlobalQueueOscillationDoesNotAllocate(t *testing.T) {
	q := NewGlobalQueue[int]()
	batch := make([]int, 64)
	out := make([]int, 0, 64)
	swing := func() {
		for range 100 {
			q.Push(1)
		}
		for range 50 {
			q.PushBatch(batch)
		}
		for q.Len() > 0 {
			q.Pop()
			out = q.PopBatch(out[:0], cap(out))
		}
	}
	swing() // grows the ring once
	if allocs := testing.AllocsPerRun(50, swing); allocs != 0 {
		t.Fatalf("a fill-and-drain cycle allocated %v times", allocs)
	}
}

func TestGlobalQueueZeroesDepartedSlots(t *testing.T) {
	q := NewGlobalQueue[*int]()
	for range 10 {
		q.Push(new(int))
	}
	q.Pop()
	q.PopBatch(nil, 9)
	for i, p := range q.buf {
		if p != nil {
			t.Fatalf("slot %d still points at an item", i)
		}
	}
}
