package uring

import (
	"testing"

	"golang.org/x/sys/unix"
)

// Memory handed to a Prep method must not stay on a goroutine stack, which
// moves when it grows: the compiler has to heap-allocate a local buffer
// passed to PrepRead, a local timespec passed to PrepTimeout, and so on.
func TestPrepMovesMemoryToHeap(t *testing.T) {
	var s SQE
	cases := map[string]func(){
		"PrepRead": func() {
			var b [64]byte
			s.PrepRead(0, b[:], 0)
		},
		"PrepTimeout": func() {
			var ts unix.Timespec
			s.PrepTimeout(&ts, 0, 0)
		},
		"PrepConnect": func() {
			var sa RawSockaddrAny
			s.PrepConnect(0, &sa, 0)
		},
		"PrepStatx": func() {
			var st unix.Statx_t
			s.PrepStatx(0, nil, 0, 0, &st)
		},
	}
	for name, prep := range cases {
		if n := testing.AllocsPerRun(10, prep); n < 1 {
			t.Errorf("%s left its argument on the stack (%v allocations)", name, n)
		}
	}
}

// A Prep method resets every field, so nothing from an earlier use of the
// slot leaks into the new request.
func TestPrepResetsEntry(t *testing.T) {
	s := SQE{Flags: SQELink, IoPrio: 3, OpFlags: 9, UserData: 5, BufIndex: 2, Personality: 1, SpliceFdIn: 4, Addr3: 8}
	s.PrepNop()
	if s != (SQE{Opcode: OpNop, Fd: -1}) {
		t.Errorf("PrepNop left %+v", s)
	}
	s.PrepAsyncCancelFd(7, CancelAll)
	if s.Opcode != OpAsyncCancel || s.Fd != 7 || s.OpFlags != CancelAll|CancelFd {
		t.Errorf("PrepAsyncCancelFd: %+v", s)
	}
}

func TestPrepProvideBuffersPanicsOnZeroSize(t *testing.T) {
	defer func() {
		if recover() == nil {
			t.Error("no panic for buffer size 0")
		}
	}()
	var s SQE
	s.PrepProvideBuffers(make([]byte, 8), 0, 1, 0)
}

func TestMultishot(t *testing.T) {
	var s SQE
	cases := []struct {
		name string
		prep func()
		want bool
	}{
		{"accept", func() { s.PrepAccept(3, nil, nil, 0) }, false},
		{"multishot accept", func() { s.PrepAcceptMultishot(3, nil, nil, 0) }, true},
		{"recv", func() { s.PrepRecv(3, make([]byte, 8), 0) }, false},
		{"multishot recv", func() { s.PrepRecvMultishot(3, 1, 0) }, true},
		{"multishot recvmsg", func() { s.PrepNop(); s.Opcode, s.IoPrio = OpRecvmsg, recvMultishot }, true},
		{"poll", func() { s.PrepPollAdd(3, unix.POLLIN) }, false},
		{"multishot poll", func() { s.PrepPollMultishot(3, unix.POLLIN) }, true},
		{"timeout", func() { s.PrepTimeout(&unix.Timespec{Nsec: 1}, 0, 0) }, false},
		{"multishot timeout", func() { s.PrepTimeout(&unix.Timespec{Nsec: 1}, 0, 0); s.OpFlags |= timeoutMultishot }, true},
		{"zero-copy send", func() { s.PrepSendZC(3, make([]byte, 8), 0, 0) }, false},
		{"nop", func() { s.PrepNop() }, false},
		{"opcode past the known ones", func() { s.PrepNop(); s.Opcode = OpSendmsgZC + 1 }, true},
	}
	for _, c := range cases {
		c.prep()
		if got := s.Multishot(); got != c.want {
			t.Errorf("%s: Multishot() = %v, want %v", c.name, got, c.want)
		}
	}
}

func TestCQEErrOfANotification(t *testing.T) {
	for _, res := range []int32{0, NotifUsageZCCopied} {
		if err := (CQE{Res: res, Flags: CQEFNotif}).Err(); err != nil {
			t.Errorf("notification with Res %#x: Err() = %v, want nil", uint32(res), err)
		}
	}
	if err := (CQE{Res: -int32(unix.EBADF)}).Err(); err != unix.EBADF {
		t.Errorf("Res -EBADF: Err() = %v, want EBADF", err)
	}
}
