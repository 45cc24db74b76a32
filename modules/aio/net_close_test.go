package aio

import (
	"context"
	"errors"
	"fmt"
	"github.com/faio-go/faio/modules/runtime"
	"net"
	"net/http"
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// Close of a connection wakes a Read and a Write waiting in other tasks
// with net.ErrClosed, and Close of a listener wakes its Accept.
func TestTCPCloseWakesOperationsInFlight(t *testing.T) {
	rt := newRuntime(t, runtime.Config{Workers: 2})
	before := countFDs(t)
	within(t, 10*time.Second, "Close with operations in flight", func() {
		runTask(t, rt, func(ctx context.Context) error {
			l, err := Listen(ctx, "tcp", "127.0.0.1:0")
			if err != nil {
				return err
			}
			client, err := Dial(ctx, "tcp", l.Addr().String())
			if err != nil {
				return err
			}
			server, err := l.Accept(ctx)
			if err != nil {
				return err
			}
			defer server.Close(ctx)
			accept := runtime.Spawn(ctx, func(ctx context.Context) (*Conn, error) { return l.Accept(ctx) })
			read := runtime.Spawn(ctx, func(ctx context.Context) (int, error) { return client.Read(ctx, make([]byte, 16)) })
			// Nobody reads the server side: this write fills the buffers
			// and waits.
			write := runtime.Spawn(ctx, func(ctx context.Context) (int, error) { return client.Write(ctx, make([]byte, 64<<20)) })
			if err := runtime.Sleep(ctx, 20*time.Millisecond); err != nil {
				return err
			}
			if err := client.Close(ctx); err != nil {
				return fmt.Errorf("Close: %v", err)
			}
			if err := l.Close(ctx); err != nil {
				return fmt.Errorf("listener Close: %v", err)
			}
			if _, err := read.Join(ctx); !errors.Is(err, net.ErrClosed) {
				return fmt.Errorf("Read across Close = %v", err)
			}
			if n, err := write.Join(ctx); !errors.Is(err, net.ErrClosed) || n >= 64<<20 {
				return fmt.Errorf("Write across Close = %d, %v", n, err)
			}
			if _, err := accept.Join(ctx); !errors.Is(err, net.ErrClosed) {
				return fmt.Errorf("Accept across Close = %v", err)
			}
			for what, err := range map[string]error{
				"Close":          client.Close(ctx),
				"listener Close": l.Close(ctx),
				"SetNoDelay":     client.SetNoDelay(true),
				"CloseWrite":     client.CloseWrite(ctx),
			} {
				if !errors.Is(err, net.ErrClosed) {
					return fmt.Errorf("%s after Close = %v", what, err)
				}
			}
			if _, err := client.Write(ctx, []byte("x")); !errors.Is(err, net.ErrClosed) {
				return fmt.Errorf("Write after Close = %v", err)
			}
			if _, err := l.Accept(ctx); !errors.Is(err, net.ErrClosed) {
				return fmt.Errorf("Accept after Close = %v", err)
			}
			return nil
		})
	})
	if after := countFDs(t); after != before {
		t.Fatalf("%d descriptors before, %d after", before, after)
	}
}

// Stress: connections closed while readers and writers run in other tasks.
// Every operation ends with data, io.EOF or net.ErrClosed (nothing else),
// every Close returns, and no descriptor is left behind.
func TestStressTCPCloseRacesIO(t *testing.T) {
	const rounds = 200
	rt := newRuntime(t, runtime.Config{Workers: 2})
	before := countFDs(t)
	var closedSeen, dataSeen atomic.Int64
	runTask(t, rt, func(ctx context.Context) error {
		l, err := Listen(ctx, "tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		defer l.Close(ctx)
		server := runtime.Spawn(ctx, func(ctx context.Context) (int, error) { return 0, echo(ctx, l) })
		defer server.Join(ctx)
		defer l.Close(ctx)
		for r := range rounds {
			c, err := Dial(ctx, "tcp", l.Addr().String())
			if err != nil {
				return err
			}
			var hs []*runtime.JoinHandle[int]
			for k := range 4 {
				hs = append(hs, runtime.Spawn(ctx, func(ctx context.Context) (int, error) {
					buf := make([]byte, 1024)
					for {
						var err error
						if k%2 == 0 {
							_, err = c.Write(ctx, buf)
						} else {
							_, err = c.Read(ctx, buf)
						}
						switch {
						case err == nil:
							dataSeen.Add(1)
						case errors.Is(err, net.ErrClosed):
							closedSeen.Add(1)
							return 0, nil
						default:
							return 0, fmt.Errorf("round %d: %v", r, err)
						}
					}
				}))
			}
			if err := runtime.Sleep(ctx, time.Duration(r%3)*time.Millisecond); err != nil {
				return err
			}
			if err := c.Close(ctx); err != nil {
				return err
			}
			if err := joinAll(ctx, hs); err != nil {
				return err
			}
		}
		return nil
	})
	if closedSeen.Load() != int64(4*rounds) {
		t.Fatalf("%d operations saw Close, want %d", closedSeen.Load(), 4*rounds)
	}
	if after := countFDs(t); after != before {
		t.Fatalf("%d descriptors before, %d after", before, after)
	}
	t.Logf("%d transfers, %d closes seen", dataSeen.Load(), closedSeen.Load())
}

// Close of the runtime while reads, accepts and file I/O are in flight
// returns, and every descriptor those tasks opened is closed by their
// deferred Close calls, which run with cancelled contexts.
func TestRuntimeCloseWithIOInFlightLeaksNoFD(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	// Package net opens its poller's descriptors on first use: do that
	// before counting.
	if l, err := net.Listen("tcp", "127.0.0.1:0"); err == nil {
		l.Close()
	}
	before := countFDs(t)
	rt, err := runtime.New(runtime.Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	started := make(chan struct{}, 64)
	finished := make(chan error, 1)
	go func() {
		_, err := runtime.BlockOn(rt, ioInFlight(started))
		finished <- err
	}()
	for range 23 {
		<-started
	}
	time.Sleep(10 * time.Millisecond)
	within(t, 10*time.Second, "Close with I/O in flight", func() {
		if err := rt.Close(); err != nil {
			t.Error(err)
		}
	})
	if err := <-finished; !errors.Is(err, runtime.ErrClosed) {
		t.Fatalf("BlockOn = %v, want ErrClosed", err)
	}
	goleak.VerifyNone(t, ignore)
	if after := countFDs(t); after != before {
		t.Fatalf("%d descriptors before, %d after Close", before, after)
	}
}

// ioInFlight opens sockets and a file and leaves 23 operations waiting on
// them, signalling started for each.
func ioInFlight(started chan<- struct{}) func(ctx context.Context) (int, error) {
	return func(ctx context.Context) (int, error) {
		l, err := Listen(ctx, "tcp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		defer l.Close(ctx)
		u, err := ListenUDP(ctx, "udp", "127.0.0.1:0")
		if err != nil {
			return 0, err
		}
		defer u.Close(ctx)
		runtime.Spawn(ctx, func(ctx context.Context) (int, error) {
			started <- struct{}{}
			_, _, err := u.ReadFrom(ctx, make([]byte, 10))
			return 0, err
		})
		for range 10 {
			c, err := Dial(ctx, "tcp", l.Addr().String())
			if err != nil {
				return 0, err
			}
			s, err := l.Accept(ctx)
			if err != nil {
				return 0, err
			}
			for _, conn := range []*Conn{c, s} {
				runtime.Spawn(ctx, func(ctx context.Context) (int, error) {
					defer conn.Close(ctx)
					started <- struct{}{}
					return conn.Read(ctx, make([]byte, 10))
				})
			}
		}
		runtime.Spawn(ctx, func(ctx context.Context) (int, error) {
			f, err := Open(ctx, "/proc/self/status")
			if err != nil {
				return 0, err
			}
			defer f.Close(ctx)
			started <- struct{}{}
			for {
				if _, err := f.ReadAt(ctx, make([]byte, 100), 0); err != nil {
					return 0, err
				}
			}
		})
		started <- struct{}{}
		_, err = l.Accept(ctx)
		return 0, err
	}
}

// A read or write of no bytes does nothing, but after Close it fails with
// net.ErrClosed, as package net's does (its zero-length Read and Write take
// the descriptor's lock first), on every kind of socket and every method.
func TestSocketTransfersOfNoBytesAfterClose(t *testing.T) {
	forBackendsAndCallers(t, func(t *testing.T, backend runtime.Backend, inTask bool) {
		rt := newRuntime(t, runtime.Config{Workers: 2, IOBackend: backend})
		check := func(ctx context.Context) error {
			client, server, err := connPair(ctx, "unix", "")
			if err != nil {
				return err
			}
			defer server.Close(ctx)
			u, err := DialUDP(ctx, "udp", "127.0.0.1:9")
			if err != nil {
				client.Close(ctx)
				return err
			}
			calls := map[string]func() error{
				"Read":          func() error { _, err := client.Read(ctx, nil); return err },
				"Write":         func() error { _, err := client.Write(ctx, nil); return err },
				"Peek":          func() error { _, err := client.Peek(ctx, nil); return err },
				"ReadFull":      func() error { _, err := client.ReadFull(ctx, nil); return err },
				"WriteZC":       func() error { _, err := client.WriteZC(ctx, nil); return err },
				"Readv":         func() error { _, err := client.Readv(ctx, [][]byte{nil, {}}); return err },
				"Writev":        func() error { _, err := client.Writev(ctx, nil); return err },
				"NetConn.Read":  func() error { _, err := client.NetConn().Read(nil); return err },
				"NetConn.Write": func() error { _, err := client.NetConn().Write(nil); return err },
				"UDPConn.Read":  func() error { _, err := u.Read(ctx, nil); return err },
				"UDPConn.Write": func() error { _, err := u.Write(ctx, nil); return err },
			}
			for what, call := range calls {
				if err := call(); err != nil {
					return fmt.Errorf("%s of no bytes before Close = %v", what, err)
				}
			}
			client.Close(ctx)
			u.Close(ctx)
			// ReadFrom of no bytes waits for a datagram (and takes it) until
			// then, as net.UDPConn's does.
			calls["UDPConn.ReadFrom"] = func() error { _, _, err := u.ReadFrom(ctx, nil); return err }
			for what, call := range calls {
				var oe *net.OpError
				if err := call(); !errors.Is(err, net.ErrClosed) || !errors.As(err, &oe) {
					return fmt.Errorf("%s of no bytes after Close = %v, want a *net.OpError matching net.ErrClosed", what, err)
				}
			}
			return nil
		}
		if inTask {
			runTask(t, rt, check)
		} else if err := check(goroutineCtx(rt)); err != nil {
			t.Fatal(err)
		}
	})
}

// Close of the runtime ends the operations of the net.Listener,
// net.Conn and net.PacketConn adapters that tasks are waiting in, though
// they run on the adapters' own contexts, not the tasks': http.Server.Serve
// in a task returns, and the deferred Closes after it run. Close waited
// for them forever before.
func TestRuntimeCloseEndsAdapterOperations(t *testing.T) {
	ignore := goleak.IgnoreCurrent()
	before := countFDs(t)
	rt, err := runtime.New(runtime.Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	gctx := goroutineCtx(rt)
	ln, err := Listen(gctx, "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	l := ln.NetListener()
	client, err := Dial(gctx, "tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close(context.Background())
	server, err := ln.Accept(gctx)
	if err != nil {
		t.Fatal(err)
	}
	u, err := ListenUDP(gctx, "udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var started atomic.Int32
	waits := map[string]func() error{
		"http.Server.Serve": func() error {
			defer l.Close()
			return (&http.Server{}).Serve(l)
		},
		"NetConn.Read": func() error {
			c := server.NetConn()
			defer c.Close()
			_, err := c.Read(make([]byte, 16))
			return err
		},
		"NetPacketConn.ReadFrom": func() error {
			c := u.NetPacketConn()
			defer c.Close()
			_, _, err := c.ReadFrom(make([]byte, 16))
			return err
		},
	}
	handles := map[string]*runtime.JoinHandle[error]{}
	for name, wait := range waits {
		handles[name] = runtime.SpawnOn(rt, func(ctx context.Context) (error, error) {
			started.Add(1)
			return wait(), nil
		})
	}
	for started.Load() < int32(len(waits)) {
		time.Sleep(time.Millisecond)
	}
	time.Sleep(20 * time.Millisecond) // into the waits
	within(t, 10*time.Second, "Close with tasks in adapter operations", func() {
		if err := rt.Close(); err != nil {
			t.Error(err)
		}
	})
	for name, h := range handles {
		got, err := h.Join(context.Background())
		if err != nil || !errors.Is(got, runtime.ErrClosed) {
			t.Errorf("%s during Close = %v (task: %v), want an error matching runtime.ErrClosed", name, got, err)
		}
	}
	client.Close(context.Background())
	goleak.VerifyNone(t, ignore)
	if after := countFDs(t); after != before {
		t.Fatalf("%d descriptors before, %d after Close", before, after)
	}
}
