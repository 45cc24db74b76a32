package timerwheel

import "math/bits"

// Geometry: numLevels levels of numSlots slots. A slot of level L spans
// 64^L ticks and the whole level 64^(L+1), so the wheel spans 2^36 ticks.
const (
	slotBits   = 6
	numSlots   = 1 << slotBits
	slotMask   = numSlots - 1
	numLevels  = 6
	topLevel   = numLevels - 1
	topShift   = topLevel * slotBits
	rangeBits  = numLevels * slotBits
	wheelRange = uint64(1) << rangeBits
)

// level is one ring of slots.
//
// The occupancy bitmap finds the first non-empty slot after the cursor in
// a rotate and a count of trailing zeros, so neither Advance nor
// NextDeadline ever walks empty slots.
//
// NextDeadline also needs the exact earliest tick inside a slot of an
// upper level, whose entries spread over 64^L ticks. A slot is kept in
// tick order for as long as that is free (entries tend to arrive in
// deadline order: same timeout, rising clock), and then its head is the
// minimum. An entry that would land inside the sorted run is appended
// instead, the slot is marked unsorted, and min[s] tracks its minimum
// exactly until the entry holding that minimum is cancelled; then min[s]
// is stale and the next query sorts the slot once.
type level struct {
	occupied uint64 // bit s: slots[s] is not empty
	unsorted uint64 // bit s: slots[s] is not in tick order; see min[s]
	stale    uint64 // bit s (only if unsorted): min[s] is merely a lower bound
	slots    [numSlots]list
	min      [numSlots]uint64
}

// slotFor says where an entry due at tick t > w.cur belongs.
//
// The level is given by the highest bit in which t differs from the
// cursor: a level-L entry shares every digit above L with the cursor, so
// all of level L is due before anything of level L+1, and the first slot
// of the lowest non-empty level holds the earliest entry. The top level
// is a ring: an entry in the next lap (less than one range ahead, but past
// the end of the cursor's 2^36 block) takes its slot as usual, behind the
// cursor.
func (w *Wheel[T]) slotFor(t uint64) (lv, s int) {
	if x := t ^ w.cur; x < wheelRange {
		lv = (bits.Len64(x) - 1) / slotBits
		return lv, int(t>>(lv*slotBits)) & slotMask
	}
	if t-w.cur < wheelRange {
		return topLevel, int(t>>topShift) & slotMask
	}
	// Beyond the range: park it in the cursor's own top slot, the last one
	// to come round. Cascading that slot re-places the entry by its exact
	// tick, parking it again if it is still too far.
	return topLevel, int(w.cur>>topShift) & slotMask
}

// earliestSlot is the first occupied slot of level lv at or after the
// cursor, and the tick at which that slot begins, which is > w.cur. The
// level must not be empty.
func (w *Wheel[T]) earliestSlot(lv int) (s int, start uint64) {
	shift := uint(lv * slotBits)
	cursor := int(w.cur>>shift) & slotMask
	// Rotating bit cursor+1 down to bit 0 orders the slots as they come
	// round: the cursor's own slot last, since at the top level it holds
	// the next lap. Below the top it is always empty.
	rot := bits.RotateLeft64(w.levels[lv].occupied, -(cursor + 1))
	s = (cursor + 1 + bits.TrailingZeros64(rot)) & slotMask
	span := uint64(1) << (shift + slotBits)
	start = w.cur&^(span-1) + uint64(s)<<shift
	if start <= w.cur {
		start += span
	}
	return s, start
}

// nextSlot is the occupied slot that begins first, or ok == false if the
// wheel proper is empty.
func (w *Wheel[T]) nextSlot() (lv, s int, start uint64, ok bool) {
	for lv = 0; lv < numLevels; lv++ {
		if w.levels[lv].occupied != 0 {
			s, start = w.earliestSlot(lv)
			return lv, s, start, true
		}
	}
	return 0, 0, 0, false
}

// addToSlot links node i into slot s of level lv, keeping the slot's
// order or its minimum up to date.
func (w *Wheel[T]) addToSlot(lv, s int, i int32) {
	l := &w.levels[lv]
	bit := uint64(1) << s
	sl := &l.slots[s]
	home := slotHome(lv, s)
	t := w.nodes[i].tick
	switch {
	case l.occupied&bit == 0:
		l.occupied |= bit
		l.unsorted &^= bit
		l.stale &^= bit
		w.pushBack(sl, home, i)
	case l.unsorted&bit != 0:
		w.pushBack(sl, home, i)
		if t < l.min[s] {
			// Below even a stale lower bound, so below every entry.
			l.min[s] = t
			l.stale &^= bit
		}
	case t >= w.nodes[sl.tail].tick:
		w.pushBack(sl, home, i)
	case t < w.nodes[sl.head].tick:
		w.pushFront(sl, home, i)
	default:
		l.min[s] = w.nodes[sl.head].tick
		l.unsorted |= bit
		w.pushBack(sl, home, i)
	}
}

// removeFromSlot unlinks node i from slot s of level lv.
func (w *Wheel[T]) removeFromSlot(lv, s int, i int32) {
	l := &w.levels[lv]
	bit := uint64(1) << s
	sl := &l.slots[s]
	w.unlink(sl, i)
	switch {
	case sl.head == nilIndex:
		l.occupied &^= bit
		l.unsorted &^= bit
		l.stale &^= bit
	case l.unsorted&bit != 0 && w.nodes[i].tick == l.min[s]:
		l.stale |= bit
	}
}

// detach empties slot s of level lv and returns its chain of nodes, still
// linked by next.
func (w *Wheel[T]) detach(lv, s int) int32 {
	l := &w.levels[lv]
	bit := uint64(1) << s
	head := l.slots[s].head
	l.slots[s] = emptyList
	l.occupied &^= bit
	l.unsorted &^= bit
	l.stale &^= bit
	return head
}

// slotMin is the earliest tick in the non-empty slot s of level lv.
func (w *Wheel[T]) slotMin(lv, s int) uint64 {
	l := &w.levels[lv]
	bit := uint64(1) << s
	if l.unsorted&bit != 0 {
		if l.stale&bit == 0 {
			return l.min[s]
		}
		w.sortList(&l.slots[s])
		l.unsorted &^= bit
		l.stale &^= bit
	}
	return w.nodes[l.slots[s].head].tick
}

// topMin is the earliest tick on the top level, which must not be empty.
// Every top slot is consulted because an entry parked beyond the range can
// sit in a slot that comes round before nearer entries.
func (w *Wheel[T]) topMin() uint64 {
	m := ^uint64(0)
	for occ := w.levels[topLevel].occupied; occ != 0; occ &= occ - 1 {
		m = min(m, w.slotMin(topLevel, bits.TrailingZeros64(occ)))
	}
	return m
}
