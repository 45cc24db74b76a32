package channel

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faio-go/faio/modules/runtime"
)

// handOffRaces is how many times each test below races a cancellation
// against a hand-off.
const handOffRaces = 100_000

// spin burns a little time, a different amount each iteration, so that
// cancellations land before, during and after the hand-off.
func spin(n int) {
	var x uint64
	for j := 0; j < n; j++ {
		x = x*6364136223846793005 + 1
	}
	sink.Store(x)
}

// sink keeps spin's loop from being optimised away.
var sink atomic.Uint64

// checkHandOff checks one race on a rendezvous channel: the value went
// through exactly when both sides say so, and the queues are empty again.
func checkHandOff(c *channel[int], i int, sendErr error, r result[int]) error {
	if (sendErr == nil) != (r.err == nil) {
		return fmt.Errorf("race %d: Send = %v but Recv = %d, %v", i, sendErr, r.v, r.err)
	}
	if r.err == nil && r.v != i {
		return fmt.Errorf("race %d: received %d", i, r.v)
	}
	if sendErr != nil && !errors.Is(sendErr, context.Canceled) {
		return fmt.Errorf("race %d: Send = %v", i, sendErr)
	}
	if r.err != nil && !errors.Is(r.err, context.Canceled) && !errors.Is(r.err, context.DeadlineExceeded) {
		return fmt.Errorf("race %d: Recv = %v", i, r.err)
	}
	if s, q := queued(c); s != 0 || q != 0 {
		return fmt.Errorf("race %d: %d senders and %d receivers left queued", i, s, q)
	}
	return nil
}

// outcomes counts how the races of one test ended; both endings must
// occur, or the test did not race what it claims to.
type outcomes struct{ delivered, cancelled int }

func (o *outcomes) add(err error) {
	if err == nil {
		o.delivered++
	} else {
		o.cancelled++
	}
}

func (o *outcomes) check(t *testing.T) {
	t.Helper()
	t.Logf("%d hand-offs delivered, %d cancelled", o.delivered, o.cancelled)
	if o.delivered == 0 || o.cancelled == 0 {
		t.Fatal("the cancellations never raced the hand-offs: only one outcome occurred")
	}
}

// Goroutines: a receiver whose context a third goroutine cancels races a
// sender, which is cancelled once the receiver has given up.
func TestStressCancelRacesHandOffGoroutines(t *testing.T) {
	var o outcomes
	tx, rx := New[int](0)
	for i := range handOffRaces {
		rctx, rcancel := context.WithCancel(context.Background())
		sctx, scancel := context.WithCancel(context.Background())
		got := make(chan result[int], 1)
		var wg sync.WaitGroup
		wg.Add(2)
		go func() {
			defer wg.Done()
			v, err := rx.Recv(rctx)
			got <- result[int]{v, err}
			scancel()
		}()
		go func() {
			defer wg.Done()
			spin(i % 97 * 128)
			rcancel()
		}()
		err := tx.Send(sctx, i)
		wg.Wait()
		if err := checkHandOff(tx.ch, i, err, <-got); err != nil {
			t.Fatal(err)
		}
		o.add(err)
	}
	o.check(t)
}

// Tasks: the receiver's context is a deadline derived from its task, the
// sender is cancelled through its JoinHandle once the receiver is done.
func TestStressCancelRacesHandOffTasks(t *testing.T) {
	var o outcomes
	rt := newRuntime(t, 2)
	tx, rx := New[int](0)
	_, err := runtime.BlockOn(rt, func(ctx context.Context) (int, error) {
		for i := range handOffRaces {
			hs := runtime.Spawn(ctx, func(ctx context.Context) (int, error) {
				return 0, tx.Send(ctx, i)
			})
			hr := runtime.Spawn(ctx, func(ctx context.Context) (result[int], error) {
				rctx, cancel := context.WithTimeout(ctx, time.Duration(i%23)*time.Microsecond)
				defer cancel()
				v, err := rx.Recv(rctx)
				hs.Cancel()
				return result[int]{v, err}, nil
			})
			r, err := hr.Join(ctx)
			if err != nil {
				return 0, err
			}
			_, sendErr := hs.Join(ctx)
			if err := checkHandOff(tx.ch, i, sendErr, r); err != nil {
				return 0, err
			}
			o.add(sendErr)
		}
		return 0, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	o.check(t)
}

// Between the two: a task receives with its own context, cancelled by a
// goroutine; a plain goroutine sends.
func TestStressCancelRacesHandOffMixed(t *testing.T) {
	var o outcomes
	rt := newRuntime(t, 2)
	tx, rx := New[int](0)
	for i := range handOffRaces / 4 {
		sctx, scancel := context.WithCancel(context.Background())
		hr := runtime.SpawnOn(rt, func(ctx context.Context) (result[int], error) {
			v, err := rx.Recv(ctx)
			scancel()
			return result[int]{v, err}, nil
		})
		done := make(chan struct{})
		go func() {
			defer close(done)
			spin(i % 61 * 16)
			hr.Cancel()
		}()
		err := tx.Send(sctx, i)
		r, jerr := hr.Join(context.Background())
		<-done
		scancel()
		if jerr != nil {
			t.Fatal(jerr)
		}
		if err := checkHandOff(tx.ch, i, err, r); err != nil {
			t.Fatal(err)
		}
		o.add(err)
	}
	o.check(t)
}

// A sender waiting on a full buffer is cancelled while a receiver frees the
// slot it waits for: its value is buffered exactly when Send returned nil.
func TestStressCancelRacesMoveIntoBuffer(t *testing.T) {
	tx, rx := New[int](1)
	if err := tx.TrySend(-1); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	var o outcomes
	for i := range handOffRaces {
		sctx, scancel := context.WithCancel(ctx)
		sent := goSend(sctx, tx, i)
		done := make(chan struct{})
		go func() {
			defer close(done)
			spin(i % 89 * 64)
			scancel()
		}()
		spin(i % 53 * 8)
		old, err := rx.Recv(ctx)
		if err != nil {
			t.Fatal(err)
		}
		sendErr := <-sent
		<-done
		if old != i-1 {
			t.Fatalf("race %d: received %d, want %d", i, old, i-1)
		}
		switch {
		case sendErr == nil:
			if n := rx.Len(); n != 1 {
				t.Fatalf("race %d: Send succeeded but %d values are buffered", i, n)
			}
		case errors.Is(sendErr, context.Canceled):
			if n := rx.Len(); n != 0 {
				t.Fatalf("race %d: Send was cancelled but %d values are buffered", i, n)
			}
			if err := tx.TrySend(i); err != nil {
				t.Fatal(err)
			}
		default:
			t.Fatalf("race %d: Send = %v", i, sendErr)
		}
		if s, q := queued(tx.ch); s != 0 || q != 0 {
			t.Fatalf("race %d: %d senders and %d receivers left queued", i, s, q)
		}
		o.add(sendErr)
	}
	o.check(t)
}

// Receiver.All's doc says ctx.Err() tells apart a loop that ended because
// ctx did: on a channel that is never closed, every loop under a deadline
// ends with ctx.Err() set. Before, about half ended with it still nil: the
// worker's wheel ended the wait before the context's timer fired (found by
// a reviewer).
func TestAllEndsWithCtxErrAtADeadline(t *testing.T) {
	rt := newRuntime(t, 2)
	tx, rx := New[int](0)
	defer tx.Close()
	const rounds = 300
	bad, err := runtime.BlockOn(rt, func(ctx context.Context) (int, error) {
		bad := 0
		for i := range rounds {
			dctx, cancel := context.WithTimeout(ctx, time.Duration(200+i%7*100)*time.Microsecond)
			for range rx.All(dctx) {
			}
			if dctx.Err() == nil {
				bad++
			}
			cancel()
		}
		return bad, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if bad > 0 {
		t.Fatalf("%d of %d loops ended with the channel open and ctx.Err() == nil", bad, rounds)
	}
}
