package channel

import (
	"context"
	"errors"
	"fmt"
	"sync"
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
