package ringq

// StealInto takes about half of q's items: it returns one of them for the
// caller to run at once and appends the rest to dst. It must be called by
// dst's owner; any number of goroutines may steal from q concurrently, each
// into its own queue.
//
// It takes the oldest ceil(Len/2) items of q, so a single waiting item can
// be stolen too, but no more than dst can hold plus the one returned. The
// last item taken is returned and the others are appended to dst in their
// order in q.
//
// StealInto returns the zero value and false, changing nothing, when q is
// empty, when another thief is stealing from q at that moment, when dst is
// more than half full (counting slots that a thief of dst is still copying
// out), or when q and dst are the same queue. It never blocks and allocates
// nothing.
func (q *LocalQueue[T]) StealInto(dst *LocalQueue[T]) (T, bool) {
	var zero T
	if q == dst {
		return zero, false
	}
	// The caller owns dst, so this is its own last store of dst.tail.
	dstTail := dst.tail.Load()
	// Loading dst.head is the release edge (2) for dst: every slot below
	// dstSteal has been read by whichever thief of dst took it, so the
	// writes below cannot race with those reads.
	dstSteal, _ := unpack(dst.head.Load())
	used := dstTail - dstSteal
	if used > uint32(len(dst.buf)/2) {
		return zero, false
	}
	room := uint32(len(dst.buf)) - used

	// One item goes back to the caller, not into dst, hence room+1.
	first, n := q.claim(room + 1)
	if n == 0 {
		return zero, false
	}

	// [first, first+n) is ours alone: the claim CAS moved real past it and
	// the owner of q will not write there until steal moves too.
	a, b := q.span(first, n-1)
	dst.write(dstTail, a)
	dst.write(dstTail+uint32(len(a)), b)
	last := (first + n - 1) & q.mask
	ret := q.buf[last]
	// Zero what we took so q does not keep the items alive. These writes
	// are ordered before the owner's next writes to the same slots by the
	// CAS in finishSteal (release edge 2).
	clear(a)
	clear(b)
	q.buf[last] = zero
	q.finishSteal()

	if n > 1 {
		// Publish edge (1) for dst: thieves of dst see the copied items
		// only after this store.
		dst.tail.Store(dstTail + n - 1)
	}
	return ret, true
}

// claim reserves the oldest ceil(Len/2) items of q, at most limit of them,
// by moving real forward while leaving steal behind. It returns the first
// reserved position and the count, or n == 0 if another steal is under way
// or there is nothing to take.
func (q *LocalQueue[T]) claim(limit uint32) (first, n uint32) {
	head := q.head.Load()
	for {
		steal, real := unpack(head)
		if steal != real {
			// One steal at a time per victim: a second thief would
			// have to track a second range in head.
			return 0, 0
		}
		// Publish edge (1): the slots below this tail are visible to us.
		// tail was read after head, so tail-real >= 0. It can exceed Cap
		// if the owner popped and pushed in between, but then head has
		// changed and the CAS below fails, so a successful claim never
		// takes more than Cap/2.
		tail := q.tail.Load()
		avail := tail - real
		n = min(avail-avail/2, limit)
		if n == 0 {
			return 0, 0
		}
		// Claim edge (3): against the owner's Pop and overflow, and
		// against other thieves.
		if q.head.CompareAndSwap(head, pack(steal, real+n)) {
			return real, n
		}
		head = q.head.Load()
	}
}

// finishSteal ends the steal begun by claim: it sets steal = real, which
// hands the copied-out slots back to the owner and lets the next thief in.
func (q *LocalQueue[T]) finishSteal() {
	for {
		// While we steal, only the owner changes head, and only by moving
		// real forward in Pop, so this loop ends as soon as we are not
		// racing a pop.
		head := q.head.Load()
		_, real := unpack(head)
		// Release edge (2): our reads and zeroing of the claimed slots
		// happen before any owner load of head that sees this value.
		if q.head.CompareAndSwap(head, pack(real, real)) {
			return
		}
	}
}
