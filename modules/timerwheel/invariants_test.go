package timerwheel

import (
	"fmt"
	"math/bits"
)

// checkInvariants walks the whole wheel and returns the first broken
// invariant, or nil. Tests call it after every operation.
func (w *Wheel[T]) checkInvariants() error {
	if w.cur > floorTicks(w.now, w.res) {
		return fmt.Errorf("cursor %d ahead of now %v (tick %d)", w.cur, w.now, floorTicks(w.now, w.res))
	}
	seen := 0
	walk := func(l list, home uint16, each func(i int32) error) error {
		prev := nilIndex
		for i := l.head; i != nilIndex; i = w.nodes[i].next {
			n := &w.nodes[i]
			if n.home != home {
				return fmt.Errorf("node %d in list %d says home %d", i, home, n.home)
			}
			if n.prev != prev {
				return fmt.Errorf("node %d: prev %d, want %d", i, n.prev, prev)
			}
			if err := each(i); err != nil {
				return err
			}
			prev = i
			seen++
			if seen > len(w.nodes) {
				return fmt.Errorf("cycle in list %d", home)
			}
		}
		if l.tail != prev {
			return fmt.Errorf("list %d: tail %d, want %d", home, l.tail, prev)
		}
		return nil
	}
	for _, q := range []struct {
		l    list
		home uint16
	}{{w.pending, homePending}, {w.due, homeDue}} {
		err := walk(q.l, q.home, func(i int32) error {
			if w.nodes[i].tick > w.cur {
				return fmt.Errorf("node %d in list %d has tick %d > cursor %d", i, q.home, w.nodes[i].tick, w.cur)
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	for lv := range w.levels {
		l := &w.levels[lv]
		if l.stale&^l.unsorted != 0 {
			return fmt.Errorf("level %d: stale %b not within unsorted %b", lv, l.stale, l.unsorted)
		}
		for s := range l.slots {
			bit := uint64(1) << s
			sl := l.slots[s]
			if (sl.head != nilIndex) != (l.occupied&bit != 0) {
				return fmt.Errorf("level %d slot %d: occupied bit %v, head %d", lv, s, l.occupied&bit != 0, sl.head)
			}
			if sl.head == nilIndex {
				if (l.unsorted|l.stale)&bit != 0 {
					return fmt.Errorf("level %d slot %d: empty but flagged", lv, s)
				}
				continue
			}
			start := w.slotStart(lv, s)
			sorted := true
			minTick := ^uint64(0)
			last := uint64(0)
			err := walk(sl, slotHome(lv, s), func(i int32) error {
				t := w.nodes[i].tick
				if t <= w.cur {
					return fmt.Errorf("level %d slot %d: node %d due (tick %d, cursor %d)", lv, s, i, t, w.cur)
				}
				if t < start {
					return fmt.Errorf("level %d slot %d starts at %d after node %d's tick %d", lv, s, start, i, t)
				}
				// A parked entry stays in its top slot until that slot comes
				// round, even once the cursor has brought it within range;
				// t >= start above is all it needs.
				if lv != topLevel {
					if glv, gs := w.slotFor(t); glv != lv || gs != s {
						return fmt.Errorf("node %d tick %d in level %d slot %d, belongs in %d/%d (cursor %d)", i, t, lv, s, glv, gs, w.cur)
					}
				} else if glv, _ := w.slotFor(t); t-w.cur < wheelRange && glv != topLevel {
					return fmt.Errorf("node %d tick %d on the top level belongs on level %d (cursor %d)", i, t, glv, w.cur)
				}
				if t < last {
					sorted = false
				}
				last = t
				minTick = min(minTick, t)
				return nil
			})
			if err != nil {
				return err
			}
			switch {
			case l.unsorted&bit == 0 && !sorted:
				return fmt.Errorf("level %d slot %d flagged sorted but is not", lv, s)
			case l.unsorted&bit != 0 && l.stale&bit == 0 && l.min[s] != minTick:
				return fmt.Errorf("level %d slot %d: min %d, want %d", lv, s, l.min[s], minTick)
			case l.unsorted&bit != 0 && l.min[s] > minTick:
				return fmt.Errorf("level %d slot %d: stale min %d above true min %d", lv, s, l.min[s], minTick)
			}
		}
	}
	if seen != w.live {
		return fmt.Errorf("found %d linked nodes, Len says %d", seen, w.live)
	}
	free := 0
	for i := w.free; i != nilIndex; i = w.nodes[i].next {
		if w.nodes[i].home != homeFree {
			return fmt.Errorf("free node %d has home %d", i, w.nodes[i].home)
		}
		free++
		if free > len(w.nodes) {
			return fmt.Errorf("cycle in free list")
		}
	}
	if free+w.live != len(w.nodes) {
		return fmt.Errorf("%d free + %d live != %d nodes", free, w.live, len(w.nodes))
	}
	return nil
}

// slotStart is the tick at which slot s of level lv next comes round.
func (w *Wheel[T]) slotStart(lv, s int) uint64 {
	shift := uint(lv * slotBits)
	span := uint64(1) << (shift + slotBits)
	start := w.cur&^(span-1) + uint64(s)<<shift
	if start <= w.cur {
		start += span
	}
	return start
}

// levelCounts is how many entries each level holds, for tests that check
// where entries were filed.
func (w *Wheel[T]) levelCounts() [numLevels]int {
	var c [numLevels]int
	for lv := range w.levels {
		for occ := w.levels[lv].occupied; occ != 0; occ &= occ - 1 {
			for i := w.levels[lv].slots[bits.TrailingZeros64(occ)].head; i != nilIndex; i = w.nodes[i].next {
				c[lv]++
			}
		}
	}
	return c
}
