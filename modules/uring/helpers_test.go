package uring

import (
	"bytes"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
)

// The package must never start goroutines of its own.
func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func newRing(t testing.TB, entries uint32, p *Params) *Ring {
	t.Helper()
	r, err := New(entries, p)
	if err != nil {
		t.Fatalf("New(%d): %v", entries, err)
	}
	t.Cleanup(func() { r.Close() })
	return r
}

// getSQE fails the test when the SQ is unexpectedly full.
func getSQE(t testing.TB, r *Ring) *SQE {
	t.Helper()
	s := r.GetSQE()
	if s == nil {
		t.Fatal("GetSQE: SQ full")
	}
	return s
}

func submit(t testing.TB, r *Ring) {
	t.Helper()
	if _, err := r.Submit(); err != nil {
		t.Fatalf("Submit: %v", err)
	}
}

// reapN waits for n CQEs (5 s at most) and returns copies keyed by user data,
// failing on duplicates.
func reapN(t testing.TB, r *Ring, n int) map[uint64]CQE {
	t.Helper()
	got := make(map[uint64]CQE, n)
	for len(got) < n {
		c, err := r.WaitCQE(5 * time.Second)
		if err != nil {
			t.Fatalf("WaitCQE after %d of %d CQEs: %v", len(got), n, err)
		}
		if _, dup := got[c.UserData]; dup {
			t.Fatalf("duplicate CQE for user data %d", c.UserData)
		}
		got[c.UserData] = *c
		r.CQESeen(c)
	}
	return got
}

// nextCQE submits pending SQEs and returns a copy of the next CQE.
func nextCQE(t testing.TB, r *Ring) CQE {
	t.Helper()
	c, err := r.WaitCQE(5 * time.Second)
	if err != nil {
		t.Fatalf("WaitCQE: %v", err)
	}
	got := *c
	r.CQESeen(c)
	return got
}

// reapOne submits pending SQEs and returns the next CQE, which must carry
// user data want.
func reapOne(t testing.TB, r *Ring, want uint64) CQE {
	t.Helper()
	got := nextCQE(t, r)
	if got.UserData != want {
		t.Fatalf("CQE user data = %d, want %d", got.UserData, want)
	}
	return got
}

// noCQE checks that nothing completes within a short while.
func noCQE(t testing.TB, r *Ring) {
	t.Helper()
	c, err := r.WaitCQE(20 * time.Millisecond)
	if err == nil {
		t.Fatalf("unexpected CQE %+v", *c)
	}
}

func tempFile(t testing.TB, content []byte) *os.File {
	t.Helper()
	path := filepath.Join(t.TempDir(), "data")
	if err := os.WriteFile(path, content, 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := os.OpenFile(path, os.O_RDWR, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return f
}

var loopback = netip.MustParseAddr("127.0.0.1")

// listenTCP returns a listening socket on 127.0.0.1 and its address.
func listenTCP(t testing.TB) (int, netip.AddrPort) {
	t.Helper()
	fd := tcpSocket(t)
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: loopback.As4()}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(fd, 64); err != nil {
		t.Fatal(err)
	}
	got, err := unix.Getsockname(fd)
	if err != nil {
		t.Fatal(err)
	}
	in := got.(*unix.SockaddrInet4)
	return fd, netip.AddrPortFrom(netip.AddrFrom4(in.Addr), uint16(in.Port))
}

func tcpSocket(t testing.TB) int {
	t.Helper()
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fd) })
	return fd
}

// tcpPair returns two connected sockets on 127.0.0.1, set up without the
// ring.
func tcpPair(t testing.TB) (client, server int) {
	t.Helper()
	lfd, addr := listenTCP(t)
	client = tcpSocket(t)
	if err := unix.Connect(client, &unix.SockaddrInet4{Addr: addr.Addr().As4(), Port: int(addr.Port())}); err != nil {
		t.Fatal(err)
	}
	server, _, err := unix.Accept4(lfd, unix.SOCK_CLOEXEC)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(server) })
	return client, server
}

// openFds counts the process's open file descriptors, ringMappings its
// mappings of io_uring memory: a failed New must leave both as they were.
func openFds(t testing.TB) int {
	t.Helper()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(ents)
}

func ringMappings(t testing.TB) int {
	t.Helper()
	b, err := os.ReadFile("/proc/self/maps")
	if err != nil {
		t.Fatal(err)
	}
	return bytes.Count(b, []byte("[io_uring]"))
}
