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

// The ring grows for a burst and gives the memory back once it drains,
// reusing its storage in the steady state.
func TestGlobalQueueGrowsAndShrinks(t *testing.T) {
	q := NewGlobalQueue[int]()
	const burst = 10 * minGlobalCap
	for v := 1; v <= burst; v++ {
		if err := q.Push(v); err != nil {
			t.Fatal(err)
		}
	}
	if len(q.buf) < burst {
		t.Fatalf("ring of %d for %d items", len(q.buf), burst)
	}
	for v := 1; v <= burst; v++ {
		if got, ok := q.Pop(); !ok || got != v {
			t.Fatalf("Pop = %d, %v; want %d", got, ok, v)
		}
	}
	if len(q.buf) != minGlobalCap {
		t.Fatalf("ring of %d after draining, want %d", len(q.buf), minGlobalCap)
	}
	allocs := testing.AllocsPerRun(100, func() {
		q.PushBatch(seq(1, 0)) // no-op batch
		for v := range 100 {
			q.Push(v)
		}
		for range 100 {
			q.Pop()
		}
	})
	if allocs != 0 {
		t.Fatalf("steady-state push/pop allocated %v times per run", allocs)
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
