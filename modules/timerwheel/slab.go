package timerwheel

import "math"

// Handle names one entry of a Wheel, for Cancel. It is a slab index plus
// the generation the slot had when the entry was inserted; the slot's
// generation moves on when the entry fires or is cancelled, so a Handle
// kept past that point no longer matches and Cancel reports false. The
// zero Handle never matches an entry. Handles are comparable.
//
// A generation is 32 bits: a Handle kept while its slot is reused about
// four billion times could match again.
type Handle struct {
	index int32
	gen   uint32
}

// nilIndex ends a list and marks an empty free list.
const nilIndex int32 = -1

// Which list holds a node. Slot lists are numbered from homeSlot0 on, as
// homeSlot0 + level*numSlots + slot, so Cancel finds the list in O(1).
const (
	homeFree uint16 = iota
	homePending
	homeDue
	homeSlot0
)

func slotHome(lv, s int) uint16 { return homeSlot0 + uint16(lv*numSlots+s) }

func slotOf(home uint16) (lv, s int) {
	i := int(home - homeSlot0)
	return i / numSlots, i % numSlots
}

// node is one entry. Nodes live in one slice and link to each other by
// index, so after the slice has grown to the peak number of live entries,
// Insert and Cancel allocate nothing; int32 links also keep a node small.
type node[T any] struct {
	value      T
	tick       uint64 // deadline in ticks, rounded up
	next, prev int32  // list links; next also chains the free list
	gen        uint32 // starts at 1, so the zero Handle never matches
	home       uint16
}

// list is an intrusive doubly linked list of nodes.
type list struct{ head, tail int32 }

var emptyList = list{nilIndex, nilIndex}

// alloc takes a node off the free list, growing the slab when it is empty.
func (w *Wheel[T]) alloc() int32 {
	if i := w.free; i != nilIndex {
		w.free = w.nodes[i].next
		w.live++
		return i
	}
	if len(w.nodes) == math.MaxInt32 {
		panic("faio/timerwheel: more than 2^31-1 live entries")
	}
	w.nodes = append(w.nodes, node[T]{gen: 1})
	w.live++
	return int32(len(w.nodes) - 1)
}

// release returns node i (already unlinked) to the free list and gives
// back its value. Clearing the value lets the garbage collector reclaim
// whatever it pointed to; bumping the generation retires every Handle to i.
func (w *Wheel[T]) release(i int32) T {
	n := &w.nodes[i]
	v := n.value
	var zero T
	n.value = zero
	n.gen++
	if n.gen == 0 {
		n.gen = 1
	}
	n.home = homeFree
	n.next = w.free
	w.free = i
	w.live--
	return v
}

func (w *Wheel[T]) pushBack(l *list, home uint16, i int32) {
	n := &w.nodes[i]
	n.home = home
	n.next = nilIndex
	n.prev = l.tail
	if l.tail == nilIndex {
		l.head = i
	} else {
		w.nodes[l.tail].next = i
	}
	l.tail = i
}

// pushFront links i before the head of the non-empty list l.
func (w *Wheel[T]) pushFront(l *list, home uint16, i int32) {
	n := &w.nodes[i]
	n.home = home
	n.prev = nilIndex
	n.next = l.head
	w.nodes[l.head].prev = i
	l.head = i
}

func (w *Wheel[T]) unlink(l *list, i int32) {
	n := &w.nodes[i]
	if n.prev == nilIndex {
		l.head = n.next
	} else {
		w.nodes[n.prev].next = n.next
	}
	if n.next == nilIndex {
		l.tail = n.prev
	} else {
		w.nodes[n.next].prev = n.prev
	}
}

// sortList orders l by tick with a bottom-up merge sort over the links
// (O(n log n), no allocation); equal ticks keep their order.
func (w *Wheel[T]) sortList(l *list) {
	head := l.head
	if head == nilIndex {
		return
	}
	for run := 1; ; run *= 2 {
		p := head
		head = nilIndex
		tail := nilIndex
		merges := 0
		for p != nilIndex {
			merges++
			q, psize := p, 0
			for psize < run && q != nilIndex {
				psize++
				q = w.nodes[q].next
			}
			qsize := run
			for psize > 0 || (qsize > 0 && q != nilIndex) {
				var e int32
				switch {
				case psize == 0:
					e, q = q, w.nodes[q].next
					qsize--
				case qsize == 0 || q == nilIndex || w.nodes[p].tick <= w.nodes[q].tick:
					e, p = p, w.nodes[p].next
					psize--
				default:
					e, q = q, w.nodes[q].next
					qsize--
				}
				if tail == nilIndex {
					head = e
				} else {
					w.nodes[tail].next = e
				}
				w.nodes[e].prev = tail
				tail = e
			}
			p = q
		}
		w.nodes[tail].next = nilIndex
		if merges <= 1 {
			l.head, l.tail = head, tail
			return
		}
	}
}
