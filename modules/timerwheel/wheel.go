package timerwheel

import (
	"math"
	"math/bits"
	"time"
)

// Wheel is a hierarchical timer wheel holding values of type T until
// their deadlines. Time is whatever the owner passes to Advance (a
// monotonic duration since the wheel's start); the wheel never reads a
// clock. The zero value is not usable; create one with New.
//
// A Wheel is not safe for concurrent use: it belongs to one goroutine
// (in faio, the worker that owns it). The fire callback of Advance runs
// on that goroutine and may call any method of the wheel.
type Wheel[T any] struct {
	res time.Duration
	now time.Duration // the latest time given to Advance
	// cur is the tick the wheel has been turned to: every entry due at a
	// tick <= cur has left the levels for due. Slot placement is relative
	// to cur (see slotFor).
	cur   uint64
	nodes []node[T]
	free  int32
	live  int
	// pending holds entries inserted with a deadline already past; the
	// next Advance fires them. due holds what Advance is firing.
	pending, due list
	levels       [numLevels]level
}

// New returns an empty wheel at time 0. It fails with ErrResolution if
// cfg.Resolution is negative.
func New[T any](cfg Config) (*Wheel[T], error) {
	res, err := cfg.resolution()
	if err != nil {
		return nil, err
	}
	w := &Wheel[T]{res: res, free: nilIndex, pending: emptyList, due: emptyList}
	for lv := range w.levels {
		for s := range w.levels[lv].slots {
			w.levels[lv].slots[s] = emptyList
		}
	}
	return w, nil
}

// Resolution is the wheel's tick length.
func (w *Wheel[T]) Resolution() time.Duration { return w.res }

// Now is the latest time Advance has been given (0 before the first
// Advance); an Advance with an earlier time leaves it unchanged.
func (w *Wheel[T]) Now() time.Duration { return w.now }

// Len is the number of entries inserted and neither fired nor cancelled.
func (w *Wheel[T]) Len() int { return w.live }

// Insert adds v, to be fired by the first Advance whose time is at or past
// deadline once deadline is rounded up to a whole tick: never before
// deadline, and at the latest by an Advance at deadline+Resolution.
// A deadline at or before Now fires on the next Advance. No deadline is too
// far: entries beyond the wheel's range are parked and re-placed until they
// come within it. Insert is O(1) and allocates only while the wheel holds
// more entries than it ever has before.
func (w *Wheel[T]) Insert(deadline time.Duration, v T) Handle {
	i := w.alloc()
	n := &w.nodes[i]
	n.value = v
	if deadline <= w.now {
		n.tick = w.cur
		w.pushBack(&w.pending, homePending, i)
	} else {
		// now >= cur ticks and deadline > now, so tick > cur.
		n.tick = ceilTicks(deadline, w.res)
		w.place(i)
	}
	return Handle{index: i, gen: n.gen}
}

// Cancel removes the entry h names, so it will not fire, and reports
// whether it did: false if the entry already fired, was cancelled, or h is
// the zero Handle. Called from a fire callback, it can still stop an entry
// that is due in the same Advance but has not fired yet. O(1).
func (w *Wheel[T]) Cancel(h Handle) bool {
	if h.index < 0 || int(h.index) >= len(w.nodes) {
		return false
	}
	n := &w.nodes[h.index]
	if n.gen != h.gen || n.home == homeFree {
		return false
	}
	switch n.home {
	case homePending:
		w.unlink(&w.pending, h.index)
	case homeDue:
		w.unlink(&w.due, h.index)
	default:
		lv, s := slotOf(n.home)
		w.removeFromSlot(lv, s, h.index)
	}
	w.release(h.index)
	return true
}

// deadlineOf returns when the live entry h is due (its tick's start, or 0
// if it is pending or due already); ok is false if h names no live entry.
func (w *Wheel[T]) deadlineOf(h Handle) (d time.Duration, ok bool) {
	if h.index < 0 || int(h.index) >= len(w.nodes) {
		return 0, false
	}
	n := &w.nodes[h.index]
	switch {
	case n.gen != h.gen || n.home == homeFree:
		return 0, false
	case n.home == homePending || n.home == homeDue:
		return 0, true
	}
	return instant(n.tick, w.res), true
}

// Advance moves the wheel's time to now and calls fire with every entry
// that has become due, returning how many it fired. A now before Now is
// taken as Now: time never runs backwards.
//
// Entries fire in order of their deadlines rounded up to the resolution,
// those inserted with a deadline already past first; entries due in the
// same tick fire in no particular order.
//
// fire runs after the entry has left the wheel and may call Insert,
// Cancel, NextDeadline or even Advance. An entry it inserts fires at a
// later Advance, even with a deadline already past, so an interval re-armed
// from its own callback cannot loop. If fire panics, the entries not yet
// fired stay due and fire at the next Advance.
//
// The cost is the number of entries fired plus the cascades of upper-level
// slots the wheel turned past, each entry cascading at most once per level;
// empty ticks cost nothing. A jump of the wheel's whole range (2^36 ticks)
// or more takes every entry out once and sorts them instead, O(n log n)
// for n entries, so now may jump arbitrarily far ahead.
func (w *Wheel[T]) Advance(now time.Duration, fire func(T)) int {
	return w.advance(now, fire, math.MaxInt)
}

// advance is Advance firing at most max entries; the rest stay due, and
// NextDeadline reports them due now.
func (w *Wheel[T]) advance(now time.Duration, fire func(T), max int) int {
	if fire == nil {
		panic("faio/timerwheel: Advance with a nil fire func")
	}
	if now > w.now {
		w.now = now
	}
	for i := w.pending.head; i != nilIndex; {
		next := w.nodes[i].next
		w.pushBack(&w.due, homeDue, i)
		i = next
	}
	w.pending = emptyList
	w.turnTo(floorTicks(w.now, w.res))

	fired := 0
	for w.due.head != nilIndex && fired < max {
		i := w.due.head
		w.unlink(&w.due, i)
		v := w.release(i)
		fired++
		fire(v)
	}
	return fired
}

// NextDeadline is the earliest time at which Advance would fire something:
// the smallest deadline rounded up to the resolution (so up to one
// Resolution after the deadline, never before it), or Now if an entry is
// already due. It reports false if the wheel is empty.
//
// The cost is O(levels), with one exception. An upper-level slot covers
// many ticks, and its earliest entry is known exactly while its entries
// arrived in deadline order (the common case: one timeout, a rising
// clock) or until the earliest of an unordered slot is cancelled. After
// that, the first call sorts that one slot, O(k log k) for its k entries,
// and the slot then stays in order until an entry arrives out of order.
func (w *Wheel[T]) NextDeadline() (time.Duration, bool) {
	if w.pending.head != nilIndex || w.due.head != nilIndex {
		return w.now, true
	}
	for lv := 0; lv < topLevel; lv++ {
		if w.levels[lv].occupied != 0 {
			s, _ := w.earliestSlot(lv)
			return instant(w.slotMin(lv, s), w.res), true
		}
	}
	if w.levels[topLevel].occupied != 0 {
		return instant(w.topMin(), w.res), true
	}
	return 0, false
}

// place files node i by its tick relative to the cursor: into due if that
// tick has come, else into its slot.
func (w *Wheel[T]) place(i int32) {
	t := w.nodes[i].tick
	if t <= w.cur {
		w.pushBack(&w.due, homeDue, i)
		return
	}
	lv, s := w.slotFor(t)
	w.addToSlot(lv, s, i)
}

// turnTo moves the cursor to target, visiting the occupied slots that
// begin on the way in order. A level-0 slot holds a single tick and goes
// to due whole. An upper slot is cascaded: with the cursor at the slot's
// start, each entry is re-placed by its exact tick, landing on a lower
// level (or in due). Re-placing by the exact tick rather than by the
// slot's position is what keeps a long timer from firing early or late.
// A turn of a whole range or more is left to jumpTo.
func (w *Wheel[T]) turnTo(target uint64) {
	if target > w.cur && target-w.cur >= wheelRange {
		w.jumpTo(target)
		return
	}
	for {
		lv, s, start, ok := w.nextSlot()
		if !ok || start > target {
			break
		}
		w.cur = start
		for i := w.detach(lv, s); i != nilIndex; {
			next := w.nodes[i].next
			w.place(i)
			i = next
		}
	}
	w.cur = max(w.cur, target)
}

// jumpTo turns the cursor to target, a whole range or more ahead, in one
// step. Turning slot by slot would re-place every entry parked beyond the
// range each time the cursor's top slot came round, once per range
// crossed: with entries spread over many ranges, a long jump at a fine
// resolution cost the product of the two (seconds for 10^4 entries).
// Instead every entry leaves the wheel once and is sorted by tick; those
// due by target join due in that order and the others are re-placed
// relative to target. O(n log n) for n entries, however long the jump, and
// no allocation.
func (w *Wheel[T]) jumpTo(target uint64) {
	all := emptyList
	for lv := range w.levels {
		for occ := w.levels[lv].occupied; occ != 0; occ &= occ - 1 {
			s := bits.TrailingZeros64(occ)
			chain := w.levels[lv].slots[s]
			w.detach(lv, s)
			if all.head == nilIndex {
				all = chain
				continue
			}
			w.nodes[all.tail].next = chain.head
			w.nodes[chain.head].prev = all.tail
			all.tail = chain.tail
		}
	}
	w.sortList(&all)
	i := all.head
	for i != nilIndex && w.nodes[i].tick <= target {
		next := w.nodes[i].next
		w.pushBack(&w.due, homeDue, i)
		i = next
	}
	w.cur = target
	for i != nilIndex {
		next := w.nodes[i].next
		w.place(i)
		i = next
	}
}
