package ringq

import (
	"errors"
	"slices"

	"pgregory.net/rapid"
)

var errSink = errors.New("test sink refused the batch")

// testSink records what it is given. It can refuse batches, and can run a
// hook inside PushBatch to act while an overflowing Push waits on it.
type testSink struct {
	got     []int
	batches [][]int
	fail    bool
	during  func()
}

func (s *testSink) PushBatch(items []int) error {
	if s.during != nil {
		s.during()
	}
	s.batches = append(s.batches, slices.Clone(items))
	if s.fail {
		return errSink
	}
	s.got = append(s.got, items...)
	return nil
}

// Overflow modes of harness.pushQ.
const (
	sinkAccepts = iota
	sinkRefuses
	sinkAcceptsAfterSteal // a thief steals from q while the sink runs
	sinkRefusesAfterSteal
	numSinkModes
)

// harness runs LocalQueue operations one at a time against two queues (q
// and d, each the other's steal partner) and a sink, mirroring each in a
// slice model, and checks every result against the model. Items are
// 1, 2, 3, ... so that 0 marks an empty slot.
type harness struct {
	tb     rapid.TB
	q, d   *LocalQueue[int]
	qm, dm []int // models of q and d, oldest first
	sm     []int // model of everything the sink accepted
	sink   testSink
	next   int
}

// newHarness starts both queues at position start, so that runs near 2^32
// exercise wrap-around of the position counters.
func newHarness(tb rapid.TB, qcap, dcap int, start uint32) *harness {
	tb.Helper()
	q, err := NewLocalQueue[int](qcap)
	if err != nil {
		tb.Fatalf("NewLocalQueue(%d): %v", qcap, err)
	}
	d, err := NewLocalQueue[int](dcap)
	if err != nil {
		tb.Fatalf("NewLocalQueue(%d): %v", dcap, err)
	}
	for _, lq := range []*LocalQueue[int]{q, d} {
		lq.head.Store(pack(start, start))
		lq.tail.Store(start)
	}
	return &harness{tb: tb, q: q, d: d}
}

func (h *harness) item() int {
	h.next++
	return h.next
}

func (h *harness) pushQ(mode int) {
	v := h.item()
	capq := h.q.Cap()
	if len(h.qm) < capq {
		if err := h.q.Push(v, &h.sink); err != nil {
			h.tb.Fatalf("Push(%d) with room: %v", v, err)
		}
		h.qm = append(h.qm, v)
		return
	}
	// Full: the oldest half plus v go to the sink in one batch.
	half := capq / 2
	moved := slices.Clone(h.qm[:half])
	want := append(slices.Clone(moved), v)
	h.qm = h.qm[half:] // what q holds while the sink runs
	stole := false
	h.sink.fail = mode == sinkRefuses || mode == sinkRefusesAfterSteal
	if mode == sinkAcceptsAfterSteal || mode == sinkRefusesAfterSteal {
		h.sink.during = func() { stole = h.stealQD() }
	}
	calls := len(h.sink.batches)
	err := h.q.Push(v, &h.sink)
	h.sink.fail, h.sink.during = false, nil
	if len(h.sink.batches) != calls+1 {
		h.tb.Fatalf("overflow made %d PushBatch calls, want 1", len(h.sink.batches)-calls)
	}
	if got := h.sink.batches[calls]; !slices.Equal(got, want) {
		h.tb.Fatalf("overflow batch = %v, want %v", got, want)
	}
	accept := mode == sinkAccepts || mode == sinkAcceptsAfterSteal
	switch {
	case accept:
		if err != nil {
			h.tb.Fatalf("Push(%d) overflowing into an accepting sink: %v", v, err)
		}
		h.sm = append(h.sm, want...)
	case !errors.Is(err, errSink):
		h.tb.Fatalf("Push(%d) overflowing into a refusing sink = %v, want the sink's error", v, err)
	case stole:
		// head moved on, so the moved items come back at the tail.
		h.qm = append(h.qm, moved...)
	default:
		h.qm = append(moved, h.qm...)
	}
}

func (h *harness) pushQNil() {
	v := h.item()
	err := h.q.Push(v, nil)
	if len(h.qm) < h.q.Cap() {
		if err != nil {
			h.tb.Fatalf("Push(%d, nil) with room: %v", v, err)
		}
		h.qm = append(h.qm, v)
		return
	}
	if !errors.Is(err, ErrFull) {
		h.tb.Fatalf("Push(%d, nil) on a full queue = %v, want ErrFull", v, err)
	}
}

func (h *harness) pushBatchQ(k int) {
	items := make([]int, k)
	for i := range items {
		items[i] = h.item()
	}
	want := min(k, h.q.Cap()-len(h.qm))
	if got := h.q.PushBatch(items); got != want {
		h.tb.Fatalf("PushBatch(%d items) with %d free = %d, want %d", k, h.q.Cap()-len(h.qm), got, want)
	}
	h.qm = append(h.qm, items[:want]...)
}

func (h *harness) pushD() {
	v := h.item()
	err := h.d.Push(v, nil)
	if len(h.dm) < h.d.Cap() {
		if err != nil {
			h.tb.Fatalf("d.Push(%d): %v", v, err)
		}
		h.dm = append(h.dm, v)
	} else if !errors.Is(err, ErrFull) {
		h.tb.Fatalf("d.Push(%d) on a full queue = %v, want ErrFull", v, err)
	}
}

func popModel(tb rapid.TB, name string, lq *LocalQueue[int], m *[]int) {
	tb.Helper()
	v, ok := lq.Pop()
	if len(*m) == 0 {
		if ok {
			tb.Fatalf("%s.Pop() on empty queue = %d, true", name, v)
		}
		return
	}
	if !ok || v != (*m)[0] {
		tb.Fatalf("%s.Pop() = %d, %v; want %d, true", name, v, ok, (*m)[0])
	}
	*m = (*m)[1:]
}

func (h *harness) popQ() { popModel(h.tb, "q", h.q, &h.qm) }
func (h *harness) popD() { popModel(h.tb, "d", h.d, &h.dm) }

// stealModel checks victim.StealInto(dst) against the rule: refuse when dst
// is more than half full, else take ceil(len/2) capped by dst's room plus
// the one returned item.
func stealModel(tb rapid.TB, victim, dst *LocalQueue[int], vm, dm *[]int) bool {
	tb.Helper()
	n := len(*vm) - len(*vm)/2
	if len(*dm) > dst.Cap()/2 {
		n = 0
	}
	n = min(n, dst.Cap()-len(*dm)+1)
	v, ok := victim.StealInto(dst)
	if n == 0 {
		if ok {
			tb.Fatalf("StealInto returned %d, true; want a refusal (victim %v, dst %v)", v, *vm, *dm)
		}
		return false
	}
	if !ok || v != (*vm)[n-1] {
		tb.Fatalf("StealInto = %d, %v; want %d, true (victim %v, dst %v)", v, ok, (*vm)[n-1], *vm, *dm)
	}
	*dm = append(*dm, (*vm)[:n-1]...)
	*vm = (*vm)[n:]
	return true
}

func (h *harness) stealQD() bool { return stealModel(h.tb, h.q, h.d, &h.qm, &h.dm) }
func (h *harness) stealDQ() bool { return stealModel(h.tb, h.d, h.q, &h.dm, &h.qm) }

// check compares both queues slot by slot with their models: the live
// positions hold the model's items in order, every other slot is zero (so
// nothing keeps a departed item alive), and the counters agree.
func (h *harness) check() {
	h.tb.Helper()
	checkQueue(h.tb, "q", h.q, h.qm)
	checkQueue(h.tb, "d", h.d, h.dm)
	if !slices.Equal(h.sink.got, h.sm) {
		h.tb.Fatalf("sink holds %v, want %v", h.sink.got, h.sm)
	}
}

func checkQueue(tb rapid.TB, name string, lq *LocalQueue[int], m []int) {
	tb.Helper()
	steal, real := unpack(lq.head.Load())
	tail := lq.tail.Load()
	if steal != real || lq.IsStealing() {
		tb.Fatalf("%s: steal %d != real %d with no thief running", name, steal, real)
	}
	if lq.Len() != len(m) || lq.RemainingCap() != lq.Cap()-len(m) {
		tb.Fatalf("%s: Len %d RemainingCap %d, model holds %d of %d", name, lq.Len(), lq.RemainingCap(), len(m), lq.Cap())
	}
	if int(tail-real) != len(m) {
		tb.Fatalf("%s: tail-real = %d, model holds %d", name, tail-real, len(m))
	}
	live := make([]bool, lq.Cap())
	for i, want := range m {
		slot := (real + uint32(i)) & lq.mask
		live[slot] = true
		if lq.buf[slot] != want {
			tb.Fatalf("%s: position %d holds %d, want %d (model %v)", name, real+uint32(i), lq.buf[slot], want, m)
		}
	}
	for slot, v := range lq.buf {
		if !live[slot] && v != 0 {
			tb.Fatalf("%s: free slot %d still holds %d", name, slot, v)
		}
	}
	for i, v := range lq.scratch {
		if v != 0 {
			tb.Fatalf("%s: scratch[%d] still holds %d", name, i, v)
		}
	}
}
