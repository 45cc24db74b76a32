package channel

import (
	"context"
	"testing"
	"time"

	"github.com/faio-go/faio/modules/runtime"
	"go.uber.org/goleak"
)

// Every test must leave no goroutine behind: runtimes are closed by
// t.Cleanup and every helper goroutine is joined.
func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

func newRuntime(t testing.TB, workers int) *runtime.Runtime {
	t.Helper()
	rt, err := runtime.New(runtime.Config{Workers: workers})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { rt.Close() })
	return rt
}

// queued returns how many nodes wait in each queue of the channel.
func queued[T any](c *channel[T]) (senders, receivers int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for n := c.sendq.head; n != nil; n = n.next {
		senders++
	}
	for n := c.recvq.head; n != nil; n = n.next {
		receivers++
	}
	return senders, receivers
}

// waitQueued polls until the channel has the given numbers of queued
// senders and receivers, or fails the test after a generous bound (the
// bound only guards against a hang; nothing is asserted about time).
func waitQueued[T any](t testing.TB, c *channel[T], senders, receivers int) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		s, r := queued(c)
		if s == senders && r == receivers {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("queued senders/receivers = %d/%d, want %d/%d", s, r, senders, receivers)
		}
		time.Sleep(100 * time.Microsecond)
	}
}

// result is what a Send or Recv run in the background came to.
type result[T any] struct {
	v   T
	err error
}

// goRecv runs rx.Recv(ctx) on a new goroutine.
func goRecv[T any](ctx context.Context, rx *Receiver[T]) <-chan result[T] {
	ch := make(chan result[T], 1)
	go func() {
		v, err := rx.Recv(ctx)
		ch <- result[T]{v, err}
	}()
	return ch
}

// goSend runs tx.Send(ctx, v) on a new goroutine.
func goSend[T any](ctx context.Context, tx *Sender[T], v T) <-chan error {
	ch := make(chan error, 1)
	go func() { ch <- tx.Send(ctx, v) }()
	return ch
}
