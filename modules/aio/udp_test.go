package aio

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"github.com/faio-go/faio/modules/runtime"
	"math/rand/v2"
	"net"
	"net/netip"
	"testing"
	"time"
)

// udpEcho answers every datagram to its sender until u is closed.
func udpEcho(ctx context.Context, u *UDPConn) error {
	buf := make([]byte, 64<<10)
	for {
		n, from, err := u.ReadFrom(ctx, buf)
		if errors.Is(err, net.ErrClosed) {
			return nil
		}
		if err != nil {
			return err
		}
		if _, err := u.WriteTo(ctx, buf[:n], from); err != nil {
			return err
		}
	}
}

// Round trips of random sizes over IPv4 and IPv6 loopback, from connected
// (DialUDP) and unconnected (ListenUDP) clients; the sender address
// ReadFrom reports is the server's.
func TestUDPRoundTrips(t *testing.T) {
	const trips = 500
	pattern := randomBytes(64<<10, 9)
	rt := newRuntime(t, runtime.Config{Workers: 2})
	for _, c := range []struct{ network, addr, clientAddr string }{
		{"udp", "127.0.0.1:0", "127.0.0.1:0"},
		{"udp4", "127.0.0.1:0", "127.0.0.1:0"},
		{"udp6", "[::1]:0", "[::1]:0"},
	} {
		runTask(t, rt, func(ctx context.Context) error {
			srv, err := ListenUDP(ctx, c.network, c.addr)
			if err != nil {
				return err
			}
			server := runtime.Spawn(ctx, func(ctx context.Context) (int, error) { return 0, udpEcho(ctx, srv) })
			srvAddr := srv.LocalAddr().(*net.UDPAddr).AddrPort()

			dialed, err := DialUDP(ctx, c.network, srvAddr.String())
			if err != nil {
				return err
			}
			if dialed.RemoteAddr().String() != srvAddr.String() {
				return fmt.Errorf("DialUDP remote %v, want %v", dialed.RemoteAddr(), srvAddr)
			}
			rng := rand.New(rand.NewPCG(3, 4))
			got := make([]byte, 64<<10)
			for i := range trips {
				n := logUniformSize(rng, 8<<10)
				msg := pattern[i : i+n]
				if k, err := dialed.Write(ctx, msg); err != nil || k != n {
					return fmt.Errorf("Write = %d, %v", k, err)
				}
				k, err := dialed.Read(ctx, got)
				if err != nil || !bytes.Equal(got[:k], msg) {
					return fmt.Errorf("%s trip %d: Read = %d bytes, %v, want %d", c.network, i, k, err, n)
				}
			}
			if _, err := dialed.WriteTo(ctx, []byte("x"), srvAddr); !errors.Is(err, net.ErrWriteToConnected) {
				return fmt.Errorf("WriteTo on a connected socket = %v", err)
			}

			free, err := ListenUDP(ctx, c.network, c.clientAddr)
			if err != nil {
				return err
			}
			if free.RemoteAddr() != nil {
				return fmt.Errorf("ListenUDP has a remote address %v", free.RemoteAddr())
			}
			for i := range trips {
				n := logUniformSize(rng, 8<<10)
				msg := pattern[i : i+n]
				if _, err := free.WriteTo(ctx, msg, srvAddr); err != nil {
					return err
				}
				k, from, err := free.ReadFrom(ctx, got)
				if err != nil || from != srvAddr || !bytes.Equal(got[:k], msg) {
					return fmt.Errorf("%s trip %d: ReadFrom = %d bytes from %v, %v", c.network, i, k, from, err)
				}
			}
			// A datagram longer than the buffer is truncated to it.
			if _, err := free.WriteTo(ctx, pattern[:1000], srvAddr); err != nil {
				return err
			}
			if k, _, err := free.ReadFrom(ctx, got[:10]); err != nil || k != 10 || !bytes.Equal(got[:10], pattern[:10]) {
				return fmt.Errorf("truncated ReadFrom = %d, %v", k, err)
			}
			for _, u := range []*UDPConn{dialed, free, srv} {
				if err := u.Close(ctx); err != nil {
					return err
				}
			}
			_, err = server.Join(ctx)
			return err
		})
	}
}

// WriteTo on an IPv4 socket accepts IPv4-mapped IPv6 addresses. (The
// reverse, IPv4 addresses on a dual-stack socket, needs a wildcard bind,
// which these tests do not make: they use loopback addresses only.)
func TestUDPMappedAddress(t *testing.T) {
	rt := newRuntime(t, runtime.Config{Workers: 1})
	runTask(t, rt, func(ctx context.Context) error {
		srv, err := ListenUDP(ctx, "udp4", "127.0.0.1:0")
		if err != nil {
			return err
		}
		defer srv.Close(ctx)
		port := srv.LocalAddr().(*net.UDPAddr).Port
		cl, err := ListenUDP(ctx, "udp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		defer cl.Close(ctx)
		to := netip.AddrPortFrom(netip.MustParseAddr("::ffff:127.0.0.1"), uint16(port))
		if _, err := cl.WriteTo(ctx, []byte("hi"), to); err != nil {
			return fmt.Errorf("WriteTo a mapped address from IPv4: %v", err)
		}
		buf := make([]byte, 8)
		n, from, err := srv.ReadFrom(ctx, buf)
		if err != nil || string(buf[:n]) != "hi" || from != cl.LocalAddr().(*net.UDPAddr).AddrPort() {
			return fmt.Errorf("ReadFrom = %q from %v, %v", buf[:n], from, err)
		}
		return nil
	})
}

// Close of a UDP socket wakes a ReadFrom waiting in another task with
// net.ErrClosed; a Read past its deadline returns context.DeadlineExceeded
// and leaves the socket usable.
func TestUDPCloseAndDeadline(t *testing.T) {
	rt := newRuntime(t, runtime.Config{Workers: 2})
	within(t, 10*time.Second, "UDP Close and deadline", func() {
		runTask(t, rt, func(ctx context.Context) error {
			u, err := ListenUDP(ctx, "udp4", "127.0.0.1:0")
			if err != nil {
				return err
			}
			buf := make([]byte, 16)
			dctx, cancel := context.WithTimeout(ctx, 5*time.Millisecond)
			_, _, err = u.ReadFrom(dctx, buf)
			cancel()
			if !errors.Is(err, context.DeadlineExceeded) {
				return fmt.Errorf("ReadFrom past deadline = %v", err)
			}
			self := u.LocalAddr().(*net.UDPAddr).AddrPort()
			if _, err := u.WriteTo(ctx, []byte("me"), self); err != nil {
				return err
			}
			if n, from, err := u.ReadFrom(ctx, buf); err != nil || string(buf[:n]) != "me" || from != self {
				return fmt.Errorf("ReadFrom after a deadline = %q from %v, %v", buf[:n], from, err)
			}
			reader := runtime.Spawn(ctx, func(ctx context.Context) (int, error) {
				n, _, err := u.ReadFrom(ctx, buf)
				return n, err
			})
			if err := runtime.Sleep(ctx, 10*time.Millisecond); err != nil {
				return err
			}
			if err := u.Close(ctx); err != nil {
				return err
			}
			if _, err := reader.Join(ctx); !errors.Is(err, net.ErrClosed) {
				return fmt.Errorf("ReadFrom across Close = %v", err)
			}
			// A connected socket's Read, likewise.
			d, err := DialUDP(ctx, "udp", self.String())
			if err != nil {
				return err
			}
			dreader := runtime.Spawn(ctx, func(ctx context.Context) (int, error) { return d.Read(ctx, make([]byte, 8)) })
			if err := runtime.Sleep(ctx, 10*time.Millisecond); err != nil {
				return err
			}
			if err := d.Close(ctx); err != nil {
				return err
			}
			if _, err := dreader.Join(ctx); !errors.Is(err, net.ErrClosed) {
				return fmt.Errorf("Read across Close = %v", err)
			}
			if _, err := u.WriteTo(ctx, []byte("x"), self); !errors.Is(err, net.ErrClosed) {
				return fmt.Errorf("WriteTo after Close = %v", err)
			}
			if err := u.Close(ctx); !errors.Is(err, net.ErrClosed) {
				return fmt.Errorf("second Close = %v", err)
			}
			return nil
		})
	})
}
