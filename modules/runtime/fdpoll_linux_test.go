package runtime

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// nonblockingPair returns socketPair's sockets, non-blocking.
func nonblockingPair(t *testing.T) (a, b int) {
	t.Helper()
	a, b = socketPair(t)
	for _, fd := range []int{a, b} {
		if err := unix.SetNonblock(fd, true); err != nil {
			t.Fatal(err)
		}
	}
	return a, b
}

// recvTry is a Wait try that reads into buf: it reports true unless the
// read met EAGAIN, and leaves the count or error in n and err.
func recvTry(fd int, buf []byte, n *int, err *error) func() bool {
	return func() bool {
		*n, *err = unix.Read(fd, buf)
		return *err != unix.EAGAIN
	}
}

// A task waits for a socket to become readable, then writable, on either
// backend: it suspends while the socket is not ready (other tasks run on
// its worker meanwhile) and reads what arrived once woken.
func TestFDWaitReadableAndWritable(t *testing.T) {
	for _, backend := range []Backend{BackendPortable, BackendAuto} {
		t.Run(backend.String(), func(t *testing.T) {
			rt := newRuntime(t, Config{Workers: 1, IOBackend: backend})
			a, b := nonblockingPair(t)
			fa, err := rt.RegisterFD(a)
			if err != nil {
				t.Fatal(err)
			}
			defer fa.Close()
			_, err = BlockOn(rt, func(ctx context.Context) (int, error) {
				// A second task on the one worker runs while the first
				// waits: the wait suspends, it does not block.
				ran := Spawn(ctx, func(ctx context.Context) (int, error) {
					time.Sleep(20 * time.Millisecond)
					_, err := unix.Write(b, []byte("ping"))
					return 0, err
				})
				buf := make([]byte, 16)
				var n, tries int
				var rerr error
				read := recvTry(a, buf, &n, &rerr)
				if err := fa.Wait(ctx, false, func() bool { tries++; return read() }); err != nil {
					return 0, err
				}
				if rerr != nil || string(buf[:n]) != "ping" {
					return 0, fmt.Errorf("read %q, %v after the wait; want ping", buf[:n], rerr)
				}
				if tries < 2 {
					return 0, fmt.Errorf("the read succeeded at try %d, before the data was sent", tries)
				}
				if _, err := ran.Join(ctx); err != nil {
					return 0, err
				}
				// Fill a's send buffer, then wait for room while the peer
				// drains it.
				chunk := make([]byte, 64<<10)
				for {
					if _, err := unix.Write(a, chunk); err == unix.EAGAIN {
						break
					} else if err != nil {
						return 0, err
					}
				}
				Spawn(ctx, func(ctx context.Context) (int, error) {
					time.Sleep(20 * time.Millisecond)
					drain := make([]byte, 1<<20)
					for {
						if _, err := unix.Read(b, drain); err != nil {
							return 0, nil
						}
					}
				})
				var werr error
				if err := fa.Wait(ctx, true, func() bool {
					_, werr = unix.Write(a, []byte("x"))
					return werr != unix.EAGAIN
				}); err != nil {
					return 0, err
				}
				return 0, werr
			})
			if err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A wait ends with its context, and with Close; the FD works on after a
// cancelled wait; waits on a closed FD or runtime fail.
func TestFDWaitEndsWithContextAndClose(t *testing.T) {
	rt := newRuntime(t, Config{Workers: 2, IOBackend: BackendPortable})
	a, b := nonblockingPair(t)
	fa, err := rt.RegisterFD(a)
	if err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 8)
	var n int
	var rerr error
	_, err = BlockOn(rt, func(ctx context.Context) (int, error) {
		tctx, cancel := context.WithTimeout(ctx, 20*time.Millisecond)
		defer cancel()
		if err := fa.Wait(tctx, false, recvTry(a, buf, &n, &rerr)); !errors.Is(err, context.DeadlineExceeded) {
			return 0, fmt.Errorf("wait with a 20ms timeout and no data: %v, want DeadlineExceeded", err)
		}
		if _, err := unix.Write(b, []byte("after")); err != nil {
			return 0, err
		}
		if err := fa.Wait(ctx, false, recvTry(a, buf, &n, &rerr)); err != nil || string(buf[:n]) != "after" {
			return 0, fmt.Errorf("wait after a cancelled one: %v, read %q", err, buf[:n])
		}
		// Close from another task ends a wait under way.
		Spawn(ctx, func(ctx context.Context) (int, error) {
			time.Sleep(20 * time.Millisecond)
			fa.Close()
			return 0, nil
		})
		if err := fa.Wait(ctx, false, recvTry(a, buf, &n, &rerr)); !errors.Is(err, ErrFDClosed) {
			return 0, fmt.Errorf("wait ended by Close: %v, want ErrFDClosed", err)
		}
		if err := fa.Wait(ctx, false, func() bool { return true }); !errors.Is(err, ErrFDClosed) {
			return 0, fmt.Errorf("wait on a closed FD: %v, want ErrFDClosed", err)
		}
		return 0, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	// A plain goroutine waits too, and its wait ends when the runtime
	// closes.
	fb, err := rt.RegisterFD(b)
	if err != nil {
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- fb.Wait(context.Background(), false, recvTry(b, buf, &n, &rerr)) }()
	time.Sleep(10 * time.Millisecond)
	rt.Close()
	select {
	case err := <-done:
		if !errors.Is(err, ErrFDClosed) {
			t.Fatalf("a goroutine's wait when the runtime closed: %v, want ErrFDClosed", err)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("a goroutine's wait did not end when the runtime closed")
	}
	if _, err := rt.RegisterFD(b); !errors.Is(err, ErrClosed) {
		t.Fatalf("RegisterFD on a closed runtime: %v, want ErrClosed", err)
	}
}

// Many tasks ping-pong numbered messages over socket pairs through the
// poller, at two workers: every message arrives, in order, whether a
// worker or the watcher goroutine collected the readiness that woke its
// reader. A lost wake-up stalls a pair until the deadline fails the test:
// with register's check for an edge since the try taken out, both of 2
// runs failed so.
func TestFDPingPongStress(t *testing.T) {
	rt := newRuntime(t, Config{Workers: 2, IOBackend: BackendPortable})
	const pairs, rounds = 64, 3000
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	_, err := BlockOn(rt, func(bctx context.Context) (int, error) {
		var hs []*JoinHandle[int]
		for range pairs {
			a, b := nonblockingPair(t)
			fa, err := rt.RegisterFD(a)
			if err != nil {
				return 0, err
			}
			fb, err := rt.RegisterFD(b)
			if err != nil {
				return 0, err
			}
			defer fa.Close()
			defer fb.Close()
			// Message k goes from a to b when k is even, back when odd.
			side := func(f *FD, fd int, sends uint64) func(context.Context) (int, error) {
				return func(tctx context.Context) (int, error) {
					msg := make([]byte, 8)
					for want := range uint64(rounds) {
						if want%2 == sends {
							binary.LittleEndian.PutUint64(msg, want)
							if _, err := unix.Write(fd, msg); err != nil {
								return 0, err
							}
							continue
						}
						var n int
						var rerr error
						if err := f.Wait(ctx, false, recvTry(fd, msg, &n, &rerr)); err != nil {
							return 0, err
						}
						if rerr != nil || n != 8 || binary.LittleEndian.Uint64(msg) != want {
							return 0, fmt.Errorf("read %d bytes (%v) holding %d, want 8 holding %d", n, rerr, binary.LittleEndian.Uint64(msg), want)
						}
					}
					return 0, nil
				}
			}
			hs = append(hs, Spawn(bctx, side(fa, a, 0)), Spawn(bctx, side(fb, b, 1)))
		}
		for _, h := range hs {
			if _, err := h.Join(bctx); err != nil {
				return 0, err
			}
		}
		return 0, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Several waits of one direction may be under way on one FD (Accepts of
// one listener from several tasks, say): an edge wakes them all, each
// tries, and the ones that find nothing wait again. Cancelled waits leave
// nothing behind in the FD.
func TestFDWaitSeveralWaiters(t *testing.T) {
	rt := newRuntime(t, Config{Workers: 2, IOBackend: BackendPortable})
	a, b := nonblockingPair(t)
	fa, err := rt.RegisterFD(a)
	if err != nil {
		t.Fatal(err)
	}
	_, err = BlockOn(rt, func(ctx context.Context) (int, error) {
		const readers = 4
		var hs []*JoinHandle[byte]
		for range readers {
			hs = append(hs, Spawn(ctx, func(ctx context.Context) (byte, error) {
				buf := make([]byte, 1)
				var n int
				var rerr error
				if err := fa.Wait(ctx, false, recvTry(a, buf, &n, &rerr)); err != nil {
					return 0, err
				}
				if rerr != nil || n != 1 {
					return 0, fmt.Errorf("read %d bytes: %v", n, rerr)
				}
				return buf[0], nil
			}))
		}
		// One byte at a time: each wakes every reader still waiting,
		// and exactly one of them gets it. (A reader that never woke
		// would hold Join until the test's timeout.)
		for i := range readers {
			if err := Sleep(ctx, 5*time.Millisecond); err != nil {
				return 0, err
			}
			if _, err := unix.Write(b, []byte{byte('a' + i)}); err != nil {
				return 0, err
			}
		}
		seen := map[byte]bool{}
		for _, h := range hs {
			c, err := h.Join(ctx)
			if err != nil {
				return 0, err
			}
			if seen[c] {
				return 0, fmt.Errorf("byte %q read twice", c)
			}
			seen[c] = true
		}
		// 100 waits that time out on an idle socket leave no Waker.
		for range 100 {
			tctx, cancel := context.WithTimeout(ctx, 100*time.Microsecond)
			var n int
			var rerr error
			err := fa.Wait(tctx, false, recvTry(a, make([]byte, 1), &n, &rerr))
			cancel()
			if !errors.Is(err, context.DeadlineExceeded) {
				return 0, fmt.Errorf("a wait on an idle socket: %v, want DeadlineExceeded", err)
			}
		}
		fa.mu.Lock()
		left := len(fa.waiters[0])
		fa.mu.Unlock()
		if left != 0 {
			return 0, fmt.Errorf("%d Wakers left after 100 cancelled waits", left)
		}
		return 0, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// A Wait whose first try succeeds (a socket that had data) allocates
// nothing: the suspension's closure is made only when a wait is needed.
func TestFDWaitThatNeedNotWaitAllocatesNothing(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector allocates")
	}
	rt := newRuntime(t, Config{Workers: 1, IOBackend: BackendPortable})
	a, _ := nonblockingPair(t)
	fa, err := rt.RegisterFD(a)
	if err != nil {
		t.Fatal(err)
	}
	defer fa.Close()
	_, err = BlockOn(rt, func(ctx context.Context) (int, error) {
		ready := func() bool { return true }
		if n := testing.AllocsPerRun(100, func() { _ = fa.Wait(ctx, false, ready) }); n != 0 {
			return 0, fmt.Errorf("%v allocations per Wait that did not wait, want 0", n)
		}
		return 0, nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// Registrations and waits from plain goroutines race the runtime's Close,
// on a runtime whose poller is made lazily (io_uring, or the portable
// backend where io_uring is refused): every RegisterFD either works or
// says ErrClosed, every wait ends (by its deadline or ErrFDClosed), and
// no poller's watcher outlives its runtime (newRuntime's leak check).
func TestFDRegisterRacesClose(t *testing.T) {
	for range 30 {
		rt := newRuntime(t, Config{Workers: 1})
		var wg sync.WaitGroup
		errs := make(chan error, 4)
		for range 4 {
			a, _ := nonblockingPair(t)
			wg.Go(func() {
				f, err := rt.RegisterFD(a)
				if errors.Is(err, ErrClosed) {
					return
				}
				if err != nil {
					errs <- fmt.Errorf("RegisterFD: %v, want success or ErrClosed", err)
					return
				}
				defer f.Close()
				ctx, cancel := context.WithTimeout(context.Background(), 2*time.Millisecond)
				defer cancel()
				if err := f.Wait(ctx, false, func() bool { return false }); !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, ErrFDClosed) {
					errs <- fmt.Errorf("Wait: %v, want DeadlineExceeded or ErrFDClosed", err)
				}
			})
		}
		if err := rt.Close(); err != nil {
			t.Fatal(err)
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Error(err)
		}
	}
}
