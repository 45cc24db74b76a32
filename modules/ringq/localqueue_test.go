package ringq

import (
	"errors"
	"slices"
	"testing"
)

func TestNewLocalQueueCapacity(t *testing.T) {
	tests := []struct {
		capacity int
		want     int // 0: ErrCapacity
	}{
		{0, DefaultLocalQueueCapacity},
		{2, 2},
		{4, 4},
		{256, 256},
		{MaxLocalQueueCapacity, MaxLocalQueueCapacity},
		{-1, 0},
		{-256, 0},
		{1, 0},
		{3, 0},
		{6, 0},
		{255, 0},
		{MaxLocalQueueCapacity * 2, 0},
	}
	for _, tt := range tests {
		q, err := NewLocalQueue[int](tt.capacity)
		if tt.want == 0 {
			if !errors.Is(err, ErrCapacity) || q != nil {
				t.Errorf("NewLocalQueue(%d) = %v, %v; want nil, ErrCapacity", tt.capacity, q, err)
			}
			continue
		}
		if err != nil || q.Cap() != tt.want || q.Len() != 0 || q.RemainingCap() != tt.want {
			t.Errorf("NewLocalQueue(%d): err %v, Cap %d, Len %d; want Cap %d, empty", tt.capacity, err, q.Cap(), q.Len(), tt.want)
		}
	}
}

// fill makes a queue of the given capacity holding 1..n.
func fill(t *testing.T, capacity, n int) *LocalQueue[int] {
	t.Helper()
	q, err := NewLocalQueue[int](capacity)
	if err != nil {
		t.Fatal(err)
	}
	for v := 1; v <= n; v++ {
		if err := q.Push(v, nil); err != nil {
			t.Fatalf("Push(%d): %v", v, err)
		}
	}
	return q
}

// drain pops everything the owner can see.
func drain(q *LocalQueue[int]) []int {
	var out []int
	for {
		v, ok := q.Pop()
		if !ok {
			return out
		}
		out = append(out, v)
	}
}

func seq(from, to int) []int {
	var s []int
	for v := from; v <= to; v++ {
		s = append(s, v)
	}
	return s
}

func TestLocalQueueFIFO(t *testing.T) {
	q := fill(t, 8, 8)
	if q.Len() != 8 || q.RemainingCap() != 0 {
		t.Fatalf("full queue: Len %d RemainingCap %d", q.Len(), q.RemainingCap())
	}
	if got := drain(q); !slices.Equal(got, seq(1, 8)) {
		t.Fatalf("popped %v", got)
	}
	if v, ok := q.Pop(); ok {
		t.Fatalf("Pop on empty = %d, true", v)
	}
	// Go around the ring several times.
	for v := 1; v <= 100; v++ {
		if err := q.Push(v, nil); err != nil {
			t.Fatal(err)
		}
		if got, ok := q.Pop(); !ok || got != v {
			t.Fatalf("Pop = %d, %v; want %d", got, ok, v)
		}
	}
}

func TestLocalQueuePushFullWithoutSink(t *testing.T) {
	q := fill(t, 4, 4)
	if err := q.Push(5, nil); !errors.Is(err, ErrFull) {
		t.Fatalf("Push on full queue with nil sink = %v, want ErrFull", err)
	}
	if got := drain(q); !slices.Equal(got, seq(1, 4)) {
		t.Fatalf("queue after refused push: %v", got)
	}
}

func TestLocalQueueOverflowMovesHalfAndNewItem(t *testing.T) {
	q := fill(t, 8, 8)
	var sink testSink
	if err := q.Push(9, &sink); err != nil {
		t.Fatal(err)
	}
	if len(sink.batches) != 1 || !slices.Equal(sink.batches[0], []int{1, 2, 3, 4, 9}) {
		t.Fatalf("sink batches %v, want one batch [1 2 3 4 9]", sink.batches)
	}
	if q.RemainingCap() != 4 {
		t.Fatalf("RemainingCap after overflow = %d, want 4", q.RemainingCap())
	}
	if got := drain(q); !slices.Equal(got, seq(5, 8)) {
		t.Fatalf("queue after overflow: %v", got)
	}
}

func TestLocalQueueOverflowIntoGlobalQueue(t *testing.T) {
	q := fill(t, 4, 4)
	g := NewGlobalQueue[int]()
	if err := q.Push(5, g); err != nil {
		t.Fatal(err)
	}
	if got := g.PopBatch(nil, 10); !slices.Equal(got, []int{1, 2, 5}) {
		t.Fatalf("global queue got %v", got)
	}
	g.Close()
	q.PushBatch([]int{6, 7})
	if err := q.Push(8, g); !errors.Is(err, ErrClosed) {
		t.Fatalf("overflow into closed global queue = %v, want ErrClosed", err)
	}
	if got := drain(q); !slices.Equal(got, []int{3, 4, 6, 7}) {
		t.Fatalf("queue after refused overflow: %v", got)
	}
}

func TestLocalQueueOverflowRefusedRestoresOrder(t *testing.T) {
	q := fill(t, 8, 8)
	sink := testSink{fail: true}
	if err := q.Push(9, &sink); !errors.Is(err, errSink) {
		t.Fatalf("Push into refusing sink = %v, want the sink's error", err)
	}
	if got := drain(q); !slices.Equal(got, seq(1, 8)) {
		t.Fatalf("queue after refused overflow: %v, want 1..8 in order", got)
	}
	if len(sink.got) != 0 {
		t.Fatalf("refusing sink kept %v", sink.got)
	}
}

// A thief that steals while the sink runs moves head forward, so the
// refused items cannot go back in front; they must reappear at the tail.
func TestLocalQueueOverflowRefusedAfterSteal(t *testing.T) {
	q := fill(t, 8, 8)
	d, _ := NewLocalQueue[int](8)
	var stolen int
	sink := testSink{fail: true, during: func() {
		v, ok := q.StealInto(d)
		if !ok {
			t.Error("steal during overflow refused")
		}
		stolen = v
	}}
	if err := q.Push(9, &sink); !errors.Is(err, errSink) {
		t.Fatalf("Push = %v, want the sink's error", err)
	}
	// While the sink ran q held 5..8; the thief took 5, 6 (6 returned).
	if stolen != 6 {
		t.Fatalf("thief got %d, want 6", stolen)
	}
	if got := drain(d); !slices.Equal(got, []int{5}) {
		t.Fatalf("thief's queue: %v", got)
	}
	if got := drain(q); !slices.Equal(got, []int{7, 8, 1, 2, 3, 4}) {
		t.Fatalf("victim after refused overflow: %v, want [7 8 1 2 3 4]", got)
	}
}

// While a thief is mid-steal, a full queue sends only the new item to the
// sink: the thief is about to free room and the owner must not wait.
func TestLocalQueueOverflowDuringSteal(t *testing.T) {
	q := fill(t, 8, 8)
	steal, real := unpack(q.head.Load())
	q.head.Store(pack(steal, real+2)) // a thief has claimed 1, 2
	if !q.IsStealing() {
		t.Fatal("IsStealing = false with a claim outstanding")
	}
	if q.Len() != 6 || q.RemainingCap() != 0 {
		t.Fatalf("mid-steal: Len %d RemainingCap %d, want 6 and 0", q.Len(), q.RemainingCap())
	}
	var sink testSink
	if err := q.Push(9, &sink); err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(sink.got, []int{9}) {
		t.Fatalf("sink got %v, want [9]", sink.got)
	}
	sink.fail = true
	if err := q.Push(10, &sink); !errors.Is(err, errSink) {
		t.Fatalf("Push into refusing sink = %v", err)
	}
	// The owner can pop past the thief's claim; the claim itself stays.
	if got := drain(q); !slices.Equal(got, seq(3, 8)) {
		t.Fatalf("owner popped %v, want 3..8", got)
	}
	if s, r := unpack(q.head.Load()); s != steal {
		t.Fatalf("owner moved steal to %d (real %d); only the thief may", s, r)
	}
}

func TestLocalQueuePushBatch(t *testing.T) {
	q := fill(t, 8, 3)
	if n := q.PushBatch(seq(4, 10)); n != 5 {
		t.Fatalf("PushBatch of 7 into 5 free slots took %d", n)
	}
	if n := q.PushBatch([]int{11}); n != 0 {
		t.Fatalf("PushBatch into full queue took %d", n)
	}
	if n := q.PushBatch(nil); n != 0 {
		t.Fatalf("PushBatch(nil) took %d", n)
	}
	if got := drain(q); !slices.Equal(got, seq(1, 8)) {
		t.Fatalf("queue: %v", got)
	}
}

// Popped, stolen and overflowed slots must be zeroed so the queue keeps no
// pointer to a finished task alive.
func TestLocalQueueZeroesDepartedSlots(t *testing.T) {
	q, _ := NewLocalQueue[*int](4)
	d, _ := NewLocalQueue[*int](4)
	g := NewGlobalQueue[*int]()
	// The fifth push overflows two items plus itself; two more fill q
	// again, so that the steal takes two: one returned, one into d.
	for range 7 {
		v := new(int)
		if err := q.Push(v, g); err != nil {
			t.Fatal(err)
		}
	}
	if _, ok := q.StealInto(d); !ok || d.Len() != 1 {
		t.Fatalf("steal: ok %v, thief's queue holds %d; want true, 1", ok, d.Len())
	}
	d.Pop()
	q.Pop()
	q.Pop()
	for name, lq := range map[string]*LocalQueue[*int]{"victim": q, "thief": d} {
		if lq.Len() != 0 {
			t.Fatalf("%s still holds %d items", name, lq.Len())
		}
		for i, p := range lq.buf {
			if p != nil {
				t.Errorf("%s slot %d still points at an item", name, i)
			}
		}
		for i, p := range lq.scratch {
			if p != nil {
				t.Errorf("%s scratch %d still points at an item", name, i)
			}
		}
	}
}

// Positions are uint32 counters; run across the 2^32 boundary.
func TestLocalQueueWrapsPositionCounters(t *testing.T) {
	q, _ := NewLocalQueue[int](4)
	d, _ := NewLocalQueue[int](4)
	start := ^uint32(0) - 2
	q.head.Store(pack(start, start))
	q.tail.Store(start)
	for v := 1; v <= 4; v++ {
		if err := q.Push(v, nil); err != nil {
			t.Fatal(err)
		}
	}
	if q.Len() != 4 || q.RemainingCap() != 0 {
		t.Fatalf("across the wrap: Len %d RemainingCap %d", q.Len(), q.RemainingCap())
	}
	if v, ok := q.StealInto(d); !ok || v != 2 {
		t.Fatalf("StealInto = %d, %v; want 2", v, ok)
	}
	var sink testSink
	q.PushBatch([]int{5, 6})
	if err := q.Push(7, &sink); err != nil || !slices.Equal(sink.got, []int{3, 4, 7}) {
		t.Fatalf("overflow across the wrap: %v, sink %v", err, sink.got)
	}
	if got := drain(q); !slices.Equal(got, []int{5, 6}) {
		t.Fatalf("victim: %v", got)
	}
	if got := drain(d); !slices.Equal(got, []int{1}) {
		t.Fatalf("thief: %v", got)
	}
}

func TestLocalQueueLenClamped(t *testing.T) {
	q := fill(t, 4, 4)
	// A reader that saw an old head and a newer tail must not report more
	// than Cap; simulate the torn snapshot by rewinding real.
	steal, real := unpack(q.head.Load())
	q.head.Store(pack(steal-3, real-3))
	if n := q.Len(); n != q.Cap() {
		t.Fatalf("Len with a stale head = %d, want it clamped to %d", n, q.Cap())
	}
}
