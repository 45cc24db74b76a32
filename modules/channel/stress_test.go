package channel

import (
	"context"
	"errors"
	"fmt"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/faio-go/faio/modules/runtime"
)

// Where a test's producers and consumers run.
type placement int

const (
	onTasks placement = iota
	onGoroutines
)

func (p placement) String() string {
	if p == onTasks {
		return "tasks"
	}
	return "goroutines"
}

// runEach runs every fn as a task of rt or on a plain goroutine, as where
// says, waits for all of them and returns their errors joined.
func runEach(rt *runtime.Runtime, where []placement, fns []func(context.Context) error) error {
	errs := make([]error, len(fns))
	var wg sync.WaitGroup
	for i, fn := range fns {
		wg.Add(1)
		if where[i] == onTasks {
			h := runtime.SpawnOn(rt, func(ctx context.Context) (int, error) { return 0, fn(ctx) })
			go func() {
				defer wg.Done()
				_, errs[i] = h.Join(context.Background())
			}()
			continue
		}
		go func() {
			defer wg.Done()
			errs[i] = fn(context.Background())
		}()
	}
	wg.Wait()
	return errors.Join(errs...)
}

// tally is what one consumer received: count, sum and xor of the values
// (a multiset fingerprint) and the last sequence number seen per producer.
type tally struct {
	n, sum, xor uint64
	last        []int64
}

// value packs producer p's i-th value.
func value(p, i int) uint64 { return uint64(p)<<32 | uint64(i) }

// conserve sends perProducer values from each of producers senders into
// one channel drained by consumers receivers and checks that the multiset
// received equals the multiset sent, and that each consumer saw each
// producer's values in the order they were sent (strictly, with no gap,
// when there is one consumer).
func conserve(t *testing.T, rt *runtime.Runtime, capacity, producers, consumers, perProducer int, prodAt, consAt placement) {
	t.Helper()
	tx, rx := New[uint64](capacity)
	var fns []func(context.Context) error
	var where []placement
	for p := range producers {
		txp := tx.Clone()
		fns = append(fns, func(ctx context.Context) error {
			defer txp.Close()
			for i := range perProducer {
				if err := txp.Send(ctx, value(p, i)); err != nil {
					return fmt.Errorf("producer %d, value %d: %w", p, i, err)
				}
			}
			return nil
		})
		where = append(where, prodAt)
	}
	if err := tx.Close(); err != nil {
		t.Fatal(err)
	}
	tallies := make([]tally, consumers)
	for c := range consumers {
		rxc := rx.Clone()
		tl := &tallies[c]
		tl.last = make([]int64, producers)
		for p := range tl.last {
			tl.last[p] = -1
		}
		fns = append(fns, func(ctx context.Context) error {
			defer rxc.Close()
			for {
				v, err := rxc.Recv(ctx)
				if errors.Is(err, ErrClosed) {
					return nil
				}
				if err != nil {
					return err
				}
				p, i := int(v>>32), int64(uint32(v))
				if i <= tl.last[p] || (consumers == 1 && i != tl.last[p]+1) {
					return fmt.Errorf("consumer %d: producer %d's value %d after %d", c, p, i, tl.last[p])
				}
				tl.last[p] = i
				tl.n++
				tl.sum += v
				tl.xor ^= v
			}
		})
		where = append(where, consAt)
	}
	if err := rx.Close(); err != nil {
		t.Fatal(err)
	}
	if err := runEach(rt, where, fns); err != nil {
		t.Fatal(err)
	}
	var want, got tally
	for p := range producers {
		for i := range perProducer {
			v := value(p, i)
			want.n++
			want.sum += v
			want.xor ^= v
		}
	}
	for _, tl := range tallies {
		got.n += tl.n
		got.sum += tl.sum
		got.xor ^= tl.xor
	}
	if got.n != want.n || got.sum != want.sum || got.xor != want.xor {
		t.Fatalf("received count/sum/xor %d/%d/%#x, sent %d/%d/%#x", got.n, got.sum, got.xor, want.n, want.sum, want.xor)
	}
}

// The W4 shape: 4 producers x 1,000,000 values into capacity 1,024, 4
// consumers, closed when the producers finish. The full count runs under
// -race too: it takes a few seconds there.
func TestStressConservationMPMC(t *testing.T) {
	const perProducer = 1_000_000
	rt := newRuntime(t, 2)
	conserve(t, rt, 1024, 4, 4, perProducer, onTasks, onTasks)
}

// The same between tasks and goroutines, in every mix, and through small
// buffers, where most operations wait.
func TestStressConservationMixed(t *testing.T) {
	perProducer := 100_000
	if raceEnabled {
		perProducer = 10_000
	}
	rt := newRuntime(t, 2)
	for _, capacity := range []int{0, 1, 16} {
		for _, prodAt := range []placement{onTasks, onGoroutines} {
			for _, consAt := range []placement{onTasks, onGoroutines} {
				t.Run(fmt.Sprintf("cap=%d/%v->%v", capacity, prodAt, consAt), func(t *testing.T) {
					conserve(t, rt, capacity, 3, 3, perProducer/4, prodAt, consAt)
				})
			}
		}
	}
}

// One consumer sees every producer's values in order and without gaps.
func TestStressFIFOPerProducer(t *testing.T) {
	perProducer := 200_000
	if raceEnabled {
		perProducer = 20_000
	}
	rt := newRuntime(t, 2)
	for _, capacity := range []int{0, 1, 64} {
		t.Run(fmt.Sprintf("cap=%d", capacity), func(t *testing.T) {
			conserve(t, rt, capacity, 4, 1, perProducer/4, onTasks, onTasks)
		})
	}
}

// Ends close while operations through them wait or run: every producer's
// and every consumer's end is closed by another goroutine once its owner
// has done an arbitrary number of operations, and one receiver that is
// never closed drains to the end. A value whose Send returned nil is
// received exactly once; a value whose Send failed comes back in its
// SendError and is never received.
func TestStressCloseRacesOperations(t *testing.T) {
	rounds := 200
	if raceEnabled {
		rounds = 60
	}
	const producers, consumers, perProducer = 4, 4, 300
	rt := newRuntime(t, 2)
	okSends := 0
	for r := range rounds {
		tx, rx := New[uint64](2)
		var fns []func(context.Context) error
		var where []placement
		book := newLedger()
		var prodClosers, consClosers sync.WaitGroup
		never := make(chan struct{})
		for p := range producers {
			txp := tx.Clone()
			var progress atomic.Int64
			closeAfter(&prodClosers, &progress, int64((r*7+p*131)%(perProducer+1)), never, txp.Close)
			fns = append(fns, func(ctx context.Context) error {
				for i := range perProducer {
					v := value(p, i)
					if err := book.sendResult(v, txp.Send(ctx, v)); err != nil {
						return fmt.Errorf("producer %d: Send(%#x) = %v", p, v, err)
					}
					progress.Add(1)
				}
				return nil
			})
			where = append(where, placement((r+p)%2))
		}
		if err := tx.Close(); err != nil {
			t.Fatal(err)
		}
		producersClosed := make(chan struct{})
		go func() {
			prodClosers.Wait()
			close(producersClosed)
		}()
		drain := func(rxc *Receiver[uint64], progress *atomic.Int64) func(context.Context) error {
			return func(ctx context.Context) error {
				for {
					v, err := rxc.Recv(ctx)
					if errors.Is(err, ErrClosed) {
						return nil
					}
					if err != nil {
						return err
					}
					book.got(v)
					progress.Add(1)
				}
			}
		}
		for c := range consumers {
			rxc := rx.Clone()
			var progress atomic.Int64
			closeAfter(&consClosers, &progress, int64((r*11+c*97)%perProducer), producersClosed, rxc.Close)
			fns = append(fns, drain(rxc, &progress))
			where = append(where, placement((r+c)%2))
		}
		fns = append(fns, drain(rx, new(atomic.Int64)))
		where = append(where, onTasks)
		if err := runEach(rt, where, fns); err != nil {
			t.Fatal(err)
		}
		consClosers.Wait()
		book.check(t, r)
		if err := rx.Close(); err != nil {
			t.Fatal(err)
		}
		okSends += len(book.sent)
	}
	t.Logf("%d of %d sends delivered before their end closed", okSends, rounds*producers*perProducer)
}

// closeAfter closes ends once progress reaches k, or once stop is closed
// (a consumer may never get k values), on a goroutine counted by wg.
func closeAfter(wg *sync.WaitGroup, progress *atomic.Int64, k int64, stop <-chan struct{}, ends ...func() error) {
	wg.Go(func() {
		for progress.Load() < k {
			select {
			case <-stop:
				k = 0
			default:
				goruntime.Gosched()
			}
		}
		for _, c := range ends {
			_ = c()
		}
	})
}

// ledger is the account of one round of a test where ends close under
// sends and receives: every value sent must be received once, and no
// value whose send failed may be received.
type ledger struct {
	mu             sync.Mutex
	sent, received map[uint64]int
}

func newLedger() *ledger {
	return &ledger{sent: map[uint64]int{}, received: map[uint64]int{}}
}

// sendResult records the outcome of sending v: err nil counts v as sent,
// a SendError giving v back counts nothing. Any other err is returned.
func (l *ledger) sendResult(v uint64, err error) error {
	var se *SendError[uint64]
	switch {
	case err == nil:
		l.mu.Lock()
		l.sent[v]++
		l.mu.Unlock()
	case errors.As(err, &se) && se.Value == v:
	default:
		return err
	}
	return nil
}

// got records that v was received.
func (l *ledger) got(v uint64) {
	l.mu.Lock()
	l.received[v]++
	l.mu.Unlock()
}

// check fails t unless every value sent in round r was received exactly
// once, and nothing else was.
func (l *ledger) check(t *testing.T, r int) {
	t.Helper()
	if len(l.sent) != len(l.received) {
		t.Fatalf("round %d: %d values sent, %d received", r, len(l.sent), len(l.received))
	}
	for v, n := range l.received {
		if n != 1 || l.sent[v] != 1 {
			t.Fatalf("round %d: value %#x sent %d times, received %d times", r, v, l.sent[v], n)
		}
	}
}
