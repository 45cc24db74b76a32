package aio

import (
	"bytes"
	"context"
	"fmt"
	goruntime "runtime"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faio-go/faio/modules/runtime"
)

// On the portable backend a task that waits for its socket holds no
// goroutine but its coroutine's: 200 tasks blocked in Read add their 200
// coroutines and nothing more (a goroutine per wait, as before the
// readiness poller, adds 200 more), and each gets its own bytes once the
// peers write.
func TestPortableSocketWaitsHoldNoGoroutine(t *testing.T) {
	rt := newRuntime(t, runtime.Config{Workers: 2, IOBackend: runtime.BackendPortable})
	const conns = 200
	runTask(t, rt, func(ctx context.Context) error {
		clients := make([]*Conn, conns)
		servers := make([]*Conn, conns)
		for i := range conns {
			c, s, err := connPair(ctx, "tcp", "127.0.0.1:0")
			if err != nil {
				return err
			}
			defer c.Close(ctx)
			defer s.Close(ctx)
			clients[i], servers[i] = c, s
		}
		before := goruntime.NumGoroutine()
		var started atomic.Int32
		var hs []*runtime.JoinHandle[[]byte]
		for i := range conns {
			hs = append(hs, runtime.Spawn(ctx, func(ctx context.Context) ([]byte, error) {
				buf := make([]byte, 16)
				started.Add(1)
				n, err := servers[i].Read(ctx, buf)
				return buf[:n], err
			}))
		}
		for started.Load() < conns {
			if err := runtime.Yield(ctx); err != nil {
				return err
			}
		}
		// Let every reader get to its wait.
		for range 10 {
			if err := runtime.Yield(ctx); err != nil {
				return err
			}
		}
		if during := goruntime.NumGoroutine(); during-before > conns+conns/4 {
			return fmt.Errorf("%d goroutines with %d reads waiting, %d before: the waits hold goroutines besides their coroutines", during, conns, before)
		}
		for i, c := range clients {
			if _, err := c.Write(ctx, fmt.Appendf(nil, "conn %d", i)); err != nil {
				return err
			}
		}
		for i, h := range hs {
			got, err := h.Join(ctx)
			if err != nil {
				return err
			}
			if want := fmt.Appendf(nil, "conn %d", i); !bytes.Equal(got, want) {
				return fmt.Errorf("reader %d got %q, want %q", i, got, want)
			}
		}
		return nil
	})
}

// A connection outlives the poller of the runtime it was made on: once
// that runtime has closed, a task of another runtime reads and writes it
// as before (through the netpoller), instead of failing with EAGAIN.
func TestPortableConnOutlivesItsRuntime(t *testing.T) {
	cfg := runtime.Config{Workers: 2, IOBackend: runtime.BackendPortable}
	// rtB first: its cleanup's leak check then runs after rtA's has
	// stopped rtA's coroutines.
	rtB := newRuntime(t, cfg)
	rtA := newRuntime(t, cfg)
	var c, s *Conn
	runTask(t, rtB, func(ctx context.Context) error {
		var err error
		if c, s, err = connPair(ctx, "tcp", "127.0.0.1:0"); err != nil {
			return err
		}
		// A read from a task of rtB registers s with rtB's poller.
		if _, err := c.Write(ctx, []byte("one")); err != nil {
			return err
		}
		buf := make([]byte, 8)
		n, err := s.Read(ctx, buf)
		if err != nil || string(buf[:n]) != "one" {
			return fmt.Errorf("read %q, %v; want one", buf[:n], err)
		}
		return nil
	})
	if err := rtB.Close(); err != nil {
		t.Fatal(err)
	}
	runTask(t, rtA, func(ctx context.Context) error {
		defer c.Close(ctx)
		defer s.Close(ctx)
		h := runtime.Spawn(ctx, func(ctx context.Context) (string, error) {
			buf := make([]byte, 8)
			n, err := s.Read(ctx, buf) // waits: nothing sent yet
			return string(buf[:n]), err
		})
		if err := runtime.Sleep(ctx, 10*time.Millisecond); err != nil {
			return err
		}
		if _, err := c.Write(ctx, []byte("two")); err != nil {
			return err
		}
		got, err := h.Join(ctx)
		if err != nil || got != "two" {
			return fmt.Errorf("read %q, %v; want two", got, err)
		}
		return nil
	})
}
