package ringq

import (
	"errors"
	"runtime"
	"sync"
	"sync/atomic"
	"testing"

	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// ledger records every item consumed, by anyone, so a stress test can
// prove that each of 1..n was consumed exactly once.
type ledger struct {
	seen  []atomic.Int32
	count atomic.Int64
	sum   atomic.Int64
}

func newLedger(n int) *ledger { return &ledger{seen: make([]atomic.Int32, n+1)} }

func (l *ledger) consume(t *testing.T, v int) {
	if v <= 0 || v >= len(l.seen) {
		t.Errorf("consumed %d, which was never produced", v)
		return
	}
	l.seen[v].Add(1)
	l.count.Add(1)
	l.sum.Add(int64(v))
}

func (l *ledger) verify(t *testing.T) {
	t.Helper()
	n := int64(len(l.seen) - 1)
	if got := l.count.Load(); got != n {
		t.Errorf("consumed %d items, want %d", got, n)
	}
	if got, want := l.sum.Load(), n*(n+1)/2; got != want {
		t.Errorf("checksum %d, want %d", got, want)
	}
	bad := 0
	for v := 1; v < len(l.seen); v++ {
		if c := l.seen[v].Load(); c != 1 && bad < 10 {
			bad++
			t.Errorf("item %d consumed %d times", v, c)
		}
	}
}

// flakySink refuses every third batch, to drive the owner through the
// undo path of an overflow while thieves are stealing.
type flakySink struct {
	g     *GlobalQueue[int]
	calls int // owner only
}

var errFlaky = errors.New("flaky sink refused")

func (s *flakySink) PushBatch(items []int) error {
	s.calls++
	if s.calls%3 == 0 {
		return errFlaky
	}
	return s.g.PushBatch(items)
}

// TestStressLocalQueueSteal runs one owner pushing (overflowing into the
// global queue) and popping against several thieves that steal from it and
// from each other, pop their own queues and drain the global queue, all at
// once. Every item must be consumed exactly once.
func TestStressLocalQueueSteal(t *testing.T) {
	for _, tc := range []struct {
		name  string
		flaky bool
	}{
		{"sink accepts", false},
		{"sink refuses every third overflow", true},
	} {
		t.Run(tc.name, func(t *testing.T) { stressSteal(t, tc.flaky) })
	}
}

func stressSteal(t *testing.T, flaky bool) {
	const (
		items    = 200_000
		thieves  = 3
		capacity = 16 // small, so the owner wraps and overflows constantly
	)
	led := newLedger(items)
	global := NewGlobalQueue[int]()
	var sink Sink[int] = global
	if flaky {
		sink = &flakySink{g: global}
	}
	victim, _ := NewLocalQueue[int](capacity)
	own := make([]*LocalQueue[int], thieves)
	for i := range own {
		own[i], _ = NewLocalQueue[int](capacity)
	}

	var wg sync.WaitGroup
	var ownerDone atomic.Bool
	wg.Add(1 + thieves)
	go func() { // the owner
		defer wg.Done()
		defer ownerDone.Store(true)
		batch := make([]int, 0, 4)
		for v := 1; v <= items; v++ {
			if v%5 == 0 && len(batch) < cap(batch) {
				batch = append(batch, v) // goes in with PushBatch below
				continue
			}
			if err := victim.Push(v, sink); err != nil {
				if !errors.Is(err, errFlaky) {
					t.Errorf("Push(%d): %v", v, err)
				}
				led.consume(t, v) // refused: v is still ours to run
			}
			if len(batch) == cap(batch) {
				n := victim.PushBatch(batch)
				for _, w := range batch[n:] {
					led.consume(t, w)
				}
				batch = batch[:0]
			}
			if v%3 == 0 {
				if w, ok := victim.Pop(); ok {
					led.consume(t, w)
				}
			}
		}
		for _, w := range batch {
			led.consume(t, w)
		}
		for w, ok := victim.Pop(); ok; w, ok = victim.Pop() {
			led.consume(t, w)
		}
	}()
	for i := range thieves {
		go func() {
			defer wg.Done()
			mine := own[i]
			for attempt := 0; ; attempt++ {
				if n := victim.Len(); n < 0 || n > capacity {
					t.Errorf("victim Len = %d outside [0, %d]", n, capacity)
				}
				// Every fourth attempt steals from the next thief before
				// popping, so thieves' queues are victims too while
				// their owners pop them.
				neighbour := attempt%4 == 3
				if neighbour {
					if v, ok := own[(i+1)%thieves].StealInto(mine); ok {
						led.consume(t, v)
						continue
					}
				}
				if v, ok := mine.Pop(); ok {
					led.consume(t, v)
					continue
				}
				if v, ok := victim.StealInto(mine); ok {
					led.consume(t, v)
					continue
				}
				if v, ok := global.Pop(); ok {
					led.consume(t, v)
					continue
				}
				// Stop once nothing can appear any more: the owner has
				// finished (so the victim and the global queue only
				// shrink), both are empty and no steal from the victim
				// is half done. Our own queue is empty (Pop just failed)
				// and only we fill it. Items left with another thief are
				// that thief's to drain. A lost item therefore shows up
				// as a short count in verify, not as a hang.
				if ownerDone.Load() && global.Len() == 0 && victim.Len() == 0 && !victim.IsStealing() {
					return
				}
				runtime.Gosched()
			}
		}()
	}
	wg.Wait()
	led.verify(t)
	if victim.Len() != 0 || global.Len() != 0 {
		t.Errorf("left behind: victim %d, global %d", victim.Len(), global.Len())
	}
	for i, q := range own {
		if q.Len() != 0 || q.IsStealing() {
			t.Errorf("thief %d left %d items (stealing %v)", i, q.Len(), q.IsStealing())
		}
	}
}

// TestStressGlobalQueue runs producers and consumers on one GlobalQueue,
// closes it once the producers are done, and checks that the consumers
// drain every item exactly once.
func TestStressGlobalQueue(t *testing.T) {
	const (
		producers = 3
		consumers = 3
		perProd   = 30_000
	)
	led := newLedger(producers * perProd)
	q := NewGlobalQueue[int]()
	var prod, cons sync.WaitGroup
	prod.Add(producers)
	for p := range producers {
		go func() {
			defer prod.Done()
			batch := make([]int, 0, 7)
			for i := range perProd {
				v := p*perProd + i + 1
				if i%2 == 0 {
					if err := q.Push(v); err != nil {
						t.Errorf("Push(%d): %v", v, err)
					}
					continue
				}
				batch = append(batch, v)
				if len(batch) == cap(batch) || i == perProd-1 {
					if err := q.PushBatch(batch); err != nil {
						t.Errorf("PushBatch: %v", err)
					}
					batch = batch[:0]
				}
			}
		}()
	}
	cons.Add(consumers)
	for c := range consumers {
		go func() {
			defer cons.Done()
			buf := make([]int, 0, 16)
			for {
				if c%2 == 0 {
					buf = q.PopBatch(buf[:0], 1+len(buf)%16)
					for _, v := range buf {
						led.consume(t, v)
					}
					if len(buf) > 0 {
						continue
					}
				} else if v, ok := q.Pop(); ok {
					led.consume(t, v)
					continue
				}
				// Closed is read before Len: once closed, nothing more
				// arrives, so an empty queue stays empty.
				if q.Closed() && q.Len() == 0 {
					return
				}
				runtime.Gosched()
			}
		}()
	}
	prod.Wait()
	q.Close()
	if err := q.Push(-1); !errors.Is(err, ErrClosed) {
		t.Errorf("Push after Close = %v", err)
	}
	cons.Wait()
	led.verify(t)
}

// TestStressEveryWorkerSteals models the scheduler itself: every worker
// owns a queue, produces into it (overflowing into the global queue), pops
// from it, and steals from every other worker, so each queue is pushed,
// popped and stolen from at once. Every item must be consumed exactly once.
func TestStressEveryWorkerSteals(t *testing.T) {
	const (
		workers   = 4
		perWorker = 50_000
		capacity  = 16
	)
	led := newLedger(workers * perWorker)
	global := NewGlobalQueue[int]()
	queues := make([]*LocalQueue[int], workers)
	for i := range queues {
		queues[i], _ = NewLocalQueue[int](capacity)
	}
	var wg sync.WaitGroup
	var producing atomic.Int32
	producing.Store(workers)
	wg.Add(workers)
	for w := range workers {
		go func() {
			defer wg.Done()
			mine := queues[w]
			// stealOne tries the other workers in turn, starting after
			// a different one each call.
			turn := w
			stealOne := func() bool {
				for k := 1; k < workers; k++ {
					turn++
					victim := queues[turn%workers]
					if victim == mine {
						continue
					}
					if v, ok := victim.StealInto(mine); ok {
						led.consume(t, v)
						return true
					}
				}
				return false
			}
			for i := range perWorker {
				v := w*perWorker + i + 1
				if err := mine.Push(v, global); err != nil {
					t.Errorf("Push(%d): %v", v, err)
					led.consume(t, v)
				}
				switch i % 4 {
				case 1:
					if v, ok := mine.Pop(); ok {
						led.consume(t, v)
					}
				case 3:
					stealOne()
				}
			}
			producing.Add(-1)
			for {
				if v, ok := mine.Pop(); ok {
					led.consume(t, v)
					continue
				}
				if stealOne() {
					continue
				}
				if v, ok := global.Pop(); ok {
					led.consume(t, v)
					continue
				}
				// Once every worker has stopped producing, only owners
				// refill their own queues (by stealing), so a worker
				// whose queue is empty and who finds the global queue
				// empty may leave: what others hold, they drain.
				if producing.Load() == 0 && global.Len() == 0 {
					return
				}
				runtime.Gosched()
			}
		}()
	}
	wg.Wait()
	led.verify(t)
	for i, q := range queues {
		if q.Len() != 0 || q.IsStealing() {
			t.Errorf("worker %d left %d items (stealing %v)", i, q.Len(), q.IsStealing())
		}
	}
	if global.Len() != 0 {
		t.Errorf("global queue left %d items", global.Len())
	}
}
