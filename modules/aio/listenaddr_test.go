package aio

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/faio-go/faio/modules/runtime"
)

// Listen and ListenUDP take the addresses package net takes, and bind
// what it binds: an unspecified host, 0.0.0.0 included, listens dual-stack
// on "tcp" and "udp" (faio listened on IPv4 alone, where net's listener
// takes [::1] too), and an empty address picks a port (faio refused it).
func TestListenAddressesAsNet(t *testing.T) {
	rt := newRuntime(t, runtime.Config{Workers: 1})
	ctx := goroutineCtx(rt)
	v6 := true
	if l, err := net.Listen("tcp6", "[::1]:0"); err != nil {
		v6 = false
	} else {
		l.Close()
	}
	// reach reports which of the loopback addresses reach a TCP
	// listener on port p.
	reach := func(p string) string {
		s := ""
		for _, host := range []string{"127.0.0.1", "::1"} {
			c, err := net.DialTimeout("tcp", net.JoinHostPort(host, p), time.Second)
			if err == nil {
				c.Close()
				s += " " + host
			}
		}
		return s
	}
	for _, tc := range []struct{ network, address string }{
		{"tcp", "0.0.0.0:0"}, {"tcp", "[::]:0"}, {"tcp", ":0"}, {"tcp", ""},
		{"tcp4", "0.0.0.0:0"}, {"tcp4", ""}, {"tcp6", "[::]:0"},
		{"tcp", "127.0.0.1:0"},
	} {
		if !v6 && tc.network == "tcp6" {
			continue
		}
		nl, nerr := net.Listen(tc.network, tc.address)
		fl, ferr := Listen(ctx, tc.network, tc.address)
		if (nerr == nil) != (ferr == nil) {
			t.Errorf("Listen(%q, %q): faio %v, net %v", tc.network, tc.address, ferr, nerr)
		}
		if nerr != nil || ferr != nil {
			if nl != nil {
				nl.Close()
			}
			if fl != nil {
				fl.Close(ctx)
			}
			continue
		}
		na, fa := nl.Addr().(*net.TCPAddr), fl.Addr().(*net.TCPAddr)
		_, np, _ := net.SplitHostPort(na.String())
		_, fp, _ := net.SplitHostPort(fa.String())
		if nr, fr := reach(np), reach(fp); na.IP.String() != fa.IP.String() || nr != fr {
			t.Errorf("Listen(%q, %q): faio bound %v, reached from%s; net bound %v, reached from%s", tc.network, tc.address, fa, fr, na, nr)
		}
		nl.Close()
		fl.Close(ctx)
	}
	for _, tc := range []struct{ network, address string }{
		{"udp", "0.0.0.0:0"}, {"udp", ""}, {"udp4", "0.0.0.0:0"},
	} {
		nc, nerr := net.ListenPacket(tc.network, tc.address)
		fc, ferr := ListenUDP(ctx, tc.network, tc.address)
		if nerr != nil || ferr != nil {
			t.Errorf("ListenUDP(%q, %q): faio %v, net %v", tc.network, tc.address, ferr, nerr)
			continue
		}
		na, fa := nc.LocalAddr().(*net.UDPAddr), fc.LocalAddr().(*net.UDPAddr)
		if na.IP.String() != fa.IP.String() {
			t.Errorf("ListenUDP(%q, %q): faio bound %v, net %v", tc.network, tc.address, fa, na)
		}
		nc.Close()
		fc.Close(ctx)
	}
}

// An unspecified host listens dual-stack or fails as net.Listen does: it
// falls back to IPv4 alone only where IPv6 cannot be used. Beside a tcp6
// listener on [::]:p, net.Listen("tcp", "0.0.0.0:p") fails with
// EADDRINUSE, and faio listened on 0.0.0.0:p alone (found by a reviewer).
func TestListenUnspecifiedFailsAsNetBesideATCP6Listener(t *testing.T) {
	rt := newRuntime(t, runtime.Config{Workers: 1})
	ctx := goroutineCtx(rt)
	for _, network := range []string{"tcp", "udp"} {
		p, release, ok := holdV6(network, "[::]:0")
		if !ok {
			t.Skip("no IPv6")
		}
		for _, host := range []string{"0.0.0.0", ""} {
			addr := net.JoinHostPort(host, p)
			_, bound, nerr, ferr := listenBoth(ctx, network, addr)
			if (nerr == nil) != (ferr == nil) {
				t.Errorf("%s %q beside a %s6 socket on [::]:%s: net %v; faio %v (bound %v)", network, addr, network, p, nerr, ferr, bound)
			}
		}
		release()
	}
}

// listenBoth listens on network ("tcp" or "udp") and addr with package net
// and with faio, closes both, and returns what each bound and its error.
func listenBoth(ctx context.Context, network, addr string) (nb, fb net.Addr, nerr, ferr error) {
	if network == "tcp" {
		if nl, err := net.Listen(network, addr); err == nil {
			nb = nl.Addr()
			nl.Close()
		} else {
			nerr = err
		}
		if fl, err := Listen(ctx, network, addr); err == nil {
			fb = fl.Addr()
			fl.Close(ctx)
		} else {
			ferr = err
		}
		return
	}
	if nc, err := net.ListenPacket(network, addr); err == nil {
		nb = nc.LocalAddr()
		nc.Close()
	} else {
		nerr = err
	}
	if fc, err := ListenUDP(ctx, network, addr); err == nil {
		fb = fc.LocalAddr()
		fc.Close(ctx)
	} else {
		ferr = err
	}
	return
}

// holdV6 binds addr, an IPv6 address, on network+"6" with package net,
// and returns its port and the function that lets it go; ok is false
// where IPv6 cannot be used.
func holdV6(network, addr string) (port string, release func(), ok bool) {
	if network == "tcp" {
		l, err := net.Listen("tcp6", addr)
		if err != nil {
			return "", nil, false
		}
		return portOf(l.Addr()), func() { l.Close() }, true
	}
	c, err := net.ListenPacket("udp6", addr)
	if err != nil {
		return "", nil, false
	}
	return portOf(c.LocalAddr()), func() { c.Close() }, true
}

func portOf(a net.Addr) string {
	_, p, _ := net.SplitHostPort(a.String())
	return p
}
