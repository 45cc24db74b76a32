package channel

import (
	"context"
	"errors"
	goruntime "runtime"
	"sync"
	"testing"

	"github.com/faio-go/faio/modules/runtime"
)

// Each faio benchmark has its goroutine counterpart under the same name,
// run with GOMAXPROCS equal to the worker count (2), so the two compare in
// one run:
//
//	go test -run '^$' -bench . -benchmem -count 5 > bench.txt
//	benchstat -col /impl bench.txt

const benchWorkers = 2

func benchProcs(b *testing.B) {
	old := goruntime.GOMAXPROCS(benchWorkers)
	b.Cleanup(func() { goruntime.GOMAXPROCS(old) })
}

// W2: two tasks pass a counter back and forth over two capacity-1
// channels; one op is one round trip.
func BenchmarkW2PingPong(b *testing.B) {
	b.Run("impl=faio", func(b *testing.B) {
		rt := newRuntime(b, benchWorkers)
		pingTx, pingRx := New[int](1)
		pongTx, pongRx := New[int](1)
		b.ReportAllocs()
		b.ResetTimer()
		n, err := runtime.BlockOn(rt, func(ctx context.Context) (int, error) {
			h := runtime.Spawn(ctx, func(ctx context.Context) (int, error) {
				for range b.N {
					v, err := pingRx.Recv(ctx)
					if err != nil {
						return 0, err
					}
					if err := pongTx.Send(ctx, v+1); err != nil {
						return 0, err
					}
				}
				return 0, nil
			})
			v := 0
			for range b.N {
				if err := pingTx.Send(ctx, v); err != nil {
					return 0, err
				}
				var err error
				if v, err = pongRx.Recv(ctx); err != nil {
					return 0, err
				}
			}
			_, err := h.Join(ctx)
			return v, err
		})
		if err != nil || n != b.N {
			b.Fatalf("counter %d after %d round trips: %v", n, b.N, err)
		}
	})
	b.Run("impl=go", func(b *testing.B) {
		benchProcs(b)
		ping, pong := make(chan int, 1), make(chan int, 1)
		b.ReportAllocs()
		b.ResetTimer()
		go func() {
			for range b.N {
				pong <- <-ping + 1
			}
		}()
		v := 0
		for range b.N {
			ping <- v
			v = <-pong
		}
		if v != b.N {
			b.Fatalf("counter %d after %d round trips", v, b.N)
		}
	})
}

// W4: 4 producers send into one channel of capacity 1,024, 4 consumers
// receive until it is closed; one op is one item delivered, and the sum
// received must equal the sum sent.
func BenchmarkW4MPMC(b *testing.B) {
	const producers, consumers, capacity = 4, 4, 1024
	want := func(n int) (sum int) {
		for p := range producers {
			for i := p; i < n; i += producers {
				sum += i
			}
		}
		return sum
	}
	b.Run("impl=faio", func(b *testing.B) {
		rt := newRuntime(b, benchWorkers)
		b.ReportAllocs()
		b.ResetTimer()
		sum, err := runtime.BlockOn(rt, func(ctx context.Context) (int, error) {
			tx, rx := New[int](capacity)
			for p := range producers {
				txp := tx.Clone()
				runtime.Spawn(ctx, func(ctx context.Context) (int, error) {
					defer txp.Close()
					for i := p; i < b.N; i += producers {
						if err := txp.Send(ctx, i); err != nil {
							return 0, err
						}
					}
					return 0, nil
				})
			}
			tx.Close()
			var hs []*runtime.JoinHandle[int]
			for range consumers {
				hs = append(hs, runtime.Spawn(ctx, func(ctx context.Context) (int, error) {
					sum := 0
					for {
						v, err := rx.Recv(ctx)
						if errors.Is(err, ErrClosed) {
							return sum, nil
						}
						if err != nil {
							return 0, err
						}
						sum += v
					}
				}))
			}
			sum := 0
			for _, h := range hs {
				s, err := h.Join(ctx)
				if err != nil {
					return 0, err
				}
				sum += s
			}
			return sum, nil
		})
		if err != nil || sum != want(b.N) {
			b.Fatalf("sum %d, want %d: %v", sum, want(b.N), err)
		}
	})
	b.Run("impl=go", func(b *testing.B) {
		benchProcs(b)
		b.ReportAllocs()
		b.ResetTimer()
		ch := make(chan int, capacity)
		var prod sync.WaitGroup
		for p := range producers {
			prod.Go(func() {
				for i := p; i < b.N; i += producers {
					ch <- i
				}
			})
		}
		go func() {
			prod.Wait()
			close(ch)
		}()
		sums := make([]int, consumers)
		var cons sync.WaitGroup
		for c := range consumers {
			cons.Go(func() {
				for v := range ch {
					sums[c] += v
				}
			})
		}
		cons.Wait()
		sum := 0
		for _, s := range sums {
			sum += s
		}
		if sum != want(b.N) {
			b.Fatalf("sum %d, want %d", sum, want(b.N))
		}
	})
}

// An uncontended buffered Send followed by a Recv; must not allocate.
func BenchmarkBufferedSendRecv(b *testing.B) {
	b.Run("ctx=goroutine/impl=faio", func(b *testing.B) {
		ctx := context.Background()
		tx, rx := New[int](16)
		b.ReportAllocs()
		for i := range b.N {
			if err := tx.Send(ctx, i); err != nil {
				b.Fatal(err)
			}
			if _, err := rx.Recv(ctx); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("ctx=task/impl=faio", func(b *testing.B) {
		rt := newRuntime(b, benchWorkers)
		tx, rx := New[int](16)
		b.ReportAllocs()
		b.ResetTimer()
		_, err := runtime.BlockOn(rt, func(ctx context.Context) (int, error) {
			for i := range b.N {
				if err := tx.Send(ctx, i); err != nil {
					return 0, err
				}
				if _, err := rx.Recv(ctx); err != nil {
					return 0, err
				}
			}
			return 0, nil
		})
		if err != nil {
			b.Fatal(err)
		}
	})
	b.Run("ctx=goroutine/impl=go", func(b *testing.B) {
		ch := make(chan int, 16)
		b.ReportAllocs()
		for i := range b.N {
			ch <- i
			<-ch
		}
	})
}

// TrySend then TryRecv on a buffered channel, against the same with a
// select default on a Go channel.
func BenchmarkTrySendTryRecv(b *testing.B) {
	b.Run("impl=faio", func(b *testing.B) {
		tx, rx := New[int](16)
		b.ReportAllocs()
		for i := range b.N {
			if err := tx.TrySend(i); err != nil {
				b.Fatal(err)
			}
			if _, err := rx.TryRecv(); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("impl=go", func(b *testing.B) {
		ch := make(chan int, 16)
		b.ReportAllocs()
		for i := range b.N {
			select {
			case ch <- i:
			default:
				b.Fatal("full")
			}
			select {
			case <-ch:
			default:
				b.Fatal("empty")
			}
		}
	})
}

// Select over two channels, one of which always has a value, against a
// select statement.
func BenchmarkSelectReady(b *testing.B) {
	b.Run("impl=faio", func(b *testing.B) {
		ctx := context.Background()
		txA, rxA := New[int](1)
		_, rxB := New[int](1)
		var v int
		cases := []Case{rxA.RecvCase(&v), rxB.RecvCase(&v)}
		b.ReportAllocs()
		for i := range b.N {
			if err := txA.TrySend(i); err != nil {
				b.Fatal(err)
			}
			if _, err := Select(ctx, cases...); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("impl=go", func(b *testing.B) {
		a, bb := make(chan int, 1), make(chan int, 1)
		b.ReportAllocs()
		for i := range b.N {
			a <- i
			select {
			case <-a:
			case <-bb:
			}
		}
	})
}
