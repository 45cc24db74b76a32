package ringq

import (
	"slices"
	"testing"
)

func TestStealIntoTakesHalfRoundedUp(t *testing.T) {
	tests := []struct {
		victimLen int
		ret       int   // the item returned to run at once
		dst       []int // what lands in dst
		left      []int // what the victim keeps
	}{
		{1, 1, nil, nil},
		{2, 1, nil, []int{2}},
		{3, 2, []int{1}, []int{3}},
		{5, 3, []int{1, 2}, []int{4, 5}},
		{8, 4, []int{1, 2, 3}, seq(5, 8)},
	}
	for _, tt := range tests {
		victim := fill(t, 8, tt.victimLen)
		dst, _ := NewLocalQueue[int](8)
		v, ok := victim.StealInto(dst)
		if !ok || v != tt.ret {
			t.Errorf("len %d: StealInto = %d, %v; want %d, true", tt.victimLen, v, ok, tt.ret)
			continue
		}
		if got := drain(dst); !slices.Equal(got, tt.dst) {
			t.Errorf("len %d: dst got %v, want %v", tt.victimLen, got, tt.dst)
		}
		if got := drain(victim); !slices.Equal(got, tt.left) {
			t.Errorf("len %d: victim kept %v, want %v", tt.victimLen, got, tt.left)
		}
	}
}

func TestStealIntoRefuses(t *testing.T) {
	midSteal := func(t *testing.T) *LocalQueue[int] {
		q := fill(t, 8, 6)
		steal, real := unpack(q.head.Load())
		q.head.Store(pack(steal, real+1))
		return q
	}
	tests := []struct {
		name        string
		victim, dst func(*testing.T) *LocalQueue[int]
	}{
		{"empty victim",
			func(t *testing.T) *LocalQueue[int] { return fill(t, 8, 0) },
			func(t *testing.T) *LocalQueue[int] { return fill(t, 8, 0) }},
		{"dst more than half full",
			func(t *testing.T) *LocalQueue[int] { return fill(t, 8, 8) },
			func(t *testing.T) *LocalQueue[int] { return fill(t, 8, 5) }},
		{"another steal under way on the victim",
			midSteal,
			func(t *testing.T) *LocalQueue[int] { return fill(t, 8, 0) }},
		{"dst has a thief copying out of it", // counts as used room
			func(t *testing.T) *LocalQueue[int] { return fill(t, 8, 8) },
			func(t *testing.T) *LocalQueue[int] {
				q := fill(t, 8, 5)
				steal, real := unpack(q.head.Load())
				q.head.Store(pack(steal, real+4))
				return q
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			victim, dst := tt.victim(t), tt.dst(t)
			vh, vt := victim.head.Load(), victim.tail.Load()
			dh, dt := dst.head.Load(), dst.tail.Load()
			if v, ok := victim.StealInto(dst); ok {
				t.Fatalf("StealInto = %d, true; want a refusal", v)
			}
			if victim.head.Load() != vh || victim.tail.Load() != vt || dst.head.Load() != dh || dst.tail.Load() != dt {
				t.Fatal("a refused steal changed a queue")
			}
		})
	}
	t.Run("victim is dst", func(t *testing.T) {
		q := fill(t, 8, 4)
		if v, ok := q.StealInto(q); ok {
			t.Fatalf("self steal = %d, true", v)
		}
		if q.Len() != 4 {
			t.Fatalf("self steal changed Len to %d", q.Len())
		}
	})
}

func TestStealIntoHalfFullDstAccepted(t *testing.T) {
	victim := fill(t, 8, 8)
	dst := fill(t, 8, 4) // exactly half full is allowed
	if v, ok := victim.StealInto(dst); !ok || v != 4 {
		t.Fatalf("StealInto = %d, %v; want 4, true", v, ok)
	}
	if got := drain(dst); !slices.Equal(got, []int{1, 2, 3, 4, 1, 2, 3}) {
		t.Fatalf("dst: %v", got)
	}
}

// A small dst caps the steal at its free room plus the returned item.
func TestStealIntoCappedBySmallDst(t *testing.T) {
	victim := fill(t, 64, 64)
	dst := fill(t, 4, 2)
	v, ok := victim.StealInto(dst)
	if !ok || v != 3 {
		t.Fatalf("StealInto = %d, %v; want 3, true", v, ok)
	}
	if got := drain(dst); !slices.Equal(got, []int{1, 2, 1, 2}) {
		t.Fatalf("dst: %v", got)
	}
	if victim.Len() != 61 {
		t.Fatalf("victim Len = %d, want 61", victim.Len())
	}
}

// The owner may pop while a steal is under way; the thief's finish must
// keep the owner's progress.
func TestStealFinishKeepsOwnerPops(t *testing.T) {
	q := fill(t, 8, 8)
	first, n := q.claim(8)
	if first != 0 || n != 4 {
		t.Fatalf("claim = %d, %d; want 0, 4", first, n)
	}
	if v, ok := q.Pop(); !ok || v != 5 {
		t.Fatalf("owner Pop during steal = %d, %v; want 5", v, ok)
	}
	q.finishSteal()
	steal, real := unpack(q.head.Load())
	if steal != 5 || real != 5 {
		t.Fatalf("after finish head = (%d, %d), want (5, 5)", steal, real)
	}
	if got := drain(q); !slices.Equal(got, seq(6, 8)) {
		t.Fatalf("owner has %v", got)
	}
}
