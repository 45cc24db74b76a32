package ringq

import (
	"fmt"
	"sync/atomic"
)

// DefaultLocalQueueCapacity is the capacity NewLocalQueue uses when asked
// for 0. It matches the run queues of tokio and the Go scheduler: big enough
// that a busy worker rarely overflows, small enough that stealing half of it
// is cheap.
const DefaultLocalQueueCapacity = 256

// MaxLocalQueueCapacity is the largest capacity NewLocalQueue accepts. The
// positions are 32-bit counters; keeping the capacity far below 2^32 leaves
// room to tell a full queue from an empty one and makes a position reused by
// wrap-around (ABA) need 2^16 full laps while one thief is stalled.
const MaxLocalQueueCapacity = 1 << 16

// Sink receives the overflow of a full LocalQueue. *GlobalQueue[T]
// implements it.
//
// PushBatch must take either all of items or none of them, returning an
// error in the second case, and must not keep a reference to the slice after
// it returns: LocalQueue reuses it. It runs in the middle of the owner's
// Push, so it must not call the owner methods of that queue.
type Sink[T any] interface {
	PushBatch(items []T) error
}

// LocalQueue is a fixed-capacity run queue with one owner and any number of
// thieves. The zero value is not usable (an overflowing Push panics); create
// one with NewLocalQueue.
//
// The owner is the one goroutine that may call Push, PushBatch, Pop,
// RemainingCap, and StealInto with this queue as the destination. Any
// goroutine may call StealInto with this queue as the victim, and Len, Cap
// and IsStealing. Calling owner methods from two goroutines at once is a
// data race; ownership may pass from one goroutine to another through any
// synchronization (a channel, a mutex) as long as one owner acts at a time.
//
// # Positions
//
// Every item pushed gets a position: a free-running uint32 counter that
// wraps at 2^32. Position p lives in slot p mod Cap. Differences of
// positions are taken in uint32 arithmetic, so wrap-around needs no special
// case.
//
// # Happens-before
//
// Slots are plain memory; only head and tail are atomic. Go's sync/atomic
// operations are sequentially consistent, and the memory model promises that
// when an atomic operation B observes the value written by atomic operation
// A, A is synchronized before B. The queue is correct because every slot
// access is ordered by one of three such edges, each named at the atomic that
// makes it:
//
//  1. publish: the owner writes a slot, then stores tail; a thief loads that
//     tail and only then reads the slot.
//  2. release: a thief reads (and zeroes) the slots it claimed, then moves
//     steal past them with a CAS on head; the owner loads head, sees the new
//     steal, and only then writes those slots again.
//  3. claim: a CAS on head hands each position to exactly one consumer (the
//     owner in Pop or an overflow, or one thief), so no two goroutines read
//     the same slot as their own.
type LocalQueue[T any] struct {
	// head packs two positions into one word so that a consumer can move
	// them together with a single CAS:
	//
	//	bits 63..32  steal: the first position a thief is copying out
	//	bits 31..0   real:  the first position the queue still holds
	//
	// steal == real means no steal is under way. A thief claims
	// [real, real+n) by moving real alone, copies the slots, then sets steal
	// = real. While steal != real, other thieves back off (one steal at a
	// time per victim), the owner can still pop from real on, and the owner
	// measures free room from steal, not real: the slots in [steal, real)
	// are being read by the thief and must not be overwritten. Without that
	// rule a fast owner could wrap around and overwrite a slot mid-copy.
	head atomic.Uint64

	// tail is the position the next pushed item goes to. Only the owner
	// stores it; thieves and Len load it. The owner's store after writing
	// the slots is the publish edge (1): a thief that loads this tail sees
	// every slot below it.
	tail atomic.Uint32

	mask uint32
	buf  []T

	// scratch holds the batch handed to the overflow Sink, so that an
	// overflowing Push allocates nothing. Owner only. Cleared after each
	// use so that it keeps no item alive.
	scratch []T
}

func pack(steal, real uint32) uint64 { return uint64(steal)<<32 | uint64(real) }

func unpack(head uint64) (steal, real uint32) { return uint32(head >> 32), uint32(head) }

// NewLocalQueue returns an empty queue holding up to capacity items.
// capacity must be a power of two between 2 and MaxLocalQueueCapacity; 0
// means DefaultLocalQueueCapacity. Any other value returns an error wrapping
// ErrCapacity.
func NewLocalQueue[T any](capacity int) (*LocalQueue[T], error) {
	if capacity == 0 {
		capacity = DefaultLocalQueueCapacity
	}
	if capacity < 2 || capacity > MaxLocalQueueCapacity || capacity&(capacity-1) != 0 {
		return nil, fmt.Errorf("%w: local queue capacity %d is not a power of two in [2, %d]",
			ErrCapacity, capacity, MaxLocalQueueCapacity)
	}
	return &LocalQueue[T]{
		mask:    uint32(capacity - 1),
		buf:     make([]T, capacity),
		scratch: make([]T, capacity/2+1),
	}, nil
}

// Cap returns the capacity of the queue. Safe from any goroutine.
func (q *LocalQueue[T]) Cap() int { return len(q.buf) }

// Len returns the number of items in the queue, not counting those a thief
// has claimed. Safe from any goroutine; when called concurrently with the
// owner or a thief the result is a snapshot that may already be stale, but
// it is always between 0 and Cap.
func (q *LocalQueue[T]) Len() int {
	// head first, then tail: tail only grows, so the tail we read is at
	// least the tail at the moment real was read, and real <= tail held
	// then. The difference is therefore never negative, but the owner may
	// have popped and pushed in between, hence the clamp.
	_, real := unpack(q.head.Load())
	n := int(q.tail.Load() - real)
	return min(n, len(q.buf))
}

// RemainingCap returns how many items Push can take before it overflows.
// Owner only. Slots that a thief is still copying out count as used.
func (q *LocalQueue[T]) RemainingCap() int {
	steal, _ := unpack(q.head.Load())
	return len(q.buf) - int(q.tail.Load()-steal)
}

// IsStealing reports whether a thief is copying items out of q right now,
// in which case StealInto on q refuses. Safe from any goroutine; the answer
// may be stale by the time it is used.
func (q *LocalQueue[T]) IsStealing() bool {
	steal, real := unpack(q.head.Load())
	return steal != real
}

// Push appends v to the queue. Owner only.
//
// When the queue has room, Push stores v and returns nil, allocating
// nothing.
//
// When the queue is full and overflow is nil, Push returns ErrFull and v is
// not enqueued.
//
// When the queue is full and overflow is not nil, Push makes room in one call
// to overflow.PushBatch instead of failing:
//   - normally the batch is the oldest Cap/2 items followed by v, which
//     leaves the queue half full;
//   - if a thief is copying items out at that moment, the batch is v alone,
//     since the thief is about to free up to half the queue anyway and the
//     owner must not wait for it.
//
// If overflow.PushBatch fails, nothing is lost: the items taken for the
// batch are back in the queue (at its head, in their old order, unless a
// thief stole from the queue during the call, in which case they are back
// at its tail), v is not enqueued and stays the caller's, and Push returns
// the sink's error unchanged.
func (q *LocalQueue[T]) Push(v T, overflow Sink[T]) error {
	// Only the owner stores tail, so this load just reads back its own
	// last store.
	tail := q.tail.Load()
	steal, _ := unpack(q.head.Load())
	if tail-steal < uint32(len(q.buf)) {
		// The slot at tail is outside [steal, tail), so no thief reads
		// it, and the head load above saw the release edge (2) of the
		// last thief that did.
		q.buf[tail&q.mask] = v
		q.tail.Store(tail + 1) // publish edge (1)
		return nil
	}
	return q.pushSlow(v, overflow)
}

func (q *LocalQueue[T]) pushSlow(v T, overflow Sink[T]) error {
	tail := q.tail.Load()
	for {
		steal, real := unpack(q.head.Load())
		if tail-steal < uint32(len(q.buf)) {
			// A thief finished or the queue lost items to a steal
			// while we looked: there is room after all.
			q.buf[tail&q.mask] = v
			q.tail.Store(tail + 1)
			return nil
		}
		if overflow == nil {
			return ErrFull
		}
		if steal != real {
			q.scratch[0] = v
			err := overflow.PushBatch(q.scratch[:1])
			clear(q.scratch[:1])
			return err
		}
		if done, err := q.overflowHalf(v, real, tail, overflow); done {
			return err
		}
		// A thief claimed items between our load and our CAS; the queue
		// may have room now, so look again.
	}
}

// overflowHalf moves the oldest half of a full queue and v to overflow. It
// returns done=false, having changed nothing, if a thief got to head first.
func (q *LocalQueue[T]) overflowHalf(v T, head, tail uint32, overflow Sink[T]) (done bool, err error) {
	half := uint32(len(q.buf) / 2)
	// Claim edge (3): once this CAS succeeds no thief can claim
	// [head, head+half). The slots keep their values until the sink has
	// accepted the batch, so a failure can be undone without copying.
	if !q.head.CompareAndSwap(pack(head, head), pack(head+half, head+half)) {
		return false, nil
	}
	batch := q.scratch[:half+1]
	q.read(head, batch[:half])
	batch[half] = v
	err = overflow.PushBatch(batch)
	clear(batch)
	if err == nil {
		q.clearSlots(head, half)
		return true, nil
	}
	// Undo. If head is exactly as we left it, no thief touched the queue
	// during the call and moving head back restores the old order. Head
	// never returns to an earlier value except here, so an equal value
	// means no change.
	if q.head.CompareAndSwap(pack(head+half, head+half), pack(head, head)) {
		return true, err
	}
	// A thief has moved head since, so head cannot go back. The queue was
	// full, so tail == head+Cap and positions tail..tail+half map to the
	// very slots that still hold the items: publishing them at the tail is
	// one store. There is room, since steal >= head+half.
	q.tail.Store(tail + half)
	return true, err
}

// PushBatch appends as many of items as fit, in order, and returns how many
// it took. Owner only. It never overflows: the caller keeps items[n:].
func (q *LocalQueue[T]) PushBatch(items []T) int {
	tail := q.tail.Load()
	steal, _ := unpack(q.head.Load())
	n := min(len(items), len(q.buf)-int(tail-steal))
	if n <= 0 {
		return 0
	}
	q.write(tail, items[:n])
	q.tail.Store(tail + uint32(n)) // publish edge (1)
	return n
}

// Pop removes and returns the oldest item, or the zero value and false when
// the queue is empty. Owner only. The slot is zeroed so that the queue does
// not keep the item alive.
func (q *LocalQueue[T]) Pop() (T, bool) {
	tail := q.tail.Load()
	head := q.head.Load()
	var real uint32
	for {
		var steal uint32
		steal, real = unpack(head)
		if real == tail {
			var zero T
			return zero, false
		}
		next := pack(real+1, real+1)
		if steal != real {
			// A thief owns [steal, real); leave steal for it to move.
			next = pack(steal, real+1)
		}
		// Claim edge (3): a thief may be trying to claim the same
		// position with its own CAS on head; exactly one succeeds.
		if q.head.CompareAndSwap(head, next) {
			break
		}
		head = q.head.Load()
	}
	i := real & q.mask
	v := q.buf[i]
	var zero T
	q.buf[i] = zero
	return v, true
}

// span returns the slots of positions [pos, pos+n) as at most two
// contiguous slices, in order. n must not exceed Cap.
func (q *LocalQueue[T]) span(pos, n uint32) (a, b []T) {
	i := pos & q.mask
	if end := i + n; end <= uint32(len(q.buf)) {
		return q.buf[i:end], nil
	}
	return q.buf[i:], q.buf[:n-(uint32(len(q.buf))-i)]
}

// read copies the items at positions [pos, pos+len(out)) into out.
func (q *LocalQueue[T]) read(pos uint32, out []T) {
	a, b := q.span(pos, uint32(len(out)))
	copy(out[copy(out, a):], b)
}

// write copies in into the slots of positions [pos, pos+len(in)).
func (q *LocalQueue[T]) write(pos uint32, in []T) {
	a, b := q.span(pos, uint32(len(in)))
	copy(b, in[copy(a, in):])
}

// clearSlots zeroes the slots of positions [pos, pos+n).
func (q *LocalQueue[T]) clearSlots(pos, n uint32) {
	a, b := q.span(pos, n)
	clear(a)
	clear(b)
}
