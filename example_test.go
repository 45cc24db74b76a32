package faio_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/faio-go/faio"
)

// Tasks, a lock and a sleep: ten tasks add their squares to a total under a
// faio.Mutex, and BlockOn returns once all of them have finished.
func Example() {
	rt, err := faio.New(faio.Config{Workers: 2})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()

	var mu faio.Mutex
	total := 0
	_, err = faio.BlockOn(rt, func(ctx context.Context) (struct{}, error) {
		for i := 1; i <= 10; i++ {
			faio.Spawn(ctx, func(ctx context.Context) (struct{}, error) {
				if err := faio.Sleep(ctx, time.Millisecond); err != nil {
					return struct{}{}, err
				}
				if err := mu.Lock(ctx); err != nil {
					return struct{}{}, err
				}
				defer mu.Unlock()
				total += i * i
				return struct{}{}, nil
			})
		}
		return struct{}{}, nil // BlockOn waits for the children too
	})
	fmt.Println(total, err)
	// Output: 385 <nil>
}

// A channel between a producer task and a consumer task.
func ExampleNewChannel() {
	rt, err := faio.New(faio.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()

	sum, err := faio.BlockOn(rt, func(ctx context.Context) (int, error) {
		tx, rx := faio.NewChannel[int](4)
		faio.Spawn(ctx, func(ctx context.Context) (struct{}, error) {
			defer tx.Close()
			for i := 1; i <= 100; i++ {
				if err := tx.Send(ctx, i); err != nil {
					return struct{}{}, err
				}
			}
			return struct{}{}, nil
		})
		sum := 0
		for v := range rx.All(ctx) {
			sum += v
		}
		return sum, nil
	})
	fmt.Println(sum, err)
	// Output: 5050 <nil>
}

// A plain goroutine (main, say) does file I/O on a runtime's io_uring by
// naming the runtime in its context.
func ExampleWithRuntime() {
	rt, err := faio.New(faio.Config{Workers: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()
	dir, err := os.MkdirTemp("", "faio-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)

	ctx := faio.WithRuntime(context.Background(), rt)
	name := filepath.Join(dir, "note.txt")
	if err := faio.WriteFile(ctx, name, []byte("written through io_uring"), 0o600); err != nil {
		fmt.Println(err)
		return
	}
	data, err := faio.ReadFile(ctx, name)
	fmt.Println(string(data), err)
	// Output: written through io_uring <nil>
}

// Two listeners share one port with SO_REUSEPORT, as a server with an
// accept loop per worker would: the kernel spreads the connections over
// them. Unix domain sockets take the same calls with "unix".
func ExampleListenConfig() {
	rt, err := faio.New(faio.Config{Workers: 2})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()
	ctx := faio.WithRuntime(context.Background(), rt)

	lc := faio.ListenConfig{ReusePort: true}
	a, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer a.Close(ctx)
	b, err := lc.Listen(ctx, "tcp", a.Addr().String())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer b.Close(ctx)
	fmt.Println("same port:", a.Addr().String() == b.Addr().String())
	// Output: same port: true
}
