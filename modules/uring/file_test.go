package uring

import (
	"bytes"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

func TestReadWriteAtOffsets(t *testing.T) {
	needRing(t)
	r := newRing(t, 8, nil)
	f := tempFile(t, bytes.Repeat([]byte{'.'}, 64))
	fd := int(f.Fd())

	parts := []struct {
		off  uint64
		data []byte
	}{{0, []byte("head")}, {30, []byte("middle")}, {60, []byte("tail")}, {64, []byte("+grow")}}
	for i, p := range parts {
		s := getSQE(t, r)
		s.PrepWrite(fd, p.data, p.off)
		s.SetUserData(uint64(i))
	}
	submit(t, r)
	for ud, c := range reapN(t, r, len(parts)) {
		if int(c.Res) != len(parts[ud].data) {
			t.Errorf("write %d: res %d err %v", ud, c.Res, c.Err())
		}
	}

	want, _ := os.ReadFile(f.Name())
	if string(want[:4]) != "head" || string(want[30:36]) != "middle" || string(want[60:]) != "tail+grow" {
		t.Fatalf("file after writes: %q", want)
	}
	bufs := make([][]byte, len(parts))
	for i, p := range parts {
		bufs[i] = make([]byte, len(p.data))
		s := getSQE(t, r)
		s.PrepRead(fd, bufs[i], p.off)
		s.SetUserData(uint64(i))
	}
	submit(t, r)
	for ud, c := range reapN(t, r, len(parts)) {
		if c.Err() != nil || !bytes.Equal(bufs[ud], parts[ud].data) {
			t.Errorf("read %d: res %d, got %q want %q", ud, c.Res, bufs[ud], parts[ud].data)
		}
	}

	// Reading at end of file gives 0, not an error.
	var eof [8]byte
	getSQE(t, r).PrepRead(fd, eof[:], 1000)
	if c := reapOne(t, r, 0); c.Res != 0 {
		t.Errorf("read past EOF: res %d", c.Res)
	}
}

// CurrentPos reads and writes at the file position and advances it.
func TestCurrentPosition(t *testing.T) {
	needRing(t)
	r := newRing(t, 4, nil)
	if r.Features()&FeatRWCurPos == 0 {
		t.Skip("kernel lacks FeatRWCurPos")
	}
	f := tempFile(t, []byte("abcdefgh"))
	if _, err := f.Seek(2, 0); err != nil {
		t.Fatal(err)
	}
	var b [3]byte
	for _, want := range []string{"cde", "fgh"} {
		getSQE(t, r).PrepRead(int(f.Fd()), b[:], CurrentPos)
		if c := reapOne(t, r, 0); c.Res != 3 || string(b[:]) != want {
			t.Fatalf("read at position: res %d %q, want %q", c.Res, b, want)
		}
	}
}

func TestReadvWritev(t *testing.T) {
	needRing(t)
	r := newRing(t, 4, nil)
	f := tempFile(t, nil)
	fd := int(f.Fd())
	a, b := []byte("vector "), []byte("write")
	iovs := make([]unix.Iovec, 2)
	iovs[0].Base, iovs[1].Base = &a[0], &b[0]
	iovs[0].SetLen(len(a))
	iovs[1].SetLen(len(b))
	s := getSQE(t, r)
	s.PrepWritev(fd, iovs, 5)
	s.SetUserData(1)
	if c := reapOne(t, r, 1); c.Res != 12 {
		t.Fatalf("writev: res %d err %v", c.Res, c.Err())
	}
	getSQE(t, r).PrepFsync(fd, FsyncDataSync)
	if c := reapOne(t, r, 0); c.Err() != nil {
		t.Fatalf("fdatasync: %v", c.Err())
	}

	x, y := make([]byte, 4), make([]byte, 8)
	riovs := make([]unix.Iovec, 2)
	riovs[0].Base, riovs[1].Base = &x[0], &y[0]
	riovs[0].SetLen(len(x))
	riovs[1].SetLen(len(y))
	s = getSQE(t, r)
	s.PrepReadv(fd, riovs, 5)
	s.SetUserData(2)
	if c := reapOne(t, r, 2); c.Res != 12 || string(x)+string(y) != "vector write" {
		t.Fatalf("readv: res %d, %q %q", c.Res, x, y)
	}
}

func TestFsync(t *testing.T) {
	needRing(t)
	r := newRing(t, 4, nil)
	f := tempFile(t, []byte("durable"))
	getSQE(t, r).PrepFsync(int(f.Fd()), 0)
	if c := reapOne(t, r, 0); c.Res != 0 {
		t.Fatalf("fsync: %v", c.Err())
	}
}

func TestOpenatStatxClose(t *testing.T) {
	needRing(t)
	r := newRing(t, 4, nil)
	dir := t.TempDir()
	path, err := BytePtrFromString(filepath.Join(dir, "new"))
	if err != nil {
		t.Fatal(err)
	}
	s := getSQE(t, r)
	s.PrepOpenat(unix.AT_FDCWD, path, unix.O_CREAT|unix.O_RDWR|unix.O_CLOEXEC, 0o640)
	s.SetUserData(1)
	c := reapOne(t, r, 1)
	if c.Res < 0 {
		t.Fatalf("openat: %v", c.Err())
	}
	fd := int(c.Res)

	data := []byte("0123456789")
	getSQE(t, r).PrepWrite(fd, data, 0)
	if c := reapOne(t, r, 0); c.Res != 10 {
		t.Fatalf("write: res %d", c.Res)
	}

	var st unix.Statx_t
	s = getSQE(t, r)
	s.PrepStatx(unix.AT_FDCWD, path, 0, unix.STATX_SIZE|unix.STATX_MODE, &st)
	s.SetUserData(2)
	if c := reapOne(t, r, 2); c.Err() != nil {
		t.Fatalf("statx: %v", c.Err())
	}
	if st.Size != 10 || st.Mode&0o777 != 0o640 {
		t.Errorf("statx: size %d mode %o", st.Size, st.Mode&0o777)
	}

	s = getSQE(t, r)
	s.PrepClose(fd)
	s.SetUserData(3)
	if c := reapOne(t, r, 3); c.Err() != nil {
		t.Fatalf("close: %v", c.Err())
	}
	if _, err := unix.FcntlInt(uintptr(fd), unix.F_GETFD, 0); !errors.Is(err, syscall.EBADF) {
		t.Errorf("descriptor still open after PrepClose: %v", err)
	}

	missing, _ := BytePtrFromString(filepath.Join(dir, "missing"))
	getSQE(t, r).PrepOpenat(unix.AT_FDCWD, missing, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if c := reapOne(t, r, 0); !errors.Is(c.Err(), fs.ErrNotExist) || !errors.Is(c.Err(), syscall.ENOENT) {
		t.Errorf("openat of a missing file: %v, want ENOENT", c.Err())
	}
}

func TestBytePtrFromString(t *testing.T) {
	p, err := BytePtrFromString("ab")
	if err != nil {
		t.Fatal(err)
	}
	if got := unsafeString(p); got != "ab" {
		t.Errorf("got %q", got)
	}
	if _, err := BytePtrFromString("a\x00b"); !errors.Is(err, ErrNulInPath) {
		t.Errorf("NUL in path: %v", err)
	}
}

func unsafeString(p *byte) string { return unix.BytePtrToString(p) }

func TestBadFd(t *testing.T) {
	needRing(t)
	r := newRing(t, 4, nil)
	var b [8]byte
	s := getSQE(t, r)
	s.PrepRead(-1, b[:], 0)
	s.SetUserData(7)
	c := reapOne(t, r, 7)
	if err := c.Err(); !errors.Is(err, syscall.EBADF) {
		t.Fatalf("read on fd -1: %v, want EBADF", err)
	}
	// A closed descriptor, and an out-of-range fixed-file index.
	fd, err := unix.Open(os.DevNull, unix.O_RDONLY|unix.O_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	unix.Close(fd)
	getSQE(t, r).PrepWrite(fd, b[:], 0)
	s = getSQE(t, r)
	s.PrepRead(5, b[:], 0)
	s.SetFlags(SQEFixedFile)
	s.SetUserData(1)
	got := reapN(t, r, 2)
	if !errors.Is(got[0].Err(), syscall.EBADF) {
		t.Errorf("write to closed fd: %v, want EBADF", got[0].Err())
	}
	if got[1].Err() == nil {
		t.Errorf("fixed file without registration succeeded: %+v", got[1])
	}
}

func TestFixedFilesAndBuffers(t *testing.T) {
	needRing(t)
	r := newRing(t, 4, nil)
	f := tempFile(t, []byte("registered files and buffers"))
	if err := r.RegisterFiles([]int32{-1, int32(f.Fd())}); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	if err := r.RegisterBuffers([][]byte{make([]byte, 16), buf}); err != nil {
		t.Fatal(err)
	}
	if err := r.RegisterBuffers([][]byte{buf}); !errors.Is(err, syscall.EBUSY) {
		t.Errorf("second RegisterBuffers: %v, want EBUSY", err)
	}

	s := getSQE(t, r)
	s.PrepReadFixed(1, buf[:10], 0, 1)
	s.SetFlags(SQEFixedFile)
	if c := reapOne(t, r, 0); c.Res != 10 || string(buf[:10]) != "registered" {
		t.Fatalf("read_fixed: res %d %q, err %v", c.Res, buf[:10], c.Err())
	}
	copy(buf[32:], "FIXED")
	s = getSQE(t, r)
	s.PrepWriteFixed(1, buf[32:37], 0, 1)
	s.SetFlags(SQEFixedFile)
	if c := reapOne(t, r, 0); c.Res != 5 {
		t.Fatalf("write_fixed: res %d err %v", c.Res, c.Err())
	}
	if got, _ := os.ReadFile(f.Name()); string(got[:5]) != "FIXED" {
		t.Errorf("file after write_fixed: %q", got)
	}
	// A buffer outside the registered one is refused.
	other := make([]byte, 8)
	getSQE(t, r).PrepReadFixed(int(f.Fd()), other, 0, 1)
	if c := reapOne(t, r, 0); !errors.Is(c.Err(), syscall.EFAULT) {
		t.Errorf("read_fixed outside the registered buffer: %v, want EFAULT", c.Err())
	}

	// Swap slot 0 in, then read through it.
	if n, err := r.RegisterFilesUpdate(0, []int32{int32(f.Fd())}); err != nil || n != 1 {
		t.Fatalf("RegisterFilesUpdate = %d, %v", n, err)
	}
	s = getSQE(t, r)
	s.PrepRead(0, buf[:5], 0)
	s.SetFlags(SQEFixedFile)
	if c := reapOne(t, r, 0); c.Res != 5 {
		t.Errorf("read through updated slot: res %d err %v", c.Res, c.Err())
	}

	if err := r.UnregisterBuffers(); err != nil {
		t.Fatal(err)
	}
	if len(r.buffers) == 0 {
		// A request in flight may still write into them.
		t.Error("the ring let go of unregistered buffers")
	}
	if err := r.UnregisterFiles(); err != nil {
		t.Fatal(err)
	}
	if err := r.UnregisterFiles(); !errors.Is(err, syscall.ENXIO) {
		t.Errorf("UnregisterFiles twice: %v, want ENXIO", err)
	}
	if err := r.RegisterFiles(nil); err == nil {
		t.Error("RegisterFiles(nil) succeeded")
	}
	if err := r.RegisterBuffers([][]byte{{}}); err == nil {
		t.Error("RegisterBuffers with an empty buffer succeeded")
	}
}
