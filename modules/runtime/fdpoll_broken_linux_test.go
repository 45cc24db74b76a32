package runtime

import (
	"context"
	"errors"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A program that closes the readiness poller's epoll descriptor by mistake
// (a stray close of a reused number) must not leave the tasks waiting there
// hanging, nor have the runtime go on with whatever the number names next:
// the waits fail with a *PollerError, and Close leaves the number, now
// another file's, open. Before, collect ignored epoll_wait's EBADF and
// EINVAL (so the waits hung), read the events of an epoll instance that
// took the number over, and Close closed that file.
//
// The number is taken over by a pipe (epoll_wait then fails with EINVAL)
// and by another epoll instance (where every call succeeds: only the
// poller's identity check tells). The latter holds the registered socket's
// number too, which the FD's Close must not remove from it, and an
// edge-triggered eventfd whose events, once the poller has broken, must
// stay there.
func TestPollerLosingItsEpollFailsItsWaits(t *testing.T) {
	for _, taker := range []string{"pipe", "epoll"} {
		t.Run(taker, func(t *testing.T) { testPollerLosingItsEpoll(t, taker) })
	}
}

func testPollerLosingItsEpoll(t *testing.T, taker string) {
	rt, err := New(Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	closed := false
	defer func() {
		if !closed {
			rt.Close()
		}
	}()
	sp, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(sp[0])
	defer unix.Close(sp[1])
	f, err := rt.RegisterFD(sp[0])
	if err != nil {
		t.Fatal(err)
	}
	p := rt.fdp.p

	waitErr := make(chan error, 1)
	h := SpawnOn(rt, func(ctx context.Context) (int, error) {
		var b [1]byte
		err := f.Wait(ctx, false, func() bool {
			_, err := unix.Read(sp[0], b[:])
			return err != unix.EAGAIN
		})
		waitErr <- err
		return 0, nil
	})
	// Until the task waits there.
	for deadline := time.Now().Add(10 * time.Second); ; {
		f.mu.Lock()
		n := len(f.waiters[0])
		f.mu.Unlock()
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("the task never waited for readiness")
		}
		time.Sleep(time.Millisecond)
	}

	// The stray close, and a file that takes the number over.
	epfd := p.epfd
	var other [2]int // the taker, and what identifies it
	var efd int
	switch taker {
	case "pipe":
		if err := unix.Pipe2(other[:], unix.O_CLOEXEC); err != nil {
			t.Fatal(err)
		}
		defer unix.Close(other[1])
	case "epoll":
		ep, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
		if err != nil {
			t.Fatal(err)
		}
		if efd, err = unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK); err != nil {
			t.Fatal(err)
		}
		defer unix.Close(efd)
		ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLET}
		*(*uint64)(unsafe.Pointer(&ev.Fd)) = 0xfeed
		if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, efd, &ev); err != nil {
			t.Fatal(err)
		}
		ev = unix.EpollEvent{Events: unix.EPOLLIN}
		if err := unix.EpollCtl(ep, unix.EPOLL_CTL_ADD, sp[0], &ev); err != nil {
			t.Fatal(err)
		}
		other[0] = ep
	}
	if err := unix.Close(epfd); err != nil {
		t.Fatal(err)
	}
	got, err := unix.FcntlInt(uintptr(other[0]), unix.F_DUPFD_CLOEXEC, epfd)
	if err != nil {
		t.Fatal(err)
	}
	unix.Close(other[0])
	defer unix.Close(got)
	if got != epfd {
		t.Skipf("another file took number %d first (the taker got %d)", epfd, got)
	}
	// sameTaker reports whether the number still names the taker, open.
	var takerStat unix.Stat_t
	if err := unix.Fstat(got, &takerStat); err != nil {
		t.Fatal(err)
	}
	sameTaker := func() error {
		var st unix.Stat_t
		if err := unix.Fstat(epfd, &st); err != nil {
			return err
		}
		if st.Dev != takerStat.Dev || st.Ino != takerStat.Ino {
			return errors.New("the number names another file")
		}
		if taker == "epoll" {
			// Every epoll instance has the same inode: the taker is
			// the one that holds the eventfd, and still the socket.
			if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_MOD, efd, &unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLET}); err != nil {
				return err
			}
			if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_MOD, sp[0], &unix.EpollEvent{Events: unix.EPOLLIN}); err != nil {
				return errors.New("the registered socket was removed from the epoll instance that took the number over")
			}
		}
		return nil
	}

	select {
	case err := <-waitErr:
		if pe := (*PollerError)(nil); !errors.As(err, &pe) || pe.Fd != epfd {
			t.Fatalf("the wait ended with %v, want a *PollerError for fd %d", err, epfd)
		}
	case <-time.After(5 * pollerCheck):
		t.Fatalf("the wait did not end within %v of its poller's descriptor being closed and reused", 5*pollerCheck)
	}
	if _, err := h.Join(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := f.Wait(context.Background(), false, func() bool { return false }); !errors.As(err, new(*PollerError)) {
		t.Errorf("a new wait returned %v, want a *PollerError", err)
	}
	if _, err := rt.RegisterFD(sp[1]); !errors.As(err, new(*PollerError)) {
		t.Errorf("RegisterFD returned %v, want a *PollerError", err)
	}

	if taker == "epoll" {
		// An edge now is the taker's to see: the broken poller no
		// longer reads the number, however busy its workers are.
		if _, err := unix.Write(efd, []byte{1, 0, 0, 0, 0, 0, 0, 0}); err != nil {
			t.Fatal(err)
		}
		for range 20 {
			if _, err := BlockOn(rt, func(ctx context.Context) (int, error) { return 0, Yield(ctx) }); err != nil {
				t.Fatal(err)
			}
		}
		var evs [4]unix.EpollEvent
		n, err := unix.EpollWait(epfd, evs[:], 0)
		seen := false
		for _, ev := range evs[:max(n, 0)] {
			if *(*uint64)(unsafe.Pointer(&ev.Fd)) == 0xfeed {
				seen = true
			}
		}
		if err != nil || !seen {
			t.Errorf("the epoll instance that took the number over lost its eventfd's edge to the runtime (%d events, %v)", n, err)
		}
	}

	f.Close()
	closed = true
	if err := rt.Close(); !errors.As(err, new(*PollerError)) {
		t.Errorf("Close returned %v, want the *PollerError", err)
	}
	if err := sameTaker(); err != nil {
		t.Fatalf("after Close, number %d no longer names the %s that took it over: %v", epfd, taker, err)
	}
}
