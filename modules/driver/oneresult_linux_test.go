package driver

import (
	"syscall"
	"testing"
	"time"

	"github.com/faio-go/faio/modules/uring"
	"golang.org/x/sys/unix"
)

// acceptMultishotOp asks for a multishot accept, which a record cannot
// hand back: every connection after the first would be accepted into a
// descriptor nobody learns of.
type acceptMultishotOp struct{ fd int }

func (o *acceptMultishotOp) Prep(sqe *uring.SQE) {
	sqe.PrepAcceptMultishot(o.fd, nil, nil, unix.SOCK_CLOEXEC)
}

// A multishot request is refused with EINVAL and never reaches the kernel:
// the connections made meanwhile all stay in the listener's backlog.
func TestMultishotOpIsRefused(t *testing.T) {
	f := newRingFixture(t, 8)
	lfd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(lfd)
	if err := unix.Bind(lfd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		t.Fatal(err)
	}
	if err := unix.Listen(lfd, 16); err != nil {
		t.Fatal(err)
	}
	sa, err := unix.Getsockname(lfd)
	if err != nil {
		t.Fatal(err)
	}
	f.r.Start(&acceptMultishotOp{fd: lfd}, "acceptor", 1)
	f.r.Reap()
	const conns = 3
	for range conns {
		c, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(c)
		if err := unix.Connect(c, sa); err != nil {
			t.Fatal(err)
		}
	}
	f.waitFor(t, 1)
	if got := f.dones[0].r; got.Res != -int32(syscall.EINVAL) || got.Flags != 0 {
		t.Errorf("multishot accept completed with %+v, want Res -EINVAL", got)
	}
	// Nothing was accepted behind the caller's back.
	if err := unix.SetNonblock(lfd, true); err != nil {
		t.Fatal(err)
	}
	backlog := 0
	for {
		nfd, _, err := unix.Accept4(lfd, unix.SOCK_CLOEXEC)
		if err != nil {
			break
		}
		unix.Close(nfd)
		backlog++
	}
	if backlog != conns {
		t.Errorf("%d of %d connections left in the backlog: the others were accepted and lost", backlog, conns)
	}
	f.r.Wait(20 * time.Millisecond)
	if len(f.dones) != 1 || f.r.InFlight() != 0 {
		t.Errorf("%d completions, %d in flight; want 1 and 0", len(f.dones), f.r.InFlight())
	}
}

// linkedRecvOp sets SQELink on an entry, which would chain the next owner's
// entry behind it.
type linkedRecvOp struct {
	fd  int
	buf []byte
}

func (o *linkedRecvOp) Prep(sqe *uring.SQE) {
	sqe.PrepRecv(o.fd, o.buf, 0)
	sqe.SetFlags(uring.SQELink | uring.SQEIOHardlink)
}

// One owner's link flags do not hold another owner's operation back.
func TestLinkFlagsDoNotChainOtherOwners(t *testing.T) {
	f := newRingFixture(t, 8)
	fds := socketpair(t)
	f.r.Start(&linkedRecvOp{fd: fds[0], buf: make([]byte, 8)}, "recv with nothing to read", 1)
	f.r.Start(nopOp{}, "nop", 2)
	f.waitFor(t, 1)
	if d := f.dones[0]; d.gen != 2 {
		t.Fatalf("first completion is op %d, want the NOP (2)", d.gen)
	}
	if err := unix.Shutdown(fds[1], unix.SHUT_WR); err != nil {
		t.Fatal(err)
	}
	f.waitFor(t, 2)
	if d := f.dones[1]; d.gen != 1 || d.r.Res != 0 {
		t.Errorf("the receive completed with %+v (op %d), want 0 bytes at end of stream", d.r, d.gen)
	}
}

// skipSuccessNop asks the kernel not to post its completion.
type skipSuccessNop struct{}

func (skipSuccessNop) Prep(sqe *uring.SQE) {
	sqe.PrepNop()
	sqe.SetFlags(uring.SQECQESkipSuccess)
}

// An operation always completes, whatever flags its Prep set.
func TestSkipSuccessFlagStillCompletes(t *testing.T) {
	f := newRingFixture(t, 8)
	f.r.Start(skipSuccessNop{}, "nop", 1)
	f.waitFor(t, 1)
	if got := f.dones[0].r; got.Res != 0 {
		t.Errorf("NOP completed with %+v, want Res 0", got)
	}
	if n := f.r.InFlight(); n != 0 {
		t.Errorf("%d in flight after the completion", n)
	}
}
