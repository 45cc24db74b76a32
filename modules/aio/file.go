package aio

import (
	"context"
	"errors"
	"io"
	"io/fs"
	"os"
	"sync"
	"syscall"

	"github.com/faio-go/faio/modules/runtime"
	"github.com/faio-go/faio/modules/uring"
	"golang.org/x/sys/unix"
)

// File is an open file whose I/O runs on the io_uring of the worker
// running the calling task. It mirrors os.File, with a context first in
// every method that may wait: that context's task is suspended while the
// kernel works, and its cancellation or deadline cancels the operation.
//
// A File is safe for concurrent use. ReadAt, WriteAt, Stat and Sync run in
// parallel; Read, Write, Readv, Writev and Seek share the file position and
// run one at a time, in the order they were called. A pipe, FIFO, socket or
// character device (a terminal) has no file position: there, as with
// os.File, reads take turns, writes take turns, and a read and a write run
// at the same time, so that a Write is not held up by a Read waiting for
// data (a FIFO opened O_RDWR, a pseudo-terminal's master), and Seek waits
// for neither. The methods also work
// from plain goroutines (the context then carries no task): each operation
// is then the system call itself, in the goroutine, as with os.File.
//
// Files come from Open, Create and OpenFile. The zero File, and a nil
// *File, is no file: every method fails at once with a *fs.PathError
// wrapping os.ErrInvalid, Close too (and Name returns ""), without touching
// any descriptor, as os.File's methods do on a nil *File.
//
// A nil ctx is refused the same way, with a *fs.PathError wrapping
// runtime.ErrNilContext, before anything is done: a Close given one leaves
// the file open and usable.
type File struct {
	guard fdGuard
	name  string
	// cachedReads: a regular file's reads first try the page cache
	// inline (fdOp.nowait); not with O_DIRECT, whose reads always go to
	// the device and would hold the worker until it answered.
	cachedReads bool
	// direct is set for a file opened with O_DIRECT (a regular file or
	// a block device): on the portable backend a task's transfers at an
	// offset go to Linux AIO (kaio.go); on the ring a task's transfers
	// at the file position are made at an explicit offset (transferAtPos).
	direct *kaioFile
	// appends: opened with O_APPEND. WriteAt refuses it, and
	// transferAtPos moves the position to the end after a write, as
	// write(2) does.
	appends bool
	// pollable: a pipe, socket or character device (a terminal) may wait
	// forever, so its reads and writes wait where ctx and Close can end
	// them: a goroutine's in the netpoller, as package os does, a task's
	// in the runtime's readiness poller (fdGuard.pipe); disk files never
	// wait for a peer and use plain system calls or the ring.
	pollable bool
	regular  bool   // a regular file: Conn.SendFile may send from it
	pos      opLock // held by the operations that use the file position
	// wr is held instead of pos by the writes of a pollable file, which
	// has no position: they must not wait for a read that waits for
	// data (see posLock).
	wr opLock
	// Used only under pos (wrOp and wvec: under wr), so position I/O
	// allocates nothing.
	posOp, wrOp fdOp
	vec, wvec   vecOp
}

var fdOps = sync.Pool{New: func() any { return new(fdOp) }}

// Open opens name for reading, like os.Open. See OpenFile.
func Open(ctx context.Context, name string) (*File, error) {
	return OpenFile(ctx, name, unix.O_RDONLY, 0)
}

// Create creates or truncates name for reading and writing, like os.Create.
// See OpenFile.
func Create(ctx context.Context, name string) (*File, error) {
	return OpenFile(ctx, name, unix.O_RDWR|unix.O_CREAT|unix.O_TRUNC, 0o666)
}

// OpenFile opens name with flag (os.O_RDONLY, os.O_CREATE, ...) and, when
// creating, permissions perm (before the umask), like os.OpenFile, through
// IORING_OP_OPENAT. The descriptor is always close-on-exec. Errors are
// *fs.PathError: errors.Is(err, fs.ErrNotExist) works.
//
// The File belongs to the runtime of ctx: the runtime of ctx's task, or,
// from a plain goroutine, the one runtime.WithRuntime attached to ctx; its
// later operations run there too. A ctx with neither fails with an error
// wrapping runtime.ErrNoRuntime, and a nil ctx with one wrapping
// runtime.ErrNilContext.
//
// A FIFO opened for writing without O_NONBLOCK waits for a reader, as
// open(2) does. From a task on io_uring ctx can end that wait; from a plain
// goroutine, or a task on the portable backend, the open is open(2) itself,
// which ctx cannot interrupt (nor can anything interrupt os.OpenFile's):
// pass O_NONBLOCK there to get ENXIO instead of a wait. From a task on
// io_uring a FIFO opened for reading does not wait for a writer (the
// kernel opens it without blocking); its reads wait for data.
func OpenFile(ctx context.Context, name string, flag int, perm fs.FileMode) (*File, error) {
	rt, err := runtimeOf(ctx)
	if err != nil {
		return nil, pathError("open", name, err)
	}
	path, err := uring.BytePtrFromString(name)
	if err != nil {
		return nil, pathError("open", name, unix.EINVAL)
	}
	op := &openOp{path: path, flags: flag | unix.O_CLOEXEC, mode: syscallMode(perm)}
	res, err := submit(ctx, rt, op)
	if err == nil && res.Res == -int32(unix.ENXIO) && flag&(unix.O_WRONLY|unix.O_RDWR) == unix.O_WRONLY &&
		flag&unix.O_NONBLOCK == 0 && op.ringed {
		// The ring tries an open inline with O_NONBLOCK first, and a
		// FIFO with no reader refuses a non-blocking writer (ENXIO),
		// which the kernel does not retry: open(2) would wait for a
		// reader. Again on the kernel's async workers, where it waits
		// as open(2) does, and cancellation interrupts it. Asked of
		// the op, not of rt: a task sends it to its own ring, whatever
		// runtime ctx names (found by a reviewer).
		op.async = true
		res, err = submit(ctx, rt, op)
	}
	if err = fileErr(res, err); err != nil {
		return nil, pathError("open", name, err)
	}
	f := &File{name: name}
	var st unix.Stat_t
	if unix.Fstat(int(res.Res), &st) == nil {
		switch st.Mode & unix.S_IFMT {
		case unix.S_IFIFO, unix.S_IFSOCK, unix.S_IFCHR:
			f.pollable = true
		case unix.S_IFREG:
			f.regular = true
			f.cachedReads = flag&unix.O_DIRECT == 0
		}
		if st.Mode&unix.S_IFMT == unix.S_IFREG || st.Mode&unix.S_IFMT == unix.S_IFBLK {
			if flag&unix.O_DIRECT != 0 {
				f.direct = new(kaioFile)
			}
		}
	}
	f.appends = flag&unix.O_APPEND != 0
	f.guard.init(rt, int(res.Res), false)
	f.guard.pipe = f.pollable
	return f, nil
}

// runtimeOf returns the runtime of ctx (runtime.RuntimeOf), or
// runtime.ErrNoRuntime, whose message already says how to attach one.
func runtimeOf(ctx context.Context) (*runtime.Runtime, error) {
	if rt := runtime.RuntimeOf(ctx); rt != nil {
		return rt, nil
	}
	if ctx == nil {
		return nil, runtime.ErrNilContext
	}
	return nil, runtime.ErrNoRuntime
}

// fileErr is the error of a file operation: the bare errno, as os reports
// it inside its PathError, or the submit error.
func fileErr(res runtime.Result, submitErr error) error {
	if submitErr != nil {
		return submitErr
	}
	return res.Err()
}

// syscallMode converts perm to the mode bits of open(2).
func syscallMode(perm fs.FileMode) uint32 {
	m := uint32(perm.Perm())
	if perm&fs.ModeSetuid != 0 {
		m |= unix.S_ISUID
	}
	if perm&fs.ModeSetgid != 0 {
		m |= unix.S_ISGID
	}
	if perm&fs.ModeSticky != 0 {
		m |= unix.S_ISVTX
	}
	return m
}

// Name returns the name the file was opened with ("" for a zero or nil
// File).
func (f *File) Name() string {
	if f == nil {
		return ""
	}
	return f.name
}

// ok reports whether f is a File that Open, Create or OpenFile made (open
// or closed since), not a zero value or nil.
func (f *File) ok() bool { return f != nil && f.guard.valid() }

// nilContext is the error of File method op given a nil ctx.
func (f *File) nilContext(op string) error { return pathError(op, f.name, runtime.ErrNilContext) }

// errNegativeOffset is what os reports for a negative ReadAt/WriteAt offset.
var errNegativeOffset = errors.New("negative offset")

// errWriteAtInAppendMode is os's error for WriteAt on a file opened with
// O_APPEND (which os returns bare, and File inside its *fs.PathError).
var errWriteAtInAppendMode = errors.New("os: invalid use of WriteAt on file opened with O_APPEND")

// ReadAt reads len(b) bytes at offset off, like os.File.ReadAt: it returns
// n < len(b) only with an error, io.EOF when the file ends first. It does
// not use or move the file position and may run concurrently with any
// other method.
func (f *File) ReadAt(ctx context.Context, b []byte, off int64) (int, error) {
	if !f.ok() {
		return 0, invalidFile("read")
	}
	if ctx == nil {
		return 0, f.nilContext("read")
	}
	if off < 0 {
		return 0, pathError("readat", f.name, errNegativeOffset)
	}
	n, tried, eof, held := f.readCached(ctx, b, off)
	switch {
	case held:
		// Deferred, so that a panic (in a ctx's method) cannot keep the
		// reference and make Close wait for ever.
		defer f.guard.decref(ctx)
	case tried:
		// Read from the page cache under the worker's announcement,
		// which readCached has ended: the result is final, or
		// Close has begun and it is all there is.
		_ = runtime.ConsumeCurrent(ctx)
		switch {
		case eof:
			return 0, io.EOF
		case n < len(b):
			// Close began before the rest could be read; the part
			// read is reported, not lost.
			return n, pathError("read", f.name, fs.ErrClosed)
		}
		return n, nil
	case !f.guard.incref():
		return 0, pathError("read", f.name, fs.ErrClosed)
	default:
		defer f.guard.decref(ctx)
	}
	var err error
	switch {
	case eof:
		err = io.EOF
	case n < len(b):
		// After a miss the general path goes to the ring without
		// trying the page cache again.
		op := fdOps.Get().(*fdOp)
		var m int
		m, err = f.transferAll(ctx, op, uring.OpRead, b[n:], off+int64(n), f.cachedReads && !tried)
		fdOps.Put(op)
		n += m
	}
	if err != nil && err != io.EOF {
		err = pathError("read", f.name, err)
	}
	return n, err
}

// testHookCachedRead, when set, runs in readCached between the worker's
// announcement of the descriptor and the read: a test holds the read
// there while the file is closed.
var testHookCachedRead func()

// readCached is ReadAt's fast path for a task: the part of b at off that
// the page cache holds, read without waiting (preadv2 with RWF_NOWAIT, as
// transferAll would try first) and without an operation record. It
// returns how many bytes it read, whether it tried (so that the general
// path does not try again), and whether off is at or past the end of the
// file.
//
// It reads under the task's worker's announcement of the descriptor
// (fdGuard.protect), not a reference: the reference count is shared by
// every worker reading the file, and its cache line bounced between them
// at every read. When the read is final (all of b, or the end of the
// file) it returns with held false, and the caller neither holds nor owes
// a reference. Otherwise (a miss, a short read) it takes a reference for
// the general path before the announcement ends, and returns held true:
// the caller must drop it. Close having begun, it returns what it read
// with tried true and held false, short of b, for ReadAt to report with
// ErrClosed.
//
// It does not try, and returns 0, for a caller that is not a task, an
// O_DIRECT file, an empty b or an ended ctx; any error of the system call
// is left for the general path to meet and report.

func (f *File) readCached(ctx context.Context, b []byte, off int64) (n int, tried, eof, held bool) {
	if !f.cachedReads || len(b) == 0 || ctx.Err() != nil {
		return 0, false, false, false
	}
	h := f.guard.protect(ctx)
	if h == nil {
		return 0, false, false, false
	}
	if hook := testHookCachedRead; hook != nil {
		hook()
	}
	n, ok := preadNowait(f.guard.fd, b, off)
	switch {
	case ok && (n == len(b) || n == 0):
		h.Release()
		return n, true, n == 0, false
	case !ok:
		n = 0
	}
	held = f.guard.incref()
	h.Release()
	// Close has begun if !held: the n bytes read are the caller's, with
	// ReadAt's ErrClosed for the rest.
	return n, true, false, held
}

// WriteAt writes b at offset off, like os.File.WriteAt: it returns
// n < len(b) only with an error. It does not use or move the file position
// and may run concurrently with any other method. On a file opened with
// O_APPEND it fails without writing, as os.File.WriteAt does (Linux's
// pwrite would append whatever the offset, where io.WriterAt promises the
// bytes at off).
func (f *File) WriteAt(ctx context.Context, b []byte, off int64) (int, error) {
	if !f.ok() {
		return 0, invalidFile("write")
	}
	if ctx == nil {
		return 0, f.nilContext("write")
	}
	if f.appends {
		if f.guard.closing() {
			// Closed first, as every other call on a closed File
			// says (os.File.WriteAt, which does not look, reports
			// the append mode even then).
			return 0, pathError("write", f.name, fs.ErrClosed)
		}
		return 0, pathError("writeat", f.name, errWriteAtInAppendMode)
	}
	if off < 0 {
		return 0, pathError("writeat", f.name, errNegativeOffset)
	}
	if !f.guard.incref() {
		return 0, pathError("write", f.name, fs.ErrClosed)
	}
	defer f.guard.decref(ctx)
	op := fdOps.Get().(*fdOp)
	n, err := f.writeAll(ctx, op, b, off)
	fdOps.Put(op)
	return n, err
}

// atPosition as an offset means the file position (uring.CurrentPos).
const atPosition int64 = -1

// writeAll writes all of b at off (atPosition: at the file position),
// retrying short writes. The caller holds a reference.
func (f *File) writeAll(ctx context.Context, op *fdOp, b []byte, off int64) (int, error) {
	n, err := f.transferAll(ctx, op, uring.OpWrite, b, off, false)
	if err != nil {
		return n, pathError("write", f.name, err)
	}
	return n, nil
}

// transferAll reads (OpRead) or writes (OpWrite) all of b at off
// (atPosition: at the file position), resubmitting after short transfers.
// A zero-byte transfer ends it: io.EOF for a read, io.ErrUnexpectedEOF for
// a write. cached lets each read try the page cache first (fdOp.cached).
// The error is not yet wrapped in a PathError.
func (f *File) transferAll(ctx context.Context, op *fdOp, opcode uring.Op, b []byte, off int64, cached bool) (int, error) {
	n := 0
	var err error
	for len(b) > 0 {
		op.opcode, op.fd, op.buf, op.off = opcode, f.guard.fd, b, uint64(off)
		op.cached, op.kaio = cached, f.direct
		res, serr := f.transfer(ctx, op, opcode == uring.OpWrite)
		if err = fileErr(res, serr); err != nil {
			break
		}
		if res.Res == 0 {
			err = io.ErrUnexpectedEOF
			if opcode == uring.OpRead {
				err = io.EOF
			}
			break
		}
		n += int(res.Res)
		b = b[res.Res:]
		if off != atPosition {
			off += int64(res.Res)
		}
	}
	op.buf, op.kaio = nil, nil
	return n, err
}

// transfer runs a read or write of the File (write: it waits for room,
// not data) by the means that suits its kind (see pollable).
//
// A pipe's operation that Close ended, or that ended otherwise while Close
// began, reports fs.ErrClosed, as os.File's does: its result is an
// artefact of the shutdown (an EAGAIN, or a 0 that would read as the end
// of the file).
func (f *File) transfer(ctx context.Context, op directOp, write bool) (runtime.Result, error) {
	if f.direct != nil && atFilePosition(op) && runtime.InTask(ctx) {
		return f.transferAtPos(ctx, op, write)
	}
	if f.pollable {
		res, err := f.guard.submitPoll(ctx, op, write)
		if (err != nil || res.Res <= 0) && f.guard.closing() {
			return runtime.Result{}, fs.ErrClosed
		}
		return res, err
	}
	return submit(ctx, f.guard.rt, op)
}

// atFilePosition reports whether op reads or writes at the file position.
func atFilePosition(op directOp) bool {
	switch o := op.(type) {
	case *fdOp:
		return o.off == uring.CurrentPos
	case *vecOp:
		return o.off == uring.CurrentPos
	}
	return false
}

// setOffset sets the offset of a read or write op.
func setOffset(op directOp, off uint64) {
	switch o := op.(type) {
	case *fdOp:
		o.off = off
	case *vecOp:
		o.off = off
	}
}

// transferAtPos makes a task's read or write at the file position of an
// O_DIRECT file, under the position lock, at the position as an explicit
// offset, and then moves the position past what was transferred (to the
// end after a write with O_APPEND). Submitted at the file position, such a
// transfer on the ring left the position where it was: the kernel stores
// it back when the request is issued, and an O_DIRECT transfer completes
// later, so Reads read the same block again and Writes overwrote each
// other (found by a reviewer). Buffered files complete at issue and keep
// the ring's file position; a goroutine's transfers are read(2) and
// write(2) themselves. Every task's transfer comes here, whatever the
// File's runtime: the operation goes to the calling task's ring if it has
// one (a task of an io_uring runtime using a portable runtime's File, found
// by a reviewer), else to Linux AIO, which takes only transfers at an
// offset, or the blocking pool.
func (f *File) transferAtPos(ctx context.Context, op directOp, write bool) (runtime.Result, error) {
	fd := f.guard.fd
	pos, err := unix.Seek(fd, 0, io.SeekCurrent)
	if err != nil {
		return runtime.Result{}, os.NewSyscallError("seek", err)
	}
	setOffset(op, uint64(pos))
	res, err := f.transfer(ctx, op, write)
	setOffset(op, uring.CurrentPos)
	if err != nil || res.Res <= 0 {
		return res, err
	}
	if write && f.appends {
		_, err = unix.Seek(fd, 0, io.SeekEnd)
	} else {
		_, err = unix.Seek(fd, pos+int64(res.Res), io.SeekStart)
	}
	if err != nil {
		return res, os.NewSyscallError("seek", err)
	}
	return res, nil
}

// Read reads up to len(b) bytes at the file position and advances it, like
// os.File.Read: at end of file it returns 0, io.EOF.
func (f *File) Read(ctx context.Context, b []byte) (int, error) {
	if err := f.lockPos(ctx, "read", false); err != nil {
		return 0, err
	}
	defer f.unlockPos(ctx, false)
	if len(b) == 0 {
		// After the check for Close, as os.File.Read does.
		return 0, nil
	}
	op := &f.posOp
	op.opcode, op.fd, op.buf, op.off = uring.OpRead, f.guard.fd, b, uring.CurrentPos
	op.cached, op.hit = f.cachedReads, false
	res, serr := f.transfer(ctx, op, false)
	if err := fileErr(res, serr); err != nil {
		op.buf = nil
		return 0, pathError("read", f.name, err)
	}
	if res.Res == 0 {
		op.buf = nil
		return 0, io.EOF
	}
	n := int(res.Res)
	for op.hit && n < len(b) {
		// A task's read of a regular file takes first what the page
		// cache holds, without waiting (see nowaitOp): a short count
		// from there may be only that part, where os.File.Read, and
		// Read from a goroutine, wait for the disk and return the
		// whole. Read on, as ReadAt does: a read of the rest without
		// waiting comes back with 0 at the end of the file, and one
		// that would wait goes to the ring, short only at the end of
		// the file. An error there is the next Read's to report.
		op.buf, op.hit = b[n:], false
		res, serr = f.transfer(ctx, op, false)
		if fileErr(res, serr) != nil || res.Res <= 0 {
			break
		}
		n += int(res.Res)
	}
	op.buf = nil
	return n, nil
}

// Write writes all of b at the file position (at the end with O_APPEND)
// and advances it, like os.File.Write: n < len(b) only with an error.
func (f *File) Write(ctx context.Context, b []byte) (int, error) {
	if err := f.lockPos(ctx, "write", true); err != nil {
		return 0, err
	}
	defer f.unlockPos(ctx, true)
	op := &f.posOp
	if f.pollable {
		op = &f.wrOp
	}
	return f.writeAll(ctx, op, b, atPosition)
}

// Readv reads into bufs in order with one readv(2) at the file position
// and advances it; it returns the total read, 0 and io.EOF at end of file.
// Only the first 1024 buffers (IOV_MAX) are used.
func (f *File) Readv(ctx context.Context, bufs [][]byte) (int, error) {
	if err := f.lockPos(ctx, "readv", false); err != nil {
		return 0, err
	}
	defer f.unlockPos(ctx, false)
	op := &f.vec
	op.opcode, op.fd, op.off = uring.OpReadv, f.guard.fd, uring.CurrentPos
	if op.setBufs(bufs, 0) == 0 {
		return 0, nil
	}
	res, serr := f.transfer(ctx, op, false)
	op.clear()
	if err := fileErr(res, serr); err != nil {
		return 0, pathError("readv", f.name, err)
	}
	if res.Res == 0 {
		return 0, io.EOF
	}
	return int(res.Res), nil
}

// Writev writes all of bufs, in order, at the file position with writev(2)
// (repeated after a short write) and advances it: it returns less than the
// total only with an error.
func (f *File) Writev(ctx context.Context, bufs [][]byte) (int, error) {
	if err := f.lockPos(ctx, "writev", true); err != nil {
		return 0, err
	}
	defer f.unlockPos(ctx, true)
	op := &f.vec
	if f.pollable {
		op = &f.wvec
	}
	n := 0
	var err error
	for {
		op.opcode, op.fd, op.off = uring.OpWritev, f.guard.fd, uring.CurrentPos
		if op.setBufs(bufs, n) == 0 {
			break
		}
		res, serr := f.transfer(ctx, op, true)
		if err = fileErr(res, serr); err != nil {
			break
		}
		if res.Res == 0 {
			err = io.ErrUnexpectedEOF
			break
		}
		n += int(res.Res)
	}
	op.clear()
	if err != nil {
		return n, pathError("writev", f.name, err)
	}
	return n, nil
}

// Seek sets the file position for the next Read or Write, like
// os.File.Seek (whence io.SeekStart, io.SeekCurrent or io.SeekEnd), and
// returns the new position. It waits for a Read or Write in progress,
// except on a pipe, socket or character device, which has no position to
// share (there, as os.File's, it returns at once: ESPIPE for a pipe).
func (f *File) Seek(ctx context.Context, offset int64, whence int) (int64, error) {
	if f.ok() && f.pollable {
		if ctx == nil {
			return 0, f.nilContext("seek")
		}
		if !f.guard.incref() {
			return 0, pathError("seek", f.name, fs.ErrClosed)
		}
		defer f.guard.decref(ctx)
	} else {
		if err := f.lockPos(ctx, "seek", false); err != nil {
			return 0, err
		}
		defer f.unlockPos(ctx, false)
	}
	pos, err := unix.Seek(f.guard.fd, offset, whence)
	if err != nil {
		return 0, pathError("seek", f.name, err)
	}
	return pos, nil
}

// posLock is the lock of a position operation that writes (write) or
// not: the position lock, but for the writes of a pollable file, which
// take the write lock. A pipe's Read may wait for ever for data that only
// a Write of the same File would bring (a FIFO opened O_RDWR, a
// pseudo-terminal's master): under one lock that Write would wait for the
// Read, where os.File lets them run together.
func (f *File) posLock(write bool) *opLock {
	if write && f.pollable {
		return &f.wr
	}
	return &f.pos
}

// lockPos takes posLock(write) and a reference on the descriptor. It
// fails at once for a zero or nil File and for a nil ctx. Callers defer
// unlockPos, so that a panic (in a ctx's method) cannot keep the lock and
// the reference, on which later operations and Close would wait for ever.
func (f *File) lockPos(ctx context.Context, op string, write bool) error {
	if !f.ok() {
		return invalidFile(op)
	}
	if ctx == nil {
		return f.nilContext(op)
	}
	l := f.posLock(write)
	if err := l.lock(ctx); err != nil {
		return pathError(op, f.name, err)
	}
	if !f.guard.incref() {
		l.unlock()
		return pathError(op, f.name, fs.ErrClosed)
	}
	return nil
}

func (f *File) unlockPos(ctx context.Context, write bool) {
	f.guard.decref(ctx)
	f.posLock(write).unlock()
}

// Sync commits the file's contents and metadata to stable storage
// (fsync(2)), like os.File.Sync.
func (f *File) Sync(ctx context.Context) error {
	if !f.ok() {
		return invalidFile("sync")
	}
	if ctx == nil {
		return f.nilContext("sync")
	}
	if !f.guard.incref() {
		return pathError("sync", f.name, fs.ErrClosed)
	}
	defer f.guard.decref(ctx)
	op := fdOps.Get().(*fdOp)
	op.opcode, op.fd, op.flags = uring.OpFsync, f.guard.fd, 0
	res, serr := submit(ctx, f.guard.rt, op)
	fdOps.Put(op)
	if err := fileErr(res, serr); err != nil {
		return pathError("sync", f.name, err)
	}
	return nil
}

// Truncate changes the size of the file to size, like os.File.Truncate
// (ftruncate(2)): bytes past size are dropped, and a file extended reads
// zeros there. It neither uses nor moves the file position. A task's
// truncate runs on the blocking pool while the task suspends (io_uring's
// IORING_OP_FTRUNCATE is too recent to count on), a goroutine's is the
// system call itself; ctx can end the wait for a pool slot, not the
// system call.
func (f *File) Truncate(ctx context.Context, size int64) error {
	if !f.ok() {
		return invalidFile("truncate")
	}
	if ctx == nil {
		return f.nilContext("truncate")
	}
	if !f.guard.incref() {
		return pathError("truncate", f.name, fs.ErrClosed)
	}
	defer f.guard.decref(ctx)
	fd := uintptr(f.guard.fd)
	trunc := func() runtime.Result {
		return sys(func() (uintptr, uintptr, syscall.Errno) {
			return unix.Syscall(unix.SYS_FTRUNCATE, fd, uintptr(size), 0)
		})
	}
	var res runtime.Result
	var err error
	if runtime.InTask(ctx) {
		res, err = blocking(ctx, trunc)
	} else if err = ctx.Err(); err == nil {
		res = trunc()
	}
	if err = fileErr(res, err); err != nil {
		return pathError("truncate", f.name, err)
	}
	return nil
}

// Stat returns the file's status through statx(2), like os.File.Stat; Sys
// returns the *unix.Statx_t.
func (f *File) Stat(ctx context.Context) (fs.FileInfo, error) {
	if !f.ok() {
		return nil, invalidFile("stat")
	}
	if ctx == nil {
		return nil, f.nilContext("stat")
	}
	if !f.guard.incref() {
		return nil, pathError("stat", f.name, fs.ErrClosed)
	}
	defer f.guard.decref(ctx)
	op := &statxOp{fd: f.guard.fd}
	res, serr := submit(ctx, f.guard.rt, op)
	if err := fileErr(res, serr); err != nil {
		return nil, pathError("stat", f.name, err)
	}
	return newFileStat(f.name, &op.stx), nil
}

// Close closes the file. Operations still in progress finish first (Close
// waits for them), later ones fail with fs.ErrClosed, and so does a second
// Close. If ctx ends while Close waits, Close returns its error and the
// descriptor is closed as soon as the last operation finishes. A nil ctx
// is refused (runtime.ErrNilContext) and nothing happens: the file stays
// open, and a later Close with a context closes it.
func (f *File) Close(ctx context.Context) error {
	if !f.ok() {
		return invalidFile("close")
	}
	if ctx == nil {
		return f.nilContext("close")
	}
	err := f.guard.close(ctx)
	switch {
	case err == nil:
		return nil
	case err == errAlreadyClosed:
		return pathError("close", f.name, fs.ErrClosed)
	default:
		return pathError("close", f.name, err)
	}
}

// ReadFile reads the whole file name, like os.ReadFile, on the runtime of
// ctx (see OpenFile).
func ReadFile(ctx context.Context, name string) ([]byte, error) {
	f, err := Open(ctx, name)
	if err != nil {
		return nil, err
	}
	size := 0
	if fi, err := f.Stat(ctx); err == nil && fi.Mode().IsRegular() {
		size = int(fi.Size())
	}
	// One byte more than the size, so a file that did not grow since the
	// Stat is read in one pass that also sees its end.
	data := make([]byte, 0, max(size+1, 512))
	for {
		if len(data) == cap(data) {
			data = append(data, 0)[:len(data)]
		}
		n, err := f.Read(ctx, data[len(data):cap(data)])
		data = data[:len(data)+n]
		if err != nil {
			cerr := f.Close(ctx)
			if err == io.EOF {
				return data, cerr
			}
			return data, err
		}
	}
}

// WriteFile writes data to name, creating it with perm (before the umask)
// or truncating it, like os.WriteFile, on the runtime of ctx (see
// OpenFile).
func WriteFile(ctx context.Context, name string, data []byte, perm fs.FileMode) error {
	f, err := OpenFile(ctx, name, unix.O_WRONLY|unix.O_CREAT|unix.O_TRUNC, perm)
	if err != nil {
		return err
	}
	_, err = f.Write(ctx, data)
	if cerr := f.Close(ctx); err == nil {
		err = cerr
	}
	return err
}
