package aio

import (
	"io"
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
		var v6 io.Closer
		var p string
		if network == "tcp" {
			l, err := net.Listen("tcp6", "[::]:0")
			if err != nil {
				t.Skip("no IPv6")
			}
			v6, p = l, portOf(l.Addr())
		} else {
			c, err := net.ListenPacket("udp6", "[::]:0")
			if err != nil {
				t.Skip("no IPv6")
			}
			v6, p = c, portOf(c.LocalAddr())
		}
		for _, host := range []string{"0.0.0.0", ""} {
			addr := net.JoinHostPort(host, p)
			var nerr, ferr error
			var bound net.Addr
			if network == "tcp" {
				var nl net.Listener
				if nl, nerr = net.Listen(network, addr); nl != nil {
					nl.Close()
				}
				var fl *Listener
				if fl, ferr = Listen(ctx, network, addr); fl != nil {
					bound = fl.Addr()
					fl.Close(ctx)
				}
			} else {
				var nc net.PacketConn
				if nc, nerr = net.ListenPacket(network, addr); nc != nil {
					nc.Close()
				}
				var fc *UDPConn
				if fc, ferr = ListenUDP(ctx, network, addr); fc != nil {
					bound = fc.LocalAddr()
					fc.Close(ctx)
				}
			}
			if (nerr == nil) != (ferr == nil) {
				t.Errorf("%s %q beside a %s6 socket on [::]:%s: net %v; faio %v (bound %v)", network, addr, network, p, nerr, ferr, bound)
			}
		}
		v6.Close()
	}
}

func portOf(a net.Addr) string {
	_, p, _ := net.SplitHostPort(a.String())
	return p
}
