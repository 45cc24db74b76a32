package aio

import (
	"errors"
	"net"
	"syscall"
	"testing"
	"time"

	"github.com/faio-go/faio/modules/runtime"
)

// A port out of range in NetPacketConn.WriteTo is refused with EINVAL, as
// package net refuses it: it wrapped to another port, and the datagram went
// there without an error (found by a reviewer).
func TestWriteToAPortOutOfRangeIsRefused(t *testing.T) {
	rt := newRuntime(t, runtime.Config{Workers: 1})
	victim, err := net.ListenUDP("udp4", &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1)})
	if err != nil {
		t.Fatal(err)
	}
	defer victim.Close()
	port := victim.LocalAddr().(*net.UDPAddr).Port
	u, err := ListenUDP(goroutineCtx(rt), "udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close(goroutineCtx(rt))
	for _, p := range []int{port + 65536, -1} {
		bad := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: p}
		_, err := u.NetPacketConn().WriteTo([]byte("misdirected"), bad)
		var oe *net.OpError
		if !errors.Is(err, syscall.EINVAL) || !errors.As(err, &oe) || oe.Net != "udp4" {
			t.Errorf("WriteTo port %d = %v, want a *net.OpError on udp4 wrapping EINVAL", p, err)
		}
	}
	victim.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	if n, _, err := victim.ReadFrom(make([]byte, 32)); err == nil {
		t.Errorf("port %d received a datagram of %d bytes meant for another port", port, n)
	}
}

// A UDP socket may send to a broadcast address, as package net's may (it
// sets SO_BROADCAST on every UDP socket): faio's got EACCES, and UDPConn
// offers no way to set the option.
func TestUDPMaySendToBroadcast(t *testing.T) {
	to := &net.UDPAddr{IP: net.IPv4(127, 255, 255, 255), Port: 9}
	std, err := net.ListenPacket("udp4", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer std.Close()
	_, stdErr := std.WriteTo([]byte("b"), to)
	for _, backend := range backends {
		rt := newRuntime(t, runtime.Config{Workers: 1, IOBackend: backend})
		u, err := ListenUDP(goroutineCtx(rt), "udp4", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		_, err = u.NetPacketConn().WriteTo([]byte("b"), to)
		u.Close(goroutineCtx(rt))
		if (stdErr == nil) != (err == nil) {
			t.Errorf("%v: WriteTo %v: net %v, faio %v", backend, to, stdErr, err)
		}
	}
}

// Dialling an unspecified address (0.0.0.0, ::) connects to this host's
// loopback, and RemoteAddr says so, as package net's does: faio reported
// the unspecified address it was given.
func TestDialUnspecifiedReportsTheLoopbackPeer(t *testing.T) {
	rt := newRuntime(t, runtime.Config{Workers: 1})
	ctx := goroutineCtx(rt)
	l, err := net.Listen("tcp", ":0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	_, port, _ := net.SplitHostPort(l.Addr().String())
	for _, c := range [][2]string{{"udp", "0.0.0.0:9"}, {"udp6", "[::]:9"}, {"tcp", "0.0.0.0:" + port}, {"tcp", "[::]:" + port}} {
		want, got := "error", "error"
		if s, err := net.Dial(c[0], c[1]); err == nil {
			want = s.RemoteAddr().String()
			s.Close()
		}
		if c[0] == "tcp" {
			if f, err := Dial(ctx, c[0], c[1]); err == nil {
				got = f.RemoteAddr().String()
				f.Close(ctx)
			}
		} else if f, err := DialUDP(ctx, c[0], c[1]); err == nil {
			got = f.RemoteAddr().String()
			f.Close(ctx)
		}
		if got != want {
			t.Errorf("Dial(%q, %q).RemoteAddr: net %s, faio %s", c[0], c[1], want, got)
		}
	}
}
