package aio

import (
	"context"
	"encoding/binary"
	"net"
	"testing"

	"github.com/faio-go/faio/modules/runtime"
)

// fakeDNS answers every A query with 127.0.0.1 and every AAAA query with
// ::1, as a resolver does for a host name with both loopback addresses
// (what glibc and systemd-resolved give for "localhost", sorted IPv6 first
// by RFC 6724). It installs a net.DefaultResolver that asks it.
func fakeDNS(t *testing.T) {
	pc, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	go func() {
		buf := make([]byte, 512)
		for {
			n, from, err := pc.ReadFrom(buf)
			if err != nil {
				return
			}
			q := buf[:n]
			i := 12
			for i < len(q) && q[i] != 0 {
				i += int(q[i]) + 1
			}
			i++ // the root label
			if i+4 > len(q) {
				continue
			}
			qtype := binary.BigEndian.Uint16(q[i:])
			question := q[12 : i+4]
			var rdata []byte
			switch qtype {
			case 1:
				rdata = []byte{127, 0, 0, 1}
			case 28:
				rdata = net.IPv6loopback
			}
			out := make([]byte, 12, 512)
			copy(out, q[:2])                            // ID
			binary.BigEndian.PutUint16(out[2:], 0x8180) // response, RD, RA, NOERROR
			binary.BigEndian.PutUint16(out[4:], 1)
			if rdata != nil {
				binary.BigEndian.PutUint16(out[6:], 1)
			}
			out = append(out, question...)
			if rdata != nil {
				out = append(out, 0xc0, 12) // the question's name
				out = binary.BigEndian.AppendUint16(out, qtype)
				out = binary.BigEndian.AppendUint16(out, 1) // IN
				out = binary.BigEndian.AppendUint32(out, 60)
				out = binary.BigEndian.AppendUint16(out, uint16(len(rdata)))
				out = append(out, rdata...)
			}
			pc.WriteTo(out, from)
		}
	}()
	old := net.DefaultResolver
	net.DefaultResolver = &net.Resolver{PreferGo: true, Dial: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "udp", pc.LocalAddr().String())
	}}
	t.Cleanup(func() {
		net.DefaultResolver = old
		pc.Close()
	})
}

// A host name that resolves to both ::1 and 127.0.0.1: net.Listen("tcp")
// binds the first IPv4 address (addrs.first(isIPv4)) and nothing else.
// faio binds the first address the resolver gives, ::1, and since
// firstUsable it no longer goes on to 127.0.0.1 when ::1's port is taken:
// beside a listener on [::1]:p, net.Listen("tcp", "dual.test:p") succeeds
// on 127.0.0.1:p, faio's fails with EADDRINUSE.
// A listen on a host name binds one address, as package net does: the
// first IPv4 one. faio bound the resolver's first, [::1] for a name that
// resolves to ::1 and 127.0.0.1, and once a wildcard listen stopped
// falling back on EADDRINUSE, failed where net.Listen binds 127.0.0.1
// (found by a reviewer).
func TestListenOnAHostNameBindsWhatNetBinds(t *testing.T) {
	fakeDNS(t)
	rt := newRuntime(t, runtime.Config{Workers: 1})
	ctx := goroutineCtx(rt)
	if addrs, err := net.DefaultResolver.LookupNetIP(context.Background(), "ip", "dual.test"); err != nil || len(addrs) != 2 {
		t.Skipf("fake resolver: %v %v", addrs, err)
	}
	for _, network := range []string{"tcp", "udp"} {
		// Which address is bound, with a free port.
		nb, fb, nerr, ferr := listenBoth(ctx, network, "dual.test:0")
		if nerr != nil || ferr != nil {
			t.Fatalf("%s \"dual.test:0\": net %v, faio %v", network, nerr, ferr)
		}
		nh, _, _ := net.SplitHostPort(nb.String())
		fh, _, _ := net.SplitHostPort(fb.String())
		if nh != fh {
			t.Errorf("%s \"dual.test:0\": net bound %v, faio %v", network, nb, fb)
		}
		// Beside a socket on [::1]:p.
		p, release, ok := holdV6(network, "[::1]:0")
		if !ok {
			t.Skip("no IPv6 loopback")
		}
		addr := net.JoinHostPort("dual.test", p)
		_, _, nerr, ferr = listenBoth(ctx, network, addr)
		release()
		if (nerr == nil) != (ferr == nil) {
			t.Errorf("%s %q beside a socket on [::1]:%s: net %v; faio %v", network, addr, p, nerr, ferr)
		}
	}
}
