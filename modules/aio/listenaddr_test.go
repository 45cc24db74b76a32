package aio

import (
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
