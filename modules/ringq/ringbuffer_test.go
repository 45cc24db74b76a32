package ringq

import (
	"errors"
	"slices"
	"testing"
)

func TestNewRingBufferCapacity(t *testing.T) {
	for _, c := range []int{-1, -100} {
		if r, err := NewRingBuffer[int](c); !errors.Is(err, ErrCapacity) || r != nil {
			t.Errorf("NewRingBuffer(%d) = %v, %v; want nil, ErrCapacity", c, r, err)
		}
	}
	for _, c := range []int{0, 1, 3, 7, 64} {
		r, err := NewRingBuffer[int](c)
		if err != nil || r.Cap() != c || r.Len() != 0 || r.Full() != (c == 0) {
			t.Errorf("NewRingBuffer(%d): err %v Cap %d Len %d Full %v", c, err, r.Cap(), r.Len(), r.Full())
		}
	}
}

func TestRingBufferZeroCapacity(t *testing.T) {
	r, _ := NewRingBuffer[int](0)
	if r.Push(1) {
		t.Fatal("Push into capacity 0 succeeded")
	}
	if v, ok := r.Pop(); ok {
		t.Fatalf("Pop from capacity 0 = %d, true", v)
	}
	if v, ok := r.Peek(); ok {
		t.Fatalf("Peek at capacity 0 = %d, true", v)
	}
	if !r.Full() || r.Len() != 0 {
		t.Fatalf("capacity 0: Full %v Len %d; want full and empty", r.Full(), r.Len())
	}
}

func TestRingBufferWrapsAround(t *testing.T) {
	r, _ := NewRingBuffer[int](3)
	var got []int
	next := 1
	for round := 0; round < 5; round++ {
		for !r.Full() {
			r.Push(next)
			next++
		}
		if r.Push(next) {
			t.Fatal("Push into a full buffer succeeded")
		}
		// Items leave in order, so the oldest is one past the last popped.
		if v, ok := r.Peek(); !ok || v != lastOf(got)+1 {
			t.Fatalf("Peek = %d, %v; want %d", v, ok, lastOf(got)+1)
		}
		for range 2 {
			v, _ := r.Pop()
			got = append(got, v)
		}
	}
	for v, ok := r.Pop(); ok; v, ok = r.Pop() {
		got = append(got, v)
	}
	if !slices.Equal(got, seq(1, next-1)) {
		t.Fatalf("popped %v", got)
	}
	for i, v := range r.buf {
		if v != 0 {
			t.Fatalf("slot %d still holds %d after draining", i, v)
		}
	}
}

func lastOf(s []int) int {
	if len(s) == 0 {
		return 0
	}
	return s[len(s)-1]
}
