package runtime_test

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/faio-go/faio/modules/runtime"
)

func Example() {
	rt, err := runtime.New(runtime.Config{Workers: 2})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()

	sum, err := runtime.BlockOn(rt, func(ctx context.Context) (int, error) {
		var hs []*runtime.JoinHandle[int]
		for i := 1; i <= 10; i++ {
			hs = append(hs, runtime.Spawn(ctx, func(ctx context.Context) (int, error) {
				if err := runtime.Sleep(ctx, time.Millisecond); err != nil {
					return 0, err
				}
				return i * i, nil
			}))
		}
		sum := 0
		for _, h := range hs {
			v, err := h.Join(ctx)
			if err != nil {
				return 0, err
			}
			sum += v
		}
		return sum, nil
	})
	fmt.Println(sum, err)
	// Output: 385 <nil>
}

func ExampleJoinHandle_Cancel() {
	rt, err := runtime.New(runtime.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()

	err = func() error {
		_, err := runtime.BlockOn(rt, func(ctx context.Context) (struct{}, error) {
			h := runtime.Spawn(ctx, func(ctx context.Context) (struct{}, error) {
				return struct{}{}, runtime.Sleep(ctx, time.Hour)
			})
			h.Cancel()
			_, err := h.Join(ctx)
			return struct{}{}, err
		})
		return err
	}()
	fmt.Println(errors.Is(err, context.Canceled))
	// Output: true
}

// A minimal primitive on Suspend: a one-shot event. Wait registers the
// Waker under the lock unless the event is already set; Set wakes every
// registered waiter. Stale Wakers of cancelled waiters are harmless: their
// Wake returns false.
type event struct {
	mu      sync.Mutex
	set     bool
	waiters []runtime.Waker
}

func (e *event) Wait(ctx context.Context) error {
	return runtime.Suspend(ctx, func(w runtime.Waker) bool {
		e.mu.Lock()
		defer e.mu.Unlock()
		if e.set {
			return false // no need to wait
		}
		e.waiters = append(e.waiters, w)
		return true
	})
}

func (e *event) Set() {
	e.mu.Lock()
	e.set = true
	ws := e.waiters
	e.waiters = nil
	e.mu.Unlock()
	for _, w := range ws {
		w.Wake()
	}
}

func ExampleSuspend() {
	rt, err := runtime.New(runtime.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()

	var ev event
	n, err := runtime.BlockOn(rt, func(ctx context.Context) (int, error) {
		var hs []*runtime.JoinHandle[int]
		for i := 0; i < 3; i++ {
			hs = append(hs, runtime.Spawn(ctx, func(ctx context.Context) (int, error) {
				return 1, ev.Wait(ctx)
			}))
		}
		ev.Set() // a plain goroutine could call it too
		n := 0
		for _, h := range hs {
			v, err := h.Join(ctx)
			if err != nil {
				return 0, err
			}
			n += v
		}
		return n, nil
	})
	fmt.Println(n, err)
	// Output: 3 <nil>
}

// A task that fails while nobody joins it is reported, here to a hook,
// when the BlockOn it ran under returns. Without the hook the report goes
// to the standard logger (with the stack of a panic).
func ExampleConfig_onTaskFailure() {
	rt, err := runtime.New(runtime.Config{
		Workers: 1,
		OnTaskFailure: func(f runtime.TaskFailure) {
			var pe *runtime.PanicError
			if errors.As(f.Err, &pe) {
				fmt.Println("unjoined task panicked:", pe.Value)
				return
			}
			fmt.Println("unjoined task failed:", f.Err)
		},
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()

	v, err := runtime.BlockOn(rt, func(ctx context.Context) (int, error) {
		joined := runtime.Spawn(ctx, func(ctx context.Context) (int, error) {
			panic("bug") // joined below: the joiner sees it, no report
		})
		if _, err := joined.Join(ctx); err != nil {
			fmt.Println("joined task's error handled by its joiner")
		}
		runtime.Spawn(ctx, func(ctx context.Context) (int, error) {
			return 0, errors.New("disk full") // nobody joins this one
		})
		return 42, nil
	})
	fmt.Println(v, err)
	// Output:
	// joined task's error handled by its joiner
	// unjoined task failed: disk full
	// 42 <nil>
}

// A package built on Submit serves tasks through the ring and plain
// goroutines with the system call in the goroutine itself; InTask tells
// the two apart, cheaply when given the caller's context.
func ExampleInTask() {
	where := func(ctx context.Context) string {
		if runtime.InTask(ctx) {
			return "task: suspend on the ring"
		}
		return "goroutine: make the system call here"
	}
	rt, err := runtime.New(runtime.Config{Workers: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()
	fmt.Println(where(context.Background()))
	s, err := runtime.BlockOn(rt, func(ctx context.Context) (string, error) { return where(ctx), nil })
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(s)
	// Output:
	// goroutine: make the system call here
	// task: suspend on the ring
}

// ConsumeCurrent charges the running task even when the operation's
// context is not the task's own: a loop of 1,000 operations that never
// suspend, made with context.Background, still gives way to the other
// task of its worker.
func ExampleConsumeCurrent() {
	rt, err := runtime.New(runtime.Config{Workers: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()
	ranBetween, err := runtime.BlockOn(rt, func(ctx context.Context) (bool, error) {
		var other atomic.Bool
		runtime.Spawn(ctx, func(context.Context) (int, error) { other.Store(true); return 0, nil })
		for range 1000 {
			// An operation done on the spot, under a context of its own.
			runtime.ConsumeCurrent(context.Background())
		}
		return other.Load(), nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println("the other task ran during the loop:", ranBetween)
	// Output: the other task ran during the loop: true
}

// box holds one value at a time; Take waits for one. It shows where a
// primitive calls RunNext: once it knows it must wait, before it suspends.
type box struct {
	mu     sync.Mutex
	full   bool
	v      int
	waiter runtime.Waker
}

func (b *box) Put(v int) {
	b.mu.Lock()
	b.v, b.full = v, true
	w := b.waiter
	b.waiter = runtime.Waker{}
	b.mu.Unlock()
	w.Wake()
}

func (b *box) take() (int, bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	v, ok := b.v, b.full
	b.full = false
	return v, ok
}

func (b *box) Take(ctx context.Context) (int, error) {
	for {
		if v, ok := b.take(); ok {
			return v, nil
		}
		// Let the task its worker would run next (often the one
		// that will Put) run now, with no lock held; then look again.
		if runtime.RunNext(ctx) {
			if v, ok := b.take(); ok {
				return v, nil
			}
		}
		err := runtime.Suspend(ctx, func(w runtime.Waker) bool {
			b.mu.Lock()
			defer b.mu.Unlock()
			if b.full {
				return false
			}
			b.waiter = w
			return true
		})
		if err != nil {
			return 0, err
		}
	}
}

func ExampleRunNext() {
	rt, err := runtime.New(runtime.Config{Workers: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()

	sum, err := runtime.BlockOn(rt, func(ctx context.Context) (int, error) {
		var b box
		runtime.Spawn(ctx, func(ctx context.Context) (struct{}, error) {
			b.Put(42)
			return struct{}{}, nil
		})
		return b.Take(ctx) // runs the spawned task at once, then takes
	})
	fmt.Println(sum, err)
	// Output: 42 <nil>
}

// A task calls code that blocks in plain Go (here a queue built on
// sync.Cond) through Blocking: the call runs on a goroutine of its own,
// and the task's worker, the only one, runs the producer meanwhile.
// Called directly, take would hold that worker, and the producer would
// never run.
func ExampleBlocking() {
	rt, err := runtime.New(runtime.Config{Workers: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()

	var mu sync.Mutex
	ready := sync.NewCond(&mu)
	var items []string
	take := func() (string, error) {
		mu.Lock()
		defer mu.Unlock()
		for len(items) == 0 {
			ready.Wait()
		}
		item := items[0]
		items = items[1:]
		return item, nil
	}
	put := func(item string) {
		mu.Lock()
		items = append(items, item)
		mu.Unlock()
		ready.Signal()
	}

	got, err := runtime.BlockOn(rt, func(ctx context.Context) (string, error) {
		runtime.Spawn(ctx, func(ctx context.Context) (int, error) {
			if err := runtime.Sleep(ctx, time.Millisecond); err != nil {
				return 0, err
			}
			put("job 1")
			return 0, nil
		})
		return runtime.Blocking(ctx, take)
	})
	fmt.Println(got, err)
	// Output: job 1 <nil>
}

// A nil context (a variable never set, say) is refused with ErrNilContext,
// and the call does nothing: no wait, no task started.
func ExampleErrNilContext() {
	var ctx context.Context // never set
	err := runtime.Sleep(ctx, time.Millisecond)
	fmt.Println(errors.Is(err, runtime.ErrNilContext))

	_, err = runtime.Spawn(ctx, func(context.Context) (int, error) { return 1, nil }).Join(context.Background())
	fmt.Println(err)
	// Output:
	// true
	// faio/runtime: nil context: pass the task's context, or context.Background() outside tasks
}

// slot is an object that tasks use for short sections without a
// reference count, and that Destroy frees once no worker announces it.
type slot struct {
	rt        *runtime.Runtime
	destroyed atomic.Bool
	value     atomic.Int64
}

// Use adds to s unless Destroy has begun. It takes no reference that
// every worker would update: the task's worker announces s for the
// section, which must not suspend.
func (s *slot) Use(ctx context.Context) bool {
	h := s.rt.Protect(ctx, unsafe.Pointer(s))
	if h == nil {
		return false // not a task of s.rt: a real program takes a reference here
	}
	defer h.Release()
	if s.destroyed.Load() {
		return false
	}
	s.value.Add(1)
	return true
}

// Destroy marks s, then waits out the sections under way.
func (s *slot) Destroy() int64 {
	s.destroyed.Store(true)
	s.rt.WaitUnprotected(unsafe.Pointer(s))
	return s.value.Load() // final: no section can add to it any more
}

func ExampleRuntime_Protect() {
	rt, err := runtime.New(runtime.Config{Workers: 2})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()
	s := &slot{rt: rt}
	used, err := runtime.BlockOn(rt, func(ctx context.Context) (int64, error) {
		var n int64
		for range 100 {
			if s.Use(ctx) {
				n++
			}
		}
		return n, nil
	})
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(used, s.Destroy())
	fmt.Println(runtime.BlockOn(rt, func(ctx context.Context) (bool, error) { return s.Use(ctx), nil }))
	// Output:
	// 100 100
	// false <nil>
}
