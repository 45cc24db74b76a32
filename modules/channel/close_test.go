package channel

import (
	"context"
	"errors"
	"testing"

	"github.com/faio-go/faio/modules/runtime"
)

func TestCloseTwiceIsAnErrorAndKeepsCounts(t *testing.T) {
	tx, rx := New[int](1)
	tx2 := tx.Clone()
	if err := tx.Close(); err != nil {
		t.Fatal(err)
	}
	if err := tx.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Close = %v, want an error wrapping ErrClosed", err)
	}
	// tx2 is still open: the second Close must not have dropped it.
	if _, err := rx.TryRecv(); !errors.Is(err, ErrEmpty) {
		t.Fatalf("TryRecv = %v, want ErrEmpty while tx2 is open", err)
	}
	if err := tx2.TrySend(5); err != nil {
		t.Fatal(err)
	}
	if err := tx2.Close(); err != nil {
		t.Fatal(err)
	}
	if v, err := rx.TryRecv(); err != nil || v != 5 {
		t.Fatalf("TryRecv = %d, %v", v, err)
	}
	if _, err := rx.TryRecv(); !errors.Is(err, ErrClosed) {
		t.Fatalf("TryRecv after the last Sender closed = %v", err)
	}

	rx2 := rx.Clone()
	if err := rx.Close(); err != nil {
		t.Fatal(err)
	}
	if err := rx.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("second Receiver Close = %v", err)
	}
	if err := rx2.Close(); err != nil {
		t.Fatalf("Close of the clone = %v", err)
	}
}

func TestClosedEndsRefuseAndCloneClosed(t *testing.T) {
	ctx := context.Background()
	tx, rx := New[int](2)
	tx2 := tx.Clone()
	if err := tx2.Close(); err != nil {
		t.Fatal(err)
	}
	var se *SendError[int]
	if err := tx2.Send(ctx, 9); !errors.As(err, &se) || se.Value != 9 {
		t.Fatalf("Send through a closed Sender = %v", err)
	}
	tx3 := tx2.Clone()
	if err := tx3.TrySend(1); !errors.Is(err, ErrClosed) {
		t.Fatalf("a clone of a closed Sender sent: %v", err)
	}
	if err := tx3.Close(); !errors.Is(err, ErrClosed) {
		t.Fatalf("Close of a closed clone = %v", err)
	}
	// tx is still open and alone: closing it ends the channel.
	if err := tx.TrySend(1); err != nil {
		t.Fatal(err)
	}
	rx2 := rx.Clone()
	if err := rx2.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := rx2.Recv(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("Recv through a closed Receiver = %v", err)
	}
	if rx2.Clone().Close() == nil {
		t.Fatal("a clone of a closed Receiver was open")
	}
	if v, err := rx.Recv(ctx); err != nil || v != 1 {
		t.Fatalf("Recv = %d, %v", v, err)
	}
}

func TestLastSenderCloseWakesWaitingReceivers(t *testing.T) {
	for _, capacity := range []int{0, 4} {
		tx, rx := New[int](capacity)
		var got []<-chan result[int]
		for range 3 {
			got = append(got, goRecv(context.Background(), rx.Clone()))
		}
		waitQueued(t, tx.ch, 0, 3)
		if err := tx.Close(); err != nil {
			t.Fatal(err)
		}
		for _, g := range got {
			if r := <-g; !errors.Is(r.err, ErrClosed) {
				t.Fatalf("capacity %d: waiting Recv = %v, want ErrClosed", capacity, r.err)
			}
		}
	}
}

func TestLastReceiverCloseFailsWaitingSendersWithTheirValues(t *testing.T) {
	for _, capacity := range []int{0, 1} {
		tx, rx := New[int](capacity)
		if capacity > 0 {
			if err := tx.TrySend(-1); err != nil {
				t.Fatal(err)
			}
		}
		sent := map[int]<-chan error{}
		for v := range 3 {
			sent[v] = goSend(context.Background(), tx, v)
			waitQueued(t, tx.ch, v+1, 0)
		}
		if err := rx.Close(); err != nil {
			t.Fatal(err)
		}
		for v, ch := range sent {
			var se *SendError[int]
			if err := <-ch; !errors.As(err, &se) || se.Value != v || !errors.Is(err, ErrClosed) {
				t.Fatalf("capacity %d: waiting Send(%d) = %v, want a SendError carrying it", capacity, v, err)
			}
		}
		if n := tx.Len(); n != 0 {
			t.Fatalf("capacity %d: %d values still buffered after the last Receiver closed", capacity, n)
		}
		if err := tx.Send(context.Background(), 7); !errors.Is(err, ErrClosed) {
			t.Fatalf("Send after close = %v", err)
		}
	}
}

func TestClosingOneEndFailsOnlyItsWaiters(t *testing.T) {
	ctx := context.Background()
	tx, rx := New[int](0)
	rx2 := rx.Clone()
	r1 := goRecv(ctx, rx)
	waitQueued(t, tx.ch, 0, 1)
	r2 := goRecv(ctx, rx2)
	waitQueued(t, tx.ch, 0, 2)
	if err := rx2.Close(); err != nil {
		t.Fatal(err)
	}
	if r := <-r2; !errors.Is(r.err, ErrClosed) {
		t.Fatalf("Recv through the closed clone = %v", r.err)
	}
	waitQueued(t, tx.ch, 0, 1)
	if err := tx.Send(ctx, 3); err != nil {
		t.Fatal(err)
	}
	if r := <-r1; r.err != nil || r.v != 3 {
		t.Fatalf("Recv through the open end = %d, %v", r.v, r.err)
	}

	tx2 := tx.Clone()
	s1 := goSend(ctx, tx, 1)
	waitQueued(t, tx.ch, 1, 0)
	s2 := goSend(ctx, tx2, 2)
	waitQueued(t, tx.ch, 2, 0)
	if err := tx.Close(); err != nil {
		t.Fatal(err)
	}
	var se *SendError[int]
	if err := <-s1; !errors.As(err, &se) || se.Value != 1 {
		t.Fatalf("Send through the closed end = %v", err)
	}
	if v, err := rx.Recv(ctx); err != nil || v != 2 {
		t.Fatalf("Recv = %d, %v", v, err)
	}
	if err := <-s2; err != nil {
		t.Fatal(err)
	}
}

// Close from either side while peers wait, with tasks as the peers.
func TestCloseWhileTasksWait(t *testing.T) {
	rt := newRuntime(t, 2)
	tx, rx := New[int](0)
	txFull, rxFull := New[int](1)
	if err := txFull.TrySend(0); err != nil {
		t.Fatal(err)
	}
	errs := make(chan error, 8)
	for range 4 {
		rtx := rx.Clone()
		stx := txFull.Clone()
		go func() {
			_, err := runtime.BlockOn(rt, func(ctx context.Context) (int, error) {
				_, err := rtx.Recv(ctx)
				return 0, err
			})
			errs <- err
		}()
		go func() {
			_, err := runtime.BlockOn(rt, func(ctx context.Context) (int, error) {
				return 0, stx.Send(ctx, 1)
			})
			errs <- err
		}()
	}
	waitQueued(t, tx.ch, 0, 4)
	waitQueued(t, txFull.ch, 4, 0)
	if err := tx.Close(); err != nil {
		t.Fatal(err)
	}
	if err := rxFull.Close(); err != nil {
		t.Fatal(err)
	}
	for range 8 {
		if err := <-errs; !errors.Is(err, ErrClosed) {
			t.Fatalf("waiting task got %v, want ErrClosed", err)
		}
	}
}
