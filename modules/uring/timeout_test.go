package uring

import (
	"errors"
	"math"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func TestTimeoutFires(t *testing.T) {
	needRing(t)
	r := newRing(t, 4, nil)
	ts := unix.NsecToTimespec(int64(5 * time.Millisecond))
	s := getSQE(t, r)
	s.PrepTimeout(&ts, 0, 0)
	s.SetUserData(1)
	start := time.Now()
	c := reapOne(t, r, 1)
	if !errors.Is(c.Err(), syscall.ETIME) {
		t.Fatalf("timeout: %v, want ETIME", c.Err())
	}
	if el := time.Since(start); el < 5*time.Millisecond {
		t.Errorf("timeout fired after %v, before its 5ms", el)
	}

	// Expiry fails a link chain, unless TimeoutETimeOK says it is success.
	for _, tt := range []struct {
		flags uint32
		want  int32
	}{{0, -int32(unix.ECANCELED)}, {TimeoutETimeOK, 0}} {
		s = getSQE(t, r)
		s.PrepTimeout(&ts, 0, tt.flags)
		s.SetUserData(1)
		s.SetFlags(SQELink)
		s = getSQE(t, r)
		s.PrepNop()
		s.SetUserData(2)
		got := reapN(t, r, 2)
		if !errors.Is(got[1].Err(), syscall.ETIME) || got[2].Res != tt.want {
			t.Errorf("flags %#x: timeout %v, linked nop res %d (want %d)", tt.flags, got[1].Err(), got[2].Res, tt.want)
		}
	}
}

// A count timeout completes with 0 once enough other requests completed,
// long before its timer.
func TestTimeoutCount(t *testing.T) {
	needRing(t)
	r := newRing(t, 8, nil)
	ts := unix.NsecToTimespec(int64(time.Hour))
	s := getSQE(t, r)
	s.PrepTimeout(&ts, 2, 0)
	s.SetUserData(1)
	submit(t, r)
	for i := range 2 {
		s := getSQE(t, r)
		s.PrepNop()
		s.SetUserData(uint64(10 + i))
	}
	got := reapN(t, r, 3)
	if got[1].Res != 0 {
		t.Errorf("count timeout: res %d err %v", got[1].Res, got[1].Err())
	}
}

func TestTimeoutRemoveAndUpdate(t *testing.T) {
	needRing(t)
	r := newRing(t, 8, nil)
	long := unix.NsecToTimespec(int64(time.Hour))
	s := getSQE(t, r)
	s.PrepTimeout(&long, 0, 0)
	s.SetUserData(1)
	submit(t, r)

	// Shorten it to 1ms, then it fires.
	short := unix.NsecToTimespec(int64(time.Millisecond))
	s = getSQE(t, r)
	s.PrepTimeoutUpdate(&short, 1, 0)
	s.SetUserData(2)
	got := reapN(t, r, 2)
	if got[2].Err() != nil || !errors.Is(got[1].Err(), syscall.ETIME) {
		t.Fatalf("update: %v; timeout: %v", got[2].Err(), got[1].Err())
	}

	s = getSQE(t, r)
	s.PrepTimeout(&long, 0, 0)
	s.SetUserData(3)
	submit(t, r)
	s = getSQE(t, r)
	s.PrepTimeoutRemove(3, 0)
	s.SetUserData(4)
	got = reapN(t, r, 2)
	if got[4].Err() != nil || !errors.Is(got[3].Err(), syscall.ECANCELED) {
		t.Errorf("remove: %v; removed timeout: %v", got[4].Err(), got[3].Err())
	}
	getSQE(t, r).PrepTimeoutRemove(3, 0)
	if err := reapOne(t, r, 0).Err(); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("removing a finished timeout: %v, want ENOENT", err)
	}
}

// A linked timeout cancels a recv that never completes.
func TestLinkTimeoutCancelsRecv(t *testing.T) {
	needRing(t)
	r := newRing(t, 4, nil)
	_, server := tcpPair(t)
	buf := make([]byte, 16)
	ts := unix.NsecToTimespec(int64(10 * time.Millisecond))
	s := getSQE(t, r)
	s.PrepRecv(server, buf, 0)
	s.SetUserData(1)
	s.SetFlags(SQELink)
	s = getSQE(t, r)
	s.PrepLinkTimeout(&ts, 0)
	s.SetUserData(2)
	submit(t, r)
	got := reapN(t, r, 2)
	if !errors.Is(got[1].Err(), syscall.ECANCELED) {
		t.Errorf("recv under link timeout: %v, want ECANCELED", got[1].Err())
	}
	if !errors.Is(got[2].Err(), syscall.ETIME) {
		t.Errorf("link timeout: %v, want ETIME", got[2].Err())
	}
}

// A linked timeout that does not fire completes with ECANCELED and leaves
// its request alone.
func TestLinkTimeoutNotFired(t *testing.T) {
	needRing(t)
	r := newRing(t, 4, nil)
	ts := unix.NsecToTimespec(int64(time.Hour))
	s := getSQE(t, r)
	s.PrepNop()
	s.SetUserData(1)
	s.SetFlags(SQELink)
	s = getSQE(t, r)
	s.PrepLinkTimeout(&ts, 0)
	s.SetUserData(2)
	got := reapN(t, r, 2)
	if got[1].Res != 0 || !errors.Is(got[2].Err(), syscall.ECANCELED) {
		t.Errorf("nop %+v, link timeout %v", got[1], got[2].Err())
	}
}

func TestAsyncCancelRecv(t *testing.T) {
	needRing(t)
	r := newRing(t, 4, nil)
	_, server := tcpPair(t)
	buf := make([]byte, 16)
	s := getSQE(t, r)
	s.PrepRecv(server, buf, 0)
	s.SetUserData(1)
	submit(t, r)
	noCQE(t, r)

	s = getSQE(t, r)
	s.PrepAsyncCancel(1, 0)
	s.SetUserData(2)
	got := reapN(t, r, 2)
	if !errors.Is(got[1].Err(), syscall.ECANCELED) || got[2].Res != 0 {
		t.Errorf("cancelled recv: %v; cancel: res %d", got[1].Err(), got[2].Res)
	}
	getSQE(t, r).PrepAsyncCancel(1, 0)
	if err := reapOne(t, r, 0).Err(); !errors.Is(err, syscall.ENOENT) {
		t.Errorf("cancelling a finished request: %v, want ENOENT", err)
	}
}

func TestAsyncCancelFd(t *testing.T) {
	needRing(t)
	r := newRing(t, 8, nil)
	_, server := tcpPair(t)
	buf1, buf2 := make([]byte, 8), make([]byte, 8)
	for i, b := range [][]byte{buf1, buf2} {
		s := getSQE(t, r)
		s.PrepRecv(server, b, 0)
		s.SetUserData(uint64(i + 1))
	}
	submit(t, r)
	s := getSQE(t, r)
	s.PrepAsyncCancelFd(server, CancelAll)
	s.SetUserData(3)
	got := reapN(t, r, 3)
	if got[3].Res != 2 {
		t.Errorf("cancel all on fd: res %d (err %v), want 2 cancelled", got[3].Res, got[3].Err())
	}
	for i := uint64(1); i <= 2; i++ {
		if !errors.Is(got[i].Err(), syscall.ECANCELED) {
			t.Errorf("recv %d: %v, want ECANCELED", i, got[i].Err())
		}
	}
}

func TestPollAdd(t *testing.T) {
	needRing(t)
	r := newRing(t, 4, nil)
	var p [2]int
	p[0], p[1] = pipeFds(t)
	s := getSQE(t, r)
	s.PrepPollAdd(p[0], unix.POLLIN)
	s.SetUserData(1)
	submit(t, r)
	noCQE(t, r)
	unix.Write(p[1], []byte{1})
	if c := reapOne(t, r, 1); c.Res&unix.POLLIN == 0 {
		t.Errorf("poll: res %#x, want POLLIN", c.Res)
	}

	var drain [1]byte
	unix.Read(p[0], drain[:])
	s = getSQE(t, r)
	s.PrepPollMultishot(p[0], unix.POLLIN)
	s.SetUserData(2)
	submit(t, r)
	for range 2 {
		unix.Write(p[1], []byte{1})
		if c := reapOne(t, r, 2); c.Res&unix.POLLIN == 0 || !c.More() {
			t.Fatalf("multishot poll: res %#x more %v", c.Res, c.More())
		}
		unix.Read(p[0], drain[:])
	}
	s = getSQE(t, r)
	s.PrepPollRemove(2)
	s.SetUserData(3)
	got := reapN(t, r, 2)
	if got[3].Err() != nil || got[2].More() {
		t.Errorf("poll remove: %v, final poll CQE %+v", got[3].Err(), got[2])
	}
}

// withoutExtArg makes r behave as on a kernel older than 5.11, so the
// timeout-SQE wait path runs on this kernel too.
func withoutExtArg(r *Ring) {
	r.features &^= FeatExtArg
	r.timeoutTS = make([]unix.Timespec, r.sq.entries)
}

func TestWaitTimeout(t *testing.T) {
	needRing(t)
	for _, mode := range []string{"ext_arg", "timeout_sqe"} {
		t.Run(mode, func(t *testing.T) {
			r := newRing(t, 4, nil)
			if mode == "timeout_sqe" {
				withoutExtArg(r)
			}
			start := time.Now()
			if _, err := r.WaitCQE(10 * time.Millisecond); !errors.Is(err, ErrTimeout) || !errors.Is(err, syscall.ETIME) {
				t.Fatalf("WaitCQE on an idle ring: %v, want ErrTimeout", err)
			}
			if el := time.Since(start); el < 10*time.Millisecond {
				t.Errorf("WaitCQE returned after %v, before its timeout", el)
			}
			if _, err := r.WaitCQE(0); !errors.Is(err, ErrTimeout) {
				t.Errorf("WaitCQE(0) on an idle ring: %v", err)
			}
			if _, err := r.SubmitAndWaitTimeout(1, 5*time.Millisecond); !errors.Is(err, syscall.ETIME) {
				t.Errorf("SubmitAndWaitTimeout on an idle ring: %v", err)
			}

			// A completion inside the timeout is returned, and the timeout
			// machinery leaves no CQE of its own behind.
			ts := unix.NsecToTimespec(int64(2 * time.Millisecond))
			s := getSQE(t, r)
			s.PrepTimeout(&ts, 0, 0)
			s.SetUserData(5)
			c, err := r.WaitCQE(5 * time.Second)
			if err != nil || c.UserData != 5 {
				t.Fatalf("WaitCQE: %v, %v", c, err)
			}
			r.CQESeen(c)
			for range 3 {
				getSQE(t, r).PrepNop()
			}
			if n, err := r.SubmitAndWaitTimeout(3, time.Second); n != 3 || err != nil {
				t.Fatalf("SubmitAndWaitTimeout = %d, %v", n, err)
			}
			if n, err := r.SubmitAndWaitTimeout(3, 0); n != 0 || err != nil {
				t.Errorf("SubmitAndWaitTimeout(3, 0) with 3 ready = %d, %v", n, err)
			}
			if n := r.ForEachCQE(func(c *CQE) {
				if c.UserData != 0 {
					t.Errorf("unexpected CQE %+v", *c)
				}
			}); n != 3 {
				t.Errorf("reaped %d nops, want 3", n)
			}
			time.Sleep(15 * time.Millisecond) // let any leftover internal timeout fire
			if c, err := r.PeekCQE(); c != nil || err != nil {
				t.Errorf("leftover CQE %v, %v", c, err)
			}
			if r.internalPending != 0 && r.CQReady() != 0 {
				t.Errorf("internal timeout CQEs left in the CQ: %d", r.CQReady())
			}
		})
	}
}

// Zero, spent, negative and huge timeouts: a wait that cannot wait still
// submits what is queued, and reports ErrTimeout whenever fewer than waitNr
// completions are ready. A timeout of 1ns used to run out before the first
// round and return without submitting, and a zero one on an idle ring
// returned nil.
func TestWaitTimeoutEdges(t *testing.T) {
	needRing(t)
	for _, mode := range []string{"ext_arg", "timeout_sqe"} {
		t.Run(mode, func(t *testing.T) {
			r := newRing(t, 4, nil)
			if mode == "timeout_sqe" {
				withoutExtArg(r)
			}
			if n, err := r.SubmitAndWaitTimeout(1, 0); n != 0 || !errors.Is(err, ErrTimeout) {
				t.Errorf("SubmitAndWaitTimeout(1, 0) on an idle ring = %d, %v; want 0, ErrTimeout", n, err)
			}
			for _, timeout := range []time.Duration{0, time.Nanosecond, -time.Nanosecond, math.MaxInt64} {
				s := getSQE(t, r)
				s.PrepNop()
				s.SetUserData(7)
				n, err := r.SubmitAndWaitTimeout(1, timeout)
				if n != 1 || r.SQReady() != 0 {
					t.Fatalf("SubmitAndWaitTimeout(1, %v) = %d, %v with SQReady %d; want the nop submitted", timeout, n, err, r.SQReady())
				}
				if err != nil && !errors.Is(err, ErrTimeout) {
					t.Fatalf("SubmitAndWaitTimeout(1, %v): %v", timeout, err)
				}
				if c := reapOne(t, r, 7); c.Res != 0 {
					t.Errorf("nop after SubmitAndWaitTimeout(1, %v): %+v", timeout, c)
				}
			}
			getSQE(t, r).PrepNop()
			c, err := r.WaitCQE(time.Nanosecond)
			if r.SQReady() != 0 {
				t.Fatal("WaitCQE(1ns) left the nop unsubmitted")
			}
			switch {
			case c != nil:
				r.CQESeen(c)
			case errors.Is(err, ErrTimeout):
				nextCQE(t, r)
			default:
				t.Fatalf("WaitCQE(1ns): %v", err)
			}
		})
	}
}
