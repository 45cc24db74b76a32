package uring

import (
	"sync/atomic"
	"time"

	"golang.org/x/sys/unix"
)

// CQReady returns how many CQEs are ready to be reaped (0 on a closed ring).
// It counts only the CQ ring: completions the kernel holds back after an
// overflow appear once a reaping method has flushed them.
func (r *Ring) CQReady() uint32 {
	if !r.open {
		return 0
	}
	return atomic.LoadUint32(r.cq.ktail) - r.cq.head // load-acquire of the CQ tail
}

// CQPending reports the completions that wait for the ring's owner: how
// many the kernel has posted in the CQ and the owner has not released, and
// whether the kernel holds more back (task work that SetupTaskrunFlag
// flags, or an overflow). Unlike CQReady and CQHeld it reads only the words
// the kernel shares, with atomic loads, so a goroutine other than the
// owner may call it (a watchdog looking at a worker's ring). It must not
// run concurrently with Close, which unmaps those words: the caller orders
// its calls before Close. CQEs released in a batch count as posted until
// the batch ends.
func (r *Ring) CQPending() (posted uint32, held bool) {
	if !r.open || r.cq.ktail == nil {
		return 0, false // closed, or a zero Ring: nothing mapped to read
	}
	posted = atomic.LoadUint32(r.cq.ktail) - atomic.LoadUint32(r.cq.khead)
	return posted, atomic.LoadUint32(r.sq.kflags)&(sqCQOverflow|sqTaskrun) != 0
}

// userReady is CQReady minus the internal wait-timeout CQEs among them.
func (r *Ring) userReady() uint32 {
	ready := r.CQReady()
	if r.internalPending == 0 {
		return ready
	}
	n := uint32(0)
	for i := uint32(0); i < ready; i++ {
		if r.cq.cqes[(r.cq.head+i)&r.cq.mask].UserData != internalUserData {
			n++
		}
	}
	return n
}

// TaskrunPending reports whether the kernel has flagged completion work it
// has not posted to the CQ ring yet (rings set up with SetupTaskrunFlag):
// a reaping method then enters the kernel to run it. It costs one atomic
// load.
func (r *Ring) TaskrunPending() bool {
	return r.open && atomic.LoadUint32(r.sq.kflags)&sqTaskrun != 0
}

// CQHeld reports whether the kernel holds completions outside the CQ ring:
// after an overflow, or completion work flagged by SetupTaskrunFlag (see
// TaskrunPending). A reaping method (ForEachCQE, PeekCQE, WaitCQE) moves
// them into the ring; a caller that sleeps on the ring's eventfd instead
// of in io_uring_enter must reap first when this says so, since such
// completions signal nothing more. It costs one atomic load.
func (r *Ring) CQHeld() bool {
	return r.open && atomic.LoadUint32(r.sq.kflags)&(sqCQOverflow|sqTaskrun) != 0
}

// PeekCQE returns the oldest ready CQE without waiting, or nil, nil when
// there is none. It makes a system call only when the kernel signals
// completions held outside the CQ ring (after an overflow, or task work
// flagged by SetupTaskrunFlag, or always for SetupIOPoll). Release the CQE
// with CQESeen once read. Completions the kernel dropped are reported as an
// *OverflowError (matching ErrCQOverflow), once.
func (r *Ring) PeekCQE() (*CQE, error) {
	if !r.open {
		return nil, ErrClosed
	}
	if err := r.checkOverflow(); err != nil {
		return nil, err
	}
	if c := r.peek(); c != nil {
		return c, nil
	}
	if !r.cqNeedsEnter() {
		return nil, nil
	}
	if err := r.flushCQ(); err != nil {
		return nil, err
	}
	return r.peek(), r.checkOverflow()
}

// peek returns the CQE at the head of the CQ ring, consuming internal
// wait-timeout CQEs on the way, or nil.
func (r *Ring) peek() *CQE {
	cq := &r.cq
	for {
		if atomic.LoadUint32(cq.ktail) == cq.head { // load-acquire of the CQ tail
			return nil
		}
		c := &cq.cqes[cq.head&cq.mask]
		if r.internalPending == 0 || c.UserData != internalUserData {
			return c
		}
		r.internalPending--
		r.advance(1)
	}
}

// flushCQ asks the kernel to move held-back completions into the CQ ring.
func (r *Ring) flushCQ() error {
	for {
		_, errno := r.enter(0, 0, enterGetEvents, nil, 0)
		switch errno {
		case 0:
			return nil
		case unix.EINTR:
			continue
		case unix.EBADR:
			return &OverflowError{Dropped: r.takeDropped()}
		default:
			return sysError("io_uring_enter", errno)
		}
	}
}

// WaitCQE returns the oldest ready CQE, waiting up to timeout for one
// (negative: forever; zero: not at all). It submits prepared entries while
// it is in the kernel anyway. When none arrives in time it returns nil and
// ErrTimeout (errors.Is(err, syscall.ETIME)). Release the CQE with CQESeen.
func (r *Ring) WaitCQE(timeout time.Duration) (*CQE, error) {
	c, err := r.PeekCQE()
	if c != nil || err != nil {
		return c, err
	}
	for {
		if _, err := r.submitAndWait(1, timeout); err != nil {
			return nil, err
		}
		if c := r.peek(); c != nil {
			return c, nil
		}
		// Only internal CQEs were ready and are consumed now; a negative
		// timeout waits again, any other has run out.
		if timeout >= 0 {
			return nil, ErrTimeout
		}
	}
}

// PeekBatch stores pointers to up to len(cqes) ready CQEs in cqes, oldest
// first, and returns how many it stored, without releasing them: call
// CQAdvance with that count when done. Like PeekCQE it flushes held-back
// completions when the CQ ring is empty. It returns 0 on a closed ring;
// lost completions are reported by the next PeekCQE, WaitCQE or Submit.
func (r *Ring) PeekBatch(cqes []*CQE) int {
	if !r.open || len(cqes) == 0 {
		return 0
	}
	if r.peek() == nil {
		if !r.cqNeedsEnter() || r.flushCQ() != nil || r.peek() == nil {
			return 0
		}
	}
	cq := &r.cq
	ready := atomic.LoadUint32(cq.ktail) - cq.head // load-acquire of the CQ tail
	n := 0
	for i := uint32(0); i < ready && n < len(cqes); i++ {
		c := &cq.cqes[(cq.head+i)&cq.mask]
		if r.internalPending > 0 && c.UserData == internalUserData {
			// Stop before it so that CQAdvance(n) releases exactly the
			// batch; the next peek consumes it.
			break
		}
		cqes[n] = c
		n++
	}
	return n
}

// CQAdvance releases the n oldest ready CQEs back to the kernel. n larger
// than CQReady is clamped to it: the kernel must never see entries released
// that it has not posted.
func (r *Ring) CQAdvance(n uint32) {
	if !r.open {
		return
	}
	r.advance(min(n, r.CQReady()))
}

func (r *Ring) advance(n uint32) {
	r.cq.head += n
	atomic.StoreUint32(r.cq.khead, r.cq.head) // store-release of the CQ head
}

// CQESeen releases c, which must be the CQE PeekCQE or WaitCQE just
// returned (the oldest one): it is CQAdvance(1).
func (r *Ring) CQESeen(c *CQE) { r.CQAdvance(1) }

// ForEachCQE calls fn for every ready CQE, oldest first, then releases them
// all with one head update, and returns how many it passed to fn. The CQE is
// valid only during the call. fn may prepare and submit entries but must not
// reap (PeekCQE, CQAdvance ...); if it closes the ring the loop stops. If fn
// panics, the CQEs it has already been given are released and the rest stay
// queued. Like PeekCQE it flushes held-back completions when the CQ ring is
// empty; it returns 0 on a closed ring.
func (r *Ring) ForEachCQE(fn func(*CQE)) int {
	if !r.open {
		return 0
	}
	if r.peek() == nil && (!r.cqNeedsEnter() || r.flushCQ() != nil) {
		return 0
	}
	cq := &r.cq
	head := cq.head
	tail := atomic.LoadUint32(cq.ktail) // load-acquire of the CQ tail
	n := 0
	defer func() {
		if r.open {
			r.advance(head - cq.head)
		}
	}()
	for head != tail {
		c := &cq.cqes[head&cq.mask]
		head++
		if r.internalPending > 0 && c.UserData == internalUserData {
			r.internalPending--
			continue
		}
		fn(c)
		n++
		if !r.open {
			break
		}
	}
	return n
}

// Overflow returns the kernel's count of completions it had to drop because
// the CQ ring was full and it could not hold them back (FeatNoDrop kernels
// drop only when that memory allocation fails). Completions held back and
// later flushed are not lost and not counted. Losses are also reported once
// as an *OverflowError.
func (r *Ring) Overflow() uint32 {
	if !r.open {
		return 0
	}
	return atomic.LoadUint32(r.cq.koverflow)
}

// Backlogs counts how often the ring found completions held back in the
// kernel because the CQ ring was full (IORING_SQ_CQ_OVERFLOW) and had to
// flush them with a system call. Nothing is lost on FeatNoDrop kernels, but
// a growing count says the CQ is too small for the load or is reaped too
// rarely.
func (r *Ring) Backlogs() uint64 { return r.backlogs }

// checkOverflow reports drops counted by the kernel since the last report.
func (r *Ring) checkOverflow() error {
	if d := r.takeDropped(); d != 0 {
		return &OverflowError{Dropped: d}
	}
	return nil
}

// takeDropped returns how many completions the kernel dropped since the
// last call and marks them reported.
func (r *Ring) takeDropped() uint32 {
	n := atomic.LoadUint32(r.cq.koverflow)
	d := n - r.overflowSeen
	r.overflowSeen = n
	return d
}
