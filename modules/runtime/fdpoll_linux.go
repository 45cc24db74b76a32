package runtime

import (
	"context"
	"errors"
	"fmt"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// FD is a descriptor registered with its runtime's readiness poller:
// tasks wait on it for readiness (Wait) the way goroutines wait in Go's
// netpoller, but without a goroutine of their own. Package aio and
// libfaio.so use it on the portable backend, where there is no ring to
// submit a socket's operations to.
//
// The poller is one epoll instance per runtime, holding each registered
// descriptor edge-triggered for both directions. The workers collect its
// events without waiting whenever they reap their rings (every IOInterval
// ticks, and before they sleep), so a busy worker wakes the tasks that
// wait there itself, with no other thread involved; while every worker
// sleeps, one goroutine waits for the poller in Go's netpoller and wakes
// them.
type FD struct {
	p  *fdPoller
	fd int
	id uint64 // the key of its events (see fdPoller.fds)

	mu sync.Mutex
	// edges counts the readiness edges of each direction (reading,
	// writing): a wait that saw a count before its try, and finds another
	// after, tries again instead of sleeping through an edge it missed.
	edges   [2]uint64
	waiters [2][]Waker // the waits under way, per direction
	closed  bool
}

// fdPoller is a runtime's epoll instance and its registered descriptors.
//
// The program may close epfd by mistake (a stray close of a reused
// number): the instance then goes without a word, and the number may come
// to name another file, even another epoll instance, whose events the
// poller would steal. The poller looks whether epfd is still its own
// (verify) when something looks wrong (epoll_wait or epoll_ctl fails, an
// event names no FD), every pollerCheck in the watcher, and at close. Once
// it is not, the poller is broken: it never uses the number again, and
// its waits fail with a *PollerError.
type fdPoller struct {
	epfd int
	// probe is an eventfd registered in epfd under id 0, which is no FD's,
	// with no events: the instance's proof of identity (see verify).
	probe  int
	file   *os.File // epfd, as the netpoller knows it (the watcher's)
	nextID atomic.Uint64
	fds    sync.Map // id -> *FD
	// mu orders registrations and unregistrations (read-locked), which
	// name epfd, before close (write-locked), after which its number may
	// be another descriptor's.
	mu       sync.RWMutex
	isClosed bool // under mu
	// owner is, per descriptor number, the FD that registered it last
	// (under numMu): an FD whose number another FD has registered since
	// (the caller closed it before FD.Close, and the number was reused)
	// must not unregister the number, which is the other's now.
	numMu  sync.Mutex
	owner  map[int]*FD
	closed atomic.Bool
	// broken is set (under mu) once epfd is found not to be the
	// poller's any more.
	broken atomic.Pointer[PollerError]
	// wmu orders the watcher's read deadline (its periodic check)
	// against close's, which ends its wait.
	wmu  sync.Mutex
	done chan struct{} // closed when the watcher has returned
}

// pollerCheck is how often the watcher looks whether the epoll descriptor
// is still the poller's while nothing else shows it (see fdPoller): one
// epoll_ctl a second, and a wait that lost its poller fails within that.
const pollerCheck = time.Second

// ErrFDClosed is returned by FD.Wait once FD.Close has been called.
var ErrFDClosed = errors.New("faio/runtime: wait on a closed FD")

// RegisterFD registers fd, a descriptor that stays open until the FD's
// Close, with rt's readiness poller. fd need not be non-blocking, but the
// operations Wait tries on it must not block (MSG_DONTWAIT on a socket).
// It fails if the poller cannot be created or refuses fd (a regular file:
// epoll supports sockets, pipes, eventfds and most character devices).
// A nil rt, or one not made by New, is refused with ErrNilRuntime.
func (rt *Runtime) RegisterFD(fd int) (*FD, error) {
	if !rt.usable() {
		return nil, ErrNilRuntime
	}
	if rt.closing.Load() {
		return nil, ErrClosed
	}
	p, err := rt.fdPoller()
	if err != nil {
		return nil, err
	}
	p.mu.RLock()
	if p.isClosed {
		p.mu.RUnlock()
		return nil, ErrClosed
	}
	if pe := p.broken.Load(); pe != nil {
		p.mu.RUnlock()
		return nil, pe
	}
	f := &FD{p: p, fd: fd, id: p.nextID.Add(1)}
	p.fds.Store(f.id, f)
	ev := unix.EpollEvent{Events: unix.EPOLLIN | unix.EPOLLOUT | unix.EPOLLRDHUP | unix.EPOLLET}
	*(*uint64)(unsafe.Pointer(&ev.Fd)) = f.id
	// Under numMu: a stale FD.Close of the number either runs before
	// the add or sees f as its owner.
	p.numMu.Lock()
	err = unix.EpollCtl(p.epfd, unix.EPOLL_CTL_ADD, fd, &ev)
	if err == nil {
		if p.owner == nil {
			p.owner = make(map[int]*FD)
		}
		p.owner[fd] = f
	}
	p.numMu.Unlock()
	p.mu.RUnlock()
	if err != nil {
		p.fds.Delete(f.id)
		// Most likely fd's fault (a regular file, a closed number), but
		// it may be epfd's.
		if p.check() {
			return nil, p.broken.Load()
		}
		return nil, os.NewSyscallError("epoll_ctl", err)
	}
	return f, nil
}

// Wait calls try until it reports true, and, each time it reports false
// (the operation met EAGAIN), waits until the descriptor becomes ready for
// reading (or for writing if write is set) before the next call. A task
// suspends meanwhile; a plain goroutine blocks. It returns nil once try
// reported true, ctx.Err() if ctx ends first, ErrFDClosed if Close was
// called before or during the wait, or the runtime closed, and a
// *PollerError if the runtime's poller lost its epoll descriptor (see
// PollerError) before or during the wait. Several waits
// may be under way at once; each readiness wakes all of those of its
// direction. A nil ctx is refused with ErrNilContext, before try is called,
// and a nil try with ErrNilFunc.
func (f *FD) Wait(ctx context.Context, write bool, try func() bool) error {
	if ctx == nil {
		return ErrNilContext
	}
	if try == nil {
		return ErrNilFunc
	}
	d := 0
	if write {
		d = 1
	}
	for {
		f.mu.Lock()
		closed := f.closed
		// An edge from now on is one try may not have seen.
		seen := f.edges[d]
		f.mu.Unlock()
		if closed {
			return ErrFDClosed
		}
		if pe := f.p.broken.Load(); pe != nil {
			return pe
		}
		if try() {
			return nil
		}
		if err := f.sleep(ctx, d, seen); err != nil {
			return err
		}
	}
}

// sleep suspends the caller until an edge of direction d after the
// count seen, Close, or the end of ctx. It is Wait's only allocation (the
// register closure and what it shares), made only when a wait is needed.
func (f *FD) sleep(ctx context.Context, d int, seen uint64) error {
	var mine Waker
	err := Suspend(ctx, func(w Waker) bool {
		f.mu.Lock()
		defer f.mu.Unlock()
		if f.edges[d] != seen || f.closed || f.p.broken.Load() != nil {
			return false // an edge since the try: try again at once
		}
		mine = w
		f.waiters[d] = append(f.waiters[d], w)
		return true
	})
	if err != nil {
		// Cancelled: take our Waker out, unless an edge took it.
		f.mu.Lock()
		ws := f.waiters[d]
		for i := range ws {
			if ws[i] == mine {
				ws[i] = ws[len(ws)-1]
				ws[len(ws)-1] = Waker{}
				f.waiters[d] = ws[:len(ws)-1]
				break
			}
		}
		f.mu.Unlock()
	}
	return err
}

// Close unregisters the descriptor, before the caller closes it, and ends
// the waits on it with ErrFDClosed. It is idempotent.
func (f *FD) Close() {
	f.mu.Lock()
	if f.closed {
		f.mu.Unlock()
		return
	}
	f.closed = true
	ws := f.takeLocked(nil, true, true)
	f.mu.Unlock()
	p := f.p
	var err error
	p.mu.RLock()
	// Under numMu, the delete too: a caller that closed the descriptor
	// before Close (the kernel then dropped its registration) may have
	// had the number back and registered it again as another FD, whose
	// registration the delete would remove, leaving its waits hanging
	// (found by a reviewer). A number registered since is not ours.
	p.numMu.Lock()
	mine := p.owner[f.fd] == f
	if mine {
		delete(p.owner, f.fd)
		if !p.isClosed && p.broken.Load() == nil {
			err = unix.EpollCtl(p.epfd, unix.EPOLL_CTL_DEL, f.fd, nil)
		}
	}
	p.numMu.Unlock()
	p.mu.RUnlock()
	if err != nil {
		// The caller closed the descriptor first (and nobody has
		// registered the number since), or epfd is no longer the
		// poller's.
		p.check()
	}
	p.fds.Delete(f.id)
	for _, w := range ws {
		w.Wake()
	}
}

// fire notes the readiness in events and appends the waiters it ends to
// out.
func (f *FD) fire(events uint32, out []Waker) []Waker {
	in := events&(unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0
	wr := events&(unix.EPOLLOUT|unix.EPOLLHUP|unix.EPOLLERR) != 0
	f.mu.Lock()
	defer f.mu.Unlock()
	if in {
		f.edges[0]++
	}
	if wr {
		f.edges[1]++
	}
	return f.takeLocked(out, in, wr)
}

// takeLocked appends to out, and removes, the waiters of the directions
// asked for.
func (f *FD) takeLocked(out []Waker, in, wr bool) []Waker {
	for d, take := range [2]bool{in, wr} {
		if take && len(f.waiters[d]) > 0 {
			out = append(out, f.waiters[d]...)
			clear(f.waiters[d])
			f.waiters[d] = f.waiters[d][:0]
		}
	}
	return out
}

// pollBuf receives a poller's events.
type pollBuf = []unix.EpollEvent

// pollEvents returns the worker's buffer for the poller's events.
func (w *worker) pollEvents() pollBuf {
	if w.pollBuf == nil {
		w.pollBuf = make(pollBuf, 64)
	}
	return w.pollBuf
}

// fdPollerOnce guards a runtime's poller, made at the first RegisterFD.
type fdPollerOnce struct {
	once sync.Once
	p    *fdPoller
	err  error
}

func (rt *Runtime) fdPoller() (*fdPoller, error) {
	o := &rt.fdp
	o.once.Do(func() {
		if rt.closing.Load() {
			o.err = ErrClosed
			return
		}
		epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
		if err != nil {
			o.err = os.NewSyscallError("epoll_create1", err)
			return
		}
		// The watcher waits for the poller in the netpoller, which wants
		// the descriptor non-blocking.
		if err := unix.SetNonblock(epfd, true); err != nil {
			unix.Close(epfd)
			o.err = os.NewSyscallError("setnonblock", err)
			return
		}
		probe, err := unix.Eventfd(0, unix.EFD_CLOEXEC|unix.EFD_NONBLOCK)
		if err == nil {
			// Id 0, and no events: it never shows up in epoll_wait.
			err = unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, probe, &unix.EpollEvent{})
			if err != nil {
				unix.Close(probe)
			}
		}
		if err != nil {
			unix.Close(epfd)
			o.err = fmt.Errorf("faio/runtime: the readiness poller's probe: %w", err)
			return
		}
		p := &fdPoller{epfd: epfd, probe: probe, file: os.NewFile(uintptr(epfd), "faio-epoll"), done: make(chan struct{})}
		rc, err := p.file.SyscallConn()
		if err == nil && p.file.SetReadDeadline(time.Time{}) == os.ErrNoDeadline {
			err = errors.New("the netpoller refused its epoll instance")
		}
		if err != nil {
			p.file.Close()
			unix.Close(probe)
			o.err = fmt.Errorf("faio/runtime: the readiness poller: %w", err)
			return
		}
		go p.watch(rc)
		o.p = p
		rt.fdpReady.Store(p)
	})
	return o.p, o.err
}

// watch runs on its own goroutine until the poller closes or breaks:
// whenever the epoll instance has events that no worker has collected (the
// workers sleep, or are busy between reaps), it collects them and wakes
// their tasks, which go to their workers as any wake-up from outside does.
// Every pollerCheck it looks whether epfd is still the poller's: an epoll
// descriptor closed behind the runtime's back takes its netpoller
// registration with it, so no event would ever tell.
func (p *fdPoller) watch(rc syscall.RawConn) {
	defer close(p.done)
	var buf [64]unix.EpollEvent
	for {
		p.wmu.Lock()
		if p.closed.Load() || p.broken.Load() != nil {
			p.wmu.Unlock()
			return
		}
		_ = p.file.SetReadDeadline(time.Now().Add(pollerCheck))
		p.wmu.Unlock()
		err := rc.Read(func(uintptr) bool {
			p.collect(buf[:], true)
			return p.closed.Load() || p.broken.Load() != nil
		})
		if errors.Is(err, os.ErrDeadlineExceeded) {
			p.check()
		}
	}
}

// verify reports nil if epfd still names the poller's epoll instance, and
// what says it does not otherwise: the probe is registered in that
// instance and in no other, so modifying its entry through epfd succeeds
// there only (EBADF: epfd is closed; EINVAL: it names a file that is no
// epoll instance; ENOENT: another instance). The inode would not tell:
// every epoll instance has the same one. The caller holds mu, with
// isClosed false.
func (p *fdPoller) verify() error {
	if err := unix.EpollCtl(p.epfd, unix.EPOLL_CTL_MOD, p.probe, &unix.EpollEvent{}); err != nil {
		return os.NewSyscallError("epoll_ctl", err)
	}
	return nil
}

// check verifies epfd (see verify) and breaks the poller if it is no
// longer its own; it reports whether the poller is broken.
func (p *fdPoller) check() bool {
	if p.broken.Load() != nil {
		return true
	}
	p.mu.RLock()
	var err error
	if !p.isClosed {
		err = p.verify()
	}
	p.mu.RUnlock()
	return err != nil && p.fail(err)
}

// fail breaks the poller, unless it has closed: err says that epfd is no
// longer its epoll instance. From then on nothing uses the number, and
// every wait on its FDs ends with a *PollerError. It reports whether the
// poller is broken.
func (p *fdPoller) fail(err error) bool {
	var ws []Waker
	p.mu.Lock()
	if p.isClosed {
		p.mu.Unlock()
		return false
	}
	if p.broken.Load() == nil {
		// Under the write lock: a registration (read-locked) either
		// sees it or is in fds for the Range below.
		p.broken.Store(&PollerError{Fd: p.epfd, Err: err})
		p.fds.Range(func(_, v any) bool {
			f := v.(*FD)
			f.mu.Lock()
			ws = f.takeLocked(ws, true, true)
			f.mu.Unlock()
			return true
		})
	}
	p.mu.Unlock()
	for _, w := range ws {
		w.Wake()
	}
	// Wake the watcher, whose wait would otherwise last until its check.
	p.wmu.Lock()
	_ = p.file.SetReadDeadline(aLongTimeAgo)
	p.wmu.Unlock()
	return true
}

// aLongTimeAgo is a deadline in the past, which ends a wait at once.
var aLongTimeAgo = time.Unix(1, 0)

// collect takes the events waiting in the epoll instance, without waiting,
// and wakes the tasks they end; it returns how many it woke. It takes one
// buffer's worth, or all of them if drain is set. A worker takes one: the
// tasks it wakes queue on it, and the rest are left to the next reap, its
// own or another worker's, rather than piling up behind them (W7c's
// thousand connections). The watcher drains: it is woken only by new
// events, and all workers may be asleep.
func (p *fdPoller) collect(buf []unix.EpollEvent, drain bool) int {
	woken := 0
	checked := false
	for {
		if p.broken.Load() != nil {
			return woken // the number is not ours to read any more
		}
		// Without the scheduler's bookkeeping: a zero timeout never
		// blocks.
		r, _, errno := unix.RawSyscall6(unix.SYS_EPOLL_PWAIT, uintptr(p.epfd), uintptr(unsafe.Pointer(&buf[0])), uintptr(len(buf)), 0, 0, 0)
		n := int(r)
		if errno != 0 {
			if errno == unix.EINTR {
				continue
			}
			// EBADF (closed) or EINVAL (not an epoll instance): epfd
			// is not the poller's any more, unless the poller is
			// closing (fail then does nothing). Its own instance gives
			// neither: close closes it only once the workers have
			// stopped and the watcher's wait, which holds it open, has
			// ended.
			p.fail(os.NewSyscallError("epoll_wait", errno))
			return woken
		}
		for i := range n {
			id := *(*uint64)(unsafe.Pointer(&buf[i].Fd))
			v, ok := p.fds.Load(id)
			if !ok {
				// Closed since, as a rule; but it may be an event of
				// another epoll instance that took epfd's number:
				// look, once a call.
				if !checked {
					checked = true
					if p.check() {
						return woken
					}
				}
				continue
			}
			var some [4]Waker
			for _, w := range v.(*FD).fire(buf[i].Events, some[:0]) {
				if w.Wake() {
					woken++
				}
			}
		}
		if n < len(buf) || !drain {
			return woken
		}
	}
}

// close stops the watcher and closes the epoll instance; Close calls it
// once every task has finished. Waits still under way (plain goroutines')
// end with ErrFDClosed, since nothing would collect their events.
//
// If epfd is no longer the poller's (broken, or found so now), the number
// may be another file's: close leaves it, and the probe's, alone, and
// returns the *PollerError. The number's os.File is then kept for good,
// since its finalizer would close the number too.
func (p *fdPoller) close() error {
	p.mu.Lock()
	p.isClosed = true
	p.closed.Store(true)
	pe := p.broken.Load()
	if pe == nil {
		if err := p.verify(); err != nil {
			pe = &PollerError{Fd: p.epfd, Err: err}
			p.broken.Store(pe)
		}
	}
	p.mu.Unlock()
	if pe == nil {
		p.file.Close() // ends the watcher's wait
		unix.Close(p.probe)
	} else {
		p.wmu.Lock()
		_ = p.file.SetReadDeadline(aLongTimeAgo) // ends the watcher's wait
		p.wmu.Unlock()
	}
	<-p.done
	if pe != nil {
		abandonedPollers.Lock()
		abandonedPollers.files = append(abandonedPollers.files, p.file)
		abandonedPollers.Unlock()
	}
	p.fds.Range(func(_, v any) bool {
		v.(*FD).Close()
		return true
	})
	if pe != nil {
		return pe
	}
	return nil
}

// abandonedPollers keeps the os.Files of broken pollers' epoll descriptors
// from the collector: their numbers are not theirs any more.
var abandonedPollers struct {
	sync.Mutex
	files []*os.File
}
