package uring

import (
	"bytes"
	"errors"
	"flag"
	"fmt"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"go.uber.org/goleak"
	"golang.org/x/sys/unix"
)

// The package must never start goroutines of its own.
//
// Where this process may not use io_uring (sysctl io_uring_disabled, a
// container's seccomp filter, a kernel without it), the tests that need a
// ring skip and say why, and the Examples, which cannot skip, do not run:
// the rest of the package is still tested. A ring refused for any other
// reason (locked memory, say) fails those tests as before.
func TestMain(m *testing.M) {
	if errUnavailable = probeIOURing(); errUnavailable != nil {
		flag.Parse()
		skip := "^Example"
		if s := flag.Lookup("test.skip").Value.String(); s != "" {
			skip = s + "|" + skip
		}
		if err := flag.Set("test.skip", skip); err != nil {
			panic(err)
		}
		fmt.Fprintf(os.Stderr, "faio/uring: io_uring is unavailable here, so the tests that need a ring skip and the Examples do not run: %v\n", errUnavailable)
	}
	goleak.VerifyTestMain(m)
}

// errUnavailable says why this process cannot set up a ring at all, or is
// nil (see TestMain).
var errUnavailable error

func probeIOURing() error {
	r, err := New(1, nil)
	if err == nil {
		r.Close()
		return nil
	}
	if errors.Is(err, unix.EPERM) || errors.Is(err, unix.ENOSYS) {
		return err
	}
	return nil
}

// needRing skips t where io_uring is unavailable (see TestMain).
func needRing(t testing.TB) {
	t.Helper()
	if errUnavailable != nil {
		t.Skipf("io_uring is unavailable: %v", errUnavailable)
	}
}

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

// pipeFds returns a pipe's read and write ends, closed when the test ends.
func pipeFds(t testing.TB) (rd, wr int) {
	t.Helper()
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		unix.Close(p[0])
		unix.Close(p[1])
	})
	return p[0], p[1]
}
