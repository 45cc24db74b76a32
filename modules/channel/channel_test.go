package channel

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

func TestNewNegativeCapacityPanics(t *testing.T) {
	defer func() {
		r := recover()
		if r == nil || !strings.Contains(r.(string), "negative") {
			t.Fatalf("recover() = %v, want a panic about the negative capacity", r)
		}
	}()
	New[int](-1)
}

func TestLenCap(t *testing.T) {
	for _, capacity := range []int{0, 1, 5} {
		tx, rx := New[int](capacity)
		if tx.Cap() != capacity || rx.Cap() != capacity {
			t.Fatalf("Cap = %d/%d, want %d", tx.Cap(), rx.Cap(), capacity)
		}
		for i := 0; i < capacity; i++ {
			if err := tx.TrySend(i); err != nil {
				t.Fatal(err)
			}
			if tx.Len() != i+1 || rx.Len() != i+1 {
				t.Fatalf("Len = %d/%d, want %d", tx.Len(), rx.Len(), i+1)
			}
		}
		if err := tx.TrySend(99); !errors.Is(err, ErrFull) {
			t.Fatalf("TrySend on a full channel: %v, want ErrFull", err)
		}
	}
}

// TrySend and TryRecv step by step, table-driven: each step is an
// operation and the result it must give.
func TestTrySendTryRecv(t *testing.T) {
	type step struct {
		op   string // "send v", "recv", "closeTx", "closeRx"
		v    int
		want error
		got  int // for a recv that succeeds
	}
	tests := []struct {
		name     string
		capacity int
		steps    []step
	}{
		{"rendezvous without receiver", 0, []step{
			{op: "send", v: 1, want: ErrFull},
			{op: "recv", want: ErrEmpty},
		}},
		{"fifo through buffer", 2, []step{
			{op: "send", v: 1}, {op: "send", v: 2}, {op: "send", v: 3, want: ErrFull},
			{op: "recv", got: 1}, {op: "send", v: 4}, {op: "recv", got: 2},
			{op: "recv", got: 4}, {op: "recv", want: ErrEmpty},
		}},
		{"drain after senders close", 3, []step{
			{op: "send", v: 7}, {op: "send", v: 8}, {op: "closeTx"},
			{op: "recv", got: 7}, {op: "recv", got: 8}, {op: "recv", want: ErrClosed},
		}},
		{"send after receivers close fails with room", 3, []step{
			{op: "send", v: 1}, {op: "closeRx"}, {op: "send", v: 2, want: ErrClosed},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tx, rx := New[int](tt.capacity)
			for i, s := range tt.steps {
				switch s.op {
				case "send":
					err := tx.TrySend(s.v)
					if !errors.Is(err, s.want) || (s.want == nil && err != nil) {
						t.Fatalf("step %d: TrySend(%d) = %v, want %v", i, s.v, err, s.want)
					}
					var se *SendError[int]
					if errors.Is(err, ErrClosed) && (!errors.As(err, &se) || se.Value != s.v) {
						t.Fatalf("step %d: TrySend error %v does not carry %d", i, err, s.v)
					}
				case "recv":
					v, err := rx.TryRecv()
					if !errors.Is(err, s.want) || (s.want == nil && err != nil) {
						t.Fatalf("step %d: TryRecv = %v, want %v", i, err, s.want)
					}
					if err == nil && v != s.got {
						t.Fatalf("step %d: TryRecv = %d, want %d", i, v, s.got)
					}
				case "closeTx":
					if err := tx.Close(); err != nil {
						t.Fatal(err)
					}
				case "closeRx":
					if err := rx.Close(); err != nil {
						t.Fatal(err)
					}
				}
			}
		})
	}
}

func TestRendezvousSendCompletesOnlyWhenTaken(t *testing.T) {
	ctx := context.Background()
	tx, rx := New[string](0)
	sent := goSend(ctx, tx, "hello")
	waitQueued(t, tx.ch, 1, 0)
	select {
	case err := <-sent:
		t.Fatalf("Send returned %v before any receiver came", err)
	default:
	}
	if n := rx.Len(); n != 0 {
		t.Fatalf("Len = %d on a rendezvous channel", n)
	}
	v, err := rx.Recv(ctx)
	if err != nil || v != "hello" {
		t.Fatalf("Recv = %q, %v", v, err)
	}
	if err := <-sent; err != nil {
		t.Fatalf("Send = %v", err)
	}

	// The other way round: a waiting receiver is handed the value by
	// TrySend, which succeeds only because someone waits.
	got := goRecv(ctx, rx)
	waitQueued(t, tx.ch, 0, 1)
	if err := tx.TrySend("direct"); err != nil {
		t.Fatalf("TrySend to a waiting receiver: %v", err)
	}
	if r := <-got; r.err != nil || r.v != "direct" {
		t.Fatalf("Recv = %q, %v", r.v, r.err)
	}
}

func TestWaitingSenderMovesIntoFreedSlot(t *testing.T) {
	ctx := context.Background()
	tx, rx := New[int](2)
	for _, v := range []int{1, 2} {
		if err := tx.Send(ctx, v); err != nil {
			t.Fatal(err)
		}
	}
	sent3 := goSend(ctx, tx, 3)
	waitQueued(t, tx.ch, 1, 0)
	sent4 := goSend(ctx, tx, 4)
	waitQueued(t, tx.ch, 2, 0)

	if v, err := rx.Recv(ctx); err != nil || v != 1 {
		t.Fatalf("Recv = %d, %v; want 1", v, err)
	}
	// 3 moved into the freed slot, so its Send completed and the buffer is
	// full again; 4 still waits.
	if err := <-sent3; err != nil {
		t.Fatal(err)
	}
	if n := rx.Len(); n != 2 {
		t.Fatalf("Len = %d, want 2", n)
	}
	waitQueued(t, tx.ch, 1, 0)
	var got []int
	for range 3 {
		v, err := rx.Recv(ctx)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, v)
	}
	if err := <-sent4; err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(got, []int{2, 3, 4}) {
		t.Fatalf("received %v, want [2 3 4]", got)
	}
}

func TestDoneContextRefusedEvenWhenReady(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	tx, rx := New[int](1)
	if err := tx.Send(ctx, 1); !errors.Is(err, context.Canceled) {
		t.Fatalf("Send with a done ctx = %v", err)
	}
	if tx.Len() != 0 {
		t.Fatal("Send with a done ctx buffered its value")
	}
	if err := tx.TrySend(2); err != nil {
		t.Fatal(err)
	}
	if _, err := rx.Recv(ctx); !errors.Is(err, context.Canceled) {
		t.Fatalf("Recv with a done ctx = %v", err)
	}
	if v, err := rx.TryRecv(); err != nil || v != 2 {
		t.Fatalf("TryRecv = %d, %v: the refused Recv took the value", v, err)
	}
}

func TestCancelledWaitLeavesQueueAndMovesNothing(t *testing.T) {
	tx, rx := New[int](1)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Millisecond)
	defer cancel()
	if _, err := rx.Recv(ctx); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Recv on an empty channel = %v", err)
	}
	waitQueued(t, tx.ch, 0, 0)

	if err := tx.TrySend(1); err != nil {
		t.Fatal(err)
	}
	ctx2, cancel2 := context.WithTimeout(context.Background(), 5*time.Millisecond)
	defer cancel2()
	if err := tx.Send(ctx2, 2); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Send on a full channel = %v", err)
	}
	waitQueued(t, tx.ch, 0, 0)
	if v, err := rx.TryRecv(); err != nil || v != 1 {
		t.Fatalf("TryRecv = %d, %v", v, err)
	}
	if _, err := rx.TryRecv(); !errors.Is(err, ErrEmpty) {
		t.Fatalf("the cancelled Send delivered its value: %v", err)
	}
}

func TestAllAndAllErr(t *testing.T) {
	ctx := context.Background()
	tx, rx := New[int](4)
	for i := range 4 {
		if err := tx.Send(ctx, i); err != nil {
			t.Fatal(err)
		}
	}
	if err := tx.Close(); err != nil {
		t.Fatal(err)
	}
	var got []int
	for v := range rx.All(ctx) {
		got = append(got, v)
		if v == 1 {
			break
		}
	}
	// Breaking out takes nothing the body did not see.
	for v, err := range rx.AllErr(ctx) {
		if err != nil {
			t.Fatalf("AllErr reported %v for a closed channel", err)
		}
		got = append(got, v)
	}
	if !slices.Equal(got, []int{0, 1, 2, 3}) {
		t.Fatalf("got %v", got)
	}

	// A context that ends is reported by AllErr as a last pair.
	_, rx2 := New[int](0)
	cctx, cancel := context.WithTimeout(ctx, 2*time.Millisecond)
	defer cancel()
	var errs []error
	for _, err := range rx2.AllErr(cctx) {
		errs = append(errs, err)
	}
	if len(errs) != 1 || !errors.Is(errs[0], context.DeadlineExceeded) {
		t.Fatalf("AllErr on a cancelled wait yielded %v", errs)
	}
}
