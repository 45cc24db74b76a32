package channel

import (
	"context"
	"math/rand/v2"
	"slices"
	"sync/atomic"

	"github.com/faio-go/faio/modules/runtime"
)

// Case is one operation of a Select, made by Sender.SendCase or
// Receiver.RecvCase. A Case may be passed to many Select calls one after
// the other, but to one Select at a time and only once per call: Select
// refuses, with ErrDuplicateCase, a Case given twice or one that another
// Select is using. Two Cases of one channel, made by two calls of SendCase
// or RecvCase, may go to one Select.
type Case interface {
	// acquire marks the Case as used by a Select, reporting false when
	// one already uses it; release, once that Select is done with it.
	acquire() bool
	release()
	lock() *chanLock
	// tryLocked attempts the operation without waiting; the channel's lock
	// is held. It returns the Waker of the peer served, to wake once the
	// lock is released.
	tryLocked() (outcome, runtime.Waker)
	// enqueueLocked queues the case as case index of the Select waiting
	// on w; dequeueLocked takes it out again if no peer has.
	enqueueLocked(w *wait, index int)
	dequeueLocked()
	// result finishes a case that fired: it stores a received value and
	// returns the error the case ended with.
	result() error
}

// Select waits until one of cases can proceed, performs it and returns its
// index in cases. When several are ready at once it picks one at random, so
// none starves. A case whose channel or end is closed counts as ready: its
// index comes back with ErrClosed (a receive) or a *SendError carrying the
// value (a send), as Recv and Send would return. A nil Case is never ready,
// like a nil channel in a select statement, so cases can be switched off.
//
// Select returns -1 and ctx.Err() when ctx ends first (then no case
// happened), or at once when ctx is already done. It returns -1 and
// ErrDuplicateCase, doing nothing, when one Case appears twice in cases or
// is in a Select that has not returned yet. With no non-nil case it waits
// for ctx to end. Like Send and Recv it suspends a task and blocks a
// plain goroutine.
//
// Select locks the channels of its cases together (in a fixed global
// order, so two Selects cannot deadlock) when it looks for a ready case and
// when it queues itself; so it either finds a case ready or is queued on
// every channel, and a peer arriving on any of them completes exactly one
// case.
func Select(ctx context.Context, cases ...Case) (int, error) {
	if err := runtime.Consume(ctx); err != nil {
		return -1, err
	}
	// Small Selects look for a ready case without allocating.
	var orderBuf [8]int
	var lockBuf [8]*chanLock
	order, locks, ok := acquireCases(cases, orderBuf[:0], lockBuf[:0])
	if !ok {
		return -1, ErrDuplicateCase
	}
	i, err := selectAcquired(ctx, cases, order, locks)
	releaseAll(cases, order)
	return i, err
}

// TrySelect performs one of cases that can proceed without waiting and
// returns its index, as a select statement with a default branch does:
// when none can, it returns -1 and ErrNoneReady and does nothing. Ready
// cases are chosen from at random, closed ones count as ready, nil ones
// never are, and ErrDuplicateCase is returned as by Select. TrySelect
// takes no context and never waits; like TrySend and TryRecv it does not
// charge the cooperative budget (a task polling it in a loop should call
// runtime.Yield).
func TrySelect(cases ...Case) (int, error) {
	var orderBuf [8]int
	var lockBuf [8]*chanLock
	order, locks, ok := acquireCases(cases, orderBuf[:0], lockBuf[:0])
	if !ok {
		return -1, ErrDuplicateCase
	}
	shuffle(order)
	i, err := tryAcquired(cases, order, sortLocks(locks))
	releaseAll(cases, order)
	return i, err
}

// shuffle puts the cases' indexes in random order, so that no ready case
// starves.
func shuffle(order []int) {
	for i := len(order) - 1; i > 0; i-- {
		j := rand.IntN(i + 1)
		order[i], order[j] = order[j], order[i]
	}
}

// tryAcquired looks once, with every lock held (locks sorted by
// sortLocks), for a ready case among the acquired ones, in the order of
// order, and performs it; -1 and ErrNoneReady if none is.
func tryAcquired(cases []Case, order []int, locks []*chanLock) (int, error) {
	lockAll(locks)
	for _, i := range order {
		if res, peer := cases[i].tryLocked(); res != outcomeWait {
			unlockAll(locks)
			peer.Wake()
			return i, cases[i].result()
		}
	}
	unlockAll(locks)
	return -1, ErrNoneReady
}

// selectAcquired is Select once it has acquired the non-nil cases, whose
// indexes order holds, and gathered their locks.
func selectAcquired(ctx context.Context, cases []Case, order []int, locks []*chanLock) (int, error) {
	shuffle(order)
	locks = sortLocks(locks)
	if i, err := tryAcquired(cases, order, locks); err != ErrNoneReady {
		return i, err
	}
	return selectWait(ctx, slices.Clone(cases), slices.Clone(order), slices.Clone(locks))
}

// selectWait is the rest of Select once no case was ready: it queues the
// cases and waits for a peer to complete one of them, or for ctx to end.
func selectWait(ctx context.Context, cases []Case, order []int, locks []*chanLock) (int, error) {
	w := &wait{}
	err := runtime.Suspend(ctx, func(wk runtime.Waker) bool {
		lockAll(locks)
		if w.state.Load() != waiting {
			// Cancelled before this ran; the Select has returned.
			unlockAll(locks)
			return true
		}
		// Nothing of w is queued yet and the owner needs all the locks to
		// cancel, so w is ours until the nodes go in. A peer may have come
		// since the first look.
		for _, i := range order {
			if res, peer := cases[i].tryLocked(); res != outcomeWait {
				w.index = i
				w.state.Store(fired)
				unlockAll(locks)
				peer.Wake()
				return false
			}
		}
		w.waker = wk
		for _, i := range order {
			cases[i].enqueueLocked(w, i)
		}
		unlockAll(locks)
		return true
	})

	lockAll(locks)
	// A peer may have settled w as cancelled already (see claim).
	cancel := err != nil && (w.state.CompareAndSwap(waiting, cancelled) || w.state.Load() == cancelled)
	for _, i := range order {
		cases[i].dequeueLocked()
	}
	unlockAll(locks)
	if cancel {
		return -1, err
	}
	// Fired: by register, which woke us after writing w.index, or by a
	// peer, which wrote it under a lock we have held since.
	return w.index, cases[w.index].result()
}

// releaseAll releases the cases at the indexes in order.
// acquireCases marks every non-nil case of cases as in use, appending
// its index to order and its channel's lock to locks. It returns false,
// having released what it marked, when a case is given twice or is in use
// by another Select: queued twice, its one waiter node would corrupt the
// channel's queue, and a later Send or Recv there would crash.
func acquireCases(cases []Case, order []int, locks []*chanLock) ([]int, []*chanLock, bool) {
	for i, k := range cases {
		if k == nil {
			continue
		}
		if !k.acquire() {
			releaseAll(cases, order)
			return nil, nil, false
		}
		order = append(order, i)
		locks = append(locks, k.lock())
	}
	return order, locks, true
}

func releaseAll(cases []Case, order []int) {
	for _, i := range order {
		cases[i].release()
	}
}

// caseUse is the mark of a Case that a Select uses, from the start of
// the Select to its return.
type caseUse struct{ busy atomic.Bool }

func (u *caseUse) acquire() bool { return u.busy.CompareAndSwap(false, true) }
func (u *caseUse) release()      { u.busy.Store(false) }

// sortLocks sorts locks by id and drops duplicates (cases on one channel).
// Selects are small: insertion sort.
func sortLocks(locks []*chanLock) []*chanLock {
	for i := 1; i < len(locks); i++ {
		for j := i; j > 0 && locks[j].id < locks[j-1].id; j-- {
			locks[j], locks[j-1] = locks[j-1], locks[j]
		}
	}
	return slices.Compact(locks)
}

func lockAll(locks []*chanLock) {
	for _, l := range locks {
		l.mu.Lock()
	}
}

func unlockAll(locks []*chanLock) {
	for _, l := range locks {
		l.mu.Unlock()
	}
}

// sendCase is the Case of Sender.SendCase.
type sendCase[T any] struct {
	caseUse
	s    *Sender[T]
	v    T
	node waiter[T]
}

func (k *sendCase[T]) lock() *chanLock { return &k.s.ch.chanLock }

func (k *sendCase[T]) tryLocked() (outcome, runtime.Waker) {
	res, peer := k.s.ch.sendLocked(&k.s.end, k.v)
	k.node.closed = res == outcomeClosed
	return res, peer
}

func (k *sendCase[T]) enqueueLocked(w *wait, index int) {
	n := &k.node
	n.w, n.index, n.end, n.val, n.closed = w, index, &k.s.end, k.v, false
	k.s.ch.sendq.push(n)
}

func (k *sendCase[T]) dequeueLocked() {
	if k.node.queued {
		k.s.ch.sendq.remove(&k.node)
	}
}

func (k *sendCase[T]) result() error {
	var zero T
	k.node.val, k.node.w, k.node.end = zero, nil, nil
	if k.node.closed {
		return &SendError[T]{Value: k.v}
	}
	return nil
}

// recvCase is the Case of Receiver.RecvCase.
type recvCase[T any] struct {
	caseUse
	r    *Receiver[T]
	dst  *T
	node waiter[T]
}

func (k *recvCase[T]) lock() *chanLock { return &k.r.ch.chanLock }

func (k *recvCase[T]) tryLocked() (outcome, runtime.Waker) {
	v, res, peer := k.r.ch.recvLocked(&k.r.end)
	k.node.val, k.node.closed = v, res == outcomeClosed
	return res, peer
}

func (k *recvCase[T]) enqueueLocked(w *wait, index int) {
	n := &k.node
	var zero T
	n.w, n.index, n.end, n.val, n.closed = w, index, &k.r.end, zero, false
	k.r.ch.recvq.push(n)
}

func (k *recvCase[T]) dequeueLocked() {
	if k.node.queued {
		k.r.ch.recvq.remove(&k.node)
	}
}

func (k *recvCase[T]) result() error {
	var zero T
	v := k.node.val
	k.node.val, k.node.w, k.node.end = zero, nil, nil
	if k.node.closed {
		return ErrClosed
	}
	if k.dst != nil {
		*k.dst = v
	}
	return nil
}
