package channel

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faio-go/faio/modules/runtime"
)

// Close of the runtime ends the Sends and Recvs that tasks wait in with a
// foreign context (one of their own, never cancelled): every one fails
// with runtime.ErrClosed or completes, and no item is lost or counted
// twice: each Send that returned nil was received by a Recv that returned
// nil, or is still in the buffer. The tasks stop once their own context
// is cancelled; Close must return without the foreign context being
// cancelled.
func TestRuntimeCloseKeepsChannelItems(t *testing.T) {
	for run := 0; run < 20; run++ {
		rt, err := runtime.New(runtime.Config{Workers: 2})
		if err != nil {
			t.Fatal(err)
		}
		own, cancelOwn := context.WithCancel(context.Background())
		tx, rx := New[int](4)
		var sent, received atomic.Int64
		var sum atomic.Int64
		var bad atomic.Value
		const producers, consumers = 64, 64
		for p := 0; p < producers; p++ {
			runtime.SpawnOn(rt, func(ctx context.Context) (int, error) {
				for i := 0; ctx.Err() == nil; i++ {
					v := p<<20 | i
					if err := tx.Send(own, v); err != nil {
						if !errors.Is(err, runtime.ErrClosed) && !errors.Is(err, context.Canceled) {
							bad.Store(err)
						}
						return 0, nil
					}
					sent.Add(1)
					sum.Add(int64(v))
				}
				return 0, nil
			})
		}
		for c := 0; c < consumers; c++ {
			runtime.SpawnOn(rt, func(ctx context.Context) (int, error) {
				for ctx.Err() == nil {
					v, err := rx.Recv(own)
					if err != nil {
						if !errors.Is(err, runtime.ErrClosed) && !errors.Is(err, context.Canceled) {
							bad.Store(err)
						}
						return 0, nil
					}
					received.Add(1)
					sum.Add(-int64(v))
				}
				return 0, nil
			})
		}
		time.Sleep(10 * time.Millisecond)
		closed := make(chan struct{})
		go func() { rt.Close(); close(closed) }()
		select {
		case <-closed:
		case <-time.After(5 * time.Second):
			cancelOwn()
			<-closed
			t.Fatalf("run %d: Close did not return within 5 s with tasks in Send/Recv on a foreign context", run)
		}
		cancelOwn()
		var buffered int64
		for {
			v, err := rx.TryRecv()
			if err != nil {
				break
			}
			buffered++
			sum.Add(-int64(v))
		}
		if s, r := sent.Load(), received.Load(); s != r+buffered || sum.Load() != 0 {
			t.Fatalf("run %d: %d sent, %d received + %d buffered (sum of differences %d)", run, s, r, buffered, sum.Load())
		}
		if e := bad.Load(); e != nil {
			t.Fatalf("run %d: unexpected error %v", run, e)
		}
	}
}

// A task ranging over AllErr with a context of its own learns of its
// runtime's Close from a last runtime.ErrClosed; All ends then too, as its
// doc says, with the channel still open.
func TestAllErrReportsRuntimeClose(t *testing.T) {
	rt, err := runtime.New(runtime.Config{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	own, cancel := context.WithCancel(context.Background())
	defer cancel()
	tx, rx := New[int](1)
	defer tx.Close()
	out, ended := make(chan error, 1), make(chan struct{})
	runtime.SpawnOn(rt, func(ctx context.Context) (int, error) {
		var last error
		for _, err := range rx.AllErr(own) {
			last = err
		}
		out <- last
		return 0, nil
	})
	runtime.SpawnOn(rt, func(ctx context.Context) (int, error) {
		for range rx.Clone().All(own) {
		}
		close(ended)
		return 0, nil
	})
	time.Sleep(20 * time.Millisecond)
	if err := rt.Close(); err != nil {
		t.Fatal(err)
	}
	select {
	case err := <-out:
		if !errors.Is(err, runtime.ErrClosed) {
			t.Errorf("AllErr's last error: %v, want runtime.ErrClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the AllErr loop had not ended 5 s after Close")
	}
	select {
	case <-ended:
	case <-time.After(5 * time.Second):
		t.Fatal("the All loop had not ended 5 s after Close")
	}
}
