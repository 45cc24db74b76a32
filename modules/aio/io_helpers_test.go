package aio

// Helpers shared by the file, TCP and UDP tests.

import (
	"context"
	"errors"
	"github.com/faio-go/faio/modules/runtime"
	"io"
	"math/rand/v2"
	"net"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
)

// randomBytes returns n reproducible pseudo-random bytes.
func randomBytes(n int, seed uint64) []byte {
	b := make([]byte, n)
	r := rand.NewChaCha8([32]byte{byte(seed), byte(seed >> 8), byte(seed >> 16)})
	_, _ = r.Read(b)
	return b
}

// runTask runs fn as a root task on rt and fails the test with its error.
func runTask(t *testing.T, rt *runtime.Runtime, fn func(ctx context.Context) error) {
	t.Helper()
	_, err := runtime.BlockOn(rt, func(ctx context.Context) (struct{}, error) { return struct{}{}, fn(ctx) })
	if err != nil {
		t.Fatal(err)
	}
}

// joinAll joins every handle and returns the first error.
func joinAll[T any](ctx context.Context, hs []*runtime.JoinHandle[T]) error {
	var first error
	for _, h := range hs {
		if _, err := h.Join(ctx); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// countFDs counts the process's open descriptors, but for pipes: Go's
// splice keeps a pool of pipes (io.Copy between sockets fills it, the GC
// empties it), which would make the count move on its own.
func countFDs(t *testing.T) int {
	t.Helper()
	netpollInit()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, e := range ents {
		if target, err := os.Readlink("/proc/self/fd/" + e.Name()); err == nil && strings.HasPrefix(target, "pipe:") {
			continue
		}
		n++
	}
	return n
}

// netpollInit makes Go's netpoller descriptors (an epoll and an eventfd,
// made on first use and never closed) before the first snapshot, so they
// are not a leak of the first test that waits on a socket. go test's
// -timeout timer makes them early; with -timeout=0 nothing does.
var netpollInit = sync.OnceFunc(func() {
	if l, err := net.Listen("tcp", "127.0.0.1:0"); err == nil {
		l.Close()
	}
})

// fdTargets maps the process's open descriptors, but for pipes (see
// countFDs), to what they name.
func fdTargets(t *testing.T) map[string]string {
	t.Helper()
	netpollInit()
	ents, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	m := make(map[string]string, len(ents))
	for _, e := range ents {
		target, err := os.Readlink("/proc/self/fd/" + e.Name())
		if err != nil || strings.HasPrefix(target, "pipe:") {
			continue
		}
		m[e.Name()] = target
	}
	return m
}

// checkNoFDLeak fails the test if a descriptor is open now that was not
// in before (fdTargets), naming them. One closed meanwhile is reported
// only in the log: a finalizer of an earlier test may close its own.
func checkNoFDLeak(t *testing.T, before map[string]string) {
	t.Helper()
	after := fdTargets(t)
	for fd, target := range after {
		if before[fd] != target {
			t.Errorf("descriptor %s (%s) leaked", fd, target)
		}
	}
	for fd, target := range before {
		if _, ok := after[fd]; !ok {
			t.Logf("descriptor %s (%s) was closed meanwhile", fd, target)
		}
	}
}

// echo serves l until it is closed: every connection gets back what it
// sends, until it closes its side. It returns once the tasks serving the
// connections have ended too, so their descriptors are closed.
func echo(ctx context.Context, l *Listener) error {
	var conns []*runtime.JoinHandle[int]
	defer func() {
		for _, h := range conns {
			h.Join(ctx)
		}
	}()
	for {
		c, err := l.Accept(ctx)
		if err != nil {
			if errors.Is(err, net.ErrClosed) {
				return nil
			}
			return err
		}
		conns = append(conns, runtime.Spawn(ctx, func(ctx context.Context) (int, error) {
			defer c.Close(ctx)
			buf := make([]byte, 64<<10)
			for {
				n, err := c.Read(ctx, buf)
				if err == io.EOF || peerGone(err) {
					return 0, nil
				}
				if err != nil {
					return 0, err
				}
				if _, err := c.Write(ctx, buf[:n]); peerGone(err) {
					return 0, nil
				} else if err != nil {
					return 0, err
				}
			}
		}))
	}
}

// logUniformSize returns a size in [1, max], every power of two range
// equally likely: small and large messages both get exercised.
func logUniformSize(rng *rand.Rand, max int) int {
	return min(1+rng.IntN(1<<rng.IntN(17)), max)
}

// freePort returns a loopback port nobody listens on (for a moment).
func freePort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	_, port, _ := net.SplitHostPort(l.Addr().String())
	l.Close()
	return port
}

// connPair returns the two ends of a loopback TCP connection made by Listen,
// Dial and Accept; they are closed at the end of the test's task.
func connPair(ctx context.Context, network, addr string) (client, server *Conn, err error) {
	l, err := Listen(ctx, network, addr)
	if err != nil {
		return nil, nil, err
	}
	defer l.Close(ctx)
	client, err = Dial(ctx, network, l.Addr().String())
	if err != nil {
		return nil, nil, err
	}
	server, err = l.Accept(ctx)
	if err != nil {
		client.Close(ctx)
		return nil, nil, err
	}
	return client, server, nil
}

// peerGone reports whether err says the peer closed or reset the
// connection: the normal end of an echo whose client closed mid-stream.
func peerGone(err error) bool {
	return errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE)
}

// forBackendsAndCallers runs f as a subtest for each backend (io_uring
// where the kernel allows it, and portable) and each kind of caller (a
// plain goroutine, a task), named like "portable/task".
func forBackendsAndCallers(t *testing.T, f func(t *testing.T, backend runtime.Backend, inTask bool)) {
	for _, backend := range backends {
		for _, inTask := range []bool{false, true} {
			name := backend.String() + "/goroutine"
			if inTask {
				name = backend.String() + "/task"
			}
			t.Run(name, func(t *testing.T) { f(t, backend, inTask) })
		}
	}
}
