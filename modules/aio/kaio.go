package aio

import (
	"context"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"github.com/faio-go/faio/modules/runtime"
	"github.com/faio-go/faio/modules/uring"
	"golang.org/x/sys/unix"
)

// O_DIRECT files on the portable backend: Linux AIO.
//
// Where io_uring is refused, a task's file operation runs as a blocking
// system call on the blocking pool (see blocking). For an O_DIRECT read or
// write that ties up an OS thread for the whole device round trip, and with
// it, until Go's sysmon takes it back, the thread's P: at two Ps, 64 tasks
// reading 4 KiB at random offsets (W6d) took 54 µs a read on 23 threads,
// twice what 64 goroutines calling pread take.
//
// The kernel's older asynchronous interface, io_submit(2), is truly
// asynchronous for O_DIRECT, and Docker's default seccomp profile, which
// refuses io_uring, allows it. So a task's O_DIRECT read or write at an
// offset is submitted there: the task suspends while the device works, and
// one goroutine, waiting in Go's netpoller on the eventfd the completions
// signal, reaps them and wakes the tasks. That goroutine runs only while
// operations are outstanding.
//
// io_submit runs on the task's worker, so it must not wait: some
// operations are done inside the call (on ext4, an O_DIRECT write that
// extends the file took 0.5-0.8 ms there, holding up every task of the
// worker). Each is therefore submitted with RWF_NOWAIT, and one the kernel
// could not start without waiting completes at once with EAGAIN. That, and
// anything io_submit refuses (an AIO context that cannot be created, a full
// one, a kernel or file system without NOWAIT AIO), goes to the blocking
// pool as before, which then reports the operation's own error: nothing
// is lost. Buffered files stay on the pool, since io_submit performs
// buffered I/O synchronously, inside the call.
//
// The process has one AIO context and one eventfd, made on first use and
// kept, as Go keeps its netpoller's epoll instance.

// kaioEvents is the size of the AIO context: the operations it can hold
// at once. More go to the blocking pool (io_submit says EAGAIN).
const kaioEvents = 512

// Linux's struct iocb (include/uapi/linux/aio_abi.h).
type kaioCB struct {
	data uint64
	// rwFlags holds aio_key and aio_rw_flags: the flags are its high
	// half on either byte order, since they come first on big-endian
	// machines and last on little-endian ones.
	rwFlags uint64
	opcode  uint16
	_       int16 // aio_reqprio
	fildes  uint32
	buf     uint64
	nbytes  uint64
	offset  int64
	_       uint64 // aio_reserved2
	flags   uint32
	resfd   uint32
}

// The kernel's sizes: 64 and 32 bytes.
var (
	_ [unsafe.Sizeof(kaioCB{}) - 64]struct{}
	_ [64 - unsafe.Sizeof(kaioCB{})]struct{}
	_ [unsafe.Sizeof(kaioEvent{}) - 32]struct{}
	_ [32 - unsafe.Sizeof(kaioEvent{})]struct{}
)

// Linux's struct io_event.
type kaioEvent struct {
	data uint64
	obj  uint64
	res  int64
	res2 int64
}

const (
	kaioCmdPread  = 0 // IOCB_CMD_PREAD
	kaioCmdPwrite = 1 // IOCB_CMD_PWRITE
	kaioFlagResfd = 1 // IOCB_FLAG_RESFD: signal aio_resfd on completion
	// aio_rw_flags, placed in kaioCB.rwFlags: fail with EAGAIN rather
	// than wait (Linux 4.14).
	kaioNowait = uint64(unix.RWF_NOWAIT) << 32
)

// kaio is the process's AIO context.
type kaio struct {
	id    uintptr  // aio_context_t
	efd   int      // the eventfd completions signal
	efile *os.File // efd, in Go's netpoller (the reaper's)
	// submit is io_submit(2) for one control block (a test may stand
	// in for the kernel's refusals).
	submit func(cb *kaioCB) syscall.Errno
	mu     sync.Mutex
	reqs   map[uint64]*kaioReq // submitted and not reaped, by aio_data
	nextID uint64
	// reaping: a reaper goroutine runs; it exits once reqs is empty.
	reaping bool
}

// kaioReq is one submitted operation.
type kaioReq struct {
	buf   []byte // the caller's buffer, kept alive while the kernel owns it
	res   int64
	done  bool
	waker runtime.Waker
}

var (
	kaioOnce sync.Once
	kaioCtx  atomic.Pointer[kaio] // nil if the kernel (or a seccomp filter) refuses
	// For tests: the operations io_submit took, and those of them that
	// came back EAGAIN (RWF_NOWAIT) and went to the blocking pool.
	kaioSubmits, kaioPunted atomic.Uint64
)

// theKaio returns the process's AIO context, creating it on first use, or
// nil where Linux AIO is not available.
func theKaio() *kaio {
	kaioOnce.Do(func() {
		if k := newKaio(kaioEvents); k != nil {
			kaioCtx.Store(k)
		}
	})
	return kaioCtx.Load()
}

// newKaio creates an AIO context of n events and its eventfd, or returns
// nil.
func newKaio(n int) *kaio {
	var id uintptr
	if _, _, e := unix.Syscall(unix.SYS_IO_SETUP, uintptr(n), uintptr(unsafe.Pointer(&id)), 0); e != 0 {
		return nil
	}
	// The reaper's call must work too (a seccomp filter might allow
	// io_setup and not io_getevents).
	var ev kaioEvent
	var zero unix.Timespec
	if _, _, e := unix.Syscall6(unix.SYS_IO_GETEVENTS, id, 0, 1, uintptr(unsafe.Pointer(&ev)), uintptr(unsafe.Pointer(&zero)), 0); e != 0 {
		unix.Syscall(unix.SYS_IO_DESTROY, id, 0, 0)
		return nil
	}
	efd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		unix.Syscall(unix.SYS_IO_DESTROY, id, 0, 0)
		return nil
	}
	// A non-blocking descriptor: os.NewFile registers it with the
	// netpoller, where the reaper's Read waits without holding a thread.
	k := &kaio{id: id, efd: efd, efile: os.NewFile(uintptr(efd), "faio-aio-eventfd"), reqs: make(map[uint64]*kaioReq)}
	k.submit = k.ioSubmit
	return k
}

// ioSubmit queues cb with io_submit(2). With RWF_NOWAIT it does not wait
// for the device; a raw system call all the same would hold the worker's
// P through what work the kernel does inline, so it goes through the
// scheduler's bookkeeping.
func (k *kaio) ioSubmit(cb *kaioCB) syscall.Errno {
	cbs := [1]*kaioCB{cb}
	n, _, e := syscall.Syscall(unix.SYS_IO_SUBMIT, k.id, 1, uintptr(unsafe.Pointer(&cbs[0])))
	if e == 0 && n != 1 {
		e = unix.EAGAIN
	}
	return e
}

// kaioFile is what an O_DIRECT File tells its operations about Linux AIO.
type kaioFile struct {
	refused atomic.Bool // io_submit refused one of its operations for good
}

// kaioOp is an fdOp that Linux AIO can run: an O_DIRECT read or write at
// an offset.
func kaioOp(op directOp) (*fdOp, bool) {
	o, ok := op.(*fdOp)
	if !ok || o.kaio == nil || o.off == uring.CurrentPos || len(o.buf) == 0 || o.kaio.refused.Load() {
		return nil, false
	}
	return o, o.opcode == uring.OpRead || o.opcode == uring.OpWrite
}

// submitKaio runs o through Linux AIO for the task of ctx and reports
// false, having run nothing, when Linux AIO does not take it. Once
// submitted, the operation is waited for even if ctx ends, as on the
// blocking pool: the device writes to the caller's buffer until it
// completes, and an O_DIRECT transfer cannot be cancelled (io_cancel(2)
// supports none on files).
func submitKaio(ctx context.Context, o *fdOp) (runtime.Result, bool) {
	k := theKaio()
	if k == nil {
		return runtime.Result{}, false
	}
	b := capRW(o.buf)
	req := &kaioReq{buf: b}
	cb := kaioCB{
		rwFlags: kaioNowait,
		opcode:  kaioCmdPread,
		fildes:  uint32(o.fd),
		buf:     uint64(uintptr(unsafe.Pointer(&b[0]))),
		nbytes:  uint64(len(b)),
		offset:  int64(o.off),
		flags:   kaioFlagResfd,
		resfd:   uint32(k.efd),
	}
	if o.opcode == uring.OpWrite {
		cb.opcode = kaioCmdPwrite
	}
	// Registered first: the completion may be reaped before io_submit
	// returns.
	k.mu.Lock()
	k.nextID++
	cb.data = k.nextID
	k.reqs[cb.data] = req
	k.mu.Unlock()
	if e := k.submit(&cb); e != 0 {
		// Refused: nothing was queued. EAGAIN says the context is
		// full; anything else (EOPNOTSUPP: a file system without
		// NOWAIT AIO, such as tmpfs; EINVAL) will not change for this
		// file, which stops trying. A reaper waiting for this
		// operation alone is told to end.
		if e != unix.EAGAIN {
			o.kaio.refused.Store(true)
		}
		k.mu.Lock()
		delete(k.reqs, cb.data)
		poke := k.reaping && len(k.reqs) == 0
		k.mu.Unlock()
		if poke {
			one := [8]byte{1}
			unix.Write(k.efd, one[:])
		}
		return runtime.Result{}, false
	}
	kaioSubmits.Add(1)
	// A reaper runs from now on until the completion is reaped: one that
	// has not seen this operation's registration yet finds it when it
	// next checks, and one started now finds the eventfd already
	// signalled if the completion is in.
	k.mu.Lock()
	start := !k.reaping
	k.reaping = true
	k.mu.Unlock()
	if start {
		go k.reap()
	}
	// The task can no longer give up: the kernel owns its buffer until
	// the completion. Suspend fails only with its ctx, which cannot end.
	_ = runtime.Suspend(context.WithoutCancel(ctx), func(w runtime.Waker) bool {
		k.mu.Lock()
		defer k.mu.Unlock()
		if req.done {
			return false
		}
		req.waker = w
		return true
	})
	if req.res == -int64(unix.EAGAIN) {
		// Not started: the kernel would have had to wait (RWF_NOWAIT).
		// The pool runs it, blocking a thread of its own.
		kaioPunted.Add(1)
		return runtime.Result{}, false
	}
	return runtime.Result{Res: int32(req.res)}, true
}

// reap collects completions and wakes their tasks until no operation is
// outstanding.
func (k *kaio) reap() {
	var (
		evs  [64]kaioEvent
		zero unix.Timespec
		cnt  [8]byte
	)
	for {
		// min_nr 0 and a zero timeout: take what is there, never wait.
		n, _, e := unix.Syscall6(unix.SYS_IO_GETEVENTS, k.id, 0, uintptr(len(evs)), uintptr(unsafe.Pointer(&evs[0])), uintptr(unsafe.Pointer(&zero)), 0)
		if e == 0 && n > 0 {
			k.deliver(evs[:n])
			continue
		}
		if e != 0 && e != unix.EINTR {
			panic("faio/aio: io_getevents: " + e.Error())
		}
		k.mu.Lock()
		if len(k.reqs) == 0 {
			k.reaping = false
			k.mu.Unlock()
			return
		}
		k.mu.Unlock()
		// Every completion adds to the eventfd's count after its event
		// is posted, so one posted since the io_getevents above makes
		// this Read return at once.
		if _, err := k.efile.Read(cnt[:]); err != nil {
			panic("faio/aio: reading the AIO eventfd: " + err.Error())
		}
	}
}

// deliver records the results of evs and wakes their tasks.
func (k *kaio) deliver(evs []kaioEvent) {
	for i := range evs {
		k.mu.Lock()
		req := k.reqs[evs[i].data]
		delete(k.reqs, evs[i].data)
		var w runtime.Waker
		if req != nil {
			req.res = evs[i].res
			req.done = true
			req.buf = nil
			w = req.waker
		}
		k.mu.Unlock()
		w.Wake()
	}
}
