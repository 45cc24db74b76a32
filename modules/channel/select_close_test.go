package channel

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Ends close under Selects that wait or run: producers Select between
// sending on a rendezvous channel and a buffered one through ends of their
// own, consumers Select between receiving from either through ends of
// their own, and every such end is closed by another goroutine at an
// arbitrary point; one consumer in three Selects with a deadline now and
// then, so cancellations race too. Two receivers that are never closed
// drain to the end. A value whose Select sent it is received exactly once;
// a value whose Select failed is never received.
func TestStressCloseRacesSelect(t *testing.T) {
	rounds := 100
	if raceEnabled {
		rounds = 30
	}
	const producers, consumers, perProducer = 3, 3, 200
	rt := newRuntime(t, 2)
	for r := range rounds {
		txA, rxA := New[uint64](0)
		txB, rxB := New[uint64](2)
		book := newLedger()
		var fns []func(context.Context) error
		var where []placement
		var closers sync.WaitGroup
		for p := range producers {
			a, b := txA.Clone(), txB.Clone()
			var progress atomic.Int64
			closeAfter(&closers, &progress, int64((r*7+p*131)%(perProducer+1)), nil, a.Close, b.Close)
			fns = append(fns, func(ctx context.Context) error {
				for i := range perProducer {
					v := value(p, i)
					_, err := Select(ctx, a.SendCase(v), b.SendCase(v))
					if err := book.sendResult(v, err); err != nil {
						return fmt.Errorf("producer %d: Select sending %#x = %v", p, v, err)
					}
					progress.Add(1)
				}
				return nil
			})
			where = append(where, placement((r+p)%2))
		}
		if err := txA.Close(); err != nil {
			t.Fatal(err)
		}
		if err := txB.Close(); err != nil {
			t.Fatal(err)
		}
		// consume receives through a and b until both report ErrClosed.
		consume := func(a, b *Receiver[uint64], progress *atomic.Int64, deadlines bool) func(context.Context) error {
			return func(ctx context.Context) error {
				var v uint64
				cases := []Case{a.RecvCase(&v), b.RecvCase(&v)}
				for n := 0; cases[0] != nil || cases[1] != nil; n++ {
					sctx, cancel := ctx, context.CancelFunc(func() {})
					if deadlines && n%5 == 0 {
						sctx, cancel = context.WithTimeout(ctx, 20*time.Microsecond)
					}
					i, err := Select(sctx, cases...)
					cancel()
					switch {
					case err == nil:
						book.got(v)
						progress.Add(1)
					case errors.Is(err, ErrClosed):
						cases[i] = nil
					case i == -1 && errors.Is(err, context.DeadlineExceeded):
					default:
						return fmt.Errorf("Select receiving = %d, %v", i, err)
					}
				}
				return nil
			}
		}
		producersClosed := make(chan struct{})
		for c := range consumers {
			a, b := rxA.Clone(), rxB.Clone()
			var progress atomic.Int64
			closeAfter(&closers, &progress, int64((r*11+c*97)%perProducer), producersClosed, a.Close, b.Close)
			fns = append(fns, consume(a, b, &progress, c == 0))
			where = append(where, placement((r+c+1)%2))
		}
		fns = append(fns, consume(rxA, rxB, new(atomic.Int64), false))
		where = append(where, placement(r%2))
		if err := runEach(rt, where, fns); err != nil {
			t.Fatal(err)
		}
		close(producersClosed)
		closers.Wait()
		book.check(t, r)
	}
}
