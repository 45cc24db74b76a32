package timerwheel

import (
	"runtime"
	"testing"
	"time"
)

// xorshift is a tiny deterministic generator, so benchmarks do not measure
// math/rand.
type xorshift uint64

func (x *xorshift) next() uint64 {
	*x ^= *x << 13
	*x ^= *x >> 7
	*x ^= *x << 17
	return uint64(*x)
}

// BenchmarkInsertCancel is the timeout that never fires: inserted, then
// cancelled when the operation completes. Must be 0 allocs/op.
func BenchmarkInsertCancel(b *testing.B) {
	for _, bc := range []struct {
		name string
		max  time.Duration // deadlines spread over (0, max] from now
	}{
		{"level0", 63 * ms},
		{"seconds", 30 * time.Second},
		{"hours", 10 * time.Hour},
	} {
		b.Run(bc.name, func(b *testing.B) {
			w, _ := New[*int](Config{})
			v := new(int)
			rng := xorshift(88172645463325252)
			// Background load, so the lists are not trivially empty.
			for range 10000 {
				w.Insert(time.Duration(rng.next()%uint64(bc.max))+1, v)
			}
			w.Cancel(w.Insert(1, v)) // grow the slab once
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				h := w.Insert(time.Duration(rng.next()%uint64(bc.max))+1, v)
				w.Cancel(h)
			}
		})
	}
}

// BenchmarkInsertFire is a steady stream of timers that all fire: each
// iteration inserts one with a deadline up to 4 s out and moves time on by
// 1 ms, so about one fires per iteration and each cascades on the way.
func BenchmarkInsertFire(b *testing.B) {
	w, _ := New[*int](Config{})
	v := new(int)
	rng := xorshift(2463534242)
	now := time.Duration(0)
	fire := func(*int) {}
	step := func() {
		w.Insert(now+time.Duration(rng.next()%4096+1)*ms, v)
		now += ms
		w.Advance(now, fire)
	}
	for range 10000 { // reach the steady state: about 2000 live entries
		step()
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		step()
	}
}

// BenchmarkNextDeadline asks for the next deadline of a wheel whose
// earliest entry sits in an upper-level slot among many others.
func BenchmarkNextDeadline(b *testing.B) {
	w, _ := New[*int](Config{})
	v := new(int)
	rng := xorshift(99)
	for range 100000 {
		w.Insert(time.Duration(rng.next()%uint64(time.Hour))+time.Minute, v)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, ok := w.NextDeadline(); !ok {
			b.Fatal("empty")
		}
	}
}

// BenchmarkMillionTimers holds 1,000,000 live timers spread over an hour,
// reports the heap they take per timer, then fires them all. The ns/op is
// for the whole million (insert and fire).
func BenchmarkMillionTimers(b *testing.B) {
	const n = 1_000_000
	var perTimer, insertNs, fireNs float64
	for b.Loop() {
		v := new(int)
		rng := xorshift(88172645463325252)
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		start := time.Now()
		w, _ := New[*int](Config{})
		for range n {
			w.Insert(time.Duration(rng.next()%uint64(time.Hour))+1, v)
		}
		insertNs = float64(time.Since(start).Nanoseconds()) / n
		runtime.GC()
		runtime.ReadMemStats(&after)
		perTimer = float64(after.HeapAlloc-before.HeapAlloc) / n
		start = time.Now()
		fired := 0
		for now := time.Duration(0); w.Len() > 0; now += 10 * ms {
			fired += w.Advance(now, func(*int) {})
		}
		fireNs = float64(time.Since(start).Nanoseconds()) / n
		if fired != n {
			b.Fatalf("fired %d of %d", fired, n)
		}
	}
	b.ReportMetric(perTimer, "B/timer")
	b.ReportMetric(insertNs, "ns/insert")
	b.ReportMetric(fireNs, "ns/fire")
}
