package uring

import (
	"errors"
	"runtime"
	"strings"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

func TestNewDefaults(t *testing.T) {
	needRing(t)
	var p Params
	r := newRing(t, 0, &p)
	if p.Entries != DefaultEntries || r.SQEntries() != DefaultEntries {
		t.Errorf("SQ entries = %d/%d, want %d", p.Entries, r.SQEntries(), DefaultEntries)
	}
	if p.CQEntries != 2*DefaultEntries || r.CQEntries() != 2*DefaultEntries {
		t.Errorf("CQ entries = %d/%d, want %d", p.CQEntries, r.CQEntries(), 2*DefaultEntries)
	}
	if p.Features != r.Features() || r.Features()&FeatSingleMmap == 0 || r.Features()&FeatNoDrop == 0 {
		t.Errorf("features = %#x / %#x, want SINGLE_MMAP and NODROP on kernel 6.18", p.Features, r.Features())
	}
	if r.Fd() < 0 {
		t.Errorf("Fd = %d", r.Fd())
	}
	// nil params and an explicit entry count that the kernel rounds up.
	r2 := newRing(t, 5, nil)
	if r2.SQEntries() != 8 {
		t.Errorf("SQ entries for 5 = %d, want 8", r2.SQEntries())
	}
}

// Every setup flag the runtime may use is passed through and gives a ring
// that round-trips a nop.
func TestNewFlags(t *testing.T) {
	needRing(t)
	tests := []struct {
		name   string
		p      Params
		locked bool // SINGLE_ISSUER rings must be used from one OS thread
	}{
		{name: "plain"},
		{name: "cqsize", p: Params{CQEntries: 64}},
		{name: "sqpoll", p: Params{Flags: SetupSQPoll, SQThreadIdle: 10}},
		{name: "coop_taskrun", p: Params{Flags: SetupCoopTaskrun | SetupTaskrunFlag}},
		{name: "single_issuer", p: Params{Flags: SetupSingleIssuer}, locked: true},
		{name: "defer_taskrun", p: Params{Flags: SetupSingleIssuer | SetupDeferTaskrun | SetupTaskrunFlag}, locked: true},
		{name: "submit_all", p: Params{Flags: SetupSubmitAll}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if tt.locked {
				runtime.LockOSThread()
				defer runtime.UnlockOSThread()
			}
			p := tt.p
			r, err := New(16, &p)
			if err != nil {
				t.Fatalf("New: %v", err)
			}
			defer r.Close()
			if r.Flags()&tt.p.Flags != tt.p.Flags {
				t.Errorf("flags = %#x, want %#x set", r.Flags(), tt.p.Flags)
			}
			if tt.p.CQEntries != 0 && p.CQEntries != tt.p.CQEntries {
				t.Errorf("CQ entries = %d, want %d", p.CQEntries, tt.p.CQEntries)
			}
			for i := range 3 {
				s := getSQE(t, r)
				s.PrepNop()
				s.SetUserData(uint64(100 + i))
			}
			if n, err := r.SubmitAndWait(3); err != nil || n != 3 {
				t.Fatalf("SubmitAndWait = %d, %v; want 3, nil", n, err)
			}
			got := reapN(t, r, 3)
			for i := range 3 {
				if c, ok := got[uint64(100+i)]; !ok || c.Res != 0 {
					t.Errorf("nop %d: %+v, present %v", i, c, ok)
				}
			}
		})
	}
}

// With the taskrun flag the kernel announces completions it has not posted
// yet, and PeekCQE enters the kernel to post them.
func TestTaskrunFlagPeek(t *testing.T) {
	needRing(t)
	for _, flags := range []uint32{
		SetupCoopTaskrun | SetupTaskrunFlag,
		SetupSingleIssuer | SetupDeferTaskrun | SetupTaskrunFlag,
	} {
		func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			r := newRing(t, 4, &Params{Flags: flags})
			ts := unix.NsecToTimespec(int64(time.Millisecond))
			s := getSQE(t, r)
			s.PrepTimeout(&ts, 0, 0)
			s.SetUserData(1)
			submit(t, r)
			deadline := time.Now().Add(5 * time.Second)
			sawFlag := false
			for {
				if flags&SetupDeferTaskrun != 0 && r.CQReady() == 0 && r.TaskrunPending() {
					sawFlag = true
				}
				c, err := r.PeekCQE()
				if err != nil {
					t.Fatal(err)
				}
				if c != nil {
					if c.UserData != 1 || !errors.Is(c.Err(), syscall.ETIME) {
						t.Errorf("flags %#x: CQE %+v", flags, *c)
					}
					r.CQESeen(c)
					if flags&SetupDeferTaskrun != 0 && !sawFlag {
						t.Errorf("flags %#x: TaskrunPending never reported the deferred completion", flags)
					}
					return
				}
				if time.Now().After(deadline) {
					t.Fatalf("flags %#x: PeekCQE never saw the expired timeout", flags)
				}
				time.Sleep(time.Millisecond)
			}
		}()
	}
}

func TestEnableDisabledRing(t *testing.T) {
	needRing(t)
	r := newRing(t, 4, &Params{Flags: SetupRDisabled})
	getSQE(t, r).PrepNop()
	if _, err := r.Submit(); !errors.Is(err, syscall.EBADFD) {
		t.Fatalf("Submit on a disabled ring: %v, want EBADFD", err)
	}
	if err := r.Enable(); err != nil {
		t.Fatal(err)
	}
	if c := reapOne(t, r, 0); c.Res != 0 {
		t.Errorf("nop after Enable: %+v", c)
	}
}

func TestNewClamp(t *testing.T) {
	needRing(t)
	var p Params
	p.Flags = SetupClamp
	r := newRing(t, 1<<20, &p)
	if r.SQEntries() != MaxEntries {
		t.Errorf("clamped SQ entries = %d, want %d", r.SQEntries(), MaxEntries)
	}
}

func TestNewErrors(t *testing.T) {
	needRing(t)
	_, err := New(1<<20, nil)
	var e *Error
	if !errors.As(err, &e) || !errors.Is(err, syscall.EINVAL) || e.Op != "io_uring_setup" || e.Hint == "" {
		t.Errorf("oversized ring: %v, want *Error wrapping EINVAL with a hint", err)
	}
	_, err = New(8, &Params{CQEntries: 2})
	if !errors.Is(err, syscall.EINVAL) {
		t.Errorf("CQ smaller than SQ: %v, want EINVAL", err)
	}
	_, err = New(8, &Params{Flags: SetupSQE128})
	if !errors.Is(err, ErrNotSupported) {
		t.Errorf("SQE128: %v, want ErrNotSupported", err)
	}
}

// Setup flags newer than the package are refused before the kernel sees
// them: IORING_SETUP_NO_SQARRAY, which kernels since 6.6 accept, left New
// filling an SQ index array that does not exist over the ring's head, tail
// and sizes, and the first nop came back with the wrong user data. Failed
// setups, the kernel's refusals included, leave no descriptor or mapping
// behind.
func TestNewRefusesUnknownFlags(t *testing.T) {
	const (
		noMmap    = 1 << 14 // IORING_SETUP_NO_MMAP
		noSQArray = 1 << 16 // IORING_SETUP_NO_SQARRAY
		cqeMixed  = 1 << 18 // IORING_SETUP_CQE_MIXED
	)
	fds, maps := openFds(t), ringMappings(t)
	for _, flags := range []uint32{noMmap, noSQArray, cqeMixed, 1 << 31, SetupCQE32} {
		if r, err := New(8, &Params{Flags: flags}); !errors.Is(err, ErrNotSupported) {
			if r != nil {
				r.Close()
			}
			t.Errorf("flags %#x: New = %v, want ErrNotSupported", flags, err)
		}
	}
	for _, tt := range []struct {
		entries uint32
		p       Params
	}{
		{MaxEntries + 1, Params{}},
		{8, Params{CQEntries: 4}},
		{8, Params{Flags: SetupCQSize}},
		{8, Params{Flags: SetupAttachWQ, WQFd: 1 << 30}},
	} {
		if _, err := New(tt.entries, &tt.p); err == nil {
			t.Errorf("New(%d, %+v) succeeded", tt.entries, tt.p)
		}
	}
	if got, gotMaps := openFds(t), ringMappings(t); got != fds || gotMaps != maps {
		t.Errorf("after failed setups: %d descriptors (was %d), %d mappings (was %d)", got, fds, gotMaps, maps)
	}
}

// The errnos io_uring_setup fails with for environmental reasons cannot be
// provoked on this machine; check the explanation built for each.
func TestSetupErrorHints(t *testing.T) {
	tests := []struct {
		errno        syscall.Errno
		hint         string
		notSupported bool
	}{
		{unix.ENOSYS, "CONFIG_IO_URING", true},
		{unix.EPERM, "", false},
		{unix.ENOMEM, "RLIMIT_MEMLOCK", false},
		{unix.EINVAL, "32768", false},
		{unix.EFAULT, "", false},
	}
	for _, tt := range tests {
		err := setupError(tt.errno, 0)
		if !errors.Is(err, tt.errno) {
			t.Errorf("%v: errors.Is(err, errno) false for %v", tt.errno, err)
		}
		if errors.Is(err, ErrNotSupported) != tt.notSupported {
			t.Errorf("%v: errors.Is(err, ErrNotSupported) = %v", tt.errno, !tt.notSupported)
		}
		if !strings.Contains(err.Error(), tt.hint) || !strings.Contains(err.Error(), "io_uring_setup") {
			t.Errorf("%v: message %q lacks %q", tt.errno, err, tt.hint)
		}
	}
	for _, tt := range []struct {
		sysctl string
		flags  uint32
		want   string
	}{
		{"2", 0, "io_uring_disabled=2"},
		{"1", 0, "io_uring_group"},
		{"0", 0, "seccomp"},
		{"", SetupSQPoll, "CAP_SYS_NICE"},
	} {
		if got := permissionHint(tt.sysctl, tt.flags); !strings.Contains(got, tt.want) {
			t.Errorf("permissionHint(%q) = %q, want it to mention %q", tt.sysctl, got, tt.want)
		}
	}
}

func TestProbe(t *testing.T) {
	needRing(t)
	r := newRing(t, 4, nil)
	p, err := r.Probe()
	if err != nil {
		t.Fatal(err)
	}
	for _, op := range []Op{OpNop, OpRead, OpWrite, OpReadv, OpAccept, OpConnect, OpSend, OpRecv, OpTimeout, OpAsyncCancel, OpStatx, OpShutdown, OpSendmsgZC} {
		if !p.Supported(op) {
			t.Errorf("%v not supported on kernel 6.18", op)
		}
	}
	if p.LastOp() < OpSendmsgZC {
		t.Errorf("LastOp = %v", p.LastOp())
	}
	if p.Supported(Op(250)) {
		t.Error("opcode 250 reported supported")
	}
	if OpRead.String() != "read" || Op(250).String() != "op(250)" {
		t.Errorf("Op.String: %q %q", OpRead, Op(250))
	}
}

func TestClosedRing(t *testing.T) {
	needRing(t)
	r, err := New(4, nil)
	if err != nil {
		t.Fatal(err)
	}
	s := getSQE(t, r)
	s.PrepNop()
	if err := r.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := r.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}
	check := func(name string, err error) {
		if !errors.Is(err, ErrClosed) {
			t.Errorf("%s after Close: %v, want ErrClosed", name, err)
		}
	}
	_, err = r.Submit()
	check("Submit", err)
	_, err = r.SubmitAndWait(1)
	check("SubmitAndWait", err)
	_, err = r.SubmitAndWaitTimeout(1, time.Millisecond)
	check("SubmitAndWaitTimeout", err)
	_, err = r.WaitCQE(time.Millisecond)
	check("WaitCQE", err)
	_, err = r.PeekCQE()
	check("PeekCQE", err)
	_, err = r.Probe()
	check("Probe", err)
	check("RegisterEventFd", r.RegisterEventFd(0))
	check("RegisterEventFdAsync", r.RegisterEventFdAsync(0))
	check("UnregisterEventFd", r.UnregisterEventFd())
	check("RegisterFiles", r.RegisterFiles([]int32{0}))
	_, err = r.RegisterFilesUpdate(0, []int32{0})
	check("RegisterFilesUpdate", err)
	check("UnregisterFiles", r.UnregisterFiles())
	check("RegisterBuffers", r.RegisterBuffers([][]byte{make([]byte, 8)}))
	// Empty arguments too: the closed ring is the error, not the argument.
	check("RegisterFiles(nil)", r.RegisterFiles(nil))
	_, err = r.RegisterFilesUpdate(0, nil)
	check("RegisterFilesUpdate(nil)", err)
	check("RegisterBuffers(nil)", r.RegisterBuffers(nil))
	check("UnregisterBuffers", r.UnregisterBuffers())
	check("Enable", r.Enable())
	if r.GetSQE() != nil {
		t.Error("GetSQE after Close returned an entry")
	}
	if r.SQReady() != 0 || r.SQSpace() != 0 || r.CQReady() != 0 || r.Overflow() != 0 || r.Fd() != -1 {
		t.Error("counters after Close are not zero")
	}
	if r.PeekBatch(make([]*CQE, 4)) != 0 || r.ForEachCQE(func(*CQE) { t.Error("fn called") }) != 0 {
		t.Error("reaping after Close returned CQEs")
	}
	r.CQAdvance(3)
	r.CQESeen(nil)
}

// Closing the ring from inside ForEachCQE stops the loop without touching
// the unmapped CQ.
func TestCloseInsideForEach(t *testing.T) {
	needRing(t)
	r, err := New(4, nil)
	if err != nil {
		t.Fatal(err)
	}
	for range 3 {
		getSQE(t, r).PrepNop()
	}
	if _, err := r.SubmitAndWait(3); err != nil {
		t.Fatal(err)
	}
	calls := r.ForEachCQE(func(*CQE) { r.Close() })
	if calls != 1 {
		t.Errorf("ForEachCQE made %d calls after Close, want 1", calls)
	}
}

func TestSQELayout(t *testing.T) {
	var s SQE
	offsets := []struct {
		name      string
		got, want uintptr
	}{
		{"opcode", unsafe.Offsetof(s.Opcode), 0},
		{"flags", unsafe.Offsetof(s.Flags), 1},
		{"ioprio", unsafe.Offsetof(s.IoPrio), 2},
		{"fd", unsafe.Offsetof(s.Fd), 4},
		{"off", unsafe.Offsetof(s.Off), 8},
		{"addr", unsafe.Offsetof(s.Addr), 16},
		{"len", unsafe.Offsetof(s.Len), 24},
		{"op_flags", unsafe.Offsetof(s.OpFlags), 28},
		{"user_data", unsafe.Offsetof(s.UserData), 32},
		{"buf_index", unsafe.Offsetof(s.BufIndex), 40},
		{"personality", unsafe.Offsetof(s.Personality), 42},
		{"splice_fd_in", unsafe.Offsetof(s.SpliceFdIn), 44},
		{"addr3", unsafe.Offsetof(s.Addr3), 48},
	}
	for _, o := range offsets {
		if o.got != o.want {
			t.Errorf("SQE.%s at offset %d, kernel has %d", o.name, o.got, o.want)
		}
	}
	var c CQE
	if unsafe.Offsetof(c.Res) != 8 || unsafe.Offsetof(c.Flags) != 12 {
		t.Error("CQE layout differs from struct io_uring_cqe")
	}
}

func TestCQEErr(t *testing.T) {
	tests := []struct {
		res  int32
		want error
	}{
		{0, nil},
		{4096, nil},
		{-int32(unix.ECONNRESET), syscall.ECONNRESET},
		{-int32(unix.EBADF), syscall.EBADF},
		{-int32(unix.ECANCELED), unix.ECANCELED},
	}
	for _, tt := range tests {
		c := CQE{Res: tt.res}
		err := c.Err()
		if tt.want == nil {
			if err != nil {
				t.Errorf("Res %d: Err = %v, want nil", tt.res, err)
			}
			continue
		}
		if !errors.Is(err, tt.want) {
			t.Errorf("Res %d: Err = %v, want errors.Is %v", tt.res, err, tt.want)
		}
	}
	c := CQE{Flags: CQEFMore | CQEFBuffer | 7<<cqeBufferShift}
	if id, ok := c.BufferID(); !c.More() || !ok || id != 7 {
		t.Errorf("flags decode: More %v, BufferID %d %v", c.More(), id, ok)
	}
	if _, ok := (&CQE{}).BufferID(); ok {
		t.Error("BufferID without CQEFBuffer reported a buffer")
	}
}

func TestErrorMessages(t *testing.T) {
	e := &OverflowError{Dropped: 3}
	if !errors.Is(e, ErrCQOverflow) || !strings.Contains(e.Error(), "3 dropped") {
		t.Errorf("OverflowError: %v", e)
	}
	if !errors.Is(ErrTimeout, syscall.ETIME) {
		t.Error("ErrTimeout does not match ETIME")
	}
	if ResultError(-int32(unix.ENOENT)) == nil || ResultError(0) != nil {
		t.Error("ResultError sign handling")
	}
}
