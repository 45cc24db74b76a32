package uring

import (
	"encoding/binary"
	"errors"
	"runtime"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestSQFull(t *testing.T) {
	needRing(t)
	r := newRing(t, 8, nil)
	for i := range 8 {
		if got := r.SQSpace(); got != uint32(8-i) {
			t.Fatalf("SQSpace with %d taken = %d", i, got)
		}
		s := getSQE(t, r)
		s.PrepNop()
		s.SetUserData(uint64(i))
	}
	if s := r.GetSQE(); s != nil {
		t.Fatal("GetSQE returned an entry with the SQ full")
	}
	if r.SQReady() != 8 || r.SQSpace() != 0 {
		t.Fatalf("SQReady %d, SQSpace %d with the SQ full", r.SQReady(), r.SQSpace())
	}
	if n, err := r.Submit(); n != 8 || err != nil {
		t.Fatalf("Submit = %d, %v", n, err)
	}
	if r.SQReady() != 0 || r.SQSpace() != 8 {
		t.Fatalf("SQReady %d, SQSpace %d after Submit", r.SQReady(), r.SQSpace())
	}
	s := getSQE(t, r)
	if *s != (SQE{}) {
		t.Errorf("reused SQE not zeroed: %+v", *s)
	}
	s.PrepNop()
	s.SetUserData(8)
	if got := reapN(t, r, 9); len(got) != 9 {
		t.Errorf("reaped %d CQEs", len(got))
	}
	// Nothing queued: Submit is a no-op.
	if n, err := r.Submit(); n != 0 || err != nil {
		t.Errorf("empty Submit = %d, %v", n, err)
	}
}

// With a CQ of 4 and 16 completions, the kernel holds 12 back; every one of
// them must still be reaped exactly once, through each reaping method.
func TestCQOverflowBacklog(t *testing.T) {
	needRing(t)
	reapers := map[string]func(r *Ring, seen func(uint64)) int{
		"PeekCQE": func(r *Ring, seen func(uint64)) int {
			c, err := r.PeekCQE()
			if err != nil || c == nil {
				return 0
			}
			seen(c.UserData)
			r.CQESeen(c)
			return 1
		},
		"ForEachCQE": func(r *Ring, seen func(uint64)) int {
			return r.ForEachCQE(func(c *CQE) { seen(c.UserData) })
		},
		"PeekBatch": func(r *Ring, seen func(uint64)) int {
			var batch [3]*CQE
			n := r.PeekBatch(batch[:])
			for _, c := range batch[:n] {
				seen(c.UserData)
			}
			r.CQAdvance(uint32(n))
			return n
		},
	}
	for name, reap := range reapers {
		t.Run(name, func(t *testing.T) {
			r := newRing(t, 4, &Params{CQEntries: 4})
			const total = 16
			for round := range total / 4 {
				for i := range 4 {
					s := getSQE(t, r)
					s.PrepNop()
					s.SetUserData(uint64(round*4 + i))
				}
				if _, err := r.Submit(); err != nil {
					t.Fatalf("Submit with a full CQ: %v", err)
				}
			}
			if atomic.LoadUint32(r.sq.kflags)&sqCQOverflow == 0 {
				t.Fatal("kernel did not flag the CQ overflow")
			}
			if !r.CQHeld() {
				t.Fatal("CQHeld = false with completions held back")
			}
			if r.CQReady() != 4 {
				t.Fatalf("CQReady = %d, want the 4 the CQ holds", r.CQReady())
			}
			seen := make(map[uint64]int)
			for n := 0; n < total; {
				got := reap(r, func(ud uint64) { seen[ud]++ })
				if got == 0 {
					t.Fatalf("reaping stalled after %d of %d", n, total)
				}
				n += got
			}
			for ud := range uint64(total) {
				if seen[ud] != 1 {
					t.Errorf("user data %d seen %d times", ud, seen[ud])
				}
			}
			if r.CQHeld() {
				t.Error("CQHeld = true after every completion was reaped")
			}
			if r.Backlogs() == 0 {
				t.Error("Backlogs did not count the held-back completions")
			}
			if r.Overflow() != 0 {
				t.Errorf("Overflow = %d, but nothing was dropped", r.Overflow())
			}
			if c, err := r.PeekCQE(); c != nil || err != nil {
				t.Errorf("CQ not empty at the end: %v, %v", c, err)
			}
		})
	}
}

// The kernel drops CQEs only when it cannot allocate memory to hold them,
// which a test cannot arrange; it then bumps the CQ ring's overflow
// counter. Bump that counter (it lives in the mapping shared with the
// kernel) and check that the loss is reported, once.
func TestCQDroppedReported(t *testing.T) {
	needRing(t)
	r := newRing(t, 4, nil)
	atomic.AddUint32(r.cq.koverflow, 3)
	if r.Overflow() != 3 {
		t.Fatalf("Overflow = %d, want 3", r.Overflow())
	}
	_, err := r.PeekCQE()
	var oe *OverflowError
	if !errors.As(err, &oe) || oe.Dropped != 3 || !errors.Is(err, ErrCQOverflow) {
		t.Fatalf("PeekCQE after a drop: %v, want *OverflowError{3}", err)
	}
	if _, err := r.PeekCQE(); err != nil {
		t.Fatalf("drop reported twice: %v", err)
	}
	atomic.AddUint32(r.cq.koverflow, 1)
	getSQE(t, r).PrepNop()
	n, err := r.Submit()
	if n != 1 || !errors.As(err, &oe) || oe.Dropped != 1 {
		t.Fatalf("Submit after a drop = %d, %v; want 1 and *OverflowError{1}", n, err)
	}
	// The submission went through regardless.
	if c := reapOne(t, r, 0); c.Res != 0 {
		t.Errorf("nop res %d", c.Res)
	}
	atomic.AddUint32(r.cq.koverflow, 2)
	if _, err := r.WaitCQE(time.Millisecond); !errors.Is(err, ErrCQOverflow) {
		t.Errorf("WaitCQE after a drop: %v", err)
	}
}

func TestPeekBatchAndAdvance(t *testing.T) {
	needRing(t)
	r := newRing(t, 8, nil)
	if c, err := r.PeekCQE(); c != nil || err != nil {
		t.Fatalf("PeekCQE on an empty ring = %v, %v", c, err)
	}
	for i := range 5 {
		s := getSQE(t, r)
		s.PrepNop()
		s.SetUserData(uint64(i))
	}
	if _, err := r.SubmitAndWait(5); err != nil {
		t.Fatal(err)
	}
	if r.CQReady() != 5 {
		t.Fatalf("CQReady = %d", r.CQReady())
	}
	batch := make([]*CQE, 3)
	if n := r.PeekBatch(batch); n != 3 || batch[0].UserData != 0 || batch[2].UserData != 2 {
		t.Fatalf("PeekBatch = %d", n)
	}
	// Peeking again without advancing sees the same entries.
	if n := r.PeekBatch(batch); n != 3 || batch[0].UserData != 0 {
		t.Fatalf("second PeekBatch = %d, first %d", n, batch[0].UserData)
	}
	r.CQAdvance(3)
	if n := r.PeekBatch(batch); n != 2 || batch[0].UserData != 3 || batch[1].UserData != 4 {
		t.Fatalf("PeekBatch after advance = %d", n)
	}
	r.CQAdvance(100) // clamped to the 2 ready
	if r.CQReady() != 0 || r.PeekBatch(batch) != 0 || r.PeekBatch(nil) != 0 {
		t.Fatalf("CQ not empty after advancing past the end: %d", r.CQReady())
	}
	getSQE(t, r).PrepNop()
	if c := reapOne(t, r, 0); c.Res != 0 {
		t.Errorf("ring unusable after clamped advance: %+v", c)
	}
}

// ForEachCQE releases what fn was given even if fn panics, and nothing else.
func TestForEachCQEPanic(t *testing.T) {
	needRing(t)
	r := newRing(t, 8, nil)
	for i := range 4 {
		s := getSQE(t, r)
		s.PrepNop()
		s.SetUserData(uint64(i))
	}
	if _, err := r.SubmitAndWait(4); err != nil {
		t.Fatal(err)
	}
	func() {
		defer func() { recover() }()
		r.ForEachCQE(func(c *CQE) {
			if c.UserData == 1 {
				panic("boom")
			}
		})
	}()
	var rest []uint64
	r.ForEachCQE(func(c *CQE) { rest = append(rest, c.UserData) })
	if len(rest) != 2 || rest[0] != 2 || rest[1] != 3 {
		t.Errorf("after a panic on CQE 1 the rest is %v, want [2 3]", rest)
	}
}

// A chain with SQEDrain runs after everything before it; SQEAsync and
// hardlinks are accepted and complete normally.
func TestSQEFlags(t *testing.T) {
	needRing(t)
	r := newRing(t, 8, nil)
	ts := unix.NsecToTimespec(int64(5 * time.Millisecond))
	s := getSQE(t, r)
	s.PrepTimeout(&ts, 0, 0)
	s.SetUserData(1)
	s = getSQE(t, r)
	s.PrepNop()
	s.SetUserData(2)
	s.SetFlags(SQEDrain)
	s = getSQE(t, r)
	s.PrepNop()
	s.SetUserData(3)
	s.SetFlags(SQEAsync | SQEIOHardlink)
	s = getSQE(t, r)
	s.PrepNop()
	s.SetUserData(4)
	s.SetFlags(SQECQESkipSuccess)
	submit(t, r)
	var order []uint64
	for range 3 {
		order = append(order, nextCQE(t, r).UserData)
	}
	if order[0] != 1 {
		t.Errorf("drained nop completed before the timeout ahead of it: %v", order)
	}
	noCQE(t, r) // the SQECQESkipSuccess nop posts nothing
}

func TestEventFd(t *testing.T) {
	needRing(t)
	// The kernel may signal the eventfd a little after posting the CQE
	// (from an RCU callback), so wait for the signal rather than read once.
	signalled := func(efd int, wait time.Duration) bool {
		fds := []unix.PollFd{{Fd: int32(efd), Events: unix.POLLIN}}
		if n, err := unix.Poll(fds, int(wait.Milliseconds())); n != 1 || err != nil {
			return false
		}
		var b [8]byte
		_, err := unix.Read(efd, b[:])
		return err == nil && binary.NativeEndian.Uint64(b[:]) > 0
	}
	asyncNop := func(t *testing.T, r *Ring) {
		s := getSQE(t, r)
		s.PrepNop()
		s.SetFlags(SQEAsync) // completes on an async worker, not inline
		reapOne(t, r, 0)
	}
	for _, async := range []bool{false, true} {
		r := newRing(t, 4, nil)
		efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
		if err != nil {
			t.Fatal(err)
		}
		defer unix.Close(efd)
		register := r.RegisterEventFd
		if async {
			register = r.RegisterEventFdAsync
		}
		if err := register(efd); err != nil {
			t.Fatal(err)
		}
		asyncNop(t, r)
		if !signalled(efd, 5*time.Second) {
			t.Errorf("async=%v: an async completion did not signal the eventfd", async)
		}
		// An inline completion signals only the plain registration.
		getSQE(t, r).PrepNop()
		reapOne(t, r, 0)
		wait := 5 * time.Second
		if async {
			wait = 50 * time.Millisecond // long enough for a late signal to show
		}
		if got := signalled(efd, wait); got == async {
			t.Errorf("async=%v: inline completion signalled the eventfd: %v", async, got)
		}
		if err := r.UnregisterEventFd(); err != nil {
			t.Fatal(err)
		}
		asyncNop(t, r)
		if signalled(efd, 50*time.Millisecond) {
			t.Errorf("async=%v: eventfd signalled after unregister", async)
		}
	}
}

// SetEventFdSignals(false) stops completions from signalling the registered
// eventfd, and (true) restores it.
func TestSetEventFdSignals(t *testing.T) {
	needRing(t)
	r := newRing(t, 4, nil)
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(efd)
	if err := r.RegisterEventFd(efd); err != nil {
		t.Fatal(err)
	}
	count := func() uint64 {
		var b [8]byte
		if _, err := unix.Read(efd, b[:]); err != nil {
			return 0 // EAGAIN: not signalled
		}
		return binary.NativeEndian.Uint64(b[:])
	}
	nops := func(n int) {
		for range n {
			getSQE(t, r).PrepNop()
		}
		submit(t, r)
		for range n {
			nextCQE(t, r)
		}
		time.Sleep(20 * time.Millisecond) // room for a late signal
	}
	if !r.SetEventFdSignals(false) {
		t.Skip("kernel without IORING_CQ_EVENTFD_DISABLED")
	}
	nops(3)
	if c := count(); c != 0 {
		t.Errorf("signals off: eventfd counter %d after 3 completions, want 0", c)
	}
	if !r.SetEventFdSignals(true) {
		t.Fatal("SetEventFdSignals(true) = false after (false) = true")
	}
	nops(3)
	if c := count(); c == 0 {
		t.Error("signals on: 3 completions did not signal the eventfd")
	}
	r.Close()
	if r.SetEventFdSignals(true) {
		t.Error("SetEventFdSignals on a closed ring = true")
	}
}

// An SQPOLL ring submits without system calls while the poll thread is
// awake and wakes it when it sleeps.
func TestSQPollWakeup(t *testing.T) {
	needRing(t)
	r := newRing(t, 8, &Params{Flags: SetupSQPoll, SQThreadIdle: 1})
	for round := range 3 {
		time.Sleep(10 * time.Millisecond) // let the poll thread go idle
		s := getSQE(t, r)
		s.PrepNop()
		s.SetUserData(uint64(round))
		if n, err := r.Submit(); n != 1 || err != nil {
			t.Fatalf("Submit = %d, %v", n, err)
		}
		reapOne(t, r, uint64(round))
	}
}

// Without FeatExtArg a timed wait needs an SQ slot for its timeout; with the
// SQ full it submits first and still honours the timeout.
func TestWaitTimeoutFullSQ(t *testing.T) {
	needRing(t)
	r := newRing(t, 4, nil)
	withoutExtArg(r)
	_, server := tcpPair(t)
	bufs := make([][]byte, 4)
	for i := range bufs {
		bufs[i] = make([]byte, 8)
		s := getSQE(t, r)
		s.PrepRecv(server, bufs[i], 0)
		s.SetUserData(uint64(i))
	}
	if _, err := r.SubmitAndWaitTimeout(1, 10*time.Millisecond); !errors.Is(err, ErrTimeout) {
		t.Fatalf("wait with a full SQ: %v, want ErrTimeout", err)
	}
	if r.SQReady() != 0 {
		t.Errorf("SQReady = %d after the wait, want all submitted", r.SQReady())
	}
	s := getSQE(t, r)
	s.PrepAsyncCancelFd(server, CancelAll)
	s.SetUserData(99)
	got := reapN(t, r, 5)
	if got[99].Res != 4 {
		t.Errorf("cancelled %d recvs, want 4", got[99].Res)
	}
}

// Waiting for more completions than the CQ holds waits for a full CQ, as
// the kernel does, and the rest stay held back, not lost. It used to spin
// in io_uring_enter, which returned at once each time, until the timeout
// (forever with SubmitAndWait).
func TestWaitMoreThanCQ(t *testing.T) {
	needRing(t)
	r := newRing(t, 8, &Params{CQEntries: 8})
	const total = 16
	for round := range 2 {
		for i := range 8 {
			s := getSQE(t, r)
			s.PrepNop()
			s.SetUserData(uint64(round*8 + i))
		}
		if round == 0 {
			submit(t, r)
		}
	}
	start := time.Now()
	n, err := r.SubmitAndWaitTimeout(total, 2*time.Second)
	if n != 8 || err != nil {
		t.Fatalf("SubmitAndWaitTimeout(%d) with a CQ of 8 = %d, %v after %v; want 8, nil", total, n, err, time.Since(start))
	}
	if r.CQReady() != 8 || !r.CQHeld() {
		t.Fatalf("CQReady %d, CQHeld %v; want a full CQ and the rest held", r.CQReady(), r.CQHeld())
	}
	if got := reapN(t, r, total); len(got) != total {
		t.Fatalf("reaped %d of %d", len(got), total)
	}
}

// CQPending answers another goroutine (-race checks that it touches only
// what the kernel shares): the completions posted and not released, and
// those the kernel holds back as deferred task work.
func TestCQPendingFromAnotherGoroutine(t *testing.T) {
	needRing(t)
	runtime.LockOSThread() // DEFER_TASKRUN: one issuer
	defer runtime.UnlockOSThread()
	r := newRing(t, 8, &Params{Flags: SetupSingleIssuer | SetupDeferTaskrun | SetupTaskrunFlag})
	pending := func() (uint32, bool) {
		type answer struct {
			posted uint32
			held   bool
		}
		ch := make(chan answer)
		go func() {
			p, h := r.CQPending()
			ch <- answer{p, h}
		}()
		a := <-ch
		return a.posted, a.held
	}
	if p, h := pending(); p != 0 || h {
		t.Fatalf("idle ring: CQPending = %d, %v", p, h)
	}
	// A timeout's completion is task work, which a DEFER_TASKRUN ring runs
	// only when its issuer asks for completions: held, not posted.
	ts := unix.NsecToTimespec(int64(time.Millisecond))
	s := getSQE(t, r)
	s.PrepTimeout(&ts, 0, 0)
	s.SetUserData(1)
	submit(t, r)
	deadline := time.Now().Add(5 * time.Second)
	for {
		p, h := pending()
		if h {
			if p != 0 {
				t.Errorf("held completion counted as posted: %d", p)
			}
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("CQPending never reported the held completion")
		}
		time.Sleep(time.Millisecond)
	}
	c, err := r.PeekCQE() // runs the task work: the CQE is posted
	if err != nil || c == nil {
		t.Fatalf("PeekCQE = %v, %v", c, err)
	}
	if p, h := pending(); p != 1 || h {
		t.Errorf("posted, not released: CQPending = %d, %v; want 1, false", p, h)
	}
	r.CQESeen(c)
	if p, h := pending(); p != 0 || h {
		t.Errorf("released: CQPending = %d, %v; want 0, false", p, h)
	}
}
