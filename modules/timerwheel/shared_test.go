package timerwheel

import (
	"math/rand/v2"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func TestSharedNext(t *testing.T) {
	s, err := NewShared[int](Config{Resolution: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Next(); got != NoDeadline {
		t.Fatalf("empty: Next = %v, want NoDeadline", got)
	}
	s.Lock()
	h := s.Insert(2500*time.Microsecond, 1)
	s.Insert(7*time.Millisecond, 2)
	s.Unlock()
	// Rounded up to its tick, as the entry fires.
	if got := s.Next(); got != 3*time.Millisecond {
		t.Fatalf("Next = %v, want 3ms", got)
	}
	if !s.Cancel(h) {
		t.Fatal("Cancel of a live entry = false")
	}
	// The earliest entry went: Next moves on at once, so nobody thinks
	// the wheel overdue at 3ms (a watchdog would report a stall).
	if got := s.Next(); got != 7*time.Millisecond {
		t.Fatalf("after cancelling the earliest entry: Next = %v, want 7ms", got)
	}
	var fired []int
	if n := s.Advance(3*time.Millisecond, func(v int) { fired = append(fired, v) }); n != 0 {
		t.Fatalf("Advance(3ms) fired %d (%v), want 0", n, fired)
	}
	if got := s.Next(); got != 7*time.Millisecond {
		t.Fatalf("after Advance: Next = %v, want 7ms", got)
	}
	// A later entry's Cancel leaves Next alone; the last one's empties it.
	s.Lock()
	late := s.Insert(9*time.Millisecond, 3)
	s.Unlock()
	if !s.Cancel(late) || s.Next() != 7*time.Millisecond {
		t.Fatalf("after cancelling a later entry: Next = %v, want 7ms", s.Next())
	}
	if n, ok := s.TryAdvance(7*time.Millisecond, func(v int) { fired = append(fired, v) }); !ok || n != 1 || fired[0] != 2 {
		t.Fatalf("TryAdvance = %d, %v; fired %v", n, ok, fired)
	}
	if got := s.Next(); got != NoDeadline || s.Len() != 0 {
		t.Fatalf("drained: Next = %v, Len = %d", got, s.Len())
	}
	s.Lock()
	if _, ok := s.TryAdvance(time.Second, func(int) {}); ok {
		t.Fatal("TryAdvance took a held lock")
	}
	s.Unlock()
}

// An owner inserts and cancels while other goroutines advance the same
// wheel: every entry either fires exactly once, never before its deadline,
// or is cancelled before firing; and Next never runs past a pending entry.
func TestSharedConcurrentOwnerAndPeers(t *testing.T) {
	const n = 5000
	s, err := NewShared[int](Config{Resolution: time.Microsecond})
	if err != nil {
		t.Fatal(err)
	}
	var clock atomic.Int64 // the shared time, moved by the peers
	deadlines := make([]time.Duration, n)
	fired := make([]atomic.Int32, n)
	firedAt := make([]atomic.Int64, n)
	cancelled := make([]bool, n)
	var wg sync.WaitGroup
	stop := make(chan struct{})
	for range 3 {
		wg.Go(func() {
			for {
				select {
				case <-stop:
					return
				default:
				}
				now := time.Duration(clock.Add(int64(time.Microsecond)))
				// A peer must see every due entry through Next.
				if now < s.Next() {
					runtime.Gosched()
					continue
				}
				s.TryAdvance(now, func(v int) {
					fired[v].Add(1)
					firedAt[v].Store(int64(now))
				})
			}
		})
	}
	rng := rand.New(rand.NewPCG(1, 2))
	var handles []Handle
	for i := range n {
		d := time.Duration(clock.Load()) + time.Duration(rng.IntN(2000))*time.Microsecond
		deadlines[i] = d
		s.Lock()
		handles = append(handles, s.Insert(d, i))
		s.Unlock()
		if j := rng.IntN(len(handles)); rng.IntN(3) == 0 && s.Cancel(handles[j]) {
			cancelled[j] = true
		}
	}
	// Let the peers run the clock past every deadline.
	for start := time.Now(); s.Len() > 0; time.Sleep(time.Millisecond) {
		if time.Since(start) > 10*time.Second {
			close(stop)
			wg.Wait()
			t.Fatalf("%d entries never fired: Next = %v ran past them", s.Len(), s.Next())
		}
	}
	close(stop)
	wg.Wait()
	for i := range n {
		switch f := fired[i].Load(); {
		case cancelled[i] && f != 0:
			t.Fatalf("entry %d fired %d times after a successful Cancel", i, f)
		case !cancelled[i] && f != 1:
			t.Fatalf("entry %d fired %d times", i, f)
		case f == 1 && time.Duration(firedAt[i].Load()) < deadlines[i]:
			t.Fatalf("entry %d fired at %v, before its deadline %v", i, time.Duration(firedAt[i].Load()), deadlines[i])
		}
	}
}

// Advance takes the lock a chunk at a time: a Cancel issued while a long
// burst fires gets in before the burst ends, and the entry it cancels,
// still due, never fires.
func TestSharedCancelDuringLongAdvance(t *testing.T) {
	s, err := NewShared[int](Config{Resolution: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	const n = 20 * fireChunk
	var last Handle
	s.Lock()
	for i := range n {
		last = s.Insert(time.Millisecond, i)
	}
	s.Unlock()
	started := make(chan struct{})
	var advancing atomic.Bool
	var firedLast atomic.Bool
	advancing.Store(true)
	go func() {
		s.Advance(time.Millisecond, func(v int) {
			if v == 0 {
				close(started)
			}
			if v == n-1 {
				firedLast.Store(true)
			}
			// A slow burst: n entries take 100 ms or more.
			for t0 := time.Now(); time.Since(t0) < 20*time.Microsecond; {
			}
		})
		advancing.Store(false)
	}()
	<-started
	if !s.Cancel(last) {
		t.Fatal("Cancel of an entry still due returned false")
	}
	if !advancing.Load() {
		t.Fatal("Cancel returned only after the whole burst had fired")
	}
	for advancing.Load() {
		time.Sleep(time.Millisecond)
	}
	if firedLast.Load() {
		t.Fatal("the cancelled entry fired")
	}
}

// A fire callback that panics leaves the wheel usable: the lock is
// released and the entries not yet fired stay due.
func TestSharedFirePanicReleasesLock(t *testing.T) {
	s, err := NewShared[int](Config{Resolution: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	s.Lock()
	s.Insert(time.Millisecond, 1)
	s.Insert(time.Millisecond, 2)
	s.Unlock()
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the fire callback's panic did not reach Advance's caller")
			}
		}()
		s.Advance(time.Millisecond, func(int) { panic("boom") })
	}()
	done := make(chan int)
	go func() { done <- s.Len() }()
	select {
	case n := <-done:
		if n != 1 {
			t.Fatalf("Len = %d after one entry fired and panicked, want 1", n)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the wheel stayed locked after a fire callback panicked")
	}
	if n := s.Advance(time.Millisecond, func(int) {}); n != 1 {
		t.Fatalf("the entry left due fired %d times, want 1", n)
	}
}

// An entry inserted with a deadline already past is due at Now, which is
// what Next must publish, as NextDeadline reports. Insert published the
// raw deadline instead (-5s here), so Next and NextDeadline disagreed.
func TestSharedNextOfPastDeadline(t *testing.T) {
	s, err := NewShared[int](Config{Resolution: time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	s.Advance(5*time.Millisecond, func(int) {})
	s.Lock()
	s.Insert(-5*time.Second, 1)
	s.Unlock()
	if got := s.Next(); got != 5*time.Millisecond {
		t.Fatalf("Next = %v, want Now (5ms)", got)
	}
	if n := s.Advance(5*time.Millisecond, func(int) {}); n != 1 || s.Next() != NoDeadline {
		t.Fatalf("Advance fired %d, then Next = %v", n, s.Next())
	}
}
