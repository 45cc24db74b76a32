package channel

import (
	"context"
	"errors"
	"testing"
)

// TrySelect is a select statement with a default branch: it performs one
// ready case, or nothing.
func TestTrySelect(t *testing.T) {
	ctx := context.Background()
	txA, rxA := New[int](1)
	txB, rxB := New[string](0)
	var a int
	var b string

	// Nothing ready: nothing happens, on either side.
	if i, err := TrySelect(rxA.RecvCase(&a), rxB.RecvCase(&b), nil); i != -1 || !errors.Is(err, ErrNoneReady) {
		t.Fatalf("TrySelect with nothing ready = %d, %v", i, err)
	}
	if err := txA.TrySend(1); err != nil {
		t.Fatal(err)
	}
	if i, err := TrySelect(txA.SendCase(2), txB.SendCase("x")); i != -1 || !errors.Is(err, ErrNoneReady) {
		t.Fatalf("TrySelect with full buffers = %d, %v", i, err)
	}
	if txA.Len() != 1 {
		t.Fatalf("a TrySelect that found nothing ready sent: Len = %d", txA.Len())
	}

	// A buffered value is ready.
	if i, err := TrySelect(rxA.RecvCase(&a), rxB.RecvCase(&b)); i != 0 || err != nil || a != 1 {
		t.Fatalf("TrySelect = %d, %v, a = %d", i, err, a)
	}

	// A receiver waiting on a rendezvous channel makes a send case ready.
	got := make(chan string, 1)
	go func() {
		v, err := rxB.Recv(ctx)
		if err != nil {
			v = err.Error()
		}
		got <- v
	}()
	waitQueued(t, txB.ch, 0, 1)
	if i, err := TrySelect(rxA.RecvCase(&a), txB.SendCase("hi")); i != 1 || err != nil {
		t.Fatalf("TrySelect with a waiting receiver = %d, %v", i, err)
	}
	if v := <-got; v != "hi" {
		t.Fatalf("the receiver got %q", v)
	}

	// A closed channel is ready, with its error.
	txA.Close()
	if i, err := TrySelect(rxA.RecvCase(&a)); i != 0 || !errors.Is(err, ErrClosed) {
		t.Fatalf("TrySelect on a closed channel = %d, %v", i, err)
	}

	// The same Case twice is refused, and nothing happens.
	c := rxB.RecvCase(&b)
	if i, err := TrySelect(c, c); i != -1 || !errors.Is(err, ErrDuplicateCase) {
		t.Fatalf("TrySelect with a Case twice = %d, %v", i, err)
	}
	// Released again: the Case is usable afterwards.
	if i, err := TrySelect(c); i != -1 || !errors.Is(err, ErrNoneReady) {
		t.Fatalf("TrySelect after the refusal = %d, %v", i, err)
	}
	if i, err := TrySelect(); i != -1 || !errors.Is(err, ErrNoneReady) {
		t.Fatalf("TrySelect() = %d, %v", i, err)
	}
}

// Like Select, TrySelect picks among ready cases at random, and two cases
// of one channel share its lock without deadlocking.
func TestTrySelectIsFairAmongReadyCases(t *testing.T) {
	const rounds = 3000
	tx, rx := New[int](2 * rounds)
	for j := range 2 * rounds {
		if err := tx.TrySend(j); err != nil {
			t.Fatal(err)
		}
	}
	other, otherRx := New[int](rounds)
	for j := range rounds {
		if err := other.TrySend(j); err != nil {
			t.Fatal(err)
		}
	}
	cases := []Case{rx.RecvCase(nil), rx.RecvCase(nil), otherRx.RecvCase(nil)}
	counts := make([]int, len(cases))
	for range rounds {
		i, err := TrySelect(cases...)
		if err != nil {
			t.Fatal(err)
		}
		counts[i]++
	}
	// Each case is expected rounds/3 = 1000 times; 700 is over 11
	// standard deviations away.
	for i, n := range counts {
		if n < 700 {
			t.Fatalf("case %d chosen %d times out of %d: %v", i, n, rounds, counts)
		}
	}
}
