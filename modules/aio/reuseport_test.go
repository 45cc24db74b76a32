package aio

import (
	"context"
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/faio-go/faio/modules/runtime"
)

// Two listeners with ReusePort share one port and both get connections
// (the kernel picks one by a hash of the client's address: of 64 clients,
// each listener gets some unless the hash is broken); without ReusePort the
// second Listen fails with EADDRINUSE.
func TestListenReusePort(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend.String(), func(t *testing.T) {
			rt := newRuntime(t, runtime.Config{Workers: 2, IOBackend: backend})
			before := fdTargets(t)
			ctx := goroutineCtx(rt)
			lc := ListenConfig{ReusePort: true, Backlog: 128}
			l1, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := l1.Addr().String()
			if l, err := Listen(ctx, "tcp", addr); !errors.Is(err, syscall.EADDRINUSE) {
				if err == nil {
					l.Close(ctx)
				}
				t.Fatalf("Listen without ReusePort on a taken port = %v, want EADDRINUSE", err)
			}
			l2, err := lc.Listen(ctx, "tcp", addr)
			if err != nil {
				t.Fatalf("second Listen with ReusePort: %v", err)
			}
			const clients = 64
			var accepted [2]atomic.Int32
			var conns sync.WaitGroup
			conns.Add(clients)
			servers := make([]*runtime.JoinHandle[int], 2)
			for i, l := range []*Listener{l1, l2} {
				servers[i] = runtime.SpawnOn(rt, func(ctx context.Context) (int, error) {
					for {
						c, err := l.Accept(ctx)
						if errors.Is(err, net.ErrClosed) {
							return 0, nil
						} else if err != nil {
							return 0, err
						}
						accepted[i].Add(1)
						// Tell the client who answered, then close.
						_, err = c.Write(ctx, []byte{byte('0' + i)})
						c.Close(ctx)
						conns.Done()
						if err != nil {
							return 0, err
						}
					}
				})
			}
			within(t, 20*time.Second, "64 clients", func() {
				for range clients {
					c, err := Dial(ctx, "tcp", addr)
					if err != nil {
						t.Error(err)
						conns.Done()
						continue
					}
					b := make([]byte, 1)
					if _, err := c.ReadFull(ctx, b); err != nil {
						t.Error(err)
					}
					c.Close(ctx)
				}
				conns.Wait()
			})
			for i, l := range []*Listener{l1, l2} {
				if err := l.Close(ctx); err != nil {
					t.Fatal(err)
				}
				if _, err := servers[i].Join(ctx); err != nil {
					t.Fatal(err)
				}
			}
			a, b := accepted[0].Load(), accepted[1].Load()
			if a+b != clients || a == 0 || b == 0 {
				t.Fatalf("the listeners accepted %d and %d of %d connections", a, b, clients)
			}
			checkNoFDLeak(t, before)
		})
	}
}

// ReusePort on UDP: a second socket binds the port only with it. A
// negative Backlog is refused; ReusePort is refused on Unix sockets.
func TestListenConfigUDPAndErrors(t *testing.T) {
	rt := newRuntime(t, runtime.Config{Workers: 1})
	runTask(t, rt, func(ctx context.Context) error {
		lc := ListenConfig{ReusePort: true}
		u1, err := lc.ListenUDP(ctx, "udp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		defer u1.Close(ctx)
		addr := u1.LocalAddr().String()
		if u, err := ListenUDP(ctx, "udp", addr); !errors.Is(err, syscall.EADDRINUSE) {
			if err == nil {
				u.Close(ctx)
			}
			return fmt.Errorf("ListenUDP without ReusePort on a taken port = %v", err)
		}
		u2, err := lc.ListenUDP(ctx, "udp", addr)
		if err != nil {
			return fmt.Errorf("second ListenUDP with ReusePort: %v", err)
		}
		defer u2.Close(ctx)

		if l, err := (ListenConfig{Backlog: -1}).Listen(ctx, "tcp", "127.0.0.1:0"); !errors.Is(err, errNegativeBacklog) {
			if err == nil {
				l.Close(ctx)
			}
			return fmt.Errorf("Listen with Backlog -1 = %v", err)
		}
		l, err := (ListenConfig{Backlog: 1}).Listen(ctx, "tcp", "127.0.0.1:0")
		if err != nil {
			return fmt.Errorf("Listen with Backlog 1: %v", err)
		}
		l.Close(ctx)
		if l, err := lc.Listen(ctx, "unix", "@faio-reuseport-unix"); !errors.Is(err, syscall.EOPNOTSUPP) {
			if err == nil {
				l.Close(ctx)
			}
			return fmt.Errorf("Listen(unix) with ReusePort = %v, want EOPNOTSUPP", err)
		}
		return nil
	})
}
