package ringq

import (
	"fmt"
	"testing"
)

// BenchmarkLocalQueuePushPop is the owner's hot path: one Push and one Pop
// per op on an uncontended queue.
func BenchmarkLocalQueuePushPop(b *testing.B) {
	q, _ := NewLocalQueue[*int](0)
	g := NewGlobalQueue[*int]()
	v := new(int)
	b.ReportAllocs()
	for b.Loop() {
		_ = q.Push(v, g)
		q.Pop()
	}
}

// BenchmarkLocalQueuePushPopBurst fills half the queue, then empties it;
// ns/op is per item pushed and popped.
func BenchmarkLocalQueuePushPopBurst(b *testing.B) {
	q, _ := NewLocalQueue[*int](0)
	g := NewGlobalQueue[*int]()
	v := new(int)
	const burst = 128
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if i%burst == burst-1 {
			for range burst {
				q.Pop()
			}
		}
		_ = q.Push(v, g)
	}
}

// BenchmarkLocalQueueOverflow pushes into a full queue, so every Cap/2-th
// push moves half the queue to the global queue; ns/op is per push,
// overflows amortized.
func BenchmarkLocalQueueOverflow(b *testing.B) {
	q, _ := NewLocalQueue[*int](0)
	g := NewGlobalQueue[*int]()
	v := new(int)
	drained := make([]*int, 0, 256)
	b.ReportAllocs()
	for b.Loop() {
		if err := q.Push(v, g); err != nil {
			b.Fatal(err)
		}
		if g.Len() >= 1024 {
			drained = g.PopBatch(drained[:0], cap(drained))
		}
	}
}

// BenchmarkLocalQueueStealInto measures a steal of half a victim holding
// victimLen items. Each op also refills the victim with PushBatch and pops
// the stolen items out of dst, so subtract about victimLen/2 push+pop pairs
// (BenchmarkLocalQueuePushPopBurst) for the steal alone.
func BenchmarkLocalQueueStealInto(b *testing.B) {
	for _, victimLen := range []int{2, 32, 256} {
		b.Run(fmt.Sprintf("victim=%d", victimLen), func(b *testing.B) {
			victim, _ := NewLocalQueue[*int](256)
			dst, _ := NewLocalQueue[*int](256)
			refill := make([]*int, victimLen)
			for i := range refill {
				refill[i] = new(int)
			}
			victim.PushBatch(refill)
			b.ReportAllocs()
			for b.Loop() {
				if _, ok := victim.StealInto(dst); !ok {
					b.Fatal("steal refused")
				}
				for _, ok := dst.Pop(); ok; _, ok = dst.Pop() {
				}
				victim.PushBatch(refill[:victimLen-victim.Len()])
			}
			b.ReportMetric(float64(victimLen-victimLen/2), "stolen/op")
		})
	}
}

// BenchmarkGlobalQueuePushPop is one Push and one Pop per op, uncontended.
func BenchmarkGlobalQueuePushPop(b *testing.B) {
	q := NewGlobalQueue[*int]()
	v := new(int)
	b.ReportAllocs()
	for b.Loop() {
		_ = q.Push(v)
		q.Pop()
	}
}

// BenchmarkGlobalQueueBatch moves 128 items in with PushBatch and out with
// PopBatch; ns/op is per batch of 128.
func BenchmarkGlobalQueueBatch(b *testing.B) {
	q := NewGlobalQueue[*int]()
	batch := make([]*int, 128)
	out := make([]*int, 0, 128)
	b.ReportAllocs()
	for b.Loop() {
		_ = q.PushBatch(batch)
		out = q.PopBatch(out[:0], len(batch))
	}
}

// BenchmarkGlobalQueueParallel pushes and pops from GOMAXPROCS goroutines.
func BenchmarkGlobalQueueParallel(b *testing.B) {
	q := NewGlobalQueue[*int]()
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		v := new(int)
		for pb.Next() {
			_ = q.Push(v)
			q.Pop()
		}
	})
}

// BenchmarkRingBufferPushPop is one Push and one Pop per op.
func BenchmarkRingBufferPushPop(b *testing.B) {
	r, _ := NewRingBuffer[*int](7)
	v := new(int)
	r.Push(v)
	b.ReportAllocs()
	for b.Loop() {
		r.Push(v)
		r.Pop()
	}
}
