package aio

import (
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/faio-go/faio/modules/runtime"
	"golang.org/x/sys/unix"
)

// sentinel is a pipe the test opens right after a faio Close returns, so
// that the kernel, which hands out the lowest free number, gives it the
// numbers Close just freed. A second close of one of those numbers by
// faio, late or not, would close the sentinel (or, if the number was
// reused again since, leave another file under it): check tells.
type sentinel struct {
	r, w int
	ino  [2]uint64
}

func openSentinel() (sentinel, error) {
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC|unix.O_NONBLOCK); err != nil {
		return sentinel{}, err
	}
	s := sentinel{r: p[0], w: p[1]}
	for i, fd := range p {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return sentinel{}, err
		}
		s.ino[i] = st.Ino
	}
	return s, nil
}

// check reports whether both ends are still the pipe the test opened, and
// that it still carries a byte.
func (s sentinel) check() error {
	for i, fd := range [2]int{s.r, s.w} {
		var st unix.Stat_t
		if err := unix.Fstat(fd, &st); err != nil {
			return fmt.Errorf("descriptor %d, opened by the test after a faio Close: %v", fd, err)
		}
		if st.Ino != s.ino[i] || st.Mode&unix.S_IFMT != unix.S_IFIFO {
			return fmt.Errorf("descriptor %d, opened by the test after a faio Close, names another file now (closed and reused)", fd)
		}
	}
	if _, err := unix.Write(s.w, []byte{1}); err != nil {
		return fmt.Errorf("write to the sentinel pipe %d: %v", s.w, err)
	}
	var b [1]byte
	if n, err := unix.Read(s.r, b[:]); n != 1 || err != nil {
		return fmt.Errorf("read from the sentinel pipe %d: %d, %v", s.r, n, err)
	}
	return nil
}

func (s sentinel) close() {
	unix.Close(s.r)
	unix.Close(s.w)
}

// sentinels collects the sentinels of a test, and checks them.
type sentinels struct {
	mu  sync.Mutex
	all []sentinel
}

// open opens n sentinels.
func (ss *sentinels) open(n int) error {
	for range n {
		s, err := openSentinel()
		if err != nil {
			return err
		}
		ss.mu.Lock()
		ss.all = append(ss.all, s)
		ss.mu.Unlock()
	}
	return nil
}

func (ss *sentinels) check() error {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for _, s := range ss.all {
		if err := s.check(); err != nil {
			return err
		}
	}
	return nil
}

func (ss *sentinels) close() {
	ss.mu.Lock()
	defer ss.mu.Unlock()
	for _, s := range ss.all {
		s.close()
	}
	ss.all = nil
}

// endedByClose reports whether err is how a wait may end when its object
// is closed under it, its peer is, or its context is cancelled.
func endedByClose(err error) bool {
	return err == nil || errors.Is(err, net.ErrClosed) || errors.Is(err, fs.ErrClosed) || err == io.EOF ||
		errors.Is(err, context.Canceled) || peerGone(err)
}

// Stress: faio closes each descriptor it owns exactly once, and takes it
// out of the runtime's readiness poller before that close, whatever races
// the Close: operations waiting on it (tasks on the ring or in the
// readiness poller, goroutines in the netpoller, on the portable backend
// as on io_uring), a waiter's cancellation, a second Close racing the
// first, the runtime's Close while objects are open, and objects used and
// closed after their runtime has closed. Sentinel pipes opened right after
// each Close take the freed numbers; a second close by faio would close
// one of them, or a connection of a later round, whose reads would then
// fail. A deregistration from the readiness poller of a number reused by
// a later round's connection (registered there in turn on the portable
// backend) would leave that connection's waits hanging, which within
// turns into a failure. Every descriptor is closed at the end.
func TestStressCloseNeverTouchesAReusedNumber(t *testing.T) {
	const rounds = 40
	for _, backend := range backends {
		t.Run(backend.String(), func(t *testing.T) {
			before := fdTargets(t)
			fifo := filepath.Join(t.TempDir(), "fifo")
			if err := unix.Mkfifo(fifo, 0o600); err != nil {
				t.Fatal(err)
			}
			var ss sentinels
			defer ss.close()
			rt := newRuntime(t, runtime.Config{Workers: 2, IOBackend: backend})
			within(t, 30*time.Second, "the rounds", func() {
				runTask(t, rt, func(ctx context.Context) error {
					for r := range rounds {
						if err := closeRacingRound(ctx, fifo, r, &ss); err != nil {
							return fmt.Errorf("round %d: %w", r, err)
						}
						if err := ss.check(); err != nil {
							return fmt.Errorf("round %d: %w", r, err)
						}
					}
					return nil
				})
			})

			// Objects open when their runtime closes, then used and
			// closed from a goroutine.
			var c, s *Conn
			var f *File
			runTask(t, rt, func(ctx context.Context) error {
				var err error
				if c, s, err = connPair(ctx, "tcp", "127.0.0.1:0"); err != nil {
					return err
				}
				if f, err = OpenFile(ctx, fifo, os.O_RDWR, 0); err != nil {
					return err
				}
				// Reads of tasks register s and f with the readiness
				// poller.
				if _, err := c.Write(ctx, []byte("a")); err != nil {
					return err
				}
				if _, err := s.Read(ctx, make([]byte, 1)); err != nil {
					return err
				}
				if _, err := f.Write(ctx, []byte("b")); err != nil {
					return err
				}
				_, err = f.Read(ctx, make([]byte, 1))
				return err
			})
			if err := rt.Close(); err != nil {
				t.Fatal(err)
			}
			// The runtime's rings, eventfds and poller are closed: their
			// numbers go to these.
			if err := ss.open(8); err != nil {
				t.Fatal(err)
			}
			gctx := context.Background()
			within(t, 10*time.Second, "the objects that outlived their runtime", func() {
				if _, err := c.Write(gctx, []byte("c")); err != nil {
					t.Error(err)
				}
				if n, err := s.Read(gctx, make([]byte, 1)); n != 1 || err != nil {
					t.Errorf("read after the runtime closed: %d, %v", n, err)
				}
				for _, close := range []func(context.Context) error{c.Close, s.Close, f.Close} {
					if err := close(gctx); err != nil {
						t.Error(err)
					}
				}
			})
			if err := ss.open(4); err != nil {
				t.Fatal(err)
			}
			for _, close := range []func(context.Context) error{c.Close, s.Close, f.Close} {
				if err := close(gctx); err == nil {
					t.Error("a second Close succeeded")
				}
			}
			if err := ss.check(); err != nil {
				t.Fatal(err)
			}
			ss.close()
			checkNoFDLeak(t, before)
		})
	}
}

// closeRacingRound opens a TCP connection, a UDP socket and a FIFO, checks
// that waits on them end with their data (edgeRoundTrips), sets operations
// waiting on them (tasks, two of them cancelled, and a goroutine), closes
// each while they wait (twice at once in even rounds), opens sentinels on
// the freed numbers (in odd rounds: in even ones the next round's objects
// get them) and waits for every operation to end.
func closeRacingRound(ctx context.Context, fifo string, r int, ss *sentinels) error {
	c, s, err := connPair(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	u, err := ListenUDP(ctx, "udp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	f, err := OpenFile(ctx, fifo, os.O_RDWR, 0)
	if err != nil {
		return err
	}
	// A File's Read and Write take turns (the file position's lock):
	// the FIFO is written through a descriptor of its own.
	fw, err := os.OpenFile(fifo, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	defer fw.Close()
	if err := edgeRoundTrips(ctx, c, s, u, f, fw); err != nil {
		return err
	}
	var hs []*runtime.JoinHandle[struct{}]
	wait := func(what string, ctx context.Context, op func(context.Context) error) {
		hs = append(hs, runtime.Spawn(ctx, func(ctx context.Context) (struct{}, error) {
			if err := op(ctx); !endedByClose(err) {
				return struct{}{}, fmt.Errorf("%s: %w", what, err)
			}
			return struct{}{}, nil
		}))
	}
	buf := func() []byte { return make([]byte, 64) }
	wait("read of the server side", ctx, func(ctx context.Context) error { _, err := s.Read(ctx, buf()); return err })
	wait("read of the client side", ctx, func(ctx context.Context) error { _, err := c.Read(ctx, buf()); return err })
	wait("UDP read", ctx, func(ctx context.Context) error { _, _, err := u.ReadFrom(ctx, buf()); return err })
	wait("FIFO read", ctx, func(ctx context.Context) error { _, err := f.Read(ctx, buf()); return err })
	cctx, cancel := context.WithCancel(ctx)
	defer cancel()
	wait("cancelled read", ctx, func(context.Context) error { _, err := s.Read(cctx, buf()); return err })
	wait("cancelled FIFO read", ctx, func(context.Context) error { _, err := f.Read(cctx, buf()); return err })
	goroutine := make(chan error, 1)
	go func() {
		_, err := c.Read(cctx, buf())
		if endedByClose(err) {
			err = nil
		}
		goroutine <- err
	}()
	if err := runtime.Sleep(ctx, time.Duration(r%3)*time.Millisecond); err != nil {
		return err
	}
	if r%3 == 1 {
		cancel() // before the Closes: the cancelled waits end first
	}
	closers := []func(context.Context) error{s.Close, u.Close, f.Close, c.Close}
	if r%2 == 0 {
		// Each closed twice at once: one Close closes, the other
		// reports the object closed.
		var chs []*runtime.JoinHandle[error]
		for _, close := range closers {
			for range 2 {
				chs = append(chs, runtime.Spawn(ctx, func(ctx context.Context) (error, error) { return close(ctx), nil }))
			}
		}
		succeeded := 0
		for _, h := range chs {
			cerr, err := h.Join(ctx)
			if err != nil {
				return err
			}
			switch {
			case cerr == nil:
				succeeded++
			case !errors.Is(cerr, net.ErrClosed) && !errors.Is(cerr, fs.ErrClosed):
				return fmt.Errorf("a second Close: %w", cerr)
			}
		}
		if succeeded != len(closers) {
			return fmt.Errorf("%d Closes succeeded, want %d", succeeded, len(closers))
		}
	} else {
		for _, close := range closers {
			if err := close(ctx); err != nil {
				return err
			}
		}
	}
	if r%2 == 1 {
		// Every other round leaves the freed numbers to the next
		// round's sockets and FIFO, which its first waits register with
		// the readiness poller.
		if err := ss.open(3); err != nil {
			return err
		}
	}
	cancel()
	if err := joinAll(ctx, hs); err != nil {
		return err
	}
	return <-goroutine
}

// edgeRoundTrips makes a task wait on each of c, s, u and f until data
// arrives (f's through fw, a writer of its FIFO): on the portable backend (and for the FIFO on both) only the
// readiness poller's event for the descriptor ends the wait, which a
// stray deregistration of its number would have removed.
func edgeRoundTrips(ctx context.Context, c, s *Conn, u *UDPConn, f *File, fw *os.File) error {
	read := func(what string, op func(context.Context) (int, error)) *runtime.JoinHandle[struct{}] {
		return runtime.Spawn(ctx, func(ctx context.Context) (struct{}, error) {
			if n, err := op(ctx); n != 1 || err != nil {
				return struct{}{}, fmt.Errorf("%s: %d, %v", what, n, err)
			}
			return struct{}{}, nil
		})
	}
	hs := []*runtime.JoinHandle[struct{}]{
		read("read of the server side", func(ctx context.Context) (int, error) { return s.Read(ctx, make([]byte, 8)) }),
		read("read of the client side", func(ctx context.Context) (int, error) { return c.Read(ctx, make([]byte, 8)) }),
		read("UDP read", func(ctx context.Context) (int, error) {
			n, _, err := u.ReadFrom(ctx, make([]byte, 8))
			return n, err
		}),
		read("FIFO read", func(ctx context.Context) (int, error) { return f.Read(ctx, make([]byte, 8)) }),
	}
	// Long enough for the reads to wait.
	if err := runtime.Sleep(ctx, 2*time.Millisecond); err != nil {
		return err
	}
	one := []byte{1}
	if _, err := c.Write(ctx, one); err != nil {
		return err
	}
	if _, err := s.Write(ctx, one); err != nil {
		return err
	}
	to, err := netip.ParseAddrPort(u.LocalAddr().String())
	if err != nil {
		return err
	}
	if _, err := u.WriteTo(ctx, one, to); err != nil {
		return err
	}
	if _, err := fw.Write(one); err != nil {
		return err
	}
	return joinAll(ctx, hs)
}
