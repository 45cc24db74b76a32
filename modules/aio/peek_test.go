package aio

import (
	"context"
	"errors"
	"fmt"
	"io"
	"syscall"
	"testing"
	"time"

	"github.com/faio-go/faio/modules/runtime"
)

// Peek shows the waiting bytes without taking them, waits for them as Read
// does, and tells a peer's close (io.EOF) and reset (ECONNRESET) apart
// from data; a cancelled Peek takes nothing either. On both backends, from
// a task and from a plain goroutine.
func TestPeek(t *testing.T) {
	forBackendsAndCallers(t, func(t *testing.T, backend runtime.Backend, inTask bool) {
		rt := newRuntime(t, runtime.Config{Workers: 2, IOBackend: backend})
		run := func(f func(ctx context.Context) error) {
			t.Helper()
			if inTask {
				runTask(t, rt, f)
				return
			}
			if err := f(goroutineCtx(rt)); err != nil {
				t.Fatal(err)
			}
		}
		run(peekKeepsTheBytes)
		run(peekWaitsForBytes)
		run(cancelledPeekTakesNothing)
		run(func(ctx context.Context) error { return peekSeesTheEnd(ctx, false) })
		run(func(ctx context.Context) error { return peekSeesTheEnd(ctx, true) })
	})
}

func peekKeepsTheBytes(ctx context.Context) error {
	client, server, err := connPair(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer client.Close(ctx)
	defer server.Close(ctx)
	if _, err := client.Write(ctx, []byte("abc")); err != nil {
		return err
	}
	buf := make([]byte, 2)
	for range 2 {
		if n, err := server.Peek(ctx, buf); n != 2 || err != nil || string(buf) != "ab" {
			return fmt.Errorf("Peek = %d %q, %v; want 2 \"ab\"", n, buf[:n], err)
		}
	}
	got := make([]byte, 3)
	if n, err := server.ReadFull(ctx, got); n != 3 || err != nil || string(got) != "abc" {
		return fmt.Errorf("ReadFull after Peek = %q, %v; want \"abc\"", got[:n], err)
	}
	if n, err := server.Peek(ctx, nil); n != 0 || err != nil {
		return fmt.Errorf("Peek of no bytes = %d, %v; want 0, nil at once", n, err)
	}
	return nil
}

func peekWaitsForBytes(ctx context.Context) error {
	client, server, err := connPair(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer client.Close(ctx)
	defer server.Close(ctx)
	type result struct {
		n   int
		err error
	}
	done := make(chan result, 1)
	buf := make([]byte, 8)
	go func() {
		n, err := server.Peek(ctx, buf)
		done <- result{n, err}
	}()
	select {
	case r := <-done:
		return fmt.Errorf("Peek returned before any byte came: %d, %v", r.n, r.err)
	case <-time.After(30 * time.Millisecond):
	}
	if _, err := client.Write(ctx, []byte("late")); err != nil {
		return err
	}
	select {
	case r := <-done:
		if r.n != 4 || r.err != nil || string(buf[:4]) != "late" {
			return fmt.Errorf("Peek = %d %q, %v; want 4 \"late\"", r.n, buf[:r.n], r.err)
		}
	case <-time.After(10 * time.Second):
		return errors.New("Peek did not return once bytes came")
	}
	got := make([]byte, 4)
	if _, err := server.ReadFull(ctx, got); err != nil || string(got) != "late" {
		return fmt.Errorf("ReadFull after Peek = %q, %v", got, err)
	}
	return nil
}

func cancelledPeekTakesNothing(ctx context.Context) error {
	client, server, err := connPair(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer client.Close(ctx)
	defer server.Close(ctx)
	cctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
	defer cancel()
	if n, err := server.Peek(cctx, make([]byte, 4)); n != 0 || !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("Peek under a deadline = %d, %v; want 0 and DeadlineExceeded", n, err)
	}
	if _, err := client.Write(ctx, []byte("kept")); err != nil {
		return err
	}
	got := make([]byte, 4)
	if _, err := server.ReadFull(ctx, got); err != nil || string(got) != "kept" {
		return fmt.Errorf("ReadFull after a cancelled Peek = %q, %v", got, err)
	}
	return nil
}

// peekSeesTheEnd: after a close, io.EOF; after a reset, ECONNRESET. Each
// with the Peek already waiting when the peer goes.
func peekSeesTheEnd(ctx context.Context, reset bool) error {
	client, server, err := connPair(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	defer server.Close(ctx)
	done := make(chan error, 1)
	go func() {
		n, err := server.Peek(ctx, make([]byte, 4))
		if n != 0 {
			err = fmt.Errorf("Peek got %d bytes from a peer that sent none", n)
		}
		done <- err
	}()
	time.Sleep(20 * time.Millisecond) // let it wait; it must not matter
	if reset {
		if err := client.SetLinger(0); err != nil {
			return err
		}
	}
	if err := client.Close(ctx); err != nil {
		return err
	}
	var got error
	select {
	case got = <-done:
	case <-time.After(10 * time.Second):
		return errors.New("Peek did not return after the peer went")
	}
	switch {
	case reset && !errors.Is(got, syscall.ECONNRESET):
		return fmt.Errorf("Peek after a reset: %v, want ECONNRESET", got)
	case !reset && got != io.EOF:
		return fmt.Errorf("Peek after a close: %v, want io.EOF", got)
	}
	return nil
}
