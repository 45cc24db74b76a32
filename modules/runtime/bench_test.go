package runtime

import (
	"context"
	goruntime "runtime"
	"sync"
	"syscall"
	"testing"
	"time"
)

// Each faio benchmark has its goroutine counterpart in the same file, run
// with GOMAXPROCS equal to the worker count, so the two are compared in one
// run: go test -bench . -benchmem, then benchstat.

func benchRuntime(b *testing.B, workers int) *Runtime {
	rt, err := New(Config{Workers: workers})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { rt.Close() })
	return rt
}

func withProcs(b *testing.B, n int) {
	old := goruntime.GOMAXPROCS(n)
	b.Cleanup(func() { goruntime.GOMAXPROCS(old) })
}

// Spawn b.N empty tasks from inside the runtime and wait for all of them.
func BenchmarkSpawn(b *testing.B) {
	for _, workers := range []int{1, 2} {
		b.Run("faio/workers="+itoa(uint64(workers)), func(b *testing.B) {
			rt := benchRuntime(b, workers)
			b.ReportAllocs()
			b.ResetTimer()
			_, err := BlockOn(rt, func(ctx context.Context) (int, error) {
				for i := 0; i < b.N; i++ {
					Spawn(ctx, nop)
				}
				return 0, nil
			})
			if err != nil {
				b.Fatal(err)
			}
		})
		b.Run("goroutines/procs="+itoa(uint64(workers)), func(b *testing.B) {
			withProcs(b, workers)
			b.ReportAllocs()
			b.ResetTimer()
			var wg sync.WaitGroup
			for i := 0; i < b.N; i++ {
				wg.Add(1)
				go func() { wg.Done() }()
			}
			wg.Wait()
		})
	}
}

func nop(context.Context) (int, error) { return 0, nil }

// Spawn b.N tasks that each park until all have been spawned, then wake
// them: every task needs a coroutine of its own (none is free to reuse),
// so this measures creating one, with its first switch and suspension,
// against a goroutine that blocks on a channel.
func BenchmarkSpawnParked(b *testing.B) {
	for _, workers := range []int{1, 2} {
		b.Run("faio/workers="+itoa(uint64(workers)), func(b *testing.B) {
			rt := benchRuntime(b, workers)
			var mu sync.Mutex
			var parked []Waker
			park := func(w Waker) bool {
				mu.Lock()
				parked = append(parked, w)
				mu.Unlock()
				return true
			}
			b.ReportAllocs()
			b.ResetTimer()
			_, err := BlockOn(rt, func(ctx context.Context) (int, error) {
				for i := 0; i < b.N; i++ {
					Spawn(ctx, func(ctx context.Context) (int, error) {
						return 0, Suspend(ctx, park)
					})
				}
				// Wait until every task has parked, then wake them.
				for {
					mu.Lock()
					n := len(parked)
					mu.Unlock()
					if n == b.N {
						break
					}
					if err := Yield(ctx); err != nil {
						return 0, err
					}
				}
				mu.Lock()
				for _, w := range parked {
					w.Wake()
				}
				parked = nil
				mu.Unlock()
				return 0, nil
			})
			if err != nil {
				b.Fatal(err)
			}
		})
		b.Run("goroutines/procs="+itoa(uint64(workers)), func(b *testing.B) {
			withProcs(b, workers)
			release := make(chan struct{})
			var wg sync.WaitGroup
			b.ReportAllocs()
			b.ResetTimer()
			wg.Add(b.N)
			for i := 0; i < b.N; i++ {
				go func() {
					<-release
					wg.Done()
				}()
			}
			close(release)
			wg.Wait()
		})
	}
}

// Spawn one task and join it, b.N times.
func BenchmarkSpawnJoin(b *testing.B) {
	b.Run("faio", func(b *testing.B) {
		rt := benchRuntime(b, 2)
		b.ReportAllocs()
		b.ResetTimer()
		_, err := BlockOn(rt, func(ctx context.Context) (int, error) {
			for i := 0; i < b.N; i++ {
				if _, err := Spawn(ctx, nop).Join(ctx); err != nil {
					return 0, err
				}
			}
			return 0, nil
		})
		if err != nil {
			b.Fatal(err)
		}
	})
	b.Run("goroutines", func(b *testing.B) {
		withProcs(b, 2)
		b.ReportAllocs()
		b.ResetTimer()
		for i := 0; i < b.N; i++ {
			done := make(chan int, 1)
			go func() { done <- 0 }()
			<-done
		}
	})
}

// 100 tasks yield in turn; one op is one yield.
func BenchmarkYield(b *testing.B) {
	const tasks = 100
	b.Run("faio", func(b *testing.B) {
		rt := benchRuntime(b, 2)
		per := b.N/tasks + 1
		b.ReportAllocs()
		b.ResetTimer()
		_, err := BlockOn(rt, func(ctx context.Context) (int, error) {
			for i := 0; i < tasks; i++ {
				Spawn(ctx, func(ctx context.Context) (int, error) {
					for j := 0; j < per; j++ {
						if err := Yield(ctx); err != nil {
							return 0, err
						}
					}
					return 0, nil
				})
			}
			return 0, nil
		})
		if err != nil {
			b.Fatal(err)
		}
	})
	b.Run("goroutines", func(b *testing.B) {
		withProcs(b, 2)
		per := b.N/tasks + 1
		b.ReportAllocs()
		b.ResetTimer()
		var wg sync.WaitGroup
		for i := 0; i < tasks; i++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for j := 0; j < per; j++ {
					goruntime.Gosched()
				}
			}()
		}
		wg.Wait()
	})
}

// baton hands control between two tasks through Suspend: the simplest
// primitive on it, a one-waiter signal.
type baton struct {
	mu     sync.Mutex
	set    bool
	waiter Waker
	has    bool
}

func (b *baton) signal() {
	b.mu.Lock()
	if b.has {
		w := b.waiter
		b.has = false
		b.mu.Unlock()
		w.Wake()
		return
	}
	b.set = true
	b.mu.Unlock()
}

func (b *baton) wait(ctx context.Context) error {
	return Suspend(ctx, func(w Waker) bool {
		b.mu.Lock()
		defer b.mu.Unlock()
		if b.set {
			b.set = false
			return false
		}
		b.waiter, b.has = w, true
		return true
	})
}

// Two tasks pass control back and forth; one op is one round trip. In
// faio-deadline both wait with a context that has a deadline (an hour
// away), which every wait arms on its worker's wheel.
func BenchmarkPingPong(b *testing.B) {
	for _, deadline := range []bool{false, true} {
		name := "faio"
		if deadline {
			name = "faio-deadline"
		}
		b.Run(name, func(b *testing.B) {
			rt := benchRuntime(b, 2)
			var ping, pong baton
			b.ReportAllocs()
			b.ResetTimer()
			_, err := BlockOn(rt, func(ctx context.Context) (int, error) {
				if deadline {
					var cancel context.CancelFunc
					ctx, cancel = context.WithTimeout(ctx, time.Hour)
					defer cancel()
				}
				Spawn(ctx, func(ctx context.Context) (int, error) {
					for i := 0; i < b.N; i++ {
						if err := ping.wait(ctx); err != nil {
							return 0, err
						}
						pong.signal()
					}
					return 0, nil
				})
				for i := 0; i < b.N; i++ {
					ping.signal()
					if err := pong.wait(ctx); err != nil {
						return 0, err
					}
				}
				return 0, nil
			})
			if err != nil {
				b.Fatal(err)
			}
		})
	}
	b.Run("goroutines", func(b *testing.B) {
		withProcs(b, 2)
		ping, pong := make(chan struct{}), make(chan struct{})
		b.ReportAllocs()
		b.ResetTimer()
		go func() {
			for i := 0; i < b.N; i++ {
				<-ping
				pong <- struct{}{}
			}
		}()
		for i := 0; i < b.N; i++ {
			ping <- struct{}{}
			<-pong
		}
	})
}

// The CPU an idle runtime burns, per second of wall time, with the
// watchdog off, at the default threshold and at the minimum (package watchdog
// states the figures): each iteration idles 200 ms.
func BenchmarkIdleCPU(b *testing.B) {
	cpu := func() time.Duration {
		var r syscall.Rusage
		syscall.Getrusage(syscall.RUSAGE_SELF, &r)
		return time.Duration(r.Utime.Nano() + r.Stime.Nano())
	}
	for _, tc := range []struct {
		name      string
		threshold time.Duration
	}{{"watchdog=off", -1}, {"watchdog=10ms", DefaultStallThreshold}, {"watchdog=1ms", MinStallThreshold}} {
		b.Run(tc.name, func(b *testing.B) {
			rt, err := New(Config{Workers: 2, StallThreshold: tc.threshold})
			if err != nil {
				b.Fatal(err)
			}
			defer rt.Close()
			time.Sleep(50 * time.Millisecond) // let the workers park
			b.ResetTimer()
			c0, w0 := cpu(), time.Now()
			for range b.N {
				time.Sleep(200 * time.Millisecond)
			}
			b.ReportMetric(float64(cpu()-c0)/float64(time.Since(w0))*1000, "cpu-ms/s")
		})
	}
}
