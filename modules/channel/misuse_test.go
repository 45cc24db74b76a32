package channel

import (
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"
)

// recovered runs f and returns what it panicked with, as a string ("" if
// it did not panic).
func recovered(f func()) (msg string) {
	defer func() {
		if r := recover(); r != nil {
			msg = strings.TrimPrefix(errorString(r), "runtime error: ")
		}
	}()
	f()
	return ""
}

func errorString(r any) string {
	if err, ok := r.(error); ok {
		return err.Error()
	}
	if s, ok := r.(string); ok {
		return s
	}
	return "?"
}

// A nil or zero end is bad input. Every operation on one panics with a
// message naming the operation and the kind of end, where it used to die
// on a nil dereference (Send, Recv, Close...) or, for a zero Receiver
// given to Select, inside Select. Len and Cap report 0, as len and cap of
// a nil Go channel do; a nil end's SendCase or RecvCase is still the nil
// Case that switches a Select case off.
func TestNilAndZeroEndsPanicNamingTheMisuse(t *testing.T) {
	// Bounds the test only if an operation waits instead of panicking.
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	for _, end := range []struct {
		name string
		tx   *Sender[int]
		rx   *Receiver[int]
	}{{"nil", nil, nil}, {"zero", new(Sender[int]), new(Receiver[int])}} {
		type op struct {
			side, name string
			f          func()
		}
		ops := []op{
			{"Sender", "Send", func() { _ = end.tx.Send(ctx, 1) }},
			{"Sender", "TrySend", func() { _ = end.tx.TrySend(1) }},
			{"Sender", "Clone", func() { end.tx.Clone() }},
			{"Sender", "Close", func() { _ = end.tx.Close() }},
			{"Receiver", "Recv", func() { _, _ = end.rx.Recv(ctx) }},
			{"Receiver", "TryRecv", func() { _, _ = end.rx.TryRecv() }},
			{"Receiver", "Recv", func() {
				for range end.rx.All(ctx) {
				}
			}},
			{"Receiver", "Clone", func() { end.rx.Clone() }},
			{"Receiver", "Close", func() { _ = end.rx.Close() }},
		}
		if end.name == "zero" {
			ops = append(ops,
				op{"Sender", "SendCase", func() { end.tx.SendCase(1) }},
				op{"Receiver", "RecvCase", func() { end.rx.RecvCase(nil) }})
		}
		for _, o := range ops {
			want := "faio/channel: " + o.name + " on a nil or zero " + o.side + " (ends come from New and Clone)"
			if got := recovered(o.f); got != want {
				t.Errorf("%s %s: %s panicked with %q, want %q", end.name, o.side, o.name, got, want)
			}
		}
		if end.tx.Len() != 0 || end.tx.Cap() != 0 || end.rx.Len() != 0 || end.rx.Cap() != 0 {
			t.Errorf("%s ends: Len and Cap are not 0", end.name)
		}
	}
	var nilTx *Sender[int]
	var nilRx *Receiver[int]
	if nilTx.SendCase(1) != nil || nilRx.RecvCase(nil) != nil {
		t.Error("a nil end's Case is not the nil Case")
	}
}

// A copy of an end shares the channel but not the end's closed flag, so
// closing both counted the side down twice: after the original's Close
// made the count 0, the copy's took it to -1, and a receiver then waited
// for good on a channel with no Sender left. A Close that finds its side
// already closed now counts nothing (and vet reports the copy itself).
func TestClosingACopiedEndDoesNotCountTwice(t *testing.T) {
	tx, rx := New[int](1)
	cp := new(Sender[int])
	// cp := *tx, which vet reports since ends carry a noCopy.
	reflect.ValueOf(cp).Elem().Set(reflect.ValueOf(tx).Elem())
	if err := tx.Close(); err != nil {
		t.Fatal(err)
	}
	if err := cp.Close(); !errors.Is(err, ErrClosed) {
		t.Errorf("Close of a copy of a closed Sender = %v, want an error wrapping ErrClosed", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := rx.Recv(ctx); !errors.Is(err, ErrClosed) {
		t.Fatalf("Recv after every Sender closed = %v, want ErrClosed at once", err)
	}

	tx, rx = New[int](1)
	cr := new(Receiver[int])
	reflect.ValueOf(cr).Elem().Set(reflect.ValueOf(rx).Elem())
	if err := rx.Close(); err != nil {
		t.Fatal(err)
	}
	if err := cr.Close(); !errors.Is(err, ErrClosed) {
		t.Errorf("Close of a copy of a closed Receiver = %v, want an error wrapping ErrClosed", err)
	}
	if err := tx.Send(ctx, 1); !errors.Is(err, ErrClosed) {
		t.Fatalf("Send after every Receiver closed = %v, want a *SendError", err)
	}
}
