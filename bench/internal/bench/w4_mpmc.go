package bench

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/faio-go/faio"
)

// W4: Producers tasks send ItemsPerProducer integers each into one channel
// of capacity ChanCap; Consumers tasks receive until it is closed. Producer
// p sends p*ItemsPerProducer+1 ... (p+1)*ItemsPerProducer, so the values
// sent are 1..N once each: the count received must be N and the sum
// N(N+1)/2.

// tally is what one consumer received.
type tally struct {
	count, sum int64
}

func mpmcFaio(env *Env) (Measurement, error) {
	s := env.Sizes
	tallies := make([]tally, s.Consumers)
	var errs firstError
	var elapsed time.Duration
	err := withRuntime(env, func(rt *faio.Runtime) error {
		var err error
		elapsed, err = timeBlockOn(rt, func(ctx context.Context) error {
			tx, rx := faio.NewChannel[int64](s.ChanCap)
			// Every task owns one end and closes it when done: the
			// receivers see ErrClosed once the last producer closed.
			txs, rxs := []*faio.Sender[int64]{tx}, []*faio.Receiver[int64]{rx}
			for range s.Producers - 1 {
				txs = append(txs, tx.Clone())
			}
			for range s.Consumers - 1 {
				rxs = append(rxs, rx.Clone())
			}
			spawnEach(ctx, s.Consumers, &errs, func(ctx context.Context, c int) error {
				rx := rxs[c]
				defer rx.Close()
				var t tally
				for {
					v, err := rx.Recv(ctx)
					if errors.Is(err, faio.ErrChannelClosed) {
						tallies[c] = t
						return nil
					}
					if err != nil {
						return err
					}
					t.count++
					t.sum += v
				}
			})
			spawnEach(ctx, s.Producers, &errs, func(ctx context.Context, p int) error {
				tx := txs[p]
				defer tx.Close()
				base := int64(p) * int64(s.ItemsPerProducer)
				for i := range int64(s.ItemsPerProducer) {
					if err := tx.Send(ctx, base+i+1); err != nil {
						return err
					}
				}
				return nil
			})
			return nil
		})
		return err
	})
	if err = errors.Join(err, errs.get()); err != nil {
		return Measurement{}, err
	}
	return mpmcResult(s, tallies, elapsed)
}

func mpmcGoroutines(env *Env) (Measurement, error) {
	s := env.Sizes
	tallies := make([]tally, s.Consumers)
	ch := make(chan int64, s.ChanCap)
	start := time.Now()
	var producers, consumers sync.WaitGroup
	for c := range s.Consumers {
		consumers.Go(func() {
			var t tally
			for v := range ch {
				t.count++
				t.sum += v
			}
			tallies[c] = t
		})
	}
	for p := range s.Producers {
		producers.Go(func() {
			base := int64(p) * int64(s.ItemsPerProducer)
			for i := range int64(s.ItemsPerProducer) {
				ch <- base + i + 1
			}
		})
	}
	producers.Wait()
	close(ch)
	consumers.Wait()
	return mpmcResult(s, tallies, time.Since(start))
}

// mpmcResult checks that every value 1..N arrived exactly once (by count
// and sum).
func mpmcResult(s Sizes, tallies []tally, elapsed time.Duration) (Measurement, error) {
	n := int64(s.Producers) * int64(s.ItemsPerProducer)
	var total tally
	for _, t := range tallies {
		total.count += t.count
		total.sum += t.sum
	}
	err := errors.Join(
		checkEqual("items received", total.count, n),
		checkEqual("sum received", total.sum, n*(n+1)/2),
	)
	return Measurement{Ops: n, Elapsed: elapsed}, err
}
