package channel

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faio-go/faio/modules/runtime"
)

// Senders and receivers, tasks and goroutines, most with deadlines of 50 µs
// to 3 ms, while a task computes for 3 ms at a time on the same workers:
// deadlines pass while waiters' workers are busy, so peers settle waiters
// whose wait ended before their tasks run (claim, Waker.Ended). Invariant:
// every value whose Send succeeded is received exactly once, and nothing
// else is received.
func TestStressConservationWithDeadlinesOnBusyWorkers(t *testing.T) {
	for _, pinned := range []bool{false, true} {
		for _, capacity := range []int{0, 4} {
			t.Run(fmt.Sprintf("pinned=%v/cap=%d", pinned, capacity), func(t *testing.T) {
				conserveWithDeadlines(t, pinned, capacity)
			})
		}
	}
}

func conserveWithDeadlines(t *testing.T, pinned bool, capacity int) {
	rt, err := runtime.New(runtime.Config{Workers: 2, PinnedWorkers: pinned})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	tx, rx := New[int64](capacity)
	stop := time.Now().Add(time.Second)
	deadline := func(parent context.Context, r *rand.Rand) (context.Context, context.CancelFunc) {
		if r.IntN(4) == 0 {
			return context.WithCancel(parent)
		}
		return context.WithTimeout(parent, time.Duration(50+r.IntN(3000))*time.Microsecond)
	}
	var next atomic.Int64
	var mu sync.Mutex
	sent := map[int64]bool{}
	got := map[int64]int{}
	var bad atomic.Value
	send := func(ctx context.Context, seed uint64) {
		r := rand.New(rand.NewPCG(seed, 1))
		for time.Now().Before(stop) {
			v := next.Add(1)
			c, cancel := deadline(ctx, r)
			err := tx.Send(c, v)
			cancel()
			switch {
			case err == nil:
				mu.Lock()
				sent[v] = true
				mu.Unlock()
			case !errors.Is(err, context.DeadlineExceeded):
				bad.Store(fmt.Sprintf("Send: %v", err))
			}
		}
	}
	recv := func(ctx context.Context, seed uint64) {
		r := rand.New(rand.NewPCG(seed, 2))
		for {
			c, cancel := deadline(ctx, r)
			v, err := rx.Recv(c)
			cancel()
			switch {
			case err == nil:
				mu.Lock()
				got[v]++
				mu.Unlock()
			case errors.Is(err, ErrClosed):
				return
			case !errors.Is(err, context.DeadlineExceeded):
				bad.Store(fmt.Sprintf("Recv: %v", err))
				return
			}
		}
	}
	var senders, receivers sync.WaitGroup
	for i := range 4 {
		senders.Add(1)
		if i%2 == 0 {
			go func() { defer senders.Done(); send(context.Background(), uint64(i)) }()
			continue
		}
		runtime.SpawnOn(rt, func(ctx context.Context) (int, error) {
			defer senders.Done()
			send(ctx, uint64(i))
			return 0, nil
		})
	}
	for i := range 6 {
		receivers.Add(1)
		if i == 0 {
			go func() { defer receivers.Done(); recv(context.Background(), uint64(i)) }()
			continue
		}
		runtime.SpawnOn(rt, func(ctx context.Context) (int, error) {
			defer receivers.Done()
			recv(ctx, uint64(i))
			return 0, nil
		})
	}
	runtime.SpawnOn(rt, func(ctx context.Context) (int, error) {
		for time.Now().Before(stop) {
			for end := time.Now().Add(3 * time.Millisecond); time.Now().Before(end); {
			}
			_ = runtime.Sleep(ctx, time.Millisecond)
		}
		return 0, nil
	})
	senders.Wait()
	if err := tx.Close(); err != nil {
		t.Fatal(err)
	}
	receivers.Wait()
	if b := bad.Load(); b != nil {
		t.Fatal(b)
	}
	for v, n := range got {
		if n != 1 || !sent[v] {
			t.Fatalf("value %d received %d times; its Send succeeded: %v", v, n, sent[v])
		}
	}
	if len(got) != len(sent) {
		t.Fatalf("%d values sent, %d received", len(sent), len(got))
	}
	t.Logf("%d values through, %d sends tried", len(sent), next.Load())
}
