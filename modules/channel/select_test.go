package channel

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

func TestSelectPicksTheReadyCase(t *testing.T) {
	ctx := context.Background()
	txA, rxA := New[int](1)
	txB, rxB := New[string](1)
	if err := txB.TrySend("b"); err != nil {
		t.Fatal(err)
	}
	var a int
	var b string
	i, err := Select(ctx, rxA.RecvCase(&a), rxB.RecvCase(&b))
	if i != 1 || err != nil || b != "b" {
		t.Fatalf("Select = %d, %v, b = %q", i, err, b)
	}
	// A send case is ready when the buffer has room.
	i, err = Select(ctx, txA.SendCase(7), rxB.RecvCase(&b))
	if i != 0 || err != nil {
		t.Fatalf("Select = %d, %v", i, err)
	}
	if v, err := rxA.TryRecv(); err != nil || v != 7 {
		t.Fatalf("TryRecv = %d, %v", v, err)
	}
}

func TestSelectIsFairAmongReadyCases(t *testing.T) {
	ctx := context.Background()
	const rounds = 6000
	var cases []Case
	for range 3 {
		tx, rx := New[int](rounds)
		for j := range rounds {
			if err := tx.TrySend(j); err != nil {
				t.Fatal(err)
			}
		}
		cases = append(cases, rx.RecvCase(nil))
	}
	counts := make([]int, len(cases))
	for range rounds {
		i, err := Select(ctx, cases...)
		if err != nil {
			t.Fatal(err)
		}
		counts[i]++
	}
	// Each case is expected rounds/3 = 2000 times; 1500 is over 12
	// standard deviations away.
	for i, n := range counts {
		if n < 1500 {
			t.Fatalf("case %d chosen %d times out of %d: %v", i, n, rounds, counts)
		}
	}
}

func TestSelectWaitsForAPeer(t *testing.T) {
	ctx := context.Background()
	txA, rxA := New[int](0)
	txB, rxB := New[int](0)
	type sel struct {
		i   int
		err error
		v   int
	}
	done := make(chan sel, 1)
	go func() {
		var a, b int
		i, err := Select(ctx, rxA.RecvCase(&a), rxB.RecvCase(&b))
		done <- sel{i, err, a + b}
	}()
	waitQueued(t, txA.ch, 0, 1)
	waitQueued(t, txB.ch, 0, 1)
	if err := txB.Send(ctx, 42); err != nil {
		t.Fatal(err)
	}
	if r := <-done; r.i != 1 || r.err != nil || r.v != 42 {
		t.Fatalf("Select = %+v", r)
	}
	// The case that did not fire left its queue.
	waitQueued(t, txA.ch, 0, 0)

	// Send cases wait too, and a receiver completes exactly one.
	sent := make(chan sel, 1)
	go func() {
		i, err := Select(ctx, txA.SendCase(1), txB.SendCase(2))
		sent <- sel{i: i, err: err}
	}()
	waitQueued(t, txA.ch, 1, 0)
	waitQueued(t, txB.ch, 1, 0)
	v, err := rxA.Recv(ctx)
	if err != nil || v != 1 {
		t.Fatalf("Recv = %d, %v", v, err)
	}
	if r := <-sent; r.i != 0 || r.err != nil {
		t.Fatalf("Select = %+v", r)
	}
	waitQueued(t, txB.ch, 0, 0)
	if _, err := rxB.TryRecv(); !errors.Is(err, ErrEmpty) {
		t.Fatalf("the send case that did not fire delivered: %v", err)
	}
}

func TestSelectClosedCasesAreReady(t *testing.T) {
	ctx := context.Background()
	txA, rxA := New[int](0)
	txB, rxB := New[int](0)
	if err := txA.Close(); err != nil {
		t.Fatal(err)
	}
	dst := 7
	if i, err := Select(ctx, rxA.RecvCase(&dst), rxB.RecvCase(nil)); i != 0 || !errors.Is(err, ErrClosed) || dst != 7 {
		t.Fatalf("Select over a closed channel = %d, %v, *dst %d (want it unchanged)", i, err, dst)
	}
	if err := rxB.Close(); err != nil {
		t.Fatal(err)
	}
	var se *SendError[int]
	if i, err := Select(ctx, txB.SendCase(5)); i != 0 || !errors.As(err, &se) || se.Value != 5 {
		t.Fatalf("Select sending on a closed channel = %d, %v", i, err)
	}

	// A Select waiting when the channel closes wakes with ErrClosed.
	txC, rxC := New[int](0)
	done := make(chan error, 1)
	go func() {
		_, err := Select(ctx, rxC.RecvCase(nil))
		done <- err
	}()
	waitQueued(t, txC.ch, 0, 1)
	if err := txC.Close(); err != nil {
		t.Fatal(err)
	}
	if err := <-done; !errors.Is(err, ErrClosed) {
		t.Fatalf("waiting Select = %v", err)
	}
}

func TestSelectCancelLeavesEveryQueue(t *testing.T) {
	txA, rxA := New[int](0)
	txB, _ := New[int](0)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Millisecond)
	defer cancel()
	i, err := Select(ctx, rxA.RecvCase(nil), txB.SendCase(1), nil)
	if i != -1 || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Select = %d, %v", i, err)
	}
	waitQueued(t, txA.ch, 0, 0)
	waitQueued(t, txB.ch, 0, 0)

	// With no case at all it waits for ctx alone.
	ctx2, cancel2 := context.WithTimeout(context.Background(), time.Millisecond)
	defer cancel2()
	if i, err := Select(ctx2); i != -1 || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("empty Select = %d, %v", i, err)
	}
	if i, err := Select(ctx2, rxA.RecvCase(nil)); i != -1 || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Select with a done ctx = %d, %v", i, err)
	}
}

// A Select that both sends and receives on one channel never meets itself,
// and a peer completes exactly one of its cases.
func TestSelectSendAndRecvOnOneChannel(t *testing.T) {
	tx, rx := New[int](0)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Millisecond)
	defer cancel()
	if i, err := Select(ctx, tx.SendCase(1), rx.RecvCase(nil)); i != -1 || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Select met itself: %d, %v", i, err)
	}
	done := make(chan error, 1)
	var got int
	go func() {
		i, err := Select(context.Background(), tx.SendCase(1), rx.RecvCase(&got))
		if err == nil && (i != 1 || got != 9) {
			err = fmt.Errorf("Select = %d with %d, want case 1 with 9", i, got)
		}
		done <- err
	}()
	waitQueued(t, tx.ch, 1, 1)
	if err := tx.Send(context.Background(), 9); err != nil {
		t.Fatal(err)
	}
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	waitQueued(t, tx.ch, 0, 0)
}

// Producers Select between sending on a rendezvous channel and a buffered
// one, consumers Select between receiving from either; some of each run as
// tasks, some as goroutines, and one operation in seven has a short
// deadline, so cancellations race the hand-offs. Every value must arrive
// exactly once.
func TestStressSelectConservation(t *testing.T) {
	perProducer := 40_000
	if raceEnabled {
		perProducer = 10_000
	}
	const producers, consumers = 4, 4
	rt := newRuntime(t, 2)
	txA, rxA := New[uint64](0)
	txB, rxB := New[uint64](4)

	// deadline gives every seventh operation a deadline a few microseconds
	// away; a timed-out operation moved nothing and is retried.
	deadline := func(ctx context.Context, i int) (context.Context, context.CancelFunc) {
		if i%7 != 0 {
			return ctx, func() {}
		}
		return context.WithTimeout(ctx, time.Duration(i%5)*10*time.Microsecond)
	}

	var fns []func(context.Context) error
	var where []placement
	for p := range producers {
		a, b := txA.Clone(), txB.Clone()
		fns = append(fns, func(ctx context.Context) error {
			defer a.Close()
			defer b.Close()
			for i := range perProducer {
				v := value(p, i)
				for try := i; ; try++ {
					dctx, cancel := deadline(ctx, try)
					_, err := Select(dctx, a.SendCase(v), b.SendCase(v))
					cancel()
					if err == nil {
						break
					}
					if !errors.Is(err, context.DeadlineExceeded) {
						return fmt.Errorf("producer %d: %w", p, err)
					}
				}
			}
			return nil
		})
		where = append(where, placement(p%2))
	}
	var mu sync.Mutex
	seen := make([][]int, producers)
	for p := range seen {
		seen[p] = make([]int, perProducer)
	}
	for c := range consumers {
		a, b := rxA.Clone(), rxB.Clone()
		fns = append(fns, func(ctx context.Context) error {
			defer a.Close()
			defer b.Close()
			var v uint64
			cases := []Case{a.RecvCase(&v), b.RecvCase(&v)}
			var got []uint64
			for try := 0; cases[0] != nil || cases[1] != nil; try++ {
				dctx, cancel := deadline(ctx, try)
				i, err := Select(dctx, cases...)
				cancel()
				switch {
				case err == nil:
					got = append(got, v)
				case errors.Is(err, ErrClosed):
					cases[i] = nil
				case !errors.Is(err, context.DeadlineExceeded):
					return fmt.Errorf("consumer %d: %w", c, err)
				}
			}
			mu.Lock()
			defer mu.Unlock()
			for _, v := range got {
				seen[v>>32][uint32(v)]++
			}
			return nil
		})
		where = append(where, placement(c%2))
	}
	for _, err := range []error{txA.Close(), txB.Close(), rxA.Close(), rxB.Close()} {
		if err != nil {
			t.Fatal(err)
		}
	}
	if err := runEach(rt, where, fns); err != nil {
		t.Fatal(err)
	}
	for p := range seen {
		for i, n := range seen[p] {
			if n != 1 {
				t.Fatalf("producer %d's value %d received %d times", p, i, n)
			}
		}
	}
}

// A Case given twice to one Select is refused before anything happens,
// whether a case is ready or not and however many cases there are. Queued
// twice, its waiter node corrupted the channel's queue, and a later,
// unrelated Send on the channel crashed the process (found by a reviewer).
func TestSelectRefusesACaseGivenTwice(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	tx, rx := New[int](1)
	k := rx.RecvCase(nil)
	// Nothing ready: it would have waited.
	if i, err := Select(ctx, k, nil, k); i != -1 || !errors.Is(err, ErrDuplicateCase) {
		t.Fatalf("nothing ready: Select = %d, %v", i, err)
	}
	if err := tx.Send(ctx, 1); err != nil {
		t.Fatal(err)
	}
	// Ready: still refused, and the value stays.
	var got int
	r := rx.RecvCase(&got)
	if i, err := Select(ctx, r, r); i != -1 || !errors.Is(err, ErrDuplicateCase) {
		t.Fatalf("ready: Select = %d, %v", i, err)
	}
	// More cases than the pairwise check takes.
	many := []Case{r}
	for range 20 {
		_, other := New[int](0)
		many = append(many, other.RecvCase(nil))
	}
	if i, err := Select(ctx, append(many, r)...); i != -1 || !errors.Is(err, ErrDuplicateCase) {
		t.Fatalf("22 cases: Select = %d, %v", i, err)
	}
	if i, err := Select(ctx, many...); i != 0 || err != nil || got != 1 {
		t.Fatalf("distinct cases: Select = %d, %v, value %d", i, err, got)
	}
	// Two cases of one channel, each made by RecvCase, are fine, and the
	// channel works on.
	go func() { _ = tx.Send(context.Background(), 2) }()
	var a, b int
	if i, err := Select(ctx, rx.RecvCase(&a), rx.RecvCase(&b)); err != nil || a+b != 2 || (i == 0) != (a == 2) {
		t.Fatalf("two cases of one channel: Select = %d, %v, values %d %d", i, err, a, b)
	}
	go func() { _ = tx.Send(context.Background(), 3) }()
	if v, err := rx.Recv(ctx); v != 3 || err != nil {
		t.Fatalf("Recv after = %d, %v", v, err)
	}
}

// One Case in two Selects at once is refused like a Case given twice to
// one: the second Select returns ErrDuplicateCase at once and the first
// goes on unharmed. The second Select used to queue the Case's one waiter
// node a second time, which linked the channel's queue into a cycle; it
// then waited for its own context, and left the node queued for good.
func TestSelectRefusesACaseInUseByAnotherSelect(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	tx, rx := New[int](0)
	var got int
	k := rx.RecvCase(&got)
	first := make(chan error, 1)
	go func() {
		i, err := Select(ctx, k)
		if err == nil && (i != 0 || got != 1) {
			err = fmt.Errorf("first Select = %d with %d, want case 0 with 1", i, got)
		}
		first <- err
	}()
	waitQueued(t, tx.ch, 0, 1)
	short, cancelShort := context.WithTimeout(ctx, 100*time.Millisecond)
	defer cancelShort()
	if i, err := Select(short, k); i != -1 || !errors.Is(err, ErrDuplicateCase) {
		t.Fatalf("second Select = %d, %v; want -1, ErrDuplicateCase", i, err)
	}
	waitQueued(t, tx.ch, 0, 1)
	if err := tx.Send(ctx, 1); err != nil {
		t.Fatal(err)
	}
	if err := <-first; err != nil {
		t.Fatal(err)
	}
	waitQueued(t, tx.ch, 0, 0)
	// Free again once the first Select returned.
	go func() { _ = tx.Send(context.Background(), 2) }()
	if i, err := Select(ctx, k); i != 0 || err != nil || got != 2 {
		t.Fatalf("Select after = %d, %v, value %d", i, err, got)
	}
}

// A nil *Sender or *Receiver switches its case off, as a nil channel does
// in a select statement: its SendCase and RecvCase are nil Cases, which
// Select never picks. They used to be Cases around a nil end, on which
// Select crashed with a nil pointer dereference.
func TestSelectCaseOfANilEndIsNeverReady(t *testing.T) {
	var noTx *Sender[int]
	var noRx *Receiver[int]
	if k := noTx.SendCase(1); k != nil {
		t.Fatalf("SendCase of a nil Sender = %v, want a nil Case", k)
	}
	if k := noRx.RecvCase(nil); k != nil {
		t.Fatalf("RecvCase of a nil Receiver = %v, want a nil Case", k)
	}
	tx, rx := New[int](1)
	if err := tx.TrySend(4); err != nil {
		t.Fatal(err)
	}
	var got int
	for range 10 {
		i, err := Select(context.Background(), noTx.SendCase(1), noRx.RecvCase(&got), rx.RecvCase(&got))
		if i != 2 || err != nil || got != 4 {
			t.Fatalf("Select = %d, %v, value %d; want case 2 with 4", i, err, got)
		}
		if err := tx.TrySend(4); err != nil {
			t.Fatal(err)
		}
	}
}
