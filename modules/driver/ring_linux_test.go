package driver

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"net"
	"runtime"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/faio-go/faio/modules/uring"
	"golang.org/x/sys/unix"
)

// done is one completion the ring handed back.
type done struct {
	owner string
	gen   uint64
	r     Result
}

type ringFixture struct {
	r     *Ring[string]
	dones []done
}

func newRingFixture(t *testing.T, entries int) *ringFixture {
	t.Helper()
	f := &ringFixture{}
	r, err := NewRing(RingConfig[string]{
		Entries: entries, SubmitBatch: 1 << 20,
		Done: func(owner string, gen uint64, r Result) bool {
			f.dones = append(f.dones, done{owner, gen, r})
			return true
		},
	})
	if err != nil {
		t.Skipf("io_uring unavailable: %v", err)
	}
	f.r = r
	t.Cleanup(func() {
		r.Quiesce()
		r.Close()
	})
	return f
}

// waitFor waits until n completions have arrived.
func (f *ringFixture) waitFor(t *testing.T, n int) {
	t.Helper()
	deadline := time.Now().Add(5 * time.Second)
	for len(f.dones) < n {
		if time.Now().After(deadline) {
			t.Fatalf("%d completions after 5s, want %d", len(f.dones), n)
		}
		f.r.Wait(100 * time.Millisecond)
	}
}

// waitUnbounded runs Wait(-1), which must end within 5 s; after says what
// happened before it, for the failure. A Wake ends a Wait that overstays,
// so the fixture can close the ring.
func (f *ringFixture) waitUnbounded(t *testing.T, after string) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.r.Wait(-1)
	}()
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		f.r.Wake()
		<-done
		t.Fatalf("Wait(-1) slept 5s after %s", after)
	}
}

func socketpair(t *testing.T) [2]int {
	t.Helper()
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { unix.Close(fds[0]); unix.Close(fds[1]) })
	return fds
}

type recvOp struct {
	fd  int
	buf []byte
}

func (o *recvOp) Prep(sqe *uring.SQE) { sqe.PrepRecv(o.fd, o.buf, 0) }

type nopOp struct{}

func (nopOp) Prep(sqe *uring.SQE) { sqe.PrepNop() }

// An operation's completion reaches Done with its owner and generation.
func TestRingCompletesWithOwner(t *testing.T) {
	f := newRingFixture(t, 8)
	fds := socketpair(t)
	op := &recvOp{fd: fds[0], buf: make([]byte, 8)}
	f.r.Start(op, "reader", 7)
	if f.r.InFlight() != 1 {
		t.Fatalf("InFlight = %d, want 1", f.r.InFlight())
	}
	if _, err := unix.Write(fds[1], []byte("hi")); err != nil {
		t.Fatal(err)
	}
	f.waitFor(t, 1)
	if d := f.dones[0]; d.owner != "reader" || d.gen != 7 || d.r.Res != 2 || d.r.Err() != nil || string(op.buf[:2]) != "hi" {
		t.Fatalf("completion %+v, buf %q", d, op.buf[:2])
	}
	if f.r.InFlight() != 0 {
		t.Fatalf("InFlight = %d after the completion", f.r.InFlight())
	}
	if sub, comp := f.r.Counts(); sub < 1 || comp < 1 {
		t.Fatalf("Counts = %d, %d", sub, comp)
	}
}

// Cancel turns into an ASYNC_CANCEL: the operation ends with its own
// completion, reporting the cancellation.
func TestRingCancel(t *testing.T) {
	f := newRingFixture(t, 8)
	fds := socketpair(t)
	id := f.r.Start(&recvOp{fd: fds[0], buf: make([]byte, 8)}, "reader", 1)
	f.r.Wait(0)
	f.r.Cancel(id)
	if !f.r.CancelPending() {
		t.Fatal("CancelPending false after Cancel")
	}
	f.waitFor(t, 1)
	if err := f.dones[0].r.Err(); !errors.Is(err, syscall.ECANCELED) && !errors.Is(err, syscall.EINTR) {
		t.Fatalf("cancelled recv ended with %v, want ECANCELED", err)
	}
	if f.r.CancelPending() {
		t.Fatal("CancelPending still true after the worker processed it")
	}
}

// A Cancel that arrives after its operation completed does nothing, even
// when the record has been reused by the next operation.
func TestRingStaleCancel(t *testing.T) {
	f := newRingFixture(t, 8)
	fds := socketpair(t)
	old := f.r.Start(nopOp{}, "first", 1)
	f.waitFor(t, 1)
	op := &recvOp{fd: fds[0], buf: make([]byte, 8)}
	id := f.r.Start(op, "second", 2)
	if id == old || uint64(id)>>recordGenBits != uint64(old)>>recordGenBits {
		t.Fatalf("ids %x and %x: want the same record with another generation", old, id)
	}
	f.r.Cancel(old)
	f.r.Wait(0)
	f.r.Wait(20 * time.Millisecond)
	if len(f.dones) != 1 {
		t.Fatalf("a stale Cancel ended the reused record's operation: %+v", f.dones[1:])
	}
	if _, err := unix.Write(fds[1], []byte("x")); err != nil {
		t.Fatal(err)
	}
	f.waitFor(t, 2)
	if d := f.dones[1]; d.owner != "second" || d.r.Res != 1 {
		t.Fatalf("second completion %+v, want 1 byte for owner second", d)
	}
}

// Start never fails for a full submission queue: many more operations than
// entries all complete.
func TestRingFullQueue(t *testing.T) {
	f := newRingFixture(t, 4)
	const n = 200
	for i := range n {
		f.r.Start(nopOp{}, "nop", uint64(i))
	}
	f.waitFor(t, n)
	seen := make(map[uint64]bool)
	for _, d := range f.dones {
		if d.r.Res != 0 || seen[d.gen] {
			t.Fatalf("completion %+v (duplicate or failed)", d)
		}
		seen[d.gen] = true
	}
}

// Wake from another goroutine ends a Wait without a deadline, and a Wake
// after Close does nothing.
func TestRingWake(t *testing.T) {
	r, err := NewRing(RingConfig[int]{Entries: 8, SubmitBatch: 1, Done: func(int, uint64, Result) bool { return false }})
	if err != nil {
		t.Skipf("io_uring unavailable: %v", err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		time.Sleep(10 * time.Millisecond)
		r.Wake()
	}()
	start := time.Now()
	r.Wait(-1)
	wg.Wait()
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Wait took %v", d)
	}
	start = time.Now()
	r.Wait(20 * time.Millisecond)
	if d := time.Since(start); d < 15*time.Millisecond {
		t.Fatalf("Wait(20ms) with nothing pending returned after %v", d)
	}
	// The deadline of that Wait is gone: the next one without a
	// deadline sleeps until the Wake.
	wg.Go(func() {
		time.Sleep(30 * time.Millisecond)
		r.Wake()
	})
	start = time.Now()
	r.Wait(-1)
	wg.Wait()
	if d := time.Since(start); d < 25*time.Millisecond {
		t.Fatalf("Wait(-1) after a Wait(20ms) returned after %v, before the Wake", d)
	}
	// A Wake before the Wait is not lost.
	r.Wake()
	start = time.Now()
	r.Wait(-1)
	if d := time.Since(start); d > 5*time.Second {
		t.Fatalf("Wait(-1) after a Wake took %v", d)
	}
	r.Quiesce()
	r.Close()
	r.Wake()
}

// A completion that arrives while the worker sleeps ends Wait without a
// deadline on its own, without a Wake: a receive armed before the Wait,
// and data written 10 ms into it by another goroutine.
func TestRingWaitEndsOnCompletion(t *testing.T) {
	f := newRingFixture(t, 8)
	fds := socketpair(t)
	op := &recvOp{fd: fds[0], buf: make([]byte, 8)}
	f.r.Start(op, "reader", 1)
	var wg sync.WaitGroup
	defer wg.Wait()
	wg.Go(func() {
		time.Sleep(10 * time.Millisecond)
		unix.Write(fds[1], []byte("hi"))
	})
	// A Wait may end for nothing, like any sleep; what must not happen is
	// that none ends for the completion.
	deadline := time.Now().Add(5 * time.Second)
	for len(f.dones) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("Wait(-1) did not end within 5s of the receive's data")
		}
		f.waitUnbounded(t, "the receive's data arrived")
	}
	if len(f.dones) != 1 || f.dones[0].r.Res != 2 {
		t.Fatalf("completions %+v, want the 2-byte receive", f.dones)
	}
}

// A worker sleeping on a ring that is not thread-bound waits in Go's
// netpoller ("IO wait"), not in a system call that holds its P.
func TestRingSleepsInNetpoller(t *testing.T) {
	f := newRingFixture(t, 8)
	done := make(chan struct{})
	go func() {
		defer close(done)
		f.r.Wait(-1)
	}()
	defer func() {
		f.r.Wake()
		<-done
	}()
	buf := make([]byte, 1<<20)
	var state string
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		for _, g := range strings.Split(string(buf[:runtime.Stack(buf, true)]), "\n\n") {
			if strings.Contains(g, ").pollWait(") {
				state, _, _ = strings.Cut(g, "\n")
				if strings.Contains(state, "[IO wait") {
					return
				}
			}
		}
	}
	t.Fatalf("the sleeping Wait's goroutine is %q, want it in IO wait", state)
}

// Entries the kernel refused (a passing io_uring_enter failure) are
// submitted again soon, even by a Wait without a deadline: nothing they
// would complete can signal the sleeper.
func TestRingRetriesRefusedSubmit(t *testing.T) {
	f := newRingFixture(t, 8)
	refusals := 3
	submitEntries = func(r *uring.Ring) (int, error) {
		if refusals > 0 {
			refusals--
			return 0, syscall.EAGAIN
		}
		return r.Submit()
	}
	t.Cleanup(func() { submitEntries = (*uring.Ring).Submit })
	f.r.Start(nopOp{}, "nop", 1)
	deadline := time.Now().Add(5 * time.Second)
	for len(f.dones) == 0 {
		if time.Now().After(deadline) {
			t.Fatal("the refused NOP was not submitted again within 5s")
		}
		f.waitUnbounded(t, "its entries were refused")
	}
	if refusals != 0 || f.dones[0].r.Res != 0 {
		t.Fatalf("refusals left %d, completion %+v", refusals, f.dones[0])
	}
}

// Completions held back after a CQ overflow end a Wait without a deadline
// by themselves, although the eventfd signals for them were spent long
// before.
func TestRingWaitFlushesHeldCompletions(t *testing.T) {
	f := newRingFixture(t, 4)
	const n = 64
	for i := range n {
		f.r.Start(nopOp{}, "nop", uint64(i))
	}
	f.r.submit() // more completions than the CQ ring holds
	f.r.Reap()   // takes those the CQ ring holds
	if !f.r.ring.CQHeld() {
		t.Fatal("no completions held back: the test needs a CQ overflow")
	}
	var counter [8]byte
	unix.Read(f.r.efd, counter[:]) // spend the signals (non-blocking)
	for len(f.dones) < n {
		f.waitUnbounded(t, fmt.Sprintf("%d of %d completions were reaped", len(f.dones), n))
	}
}

// newQuietRing returns a netpoller-parked ring whose eventfd signals a
// wake-up has turned off, as every wake-up with operations in flight does
// (one nop, reaped), with the signals spent: it checks on the way that a
// wake-up with nothing in flight leaves them on. It skips where the ring
// sleeps in io_uring_enter or the kernel lacks the flag.
func newQuietRing(t *testing.T) *ringFixture {
	t.Helper()
	f := newRingFixture(t, 8)
	if f.r.efdFile == nil {
		t.Skip("the ring does not park in the netpoller")
	}
	f.r.Wait(0)
	if f.r.quiet {
		t.Fatal("signals off after a wake-up without operations in flight")
	}
	f.r.Start(nopOp{}, "nop", 0)
	f.r.Wait(0)
	if !f.r.quiet {
		t.Skip("kernel without IORING_CQ_EVENTFD_DISABLED")
	}
	var counter [8]byte
	unix.Read(f.r.efd, counter[:]) // spend earlier signals (non-blocking)
	return f
}

// While the worker runs, the eventfd's signals are off; a completion posted
// just as they are turned back on for a sleep may be neither signalled nor
// seen by the checks around that (the kernel orders the CQ tail and its
// read of the flag by release only). Wait(-1) still ends, by checking the
// CQ ring again after a bounded first sleep.
func TestRingWaitFindsUnsignalledCompletion(t *testing.T) {
	f := newQuietRing(t)
	// The nop completes inline when Wait submits it, signals still off.
	f.r.Start(nopOp{}, "nop", 1)
	old := cqWaiting
	misses := 2 // the checks before and right after turning signals on
	cqWaiting = func(r *uring.Ring) bool {
		if misses > 0 {
			misses--
			return false
		}
		return old(r)
	}
	defer func() { cqWaiting = old }()
	f.waitUnbounded(t, "a completion nothing signalled")
	if len(f.dones) != 2 || misses != 0 {
		t.Fatalf("after Wait(-1): %d completions reaped, %d checks left unmissed; want 2 and 0", len(f.dones), misses)
	}
}

// Completions posted while the worker runs do not signal the eventfd: the
// worker reaps them without it, and a signal would wake the netpoller for
// nothing. A worker with no operations in flight leaves the signals on.
func TestRingRunsWithoutSignals(t *testing.T) {
	f := newQuietRing(t)
	for i := range 3 {
		f.r.Start(nopOp{}, "nop", uint64(i+1))
	}
	f.r.Reap() // submits them; each completes inline
	f.r.Reap()
	if len(f.dones) != 4 {
		t.Fatalf("%d completions reaped, want 4", len(f.dones))
	}
	time.Sleep(20 * time.Millisecond) // room for a late signal
	var counter [8]byte
	if _, err := unix.Read(f.r.efd, counter[:]); err == nil {
		t.Fatal("the eventfd was signalled while the worker ran")
	}
}

// An IOPOLL ring is refused with a clear error: its completions need
// polling, and the wake-up read is not an operation it can run.
func TestNewRingRefusesIOPoll(t *testing.T) {
	r, err := NewRing(RingConfig[int]{Entries: 8, SubmitBatch: 1, Flags: uring.SetupIOPoll, Done: func(int, uint64, Result) bool { return false }})
	if err == nil {
		r.Close()
		t.Fatal("NewRing accepted an IOPOLL ring")
	}
	if !strings.Contains(err.Error(), "IOPOLL") {
		t.Fatalf("error %q does not name IOPOLL", err)
	}
}

// Wake and Close from different goroutines never race (-race) and a Wake
// after Close writes nothing.
func TestRingWakeRacesClose(t *testing.T) {
	for range 50 {
		r, err := NewRing(RingConfig[int]{Entries: 8, SubmitBatch: 1, Done: func(int, uint64, Result) bool { return false }})
		if err != nil {
			t.Skipf("io_uring unavailable: %v", err)
		}
		var wg sync.WaitGroup
		for range 2 {
			wg.Go(func() {
				for range 100 {
					r.Wake()
				}
			})
		}
		r.Quiesce()
		r.Close()
		wg.Wait()
	}
}

// Start after Close panics at once. It used to spin forever: no entry
// ever frees up on a closed ring, and each round handed ErrClosed to
// cfg.Failed and tried again.
func TestRingStartAfterClose(t *testing.T) {
	var failed atomic.Int64
	r, err := NewRing(RingConfig[int]{Entries: 4, SubmitBatch: 1,
		Done:   func(int, uint64, Result) bool { return false },
		Failed: func(error) { failed.Add(1) }})
	if err != nil {
		t.Skipf("io_uring unavailable: %v", err)
	}
	r.Close()
	panicked := make(chan any, 1)
	go func() {
		defer func() { panicked <- recover() }()
		r.Start(nopOp{}, 1, 1)
	}()
	select {
	case v := <-panicked:
		if msg, _ := v.(string); !strings.Contains(msg, "closed ring") {
			t.Fatalf("Start after Close: panic %v, want one naming the closed ring", v)
		}
	case <-time.After(5 * time.Second):
		t.Fatalf("Start after Close still running after 5s (%d failures reported)", failed.Load())
	}
}

// A refused io_uring_setup is NewRing's error, with the kernel's reason.
func TestNewRingRefused(t *testing.T) {
	old := setup
	setup = func(uint32, *uring.Params) (*uring.Ring, error) { return nil, syscall.EPERM }
	defer func() { setup = old }()
	if _, err := NewRing(RingConfig[int]{Entries: 8, Worker: 3}); !errors.Is(err, syscall.EPERM) {
		t.Fatalf("NewRing = %v, want EPERM", err)
	}
}

// A ring set up with SINGLE_ISSUER|DEFER_TASKRUN belongs to the thread
// that attaches it: on that locked thread, completions arrive (the taskrun
// flag makes Reap enter the kernel for them), a Wake from another goroutine
// ends Wait, including one sent before Attach, and nothing is submitted
// before Attach. A COOP_TASKRUN ring is not tied to a thread, and passes
// the same round (Attach does nothing for it).
func TestRingThreadBound(t *testing.T) {
	for _, flags := range []uint32{
		uring.SetupCoopTaskrun | uring.SetupTaskrunFlag,
		uring.SetupSingleIssuer | uring.SetupDeferTaskrun | uring.SetupTaskrunFlag,
	} {
		errc := make(chan error, 1)
		go func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			errc <- threadBoundRound(flags)
		}()
		if err := <-errc; err != nil {
			var ue *uring.Error
			if errors.As(err, &ue) && ue.Op == "io_uring_setup" && (ue.Errno == unix.EPERM || ue.Errno == unix.ENOSYS) {
				t.Skipf("io_uring is unavailable: %v", err)
			}
			t.Fatalf("flags %#x: %v", flags, err)
		}
	}
}

// A COOP_TASKRUN ring's completion is posted by the thread that submitted
// the operation, not by the one that waits for it, and without an
// interrupt: it must still reach a worker that has moved to another thread,
// whether the submitting thread sleeps (the kernel wakes it) or computes in
// user space without a system call (it posts when Go preempts it, within
// about 10 ms).
func TestRingCoopTaskrunAcrossThreads(t *testing.T) {
	for _, submitter := range []string{"sleeps", "computes"} {
		t.Run("submitter "+submitter, func(t *testing.T) {
			var dones []done
			r, err := NewRing(RingConfig[string]{Entries: 8, SubmitBatch: 1,
				Flags: uring.SetupCoopTaskrun | uring.SetupTaskrunFlag,
				Done: func(owner string, gen uint64, res Result) bool {
					dones = append(dones, done{owner, gen, res})
					return true
				}})
			if err != nil {
				t.Skipf("io_uring with COOP_TASKRUN unavailable: %v", err)
			}
			defer r.Close()
			defer r.Quiesce()
			fds := socketpair(t)
			op := &recvOp{fd: fds[0], buf: make([]byte, 4)}
			submitted, release := make(chan struct{}), make(chan struct{})
			var stopSpin atomic.Bool
			go func() {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
				r.Start(op, "reader", 1) // submitted from this thread
				close(submitted)
				if submitter == "computes" {
					x := 0
					for !stopSpin.Load() {
						x++
					}
					_ = x
				}
				<-release
			}()
			<-submitted
			defer close(release)
			defer stopSpin.Store(true)
			waited := make(chan time.Duration, 1)
			go func() {
				runtime.LockOSThread() // another thread waits and reaps
				defer runtime.UnlockOSThread()
				unix.Write(fds[1], []byte("ok"))
				start := time.Now()
				for len(dones) == 0 && time.Since(start) < 5*time.Second {
					r.Wait(100 * time.Millisecond)
				}
				waited <- time.Since(start)
			}()
			d := <-waited
			if len(dones) != 1 || dones[0].owner != "reader" || dones[0].r.Res != 2 {
				t.Fatalf("completions %+v after %v, want the reader's 2 bytes", dones, d)
			}
			t.Logf("the completion reached the other thread after %v", d)
			if d > 500*time.Millisecond {
				t.Fatalf("the completion took %v to reach the waiting thread", d)
			}
		})
	}
}

func threadBoundRound(flags uint32) error {
	var dones []done
	r, err := NewRing(RingConfig[string]{Entries: 8, SubmitBatch: 1, Flags: flags,
		Done: func(owner string, gen uint64, res Result) bool {
			dones = append(dones, done{owner, gen, res})
			return true
		}})
	if err != nil {
		return err
	}
	defer r.Close()
	defer r.Quiesce()
	if sub, _ := r.Counts(); sub != 0 || r.ring.SQReady() != 0 {
		return fmt.Errorf("%d entries submitted, %d prepared before Attach", sub, r.ring.SQReady())
	}
	r.Wake() // before Attach: ends the first Wait
	if err := r.Attach(); err != nil {
		return err
	}
	start := time.Now()
	r.Wait(5 * time.Second)
	if d := time.Since(start); d > 2*time.Second {
		return fmt.Errorf("a Wake sent before Attach did not end Wait (%v)", d)
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		return err
	}
	defer unix.Close(fds[0])
	defer unix.Close(fds[1])
	op := &recvOp{fd: fds[0], buf: make([]byte, 4)}
	r.Start(op, "reader", 3)
	go func() {
		time.Sleep(5 * time.Millisecond)
		unix.Write(fds[1], []byte("ok"))
	}()
	for deadline := time.Now().Add(5 * time.Second); len(dones) == 0; {
		if time.Now().After(deadline) {
			return errors.New("no completion within 5s")
		}
		r.Wait(100 * time.Millisecond)
	}
	if d := dones[0]; d.owner != "reader" || d.gen != 3 || d.r.Res != 2 {
		return fmt.Errorf("completion %+v", d)
	}
	go func() {
		time.Sleep(5 * time.Millisecond)
		r.Wake()
	}()
	start = time.Now()
	r.Wait(5 * time.Second)
	if d := time.Since(start); d > 2*time.Second {
		return fmt.Errorf("Wake from another goroutine did not end Wait (%v)", d)
	}
	return nil
}

type sendZCOp struct {
	fd  int
	buf []byte
}

func (o *sendZCOp) Prep(sqe *uring.SQE) { sqe.PrepSendZC(o.fd, o.buf, unix.MSG_NOSIGNAL, 0) }

// A zero-copy send completes once, with its byte count, when its
// notification has come: its record (and buffer) stay until then.
func TestRingSendZCCompletesOnce(t *testing.T) {
	f := newRingFixture(t, 8)
	if p, err := f.r.ring.Probe(); err != nil || !p.Supported(uring.OpSendZC) {
		t.Skipf("IORING_OP_SEND_ZC unsupported (%v)", err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	peer, err := ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	raw, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		t.Fatal(err)
	}
	msg := make([]byte, 64<<10)
	for i := range msg {
		msg[i] = byte(i)
	}
	err = raw.Control(func(fd uintptr) {
		f.r.Start(&sendZCOp{fd: int(fd), buf: msg}, "zc", 9)
		f.waitFor(t, 1)
		// Drain the CQ a while longer: no second completion may come.
		f.r.Wait(20 * time.Millisecond)
	})
	if err != nil {
		t.Fatal(err)
	}
	// Delivered at the first CQE, the result would still say More.
	if len(f.dones) != 1 || f.dones[0].r.Res <= 0 || f.dones[0].r.Flags&uring.CQEFMore != 0 || f.dones[0].owner != "zc" || f.r.InFlight() != 0 {
		t.Fatalf("completions %+v, in flight %d; want one with a byte count", f.dones, f.r.InFlight())
	}
	got := make([]byte, f.dones[0].r.Res)
	if _, err := io.ReadFull(peer, got); err != nil || !bytes.Equal(got, msg[:len(got)]) {
		t.Fatalf("peer read: %v", err)
	}
}

// Cancels from other goroutines race the owner's starts and reaps, for
// live, completed and reused records alike: every operation completes
// exactly once, with its own owner and generation, and nothing stays in
// flight.
func TestRingCancelStress(t *testing.T) {
	f := newRingFixture(t, 32)
	fds := socketpair(t)
	const ops = 2000
	ids := make(chan OpID, 64)
	var wg sync.WaitGroup
	for range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for id := range ids {
				f.r.Cancel(id)
			}
		}()
	}
	started := 0
	for started < ops || f.r.InFlight() > 0 {
		for k := 0; k < 8 && started < ops; k++ {
			var op Op = nopOp{}
			if started%3 == 0 {
				// A receive that only a cancellation (or a byte) ends.
				op = &recvOp{fd: fds[0], buf: make([]byte, 1)}
			}
			id := f.r.Start(op, "op", uint64(started))
			started++
			select {
			case ids <- id:
			default:
			}
			if started%50 == 0 {
				unix.Write(fds[1], []byte{1})
			}
		}
		f.r.Wait(time.Millisecond)
		if started == ops && f.r.InFlight() > 0 {
			// Send a late cancel for every receive still waiting.
			for i := range f.r.recs.recs {
				if rec := &f.r.recs.recs[i]; rec.op != nil {
					f.r.Cancel(opID(int32(i), rec.gen))
				}
			}
		}
	}
	close(ids)
	wg.Wait()
	seen := make(map[uint64]int)
	for _, d := range f.dones {
		seen[d.gen]++
		if d.owner != "op" {
			t.Fatalf("completion %+v", d)
		}
	}
	if len(seen) != ops {
		t.Fatalf("%d operations completed, want %d", len(seen), ops)
	}
	for gen, n := range seen {
		if n != 1 {
			t.Fatalf("operation %d completed %d times", gen, n)
		}
	}
}

// A ring with SQPollIdle has a kernel thread take each entry as Start
// publishes it, also once the thread has gone to sleep for want of work.
func TestRingSQPoll(t *testing.T) {
	var dones []done
	r, err := NewRing(RingConfig[string]{
		Entries: 8, SubmitBatch: 1 << 20, SQPollIdle: 2 * time.Millisecond,
		Done: func(owner string, gen uint64, res Result) bool {
			dones = append(dones, done{owner, gen, res})
			return true
		},
	})
	if err != nil {
		t.Skipf("SQPOLL ring refused: %v", err)
	}
	defer func() { r.Quiesce(); r.Close() }()
	if r.ring.Flags()&uring.SetupSQPoll == 0 {
		t.Fatal("ring set up without SQPOLL")
	}
	fds := socketpair(t)
	for round := range 2 {
		op := &recvOp{fd: fds[0], buf: make([]byte, 8)}
		r.Start(op, "reader", uint64(round))
		if _, err := unix.Write(fds[1], []byte("hi")); err != nil {
			t.Fatal(err)
		}
		// No Reap or Wait, which would submit: the poll thread alone
		// must take the entry Start published.
		for deadline := time.Now().Add(5 * time.Second); r.ring.CQReady() == 0; time.Sleep(time.Millisecond) {
			if time.Now().After(deadline) {
				t.Fatalf("round %d: nothing completed in 5s without an enter", round)
			}
		}
		r.Reap()
		if d := dones[round]; d.gen != uint64(round) || d.r.Res != 2 || string(op.buf[:2]) != "hi" {
			t.Fatalf("round %d: completion %+v, buf %q", round, d, op.buf[:2])
		}
		// Let the poll thread go idle: the next Start must wake it.
		time.Sleep(20 * time.Millisecond)
	}
}

// FileIOThreads becomes the ring's bounded io-wq limit; the unbounded one
// keeps the kernel's default.
func TestRingFileIOThreads(t *testing.T) {
	r, err := NewRing(RingConfig[string]{Entries: 8, SubmitBatch: 1, FileIOThreads: 3, Done: func(string, uint64, Result) bool { return true }})
	if err != nil {
		t.Skipf("io_uring unavailable: %v", err)
	}
	defer func() { r.Quiesce(); r.Close() }()
	bounded, unbounded, err := r.ring.RegisterIOWQMaxWorkers(0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if bounded != 3 || unbounded == 3 {
		t.Fatalf("io-wq limits %d bounded, %d unbounded; want 3 and the kernel's default", bounded, unbounded)
	}
}

type sendOp struct {
	fd  int
	buf []byte
}

func (o *sendOp) Prep(sqe *uring.SQE) { sqe.PrepSend(o.fd, o.buf, 0) }

// Start submits a batch once SubmitBatch entries are prepared, counting a
// socket send or receive as an eighth of one (entryWeight): with
// SubmitBatch 2, sixteen sends or two other entries.
func TestStartWeighsSocketEntries(t *testing.T) {
	r, err := NewRing(RingConfig[string]{Entries: 64, SubmitBatch: 2, Done: func(string, uint64, Result) bool { return true }})
	if err != nil {
		t.Skipf("io_uring unavailable: %v", err)
	}
	t.Cleanup(func() {
		r.Quiesce()
		r.Close()
	})
	fds := socketpair(t)
	submitted := func() uint64 { n, _ := r.Counts(); return n }
	for i := range 2 * socketShare {
		if n := submitted(); n != 0 {
			t.Fatalf("%d entries submitted after %d sends", n, i)
		}
		r.Start(&sendOp{fd: fds[0], buf: []byte("x")}, "send", uint64(i))
	}
	if n := submitted(); n != 2*socketShare {
		t.Fatalf("%d entries submitted after %d sends, want all", n, 2*socketShare)
	}
	r.Start(nopOp{}, "nop", 0)
	if n := submitted(); n != 2*socketShare {
		t.Fatalf("one NOP was submitted on its own (%d entries submitted)", n)
	}
	r.Start(nopOp{}, "nop", 1)
	if n := submitted(); n != 2*socketShare+2 {
		t.Fatalf("%d entries submitted after two NOPs, want %d", n, 2*socketShare+2)
	}
	// A receive (of what the sends sent) waits for the next Reap.
	r.Start(&recvOp{fd: fds[1], buf: make([]byte, 64)}, "recv", 0)
	if n := submitted(); n != 2*socketShare+2 {
		t.Fatalf("one receive was submitted on its own (%d entries submitted)", n)
	}
	r.Reap()
	if n := submitted(); n != 2*socketShare+3 {
		t.Fatalf("Reap left the receive unsubmitted (%d entries submitted)", n)
	}
}

// Only entries that a socket alone takes count as an eighth; readv and
// writev, which files use too, count in full.
func TestEntryWeight(t *testing.T) {
	for op, want := range map[uring.Op]int{
		uring.OpSend: 1, uring.OpRecv: 1, uring.OpSendZC: 1, uring.OpSendmsg: 1, uring.OpRecvmsg: 1, uring.OpAccept: 1,
		uring.OpRead: socketShare, uring.OpWrite: socketShare, uring.OpReadv: socketShare, uring.OpWritev: socketShare,
		uring.OpNop: socketShare, uring.OpAsyncCancel: socketShare, uring.OpConnect: socketShare, uring.OpOpenat: socketShare,
	} {
		if got := entryWeight(&uring.SQE{Opcode: op}); got != want {
			t.Errorf("entryWeight(%v) = %d, want %d", op, got, want)
		}
	}
}

// Stranded counts, for a goroutine other than the owner (-race checks
// that), the entries waiting to be submitted (as one) and the completions
// posted and not reaped, and goes back to 0 whichever way the entries
// leave: a Reap, a Wait.
func TestStrandedFromAnotherGoroutine(t *testing.T) {
	f := newRingFixture(t, 8)
	stranded := func() int {
		ch := make(chan int)
		go func() { ch <- f.r.Stranded() }()
		return <-ch
	}
	if n := stranded(); n != 0 {
		t.Fatalf("idle: Stranded = %d", n)
	}
	fds := socketpair(t)
	f.r.Start(nopOp{}, "nop", 1)
	f.r.Start(&recvOp{fd: fds[0], buf: make([]byte, 8)}, "reader", 2)
	if n := stranded(); n != 1 {
		t.Fatalf("two entries prepared, not submitted: Stranded = %d, want 1", n)
	}
	f.r.Reap() // submits both; the nop completes at once
	if n := stranded(); n != 1 {
		t.Fatalf("submitted, the nop's completion posted: Stranded = %d, want 1", n)
	}
	f.r.Reap()
	if n := stranded(); n != 0 || len(f.dones) != 1 {
		t.Fatalf("reaped: Stranded = %d, %d completions", n, len(f.dones))
	}
	if _, err := unix.Write(fds[1], []byte("hi")); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(5 * time.Second)
	for stranded() != 1 {
		if time.Now().After(deadline) {
			t.Fatalf("the receive's completion never showed: Stranded = %d", stranded())
		}
		time.Sleep(time.Millisecond)
	}
	f.waitFor(t, 2)
	if n := stranded(); n != 0 {
		t.Fatalf("after the receive: Stranded = %d", n)
	}
	// Wait submits by itself (io_uring_enter with the wait).
	f.r.Start(nopOp{}, "nop", 3)
	if n := stranded(); n != 1 {
		t.Fatalf("nop prepared: Stranded = %d, want 1", n)
	}
	f.waitFor(t, 3)
	if n := stranded(); n != 0 {
		t.Fatalf("after Wait: Stranded = %d", n)
	}
}

// reapAsPeer calls r.TryReap in a loop from a goroutine of its own, as a
// peer worker would, adding what it reaps to byPeer, until the returned
// stop is called; stop returns once the loop has ended.
func reapAsPeer(r *Ring[string], byPeer *atomic.Int64) (stop func()) {
	done, ended := make(chan struct{}), make(chan struct{})
	go func() {
		defer close(ended)
		for {
			select {
			case <-done:
				return
			default:
			}
			if n, ok := r.TryReap(); ok {
				byPeer.Add(int64(n))
			}
			runtime.Gosched()
		}
	}()
	return func() {
		close(done)
		<-ended
	}
}

// A peer's TryReap races the owner's Start, Reap and Wait: every
// operation completes exactly once, through one or the other, and the race
// detector sees the ring's state only under its lock.
func TestTryReapRacesTheOwner(t *testing.T) {
	const ops = 20000
	var mu sync.Mutex
	seen := make(map[uint64]int, 2*ops)
	var byPeer atomic.Int64
	r, err := NewRing(RingConfig[string]{
		Entries: 64, SubmitBatch: 8,
		Done: func(_ string, gen uint64, _ Result) bool {
			mu.Lock()
			seen[gen]++
			mu.Unlock()
			return true
		},
	})
	if err != nil {
		t.Skipf("io_uring unavailable: %v", err)
	}
	defer r.Close()
	stopPeer := reapAsPeer(r, &byPeer)
	// Until the peer has had a share, within a limit: on a loaded
	// machine the owner could finish before the peer's goroutine ran.
	total := uint64(ops)
	for i := uint64(0); i < total; i++ {
		r.Start(nopOp{}, "nop", i)
		if i%1024 == 1023 {
			// Yield while completions wait in the CQ (the last Reap
			// was 15 Starts ago): with one P the peer runs only when
			// the owner yields, and a yield right after Reap and
			// Wait(0) left it an empty CQ every time.
			runtime.Gosched()
		}
		if i%16 == 0 {
			r.Reap()
		}
		if i%1024 == 0 {
			r.Wait(0)
		}
		if i == total-1 && byPeer.Load() == 0 && total < 50*ops {
			total += ops
		}
	}
	deadline := time.Now().Add(10 * time.Second)
	for {
		mu.Lock()
		n := len(seen)
		mu.Unlock()
		if n == int(total) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("%d of %d operations completed after 10 s", n, total)
		}
		r.Wait(10 * time.Millisecond)
	}
	stopPeer()
	if len(seen) != int(total) {
		t.Fatalf("%d operations completed, want %d", len(seen), total)
	}
	if len(seen) != int(total) {
		t.Fatalf("%d operations completed, want %d", len(seen), total)
	}
	for gen, n := range seen {
		if n != 1 {
			t.Fatalf("operation %d completed %d times", gen, n)
		}
	}
	if r.InFlight() != 0 {
		t.Errorf("InFlight = %d after every completion", r.InFlight())
	}
	t.Logf("%d of %d completions reaped by the peer", byPeer.Load(), total)
	if byPeer.Load() == 0 {
		t.Error("the peer reaped nothing: the test raced nothing")
	}
}

// The owner sleeps in the netpoller (park, without the lock) with a
// receive in flight while a peer reaps: the owner's look at the CQ ring
// before it sleeps reads only the words the kernel shares, and every
// receive completes once. park read the ring's own head, which the peer's
// reap moves, and the race detector saw it.
func TestTryReapRacesTheOwnersSleep(t *testing.T) {
	fds := socketpair(t)
	var got atomic.Int64
	r, err := NewRing(RingConfig[string]{Entries: 64, SubmitBatch: 1,
		Done: func(string, uint64, Result) bool { got.Add(1); return true }})
	if err != nil {
		t.Skipf("io_uring unavailable: %v", err)
	}
	defer r.Close()
	var byPeer atomic.Int64
	stopPeer := reapAsPeer(r, &byPeer)
	const recvs = 200
	for i := range recvs {
		r.Start(&recvOp{fd: fds[0], buf: make([]byte, 1)}, "recv", uint64(i))
		r.Wait(0) // submits; the signals go off with an operation in flight
		go func() {
			time.Sleep(200 * time.Microsecond)
			unix.Write(fds[1], []byte{1})
		}()
		deadline := time.Now().Add(5 * time.Second)
		for got.Load() < int64(i+1) {
			if time.Now().After(deadline) {
				t.Fatalf("receive %d did not complete within 5 s", i)
			}
			r.Wait(5 * time.Millisecond)
		}
	}
	stopPeer()
	if n := got.Load(); n != recvs {
		t.Errorf("%d completions for %d receives", n, recvs)
	}
	t.Logf("%d of %d reaped by the peer", byPeer.Load(), recvs)
}

// TryReap refuses a closed ring, and a ring whose completions belong to
// one thread.
func TestTryReapRefuses(t *testing.T) {
	r, err := NewRing(RingConfig[string]{Entries: 8, SubmitBatch: 1, Done: func(string, uint64, Result) bool { return true }})
	if err != nil {
		t.Skipf("io_uring unavailable: %v", err)
	}
	r.Start(nopOp{}, "nop", 1)
	if n, ok := r.TryReap(); !ok || n != 1 {
		t.Errorf("TryReap of an open ring with a completion = %d, %v; want 1, true", n, ok)
	}
	// While the owner holds the ring (StartHeld), a peer gets nothing.
	r.StartHeld(nopOp{}, "nop", 2)
	if _, ok := r.TryReap(); ok {
		t.Error("TryReap succeeded while the owner held the ring")
	}
	r.Unhold()
	if n, ok := r.TryReap(); !ok || n != 1 {
		t.Errorf("TryReap after Unhold = %d, %v; want 1, true", n, ok)
	}
	r.Close()
	if _, ok := r.TryReap(); ok {
		t.Error("TryReap of a closed ring succeeded")
	}
	// StartHeld on a closed ring panics, and leaves the ring unlocked.
	func() {
		defer func() {
			if recover() == nil {
				t.Error("StartHeld on a closed ring did not panic")
			}
		}()
		r.StartHeld(nopOp{}, "nop", 3)
	}()
	if !r.mu.TryLock() {
		t.Error("a panicking StartHeld left the ring locked")
	} else {
		r.mu.Unlock()
	}
	tb, err := NewRing(RingConfig[string]{Entries: 8, Flags: uring.SetupSingleIssuer, Done: func(string, uint64, Result) bool { return true }})
	if err != nil {
		t.Skipf("no SINGLE_ISSUER ring: %v", err)
	}
	defer tb.Close()
	if _, ok := tb.TryReap(); ok {
		t.Error("TryReap of a thread-bound ring succeeded")
	}
}

// A cancel the kernel answers -EALREADY or -ENOENT for an operation still
// in flight is asked again after a timer whose delay doubles per ask, from
// 1 ms up to 128 ms, so that an operation io-wq runs for long costs a few
// entries a second; and the cancel asked again does end the operation.
func TestRingRecancelBacksOff(t *testing.T) {
	f := newRingFixture(t, 64)
	fds := socketpair(t)
	id := f.r.Start(&recvOp{fd: fds[0], buf: make([]byte, 8)}, "reader", 1)
	f.r.Wait(0)
	f.r.mu.Lock()
	rec, _ := f.r.recs.lookup(id)
	rec.cancelled = true // as if its cancel had been asked and refused
	for i := range recancelDelays + 2 {
		f.r.cancelAnswered(id, -int32(syscall.EALREADY))
		f.r.cancelAgain()
		want := min(i+1, recancelDelays)
		if int(rec.recancels) != want {
			t.Fatalf("after %d refusals: %d asks counted, want %d", i+1, rec.recancels, want)
		}
	}
	for i, ts := range f.r.recancelTS {
		if got, want := time.Duration(ts.Nano()), time.Millisecond<<i; got != want {
			t.Errorf("delay %d = %v, want %v", i, got, want)
		}
	}
	// A zero-copy send waiting for its notification is not asked again.
	rec.more = true
	f.r.cancelAnswered(id, -int32(syscall.ENOENT))
	if n := len(f.r.recancelAfter); n != 0 {
		t.Errorf("%d asks queued for a record waiting for its notification", n)
	}
	rec.more = false
	f.r.mu.Unlock()
	// The first timer fires after 1 ms and the cancel, asked again, ends
	// the receive (the kernel finds it this time).
	f.waitFor(t, 1)
	if err := f.dones[0].r.Err(); !errors.Is(err, syscall.ECANCELED) && !errors.Is(err, syscall.EINTR) {
		t.Fatalf("the receive ended with %v, want ECANCELED", err)
	}
}
