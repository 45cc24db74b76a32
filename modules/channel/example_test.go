package channel_test

import (
	"context"
	"errors"
	"fmt"

	"github.com/faio-go/faio/modules/channel"
	"github.com/faio-go/faio/modules/runtime"
)

// Tasks of a runtime talk over a channel: a producer sends and closes its
// end, the consumer ranges until the channel is drained.
func Example() {
	rt, err := runtime.New(runtime.Config{Workers: 2})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()

	sum, err := runtime.BlockOn(rt, func(ctx context.Context) (int, error) {
		tx, rx := channel.New[int](4)
		runtime.Spawn(ctx, func(ctx context.Context) (int, error) {
			defer tx.Close()
			for i := 1; i <= 10; i++ {
				if err := tx.Send(ctx, i); err != nil {
					return 0, err
				}
			}
			return 0, nil
		})
		sum := 0
		for v := range rx.All(ctx) {
			sum += v
		}
		return sum, ctx.Err()
	})
	fmt.Println(sum, err)
	// Output: 55 <nil>
}

// The same channel serves plain goroutines; capacity 0 makes every send
// wait for its receiver.
func ExampleNew_goroutines() {
	ctx := context.Background()
	tx, rx := channel.New[string](0)
	go func() {
		defer tx.Close()
		for _, w := range []string{"ping", "pong"} {
			if err := tx.Send(ctx, w); err != nil {
				return
			}
		}
	}()
	for {
		w, err := rx.Recv(ctx)
		if errors.Is(err, channel.ErrClosed) {
			break
		}
		fmt.Println(w)
	}
	// Output:
	// ping
	// pong
}

// When every receiver has gone, a send fails and hands its value back.
func ExampleSendError() {
	tx, rx := channel.New[string](8)
	rx.Close()
	err := tx.Send(context.Background(), "report")
	var se *channel.SendError[string]
	if errors.As(err, &se) {
		fmt.Printf("%v; kept %q\n", err, se.Value)
	}
	fmt.Println(errors.Is(err, channel.ErrClosed))
	// Output:
	// faio/channel: send on closed channel; kept "report"
	// true
}

// Select receives from whichever channel is ready, here after the other
// has closed.
func ExampleSelect() {
	ctx := context.Background()
	numbers, numbersRx := channel.New[int](1)
	words, wordsRx := channel.New[string](1)
	numbers.Close()
	if err := words.TrySend("hello"); err != nil {
		fmt.Println(err)
		return
	}

	var n int
	var w string
	cases := []channel.Case{numbersRx.RecvCase(&n), wordsRx.RecvCase(&w)}
	for range 2 {
		i, err := channel.Select(ctx, cases...)
		switch {
		case errors.Is(err, channel.ErrClosed):
			fmt.Println("case", i, "closed")
			cases[i] = nil // a nil case is never ready again
		case err != nil:
			fmt.Println(err)
			return
		default:
			fmt.Println("case", i, "got", w)
		}
	}
	// Unordered output:
	// case 0 closed
	// case 1 got hello
}

// A receive that waits honours its context.
func ExampleReceiver_Recv_cancel() {
	_, rx := channel.New[int](1)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, err := rx.Recv(ctx)
	fmt.Println(err)
	// Output: context canceled
}

// TrySelect is a select statement with a default branch.
func ExampleTrySelect() {
	jobs, jobsRx := channel.New[string](1)
	var job string
	for range 2 {
		i, err := channel.TrySelect(jobsRx.RecvCase(&job))
		switch {
		case errors.Is(err, channel.ErrNoneReady):
			fmt.Println("nothing to do")
		case err != nil:
			fmt.Println(err)
			return
		default:
			fmt.Println("case", i, "got", job)
		}
		if err := jobs.TrySend("compile"); err != nil {
			fmt.Println(err)
			return
		}
	}
	// Output:
	// nothing to do
	// case 0 got compile
}
