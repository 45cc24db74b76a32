package driver

import (
	"errors"
	"fmt"
	"math"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"github.com/faio-go/faio/modules/uring"
	"golang.org/x/sys/unix"
)

// Op is one io_uring operation: Prep fills the submission entry (opcode,
// fd, buffers; not UserData, which the Ring owns). The Op value is kept in
// the in-flight record from Start until the completion is reaped, so every
// buffer, iovec array, sockaddr or path it references stays reachable by
// the GC (and, being heap memory, unmoved) while the kernel may use it. An
// Op must reference its memory through Go pointers (slices, pointers),
// never only through integers.
//
// An Op is one request with one result. Its entry is not linked to the
// next one (SQELink, SQEIOHardlink and SQECQESkipSuccess are cleared after
// Prep), and a multishot request (uring.SQE.Multishot) is refused: it
// completes with EINVAL without reaching the kernel.
//
// Prep runs on the worker that submits; it must not block.
type Op interface {
	Prep(sqe *uring.SQE)
}

// Err returns the error of a failed completion (a negative Res), wrapping
// the errno so errors.Is(err, syscall.ECONNRESET) works; nil otherwise.
func (r Result) Err() error { return uring.ResultError(r.Res) }

// RingConfig configures a Ring.
type RingConfig[T any] struct {
	Entries     int // submission queue size
	SubmitBatch int // prepared entries that make Start submit at once (socket entries count an eighth, see entryWeight)
	Worker      int // the owning worker's index, for errors
	// Flags are io_uring setup flags (uring.Setup*). With
	// SetupDeferTaskrun or SetupSingleIssuer the ring must be attached
	// (Attach), and every method but Wake and Cancel called, on one OS
	// thread for its whole life (runtime.LockOSThread): completions are
	// posted by that thread only, when it waits in the kernel for them.
	// SetupCoopTaskrun needs no such thread: the completion of an
	// operation is posted by the thread that submitted it, at once if
	// that thread sleeps (the kernel wakes it), else when it next enters
	// the kernel, rather than by interrupting it; a worker goroutine that
	// has moved to another thread still sees it then. A Go thread that
	// computes without system calls is preempted within about 10 ms,
	// which posts it (TestRingCoopTaskrunAcrossThreads measures 8-12 ms
	// there, and microseconds when the submitter sleeps). Add SetupTaskrunFlag so that Reap
	// sees when to enter. SetupIOPoll is refused: a worker's ring must be
	// able to wait for its wake-up.
	Flags uint32
	// SQPollIdle, if positive, sets the ring up with a kernel thread that
	// takes what Start prepares without a system call
	// (IORING_SETUP_SQPOLL); the thread spins that long without work
	// before it sleeps, rounded up to a millisecond. Start then publishes
	// each entry at once, whatever SubmitBatch says. The thread costs a
	// CPU while it spins: an option for machines with cores to spare.
	SQPollIdle time.Duration
	// FileIOThreads, if positive, bounds the kernel threads (io-wq
	// workers) that each thread submitting to the ring may start for
	// file and block-device operations the kernel cannot issue without
	// blocking (IORING_REGISTER_IOWQ_MAX_WORKERS, bounded class). Zero
	// keeps the kernel's default, min(Entries, 4 x CPUs). Operations on
	// sockets and pipes (the unbounded class) are not limited: a splice
	// waiting for a slow peer must not hold up the others.
	FileIOThreads int
	// Done receives each operation's completion, on the owner's goroutine
	// during Reap or Wait, or on a peer's during TryReap, which may be as
	// soon as Start has returned (StartHeld holds it off), with the owner
	// and generation given to Start; it reports whether that made the
	// owner runnable (Reap counts them). It must not call the Ring.
	Done func(owner T, gen uint64, r Result) bool
	// Failed receives passing io_uring_enter errors (a signal, the kernel
	// short of memory); the next enter retries. A failure that says the
	// ring cannot be entered at all panics with a *RingError instead.
	Failed func(error)
}

// setup creates the io_uring and submitEntries hands prepared entries to
// the kernel; a test stands in a refusal for either. cqWaiting is the
// check before a netpoller sleep (completions in the CQ ring or held by
// the kernel), from the words the kernel shares only, since the owner
// makes it without mu while a peer may reap (TryReap); a test stands in
// one that misses a completion, as a racing one can be missed (see
// pollWait).
var (
	setup         = uring.New
	submitEntries = (*uring.Ring).Submit
	cqWaiting     = func(r *uring.Ring) bool { posted, held := r.CQPending(); return posted > 0 || held }
)

// signalRace bounds the first netpoller sleep after the ring's eventfd
// signals were turned back on: a completion posted at that moment may be
// neither signalled nor seen by the check before the sleep (see
// uring.Ring.SetEventFdSignals), and the check after this long finds it.
const signalRace = time.Millisecond

// retryAfter bounds the sleep of a worker whose prepared entries the kernel
// did not take (a passing io_uring_enter failure): nothing it submitted
// will signal it, so it tries again this soon.
const retryAfter = time.Millisecond

// Ring is a worker's io_uring: the ring its operations run on, and the
// place the worker sleeps until a completion or a Wake. Every method but
// Wake, Cancel, TryReap and the counters belongs to the owning worker's
// goroutine.
//
// How the worker sleeps depends on the ring. A ring not tied to a thread
// (no DEFER_TASKRUN or SINGLE_ISSUER; COOP_TASKRUN is fine) parks its worker in
// Go's netpoller: its eventfd is registered with the ring, which signals
// it for every completion it posts, and with the netpoller, and Wait reads
// it. The worker goroutine then holds neither a
// P nor a thread while it sleeps, like a goroutine blocked in package net:
// the scheduler runs other goroutines (and the collector) on that P, and
// sysmon has no system call to retake it from. Wake is one write to the
// eventfd. The ring's signals are switched off while the worker runs with
// operations in flight (it reaps without them), so completions then cost
// no netpoller wake-up. A thread-bound ring sleeps in io_uring_enter on its
// thread (deferred completion work runs only there), with a read of the
// eventfd kept pending on the ring for Wake to complete.
type Ring[T any] struct {
	cfg  RingConfig[T]
	ring *uring.Ring
	// mu guards the ring's use: the submission queue, the records and the
	// completion queue. The owner holds it in its methods, uncontended
	// but while a peer reaps the ring for it (TryReap), and not while it
	// sleeps in the netpoller (a ring that sleeps in io_uring_enter, which
	// TryReap leaves alone, holds it then too). closed says Close has
	// run, under mu.
	mu     sync.Mutex
	closed bool
	efd    int
	// efdBuf receives the eventfd counter. It lives in the Ring's heap
	// object, referenced for the ring's whole life, so the kernel's write
	// into it is always into live, unmoving memory.
	efdBuf   [8]byte
	efdArmed bool
	// efdFile is the eventfd as the netpoller knows it, when the worker
	// parks there (see Ring); nil when it parks in io_uring_enter. It owns
	// the descriptor then.
	efdFile *os.File
	one     uint64 // 1, what Wake writes (in the heap object: it never moves)
	// efdMu orders Wake (any goroutine) against Close: a wake that comes
	// late, after Close, must not write to a closed (maybe reused) fd.
	efdMu sync.RWMutex
	// quiet: the eventfd's completion signals are off, as they are while
	// the worker runs (see pollWait).
	quiet  bool
	reapFn func(*uring.CQE)
	reaped int

	// Operations in flight: the records, the entries prepared and not yet
	// submitted (pending, weighed by entryWeight), and the ASYNC_CANCEL
	// requests other goroutines ask for, under cancelMu.
	recs          records[T]
	pending       int
	submitAt      int // pending that makes Start submit
	cancelMu      sync.Mutex
	cancels       []OpID
	cancelScratch []OpID
	cancelN       atomic.Int32
	// Cancels to ask again (see cancelAnswered), the owner's under mu:
	// recancelAfter for a timer to arm first, recancel for now.
	recancelAfter, recancel []OpID
	recancelTS              [recancelDelays]unix.Timespec // read by the kernel at each timer's submission
	// unsubmitted says that entries wait to be submitted (see Stranded).
	// Only the owner stores it, and only when it changes: at the first
	// entry left for a later submission, and at the submission that takes
	// the last.
	unsubmitted atomic.Bool

	submitted, completed atomic.Uint64
}

// User data of the eventfd read; operation records use firstRecord and
// up. An ASYNC_CANCEL entry's is cancelTag with the id of the operation it
// cancels, and its retry timer's recancelTag with that id (ids stay below
// 1<<56: a record index is an int32 above recordGenBits of generation).
const (
	wakeUserData = 1
	cancelTag    = 1 << 63
	recancelTag  = 1 << 62
)

// NewRing creates a ring of cfg.Entries entries with its wake-up eventfd.
// It fails with the kernel's reason when io_uring is missing or refused.
func NewRing[T any](cfg RingConfig[T]) (*Ring[T], error) {
	flags := cfg.Flags
	if flags&uring.SetupIOPoll != 0 {
		// Its completions appear only when polled for, and an eventfd
		// read (the wake-up) is not an operation it can run.
		return nil, fmt.Errorf("faio/driver: worker %d: an IOPOLL ring cannot be a worker's ring", cfg.Worker)
	}
	if flags&uring.SetupSingleIssuer != 0 {
		// The issuer is the thread that enables the ring (Attach), not
		// the one that creates it.
		flags |= uring.SetupRDisabled
	}
	params := &uring.Params{Flags: flags}
	if cfg.SQPollIdle > 0 {
		params.Flags |= uring.SetupSQPoll
		params.SQThreadIdle = uint32(min((cfg.SQPollIdle+time.Millisecond-1)/time.Millisecond, math.MaxUint32))
	}
	ring, err := setup(uint32(cfg.Entries), params)
	if err != nil {
		return nil, fmt.Errorf("faio/driver: worker %d: %w", cfg.Worker, err)
	}
	if n := cfg.FileIOThreads; n > 0 {
		if _, _, err := ring.RegisterIOWQMaxWorkers(uint32(min(n, math.MaxUint32)), 0); err != nil {
			ring.Close()
			return nil, fmt.Errorf("faio/driver: worker %d: %w", cfg.Worker, err)
		}
	}
	efd, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
	if err != nil {
		ring.Close()
		return nil, fmt.Errorf("faio/driver: worker %d: eventfd: %w", cfg.Worker, err)
	}
	r := &Ring[T]{cfg: cfg, ring: ring, efd: efd, one: 1, submitAt: min(cfg.SubmitBatch, math.MaxInt/socketShare) * socketShare}
	if cfg.SQPollIdle > 0 {
		// Publishing costs no system call: every entry goes at once.
		r.submitAt = 1
	}
	r.reapFn = r.complete
	if r.threadBound() {
		// Nothing is submitted before the owning thread attaches: the
		// completion of a request goes to the thread that submitted it.
		return r, nil
	}
	if err := r.pollEventfd(); err != nil {
		r.Close()
		return nil, err
	}
	if r.efdFile != nil {
		return r, nil
	}
	if err := r.arm(); err != nil {
		r.Close()
		return nil, err
	}
	return r, nil
}

// pollEventfd registers the eventfd with the ring and with Go's netpoller,
// for a worker that parks in the netpoller. If the netpoller cannot take
// the descriptor (it always can for an eventfd; the check guards against a
// Go runtime that changes that), the ring keeps the pending-read wake-up.
func (r *Ring[T]) pollEventfd() error {
	dup, err := unix.FcntlInt(uintptr(r.efd), unix.F_DUPFD_CLOEXEC, 0)
	if err != nil {
		return fmt.Errorf("faio/driver: worker %d: eventfd: %w", r.cfg.Worker, os.NewSyscallError("fcntl", err))
	}
	// os.NewFile registers a non-blocking descriptor with the netpoller;
	// a read deadline is accepted only if it did. The File gets its own
	// descriptor, so giving it up leaves r.efd as it was.
	f := os.NewFile(uintptr(dup), "faio-ring-eventfd")
	if f.SetReadDeadline(time.Time{}) != nil {
		f.Close()
		return nil
	}
	// Every completion posted while signals are on signals it (they are
	// off while the worker runs: see pollWait). The "async" registration
	// would leave out those completed by task work in a submitting thread,
	// a socket's receive among them, and a worker would sleep through
	// them.
	if err := r.ring.RegisterEventFd(dup); err != nil {
		f.Close()
		return fmt.Errorf("faio/driver: worker %d: %w", r.cfg.Worker, err)
	}
	unix.Close(r.efd)
	r.efd, r.efdFile = dup, f
	return nil
}

// threadBound reports whether the ring's setup flags tie it to one thread.
func (r *Ring[T]) threadBound() bool {
	return r.cfg.Flags&(uring.SetupDeferTaskrun|uring.SetupSingleIssuer) != 0
}

// arm submits the eventfd read that Wake completes.
func (r *Ring[T]) arm() error {
	if err := r.armWake(); err != nil {
		return err
	}
	if _, err := r.ring.Submit(); err != nil {
		return fmt.Errorf("faio/driver: worker %d: submit: %w", r.cfg.Worker, err)
	}
	return nil
}

// Attach binds a ring whose setup flags tie it to one thread (see
// RingConfig.Flags) to the calling thread, which must be locked
// (runtime.LockOSThread) and make every later call but Wake and Cancel:
// it enables a ring set up disabled (SetupSingleIssuer) and arms the
// wake-up (a *RingError if the ring's descriptor no longer names it, as
// for Wait). For other rings it does nothing. A Wake before Attach is not
// lost: it ends the first Wait after.
func (r *Ring[T]) Attach() error {
	if !r.threadBound() || r.efdArmed {
		return nil
	}
	if r.ring.Flags()&uring.SetupRDisabled != 0 {
		if err := r.ring.Enable(); err != nil {
			return fmt.Errorf("faio/driver: worker %d: enable: %w", r.cfg.Worker, err)
		}
	}
	if err := r.arm(); err != nil {
		if ringBroken(err) {
			return &RingError{Worker: r.cfg.Worker, Fd: r.ring.Fd(), Err: err}
		}
		return err
	}
	return nil
}

// armWake queues a read of the eventfd, for a ring that sleeps in
// io_uring_enter: a Wake completes it, which ends the wait.
func (r *Ring[T]) armWake() error {
	sqe := r.ring.GetSQE()
	if sqe == nil {
		if _, err := r.ring.Submit(); err != nil {
			return err
		}
		if sqe = r.ring.GetSQE(); sqe == nil {
			return errors.New("faio/driver: submission queue full")
		}
	}
	sqe.PrepRead(r.efd, r.efdBuf[:], 0)
	sqe.SetUserData(wakeUserData)
	r.efdArmed = true
	return nil
}

// Wake interrupts the worker's Wait (or the next one); safe from any
// goroutine.
func (r *Ring[T]) Wake() {
	r.efdMu.RLock()
	defer r.efdMu.RUnlock()
	if r.efd < 0 {
		return
	}
	// The eventfd is non-blocking, so the write cannot block: RawSyscall
	// skips the scheduler's entersyscall/exitsyscall bookkeeping, which
	// costs about as much as the write itself on this path (every wake of
	// a parked worker).
	for {
		_, _, errno := unix.RawSyscall(unix.SYS_WRITE, uintptr(r.efd), uintptr(unsafe.Pointer(&r.one)), 8)
		if errno != syscall.EINTR {
			// EAGAIN means the counter is already huge: a wake is
			// pending anyway.
			return
		}
	}
}

// Reap handles every ready completion without blocking, submits what is
// prepared, and returns how many completions made their owner runnable.
func (r *Ring[T]) Reap() int {
	if r.closed {
		return 0 // only the owner closes, and it has
	}
	if r.cancelN.Load() == 0 && !r.unsubmitted.Load() {
		// Nothing to do is found without the lock, from the words the
		// kernel shares (a peer's TryReap moves the ring's own view of
		// them under the lock); a completion posted meanwhile is as
		// one posted just after.
		if posted, held := r.ring.CQPending(); posted == 0 && !held {
			return 0
		}
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.reap()
}

// TryReap is Reap for a goroutine other than the owner's, for an owner
// that cannot reap: a worker held by a task blocked in plain Go. It
// reports false, having done nothing, when the owner is using the ring,
// when the ring is closed, and for a ring whose completions only its
// owner's thread may reap (thread-bound, or one that sleeps in
// io_uring_enter). cfg.Done then runs on the caller's goroutine.
//
// The kernel posts a completion that needs work in the submitting thread
// (a receive the socket made wait, with SetupCoopTaskrun) only when that
// thread runs: a thread that Go gave other goroutines, or put to sleep,
// does; one the OS has descheduled does not, and TryReap cannot help
// there.
func (r *Ring[T]) TryReap() (int, bool) {
	if r.threadBound() || r.efdFile == nil || !r.mu.TryLock() {
		return 0, false
	}
	defer r.mu.Unlock()
	if r.closed {
		return 0, false
	}
	return r.reap(), true
}

// reap is Reap under mu.
func (r *Ring[T]) reap() int {
	r.processCancels()
	r.cancelAgain() // (answers a getSQE reaped in Start, say)
	if r.ring.CQReady() == 0 && r.ring.SQReady() == 0 && !r.ring.CQHeld() {
		return 0
	}
	r.reaped = 0
	r.ring.ForEachCQE(r.reapFn)
	r.cancelAgain()
	if !r.efdArmed && r.efdFile == nil {
		// Re-arm failures leave efdArmed false; the next reap retries.
		_ = r.armWake()
	}
	if r.ring.SQReady() > 0 {
		r.submit()
	}
	return r.reaped
}

func (r *Ring[T]) complete(c *uring.CQE) {
	r.completed.Add(1)
	switch {
	case c.UserData == wakeUserData:
		r.efdArmed = false
	case c.UserData&cancelTag != 0:
		r.cancelAnswered(OpID(c.UserData&^cancelTag), c.Res)
	case c.UserData&recancelTag != 0:
		r.recancel = append(r.recancel, OpID(c.UserData&^recancelTag))
	case c.UserData >= firstRecord:
		if r.completeOp(c) {
			r.reaped++
		}
	}
}

// Wait submits what is prepared, sleeps until a completion or a Wake
// arrives or timeout passes (timeout < 0: no limit), in the netpoller or in
// io_uring_enter (see Ring), and then reaps. Like any sleep it may end
// early for nothing.
func (r *Ring[T]) Wait(timeout time.Duration) {
	if r.efdFile != nil {
		r.pollWait(timeout)
		return
	}
	// This ring sleeps in io_uring_enter, which TryReap leaves alone:
	// holding mu while it sleeps keeps no peer out.
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.efdArmed {
		_ = r.armWake()
	}
	r.cancelAgain() // (answers a getSQE reaped: not asked again until now)
	if r.ring.CQReady() == 0 {
		r.pending = 0
		n, err := r.ring.SubmitAndWaitTimeout(1, timeout)
		if n > 0 {
			r.submitted.Add(uint64(n))
		}
		r.setUnsubmitted(r.ring.SQReady() > 0)
		if err != nil && !errors.Is(err, syscall.ETIME) {
			r.enterFailed(err)
		}
	}
	r.reap()
}

// pollWait is Wait for a worker that parks in the netpoller: it submits,
// and unless completions are ready or held by the kernel (CQHeld) it
// reads the eventfd, which the ring signals for each completion posted
// from now on and Wake writes, with timeout as the read deadline (at most
// retryAfter while entries the kernel refused wait to be submitted).
//
// While the worker runs with operations in flight, the signals are off
// (uring's SetEventFdSignals): the worker reaps what completes without
// them, and each signal would otherwise wake the netpoller for nothing.
// They are turned on before the sleep; since a completion racing with that
// may go unsignalled and unseen, the first sleep lasts at most signalRace
// and the CQ ring is checked again after it. A worker without operations
// in flight (scheduling only) leaves the signals on: there is nothing to
// save, and its sleeps need no bound.
func (r *Ring[T]) pollWait(timeout time.Duration) {
	r.mu.Lock()
	r.cancelAgain()
	r.submit()
	left, inFlight, waiting := r.ring.SQReady() > 0, r.recs.inFlight, cqWaiting(r.ring)
	r.mu.Unlock()
	if left && r.cfg.SQPollIdle == 0 && (timeout < 0 || timeout > retryAfter) {
		// The kernel did not take them (see submit): retry soon.
		timeout = retryAfter
	}
	if timeout != 0 && !waiting {
		r.park(timeout, inFlight > 0)
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if !r.quiet && r.recs.inFlight > 0 && r.ring.SetEventFdSignals(false) {
		r.quiet = true
	}
	r.reap()
}

// park sleeps in the netpoller until a signal, a Wake or timeout (< 0: no
// limit), turning the eventfd's signals back on first if they are off.
// busy says operations were in flight when the worker decided to sleep.
// It runs without mu: quiet and the signals are the owner's alone.
func (r *Ring[T]) park(timeout time.Duration, busy bool) {
	var deadline time.Time // zero: none
	if timeout > 0 {
		deadline = time.Now().Add(timeout)
	}
	if r.quiet {
		r.ring.SetEventFdSignals(true)
		r.quiet = false
		if cqWaiting(r.ring) {
			return
		}
		if busy && (timeout < 0 || timeout > signalRace) &&
			(r.sleep(time.Now().Add(signalRace)) || cqWaiting(r.ring)) {
			return
		}
	}
	r.sleep(deadline)
}

// sleep reads the eventfd until deadline (zero: none) and reports whether
// the read returned a signal or a Wake rather than the deadline.
func (r *Ring[T]) sleep(deadline time.Time) bool {
	// The descriptor is open and registered (Close is the owner's call),
	// so the deadline cannot fail. The read's errors are
	// os.ErrDeadlineExceeded, or EINTR-like passing ones: either way the
	// caller reaps and decides again, as after any wake-up.
	_ = r.efdFile.SetReadDeadline(deadline)
	_, err := r.efdFile.Read(r.efdBuf[:])
	return err == nil
}

// enterFailed handles an error of io_uring_enter. A passing one goes to
// cfg.Failed and the next enter retries. One that says the ring itself
// cannot be entered is fatal: see ringBroken.
func (r *Ring[T]) enterFailed(err error) {
	if ringBroken(err) {
		panic(&RingError{Worker: r.cfg.Worker, Fd: r.ring.Fd(), Err: err})
	}
	if r.cfg.Failed != nil {
		r.cfg.Failed(err)
	}
}

// ringBroken reports whether an io_uring_enter error means that the ring's
// descriptor no longer names this ring: closed (EBADF), reused for another
// file (EOPNOTSUPP), the ring going away (ENXIO), or the call refused as
// malformed (EINVAL, EFAULT), which no retry changes.
func ringBroken(err error) bool {
	for _, errno := range []syscall.Errno{syscall.EBADF, syscall.EOPNOTSUPP, syscall.ENXIO, syscall.EINVAL, syscall.EFAULT} {
		if errors.Is(err, errno) {
			return true
		}
	}
	return false
}

// RingError is the panic value of a worker whose io_uring can no longer be
// entered, typically because the program closed the ring's file descriptor
// by mistake (a stray close of a reused descriptor number). The runtime
// cannot go on: operations in flight on that ring can neither complete nor
// be cancelled, and the kernel may still write into their buffers, so
// handing those buffers back with an error would be unsafe. Like Go's own
// netpoller, which throws when its epoll descriptor fails, the worker
// stops the process with this message instead of spinning on the error.
type RingError struct {
	Worker int   // the worker that owns the ring
	Fd     int   // the ring's file descriptor number
	Err    error // the error io_uring_enter returned
}

func (e *RingError) Error() string {
	return fmt.Sprintf("faio: worker %d cannot enter its io_uring (fd %d): %v; the descriptor was closed or replaced "+
		"behind the runtime's back (a stray close of a reused descriptor number?). I/O in flight on that ring can "+
		"neither complete nor be cancelled, and the kernel may still write into its buffers, so the process stops",
		e.Worker, e.Fd, e.Err)
}

func (e *RingError) Unwrap() error { return e.Err }

// Quiesce completes the pending eventfd read of a ring that sleeps in
// io_uring_enter, so the kernel is done with efdBuf before the ring closes
// (a ring that sleeps in the netpoller has none). Called once the worker
// has left its loop.
func (r *Ring[T]) Quiesce() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for tries := 0; r.efdArmed && tries < 100; tries++ {
		r.Wake()
		_, _ = r.ring.SubmitAndWaitTimeout(1, 10*time.Millisecond)
		r.ring.ForEachCQE(r.reapFn)
	}
}

// Close closes the ring and the eventfd; later Wakes do nothing.
func (r *Ring[T]) Close() {
	r.mu.Lock()
	r.closed = true
	r.ring.Close()
	r.mu.Unlock()
	r.efdMu.Lock()
	defer r.efdMu.Unlock()
	if r.efd >= 0 {
		if r.efdFile != nil {
			r.efdFile.Close()
		} else {
			unix.Close(r.efd)
		}
		r.efd = -1
	}
}

// Counts returns how many entries were submitted to the kernel and how many
// completions were reaped (wake-ups included); safe from any goroutine.
func (r *Ring[T]) Counts() (submitted, completed uint64) {
	return r.submitted.Load(), r.completed.Load()
}

// Stranded returns how much of the ring's work waits for its owner (or a
// peer's TryReap): the completions posted and not reaped, plus one if the kernel holds more
// back (SetupTaskrunFlag, an overflow), plus one if prepared entries wait to
// be submitted (see Start). A goroutine other than the owner may call it,
// as the runtime's watchdog does for a worker held by a long task, but not
// concurrently with Close.
func (r *Ring[T]) Stranded() int {
	posted, held := r.ring.CQPending()
	n := int(posted)
	if held {
		n++
	}
	if r.unsubmitted.Load() {
		n++
	}
	return n
}

// InFlight returns the number of operations started and not yet completed.
func (r *Ring[T]) InFlight() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.recs.inFlight
}
