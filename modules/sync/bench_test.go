package sync

import (
	"context"
	goruntime "runtime"
	gosync "sync"
	"testing"

	"github.com/faio-go/faio/modules/runtime"
	"golang.org/x/sync/semaphore"
)

// benchTask runs body(ctx, b.N) in one task of a fresh runtime, timing only
// the task itself.
func benchTask(b *testing.B, workers int, body func(ctx context.Context, n int) error) {
	rt := newRuntime(b, workers)
	b.ReportAllocs()
	b.ResetTimer()
	_, err := runtime.BlockOn(rt, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, body(ctx, b.N)
	})
	b.StopTimer()
	if err != nil {
		b.Fatal(err)
	}
}

// sink keeps the read-locked loads of the benchmarks alive.
var sink int

// Uncontended lock and unlock: a faio task against a goroutine with the
// standard library (and x/sync for the semaphore).
func BenchmarkUncontended(b *testing.B) {
	b.Run("Mutex/impl=faio", func(b *testing.B) {
		var mu Mutex
		counter := 0
		benchTask(b, 1, func(ctx context.Context, n int) error {
			for range n {
				if err := mu.Lock(ctx); err != nil {
					return err
				}
				counter++
				mu.Unlock()
			}
			return nil
		})
	})
	b.Run("Mutex/impl=go", func(b *testing.B) {
		var mu gosync.Mutex
		counter := 0
		b.ReportAllocs()
		for b.Loop() {
			mu.Lock()
			counter++
			mu.Unlock()
		}
	})
	b.Run("RWMutex.RLock/impl=faio", func(b *testing.B) {
		var mu RWMutex
		counter := 0
		benchTask(b, 1, func(ctx context.Context, n int) error {
			for range n {
				if err := mu.RLock(ctx); err != nil {
					return err
				}
				sink += counter
				mu.RUnlock()
			}
			return nil
		})
	})
	b.Run("RWMutex.RLock/impl=go", func(b *testing.B) {
		var mu gosync.RWMutex
		counter := 0
		b.ReportAllocs()
		for b.Loop() {
			mu.RLock()
			sink += counter
			mu.RUnlock()
		}
	})
	b.Run("RWMutex.Lock/impl=faio", func(b *testing.B) {
		var mu RWMutex
		counter := 0
		benchTask(b, 1, func(ctx context.Context, n int) error {
			for range n {
				if err := mu.Lock(ctx); err != nil {
					return err
				}
				counter++
				mu.Unlock()
			}
			return nil
		})
	})
	b.Run("RWMutex.Lock/impl=go", func(b *testing.B) {
		var mu gosync.RWMutex
		counter := 0
		b.ReportAllocs()
		for b.Loop() {
			mu.Lock()
			counter++
			mu.Unlock()
		}
	})
	b.Run("Semaphore/impl=faio", func(b *testing.B) {
		s := NewSemaphore(4)
		benchTask(b, 1, func(ctx context.Context, n int) error {
			for range n {
				if err := s.Acquire(ctx, 1); err != nil {
					return err
				}
				s.Release(1)
			}
			return nil
		})
	})
	b.Run("Semaphore/impl=xsync", func(b *testing.B) {
		s := semaphore.NewWeighted(4)
		ctx := context.Background()
		b.ReportAllocs()
		for b.Loop() {
			if err := s.Acquire(ctx, 1); err != nil {
				b.Fatal(err)
			}
			s.Release(1)
		}
	})
}

// W3 of WORKLOADS.md: 1,000 tasks each do 1,000 x (lock; counter++;
// unlock) on one mutex; the goroutine baseline runs 1,000 goroutines on a
// sync.Mutex with GOMAXPROCS equal to the worker count. One op is one
// lock/unlock pair (ns/op divides by 1,000,000 per iteration).
func BenchmarkW3(b *testing.B) {
	const tasks, iters = 1000, 1000
	for _, workers := range []int{2, 1} {
		b.Run("impl=faio/workers="+itoa(workers), func(b *testing.B) {
			rt := newRuntime(b, workers)
			b.ReportAllocs()
			b.ResetTimer()
			for range b.N {
				var mu Mutex
				counter := 0
				_, err := runtime.BlockOn(rt, func(ctx context.Context) (struct{}, error) {
					return struct{}{}, spawnN(ctx, tasks, func(ctx context.Context, _ int) error {
						for range iters {
							if err := mu.Lock(ctx); err != nil {
								return err
							}
							counter++
							mu.Unlock()
						}
						return nil
					})
				})
				if err != nil || counter != tasks*iters {
					b.Fatal(err, counter)
				}
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*tasks*iters), "ns/lock")
		})
		b.Run("impl=go/workers="+itoa(workers), func(b *testing.B) {
			defer goruntime.GOMAXPROCS(goruntime.GOMAXPROCS(workers))
			b.ReportAllocs()
			for range b.N {
				var mu gosync.Mutex
				var wg gosync.WaitGroup
				counter := 0
				for range tasks {
					wg.Go(func() {
						for range iters {
							mu.Lock()
							counter++
							mu.Unlock()
						}
					})
				}
				wg.Wait()
				if counter != tasks*iters {
					b.Fatal(counter)
				}
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*tasks*iters), "ns/lock")
		})
	}
}

func itoa(n int) string {
	if n < 10 {
		return string(rune('0' + n))
	}
	return itoa(n/10) + itoa(n%10)
}
