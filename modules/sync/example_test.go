package sync_test

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/faio-go/faio/modules/runtime"
	"github.com/faio-go/faio/modules/sync"
)

// Tasks and a plain goroutine share one Mutex: the tasks suspend while
// they wait, the goroutine blocks.
func Example() {
	rt, err := runtime.New(runtime.Config{Workers: 2})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()

	var mu sync.Mutex
	counter := 0
	fromGoroutine := make(chan error)
	go func() {
		for range 100 {
			if err := mu.Lock(context.Background()); err != nil {
				fromGoroutine <- err
				return
			}
			counter++
			mu.Unlock()
		}
		fromGoroutine <- nil
	}()
	_, err = runtime.BlockOn(rt, func(ctx context.Context) (struct{}, error) {
		var hs []*runtime.JoinHandle[struct{}]
		for range 10 {
			hs = append(hs, runtime.Spawn(ctx, func(ctx context.Context) (struct{}, error) {
				for range 100 {
					if err := mu.Lock(ctx); err != nil {
						return struct{}{}, err
					}
					counter++
					mu.Unlock()
				}
				return struct{}{}, nil
			}))
		}
		for _, h := range hs {
			if _, err := h.Join(ctx); err != nil {
				return struct{}{}, err
			}
		}
		return struct{}{}, nil
	})
	fmt.Println(counter, err, <-fromGoroutine)
	// Output: 1100 <nil> <nil>
}

// A Lock that cannot get the mutex before its deadline gives up and leaves
// the mutex as it was.
func ExampleMutex() {
	var mu sync.Mutex
	if err := mu.Lock(context.Background()); err != nil {
		fmt.Println(err)
		return
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel()
	err := mu.Lock(ctx)
	fmt.Println(errors.Is(err, context.DeadlineExceeded))
	mu.Unlock()
	fmt.Println(mu.TryLock())
	// Output:
	// true
	// true
}

// A consumer task waits on a Cond until the producer has queued an item.
func ExampleCond() {
	rt, err := runtime.New(runtime.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()

	var mu sync.Mutex
	var ready sync.Cond
	var queue []string
	got, err := runtime.BlockOn(rt, func(ctx context.Context) (string, error) {
		consumer := runtime.Spawn(ctx, func(ctx context.Context) (string, error) {
			if err := mu.Lock(ctx); err != nil {
				return "", err
			}
			defer mu.Unlock()
			if err := ready.Wait(ctx, &mu, func() bool { return len(queue) > 0 }); err != nil {
				return "", err
			}
			return queue[0], nil
		})
		if err := mu.Lock(ctx); err != nil {
			return "", err
		}
		queue = append(queue, "job 1")
		ready.Signal()
		mu.Unlock()
		return consumer.Join(ctx)
	})
	fmt.Println(got, err)
	// Output: job 1 <nil>
}

// An Event releases every waiter at once and stays set.
func ExampleEvent() {
	rt, err := runtime.New(runtime.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()

	var start sync.Event
	n, err := runtime.BlockOn(rt, func(ctx context.Context) (int, error) {
		var hs []*runtime.JoinHandle[int]
		for range 3 {
			hs = append(hs, runtime.Spawn(ctx, func(ctx context.Context) (int, error) {
				return 1, start.Wait(ctx)
			}))
		}
		start.Set()
		n := 0
		for _, h := range hs {
			v, err := h.Join(ctx)
			if err != nil {
				return 0, err
			}
			n += v
		}
		return n, start.Wait(ctx)
	})
	fmt.Println(n, err, start.IsSet())
	// Output: 3 <nil> true
}

// A Promise carries one value from the task that computes it to whoever
// waits; it can be set only once.
func ExamplePromise() {
	rt, err := runtime.New(runtime.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()

	var answer sync.Promise[int]
	v, err := runtime.BlockOn(rt, func(ctx context.Context) (int, error) {
		runtime.Spawn(ctx, func(ctx context.Context) (struct{}, error) {
			return struct{}{}, answer.Set(42)
		})
		return answer.Wait(ctx)
	})
	fmt.Println(v, err)
	fmt.Println(answer.Set(7))
	// Output:
	// 42 <nil>
	// faio/sync: promise already set
}

// Readers share an RWMutex; a writer has it alone.
func ExampleRWMutex() {
	rt, err := runtime.New(runtime.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()

	var rw sync.RWMutex
	config := map[string]string{"mode": "fast"}
	got, err := runtime.BlockOn(rt, func(ctx context.Context) (string, error) {
		if err := rw.Lock(ctx); err != nil {
			return "", err
		}
		config["mode"] = "safe"
		rw.Unlock()

		if err := rw.RLock(ctx); err != nil {
			return "", err
		}
		// Readers share the lock; a writer has to wait.
		fmt.Println(rw.TryRLock(), rw.TryLock())
		rw.RUnlock()
		mode := config["mode"]
		rw.RUnlock()
		return mode, nil
	})
	fmt.Println(got, err)
	// Output:
	// true false
	// safe <nil>
}

// A Semaphore bounds how many tasks run a section at once, here two.
func ExampleSemaphore() {
	rt, err := runtime.New(runtime.Config{Workers: 2})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()

	slots := sync.NewSemaphore(2)
	var mu sync.Mutex
	running, most := 0, 0
	_, err = runtime.BlockOn(rt, func(ctx context.Context) (struct{}, error) {
		var hs []*runtime.JoinHandle[struct{}]
		for range 8 {
			hs = append(hs, runtime.Spawn(ctx, func(ctx context.Context) (struct{}, error) {
				if err := slots.Acquire(ctx, 1); err != nil {
					return struct{}{}, err
				}
				defer slots.Release(1)
				if err := mu.Lock(ctx); err != nil {
					return struct{}{}, err
				}
				running++
				most = max(most, running)
				mu.Unlock()
				err := runtime.Sleep(ctx, time.Millisecond)
				if err := mu.Lock(ctx); err != nil {
					return struct{}{}, err
				}
				running--
				mu.Unlock()
				return struct{}{}, err
			}))
		}
		for _, h := range hs {
			if _, err := h.Join(ctx); err != nil {
				return struct{}{}, err
			}
		}
		return struct{}{}, nil
	})
	fmt.Println(most <= 2, err)
	// Output: true <nil>
}

func ExampleWaitGroup() {
	rt, err := runtime.New(runtime.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()

	var wg sync.WaitGroup
	results := make([]int, 5)
	_, err = runtime.BlockOn(rt, func(ctx context.Context) (struct{}, error) {
		for i := range results {
			wg.Add(1)
			runtime.Spawn(ctx, func(ctx context.Context) (struct{}, error) {
				defer wg.Done()
				results[i] = i * i
				return struct{}{}, nil
			})
		}
		return struct{}{}, wg.Wait(ctx)
	})
	fmt.Println(results, err)
	// Output: [0 1 4 9 16] <nil>
}

// A Latch opens once, when the last of its count is done.
func ExampleLatch() {
	rt, err := runtime.New(runtime.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()

	loaded := sync.NewLatch(3)
	_, err = runtime.BlockOn(rt, func(ctx context.Context) (struct{}, error) {
		for range 3 {
			runtime.Spawn(ctx, func(ctx context.Context) (struct{}, error) {
				loaded.CountDown()
				return struct{}{}, nil
			})
		}
		return struct{}{}, loaded.Wait(ctx)
	})
	fmt.Println(loaded.TryWait(), err)
	// Output: true <nil>
}

// Three tasks go through two rounds in step; in each round exactly one of
// them is told it is the leader.
func ExampleBarrier() {
	rt, err := runtime.New(runtime.Config{Workers: 2})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()

	b := sync.NewBarrier(3)
	leaders, err := runtime.BlockOn(rt, func(ctx context.Context) (int, error) {
		var hs []*runtime.JoinHandle[int]
		for range 3 {
			hs = append(hs, runtime.Spawn(ctx, func(ctx context.Context) (int, error) {
				led := 0
				for range 2 {
					leader, err := b.Wait(ctx)
					if err != nil {
						return 0, err
					}
					if leader {
						led++
					}
				}
				return led, nil
			}))
		}
		total := 0
		for _, h := range hs {
			n, err := h.Join(ctx)
			if err != nil {
				return 0, err
			}
			total += n
		}
		return total, nil
	})
	fmt.Println(leaders, err)
	// Output: 2 <nil>
}
