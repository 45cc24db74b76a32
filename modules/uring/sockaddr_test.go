package uring

import (
	"net/netip"
	"strconv"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

func TestSockaddrRoundTrip(t *testing.T) {
	tests := []struct {
		in      string
		wantLen uint32
	}{
		{"127.0.0.1:8080", unix.SizeofSockaddrInet4},
		{"0.0.0.0:0", unix.SizeofSockaddrInet4},
		{"[::1]:443", unix.SizeofSockaddrInet6},
		{"[::ffff:10.1.2.3]:1", unix.SizeofSockaddrInet6},
		{"[fe80::1%3]:65535", unix.SizeofSockaddrInet6},
	}
	for _, tt := range tests {
		ap := netip.MustParseAddrPort(tt.in)
		var sa RawSockaddrAny
		n, err := SockaddrFromAddrPort(ap, &sa)
		if err != nil || n != tt.wantLen {
			t.Errorf("%s: encoded %d bytes, %v; want %d", tt.in, n, err, tt.wantLen)
			continue
		}
		got, err := AddrPortFromSockaddr(&sa, n)
		if err != nil || got != ap {
			t.Errorf("%s: decoded %v, %v", tt.in, got, err)
		}
	}
	// The port is stored big-endian, as the kernel expects.
	var sa RawSockaddrAny
	SockaddrFromAddrPort(netip.MustParseAddrPort("1.2.3.4:258"), &sa)
	in := (*unix.RawSockaddrInet4)(unsafe.Pointer(&sa))
	if p := (*[2]byte)(unsafe.Pointer(&in.Port)); p[0] != 1 || p[1] != 2 {
		t.Errorf("port bytes %v, want [1 2]", *p)
	}
}

func TestSockaddrErrors(t *testing.T) {
	var sa RawSockaddrAny
	if _, err := SockaddrFromAddrPort(netip.AddrPort{}, &sa); err == nil {
		t.Error("encoded the zero AddrPort")
	}
	if _, err := SockaddrFromAddrPort(netip.MustParseAddrPort("[fe80::1%no-such-if0]:1"), &sa); err == nil {
		t.Error("encoded an unknown zone")
	}
	SockaddrFromAddrPort(netip.MustParseAddrPort("[::1]:1"), &sa)
	for _, n := range []uint32{0, 1, unix.SizeofSockaddrInet6 - 1} {
		if _, err := AddrPortFromSockaddr(&sa, n); err == nil {
			t.Errorf("decoded an IPv6 address cut to %d bytes", n)
		}
	}
	sa.Addr.Family = unix.AF_UNIX
	if _, err := AddrPortFromSockaddr(&sa, unix.SizeofSockaddrAny); err == nil {
		t.Error("decoded an AF_UNIX address as IP")
	}
}

// FuzzSockaddr checks that every valid address and port survives encoding
// and decoding unchanged.
func FuzzSockaddr(f *testing.F) {
	f.Add([]byte{127, 0, 0, 1}, uint16(80), uint32(0))
	f.Add(make([]byte, 16), uint16(0), uint32(0))
	f.Add([]byte{0xfe, 0x80, 15: 1}, uint16(65535), uint32(7))
	f.Fuzz(func(t *testing.T, ip []byte, port uint16, scope uint32) {
		addr, ok := netip.AddrFromSlice(ip)
		if !ok {
			return
		}
		if addr.Is6() && scope != 0 {
			addr = addr.WithZone(strconv.FormatUint(uint64(scope), 10))
		}
		ap := netip.AddrPortFrom(addr, port)
		var sa RawSockaddrAny
		n, err := SockaddrFromAddrPort(ap, &sa)
		if err != nil {
			t.Fatalf("%v: %v", ap, err)
		}
		got, err := AddrPortFromSockaddr(&sa, n)
		if err != nil || got != ap {
			t.Fatalf("%v decoded as %v, %v", ap, got, err)
		}
	})
}
