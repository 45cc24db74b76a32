package main

import (
	"errors"
	"sync"
	"sync/atomic"
)

// A handle is what C holds instead of a pointer: the low 32 bits are a slot
// index, the high 32 bits the generation of the slot when the value was
// stored. Removing a value bumps the slot's generation, so a stale handle
// (double free, use after free) names a generation the slot no longer has
// and is refused even after the slot was reused. Generations start at 1,
// so the zero handle is never valid; a slot whose generation would wrap is
// retired rather than reused, so no handle ever becomes valid again.
//
// Lookups are lock-free (two atomic loads): C calls them on every
// operation, from every thread. Insertions and removals take a mutex; they
// happen at *_new and *_free only.

const (
	chunkBits  = 12
	chunkSize  = 1 << chunkBits
	maxChunks  = 4096 // 16M slots
	genShift   = 32
	indexMask  = 1<<genShift - 1
	maxGen     = 1<<32 - 1
	firstGen   = 1
	maxHandles = chunkSize * maxChunks
)

// errTooManyHandles is returned by insert when every slot is in use.
var errTooManyHandles = errors.New("capi: too many live handles")

// handleTable maps handles to Go values.
type handleTable struct {
	// chunks never move once published, so a lookup needs no lock.
	chunks [maxChunks]atomic.Pointer[[chunkSize]slot]

	mu   sync.Mutex
	free []uint32 // indexes of removed slots, reused last-in first-out
	used uint32   // slots ever handed out; the next fresh index
}

type slot struct {
	cur atomic.Pointer[entry] // nil while the slot is free
	gen uint32                // generation of the next value stored; guarded by mu
}

// entry is immutable: the generation and the value are read together with
// one atomic load of slot.cur.
type entry struct {
	gen uint32
	val any
}

func makeHandle(index, gen uint32) uint64 { return uint64(gen)<<genShift | uint64(index) }

func splitHandle(h uint64) (index, gen uint32) { return uint32(h & indexMask), uint32(h >> genShift) }

// insert stores v and returns its handle.
func (t *handleTable) insert(v any) (uint64, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	var idx uint32
	if n := len(t.free); n > 0 {
		idx = t.free[n-1]
		t.free = t.free[:n-1]
	} else {
		if t.used == maxHandles {
			return 0, errTooManyHandles
		}
		idx = t.used
		t.used++
		if c := idx >> chunkBits; t.chunks[c].Load() == nil {
			t.chunks[c].Store(new([chunkSize]slot))
		}
	}
	s := t.slot(idx)
	if s.gen == 0 {
		s.gen = firstGen
	}
	s.cur.Store(&entry{gen: s.gen, val: v})
	return makeHandle(idx, s.gen), nil
}

// slot returns the slot of idx, or nil if its chunk was never allocated.
func (t *handleTable) slot(idx uint32) *slot {
	n := idx >> chunkBits
	if n >= maxChunks {
		return nil
	}
	c := t.chunks[n].Load()
	if c == nil {
		return nil
	}
	return &c[idx&(chunkSize-1)]
}

// lookup returns the value of h, or nil if h is not live.
func (t *handleTable) lookup(h uint64) any {
	idx, gen := splitHandle(h)
	if gen == 0 {
		return nil
	}
	s := t.slot(idx)
	if s == nil {
		return nil
	}
	if e := s.cur.Load(); e != nil && e.gen == gen {
		return e.val
	}
	return nil
}

// remove deletes h and returns its value, or nil if h was not live: of two
// concurrent removals of one handle exactly one gets the value.
func (t *handleTable) remove(h uint64) any {
	idx, gen := splitHandle(h)
	if gen == 0 {
		return nil
	}
	s := t.slot(idx)
	if s == nil {
		return nil
	}
	e := s.cur.Load()
	if e == nil || e.gen != gen || !s.cur.CompareAndSwap(e, nil) {
		return nil
	}
	t.mu.Lock()
	if e.gen == maxGen {
		// Retired: reusing it would wrap to generations that stale
		// handles may still carry.
		s.gen = 0
	} else {
		s.gen = e.gen + 1
		t.free = append(t.free, idx)
	}
	t.mu.Unlock()
	return e.val
}

// lookupAs returns h's value if it is a T.
func lookupAs[T any](t *handleTable, h uint64) (T, bool) {
	v, ok := t.lookup(h).(T)
	return v, ok
}

// removeAs removes h if its value is a T and returns the value; a handle
// of another kind is left alone.
func removeAs[T any](t *handleTable, h uint64) (T, bool) {
	var zero T
	if _, ok := lookupAs[T](t, h); !ok {
		return zero, false
	}
	// The generation check makes remove fail if h was removed (and its
	// slot reused) since the lookup, so the value removed is the T seen.
	v, ok := t.remove(h).(T)
	return v, ok
}
