package timerwheel

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"time"
)

// The reference model: every live entry with the instant at which the
// contract says it fires, in a slice sorted by that instant. Advance(now)
// must fire exactly the prefix due by now, each entry once; the harness
// also checks the contract's two bounds directly (never before the
// deadline, never a whole resolution after it) so that a model sharing a
// mistake with the wheel still trips.

// chooser supplies the harness's decisions: rapid draws for the property
// test, fuzzer bytes for FuzzWheel.
type chooser interface {
	intn(label string, n int) int             // in [0, n)
	int64In(label string, lo, hi int64) int64 // in [lo, hi]
}

type failer interface {
	Fatalf(format string, args ...any)
}

// pastDue is the fire instant of an entry inserted with a deadline already
// past: it is due at the very next Advance.
const pastDue = time.Duration(math.MinInt64)

type entryState int

const (
	stateLive entryState = iota
	stateFired
	stateCancelled
)

type modelEntry struct {
	id       int
	deadline time.Duration
	fireAt   time.Duration // pastDue, or the deadline rounded up to a tick
	handle   Handle
	state    entryState
	born     int // the Advance during whose callbacks it was inserted, or -1
}

type harness struct {
	f   failer
	c   chooser
	res time.Duration
	w   *Wheel[int]
	now time.Duration

	entries []*modelEntry // every entry ever inserted; its value is its index
	live    []*modelEntry // sorted by (fireAt, id)

	trace    []string     // the wheel calls so far, printed on failure
	advances int          // Advance calls so far
	due      map[int]bool // while advancing: ids the model says are due
	lastKey  time.Duration
	fired    int
}

var resolutions = []time.Duration{time.Millisecond, time.Microsecond, time.Nanosecond, 3 * time.Millisecond, 7 * time.Nanosecond}

func newHarness(f failer, c chooser) *harness {
	res := resolutions[c.intn("resolution", len(resolutions))]
	w, err := New[int](Config{Resolution: res})
	if err != nil {
		f.Fatalf("New: %v", err)
	}
	return &harness{f: f, c: c, res: res, w: w}
}

// modelFireAt is when the contract says an entry inserted now with this
// deadline fires.
func (h *harness) modelFireAt(d time.Duration) time.Duration {
	if d <= h.now {
		return pastDue
	}
	q := d / h.res
	if d%h.res != 0 {
		q++
	}
	if q > math.MaxInt64/h.res {
		return math.MaxInt64 // only Advance(math.MaxInt64) reaches it
	}
	return q * h.res
}

func less(a, b *modelEntry) int {
	if a.fireAt != b.fireAt {
		if a.fireAt < b.fireAt {
			return -1
		}
		return 1
	}
	return a.id - b.id
}

// step performs one random operation and checks the wheel against the
// model afterwards.
func (h *harness) step() {
	switch op := h.c.intn("op", 10); {
	case op < 4:
		h.insert()
	case op < 6:
		h.cancel()
	default:
		h.advance()
	}
	h.check()
}

func satAdd(a, b time.Duration) time.Duration {
	if b > 0 && a > math.MaxInt64-b {
		return math.MaxInt64
	}
	if b < 0 && a < math.MinInt64-b {
		return math.MinInt64
	}
	return a + b
}

// span64 is 64^k ticks, the span of a level-(k-1) ring.
func (h *harness) span64(k int) time.Duration {
	return time.Duration(1<<(6*k)) * h.res
}

// pickDeadline favours the places where wheels break: level boundaries,
// the range's end, the past, and the end of time.
func (h *harness) pickDeadline() time.Duration {
	r := h.res
	jitter := h.c.int64In("jitter", 0, int64(r)-1)
	switch h.c.intn("deadline kind", 6) {
	case 0, 1:
		return h.now + time.Duration(h.c.int64In("ticks", -3, 200))*r + time.Duration(jitter)
	case 2:
		base := time.Duration(0)
		if h.c.intn("from now", 2) == 1 {
			base = h.now
		}
		k := 1 + h.c.intn("level", numLevels)
		m := time.Duration(1 + h.c.intn("multiple", 3))
		off := time.Duration(h.c.int64In("offset", -2, 2)) * r
		return satAdd(base, satAdd(m*h.span64(k), off+time.Duration(jitter)))
	case 3:
		return satAdd(h.now, time.Duration(h.c.int64In("far", 0, int64(3*h.span64(numLevels)))))
	case 4:
		return math.MaxInt64 - time.Duration(h.c.int64In("end", 0, 3*int64(r)))
	default:
		return time.Duration(h.c.int64In("absolute", -int64(r), int64(h.span64(3))))
	}
}

func (h *harness) pickTime() time.Duration {
	r := h.res
	switch h.c.intn("advance kind", 8) {
	case 0, 1, 2:
		return h.now + time.Duration(h.c.int64In("small", 0, 100*int64(r)))
	case 3:
		k := 1 + h.c.intn("level", numLevels)
		off := time.Duration(h.c.int64In("offset", -2, 2)) * r
		return satAdd(h.now, h.span64(k)+off)
	case 4:
		return satAdd(h.now, time.Duration(h.c.int64In("big", 0, int64(4*h.span64(numLevels)))))
	case 5:
		return h.now - time.Duration(h.c.int64In("back", 0, 10*int64(r)))
	case 6:
		if h.c.intn("end of time", 8) == 0 {
			return math.MaxInt64
		}
		return h.now
	default:
		return satAdd(h.now, time.Duration(h.c.int64In("ticks", 0, 70))*r)
	}
}

func (h *harness) insert() {
	d := h.pickDeadline()
	e := &modelEntry{id: len(h.entries), deadline: d, fireAt: h.modelFireAt(d), born: -1}
	if h.due != nil {
		e.born = h.advances
	}
	h.entries = append(h.entries, e)
	e.handle = h.w.Insert(d, e.id)
	h.logf("%d: Insert(%d) -> %+v", e.id, d, e.handle)
	i, _ := slices.BinarySearchFunc(h.live, e, less)
	h.live = slices.Insert(h.live, i, e)
}

func (h *harness) cancel() {
	k := h.c.intn("cancel", len(h.entries)+2)
	var hd Handle
	want := false
	switch k {
	case len(h.entries): // the zero Handle
	case len(h.entries) + 1:
		hd = Handle{index: int32(len(h.entries) + 5), gen: 1}
	default:
		e := h.entries[k]
		hd = e.handle
		want = e.state == stateLive
		if want {
			e.state = stateCancelled
			h.removeLive(e)
		}
	}
	h.logf("Cancel(%+v) want %v", hd, want)
	if got := h.w.Cancel(hd); got != want {
		h.fail("Cancel(%+v) = %v, want %v", hd, got, want)
	}
}

func (h *harness) removeLive(e *modelEntry) {
	i, ok := slices.BinarySearchFunc(h.live, e, less)
	if !ok {
		h.fail("model lost entry %d", e.id)
	}
	h.live = slices.Delete(h.live, i, i+1)
}

func (h *harness) advance() {
	to := h.pickTime()
	h.now = max(h.now, to)
	h.advances++
	h.due = map[int]bool{}
	for _, e := range h.live {
		if e.fireAt > h.now {
			break
		}
		h.due[e.id] = true
	}
	h.lastKey, h.fired = pastDue, 0
	h.logf("Advance(%d) {", to)
	n := h.w.Advance(to, h.onFire)
	h.logf("} = %d", n)
	for id := range h.due {
		if e := h.entries[id]; e.state == stateLive {
			h.fail("Advance(%v): entry %d (deadline %v) was due but did not fire", h.now, id, e.deadline)
		}
	}
	if n != h.fired {
		h.fail("Advance returned %d, fired %d", n, h.fired)
	}
	h.due = nil
	for _, e := range h.live {
		// Not firing now is a whole resolution late: the contract's bound.
		if e.fireAt != pastDue && h.now-h.res >= e.deadline {
			h.fail("entry %d (deadline %v) still waiting at %v", e.id, e.deadline, h.now)
		}
	}
}

func (h *harness) onFire(id int) {
	if id < 0 || id >= len(h.entries) {
		h.fail("fired unknown value %d", id)
	}
	e := h.entries[id]
	switch {
	case e.state != stateLive:
		h.fail("entry %d fired while in state %d", id, e.state)
	case !h.due[id]:
		h.fail("entry %d (deadline %v, born %d) fired at %v, not due", id, e.deadline, e.born, h.now)
	case e.deadline > h.now:
		h.fail("entry %d fired early: deadline %v, now %v", id, e.deadline, h.now)
	case e.fireAt < h.lastKey:
		h.fail("entry %d (due %v) fired after one due %v", id, e.fireAt, h.lastKey)
	}
	h.logf("  fire %d", id)
	h.lastKey = e.fireAt
	e.state = stateFired
	h.removeLive(e)
	h.fired++
	// The callback re-enters the wheel, as the runtime's Interval does.
	for range h.c.intn("callback ops", 3) {
		if h.c.intn("callback op", 2) == 0 {
			h.insert()
		} else {
			h.cancel()
		}
	}
}

func (h *harness) fail(format string, args ...any) {
	h.f.Fatalf("%s\ntrace (res %v):\n%s", fmt.Sprintf(format, args...), h.res, strings.Join(h.trace, "\n"))
}

func (h *harness) logf(format string, args ...any) {
	h.trace = append(h.trace, fmt.Sprintf(format, args...))
}

func (h *harness) check() {
	if err := h.w.checkInvariants(); err != nil {
		h.fail("invariant: %v", err)
	}
	if got := h.w.Len(); got != len(h.live) {
		h.fail("Len = %d, model has %d", got, len(h.live))
	}
	if got := h.w.Now(); got != h.now {
		h.fail("Now = %v, model %v", got, h.now)
	}
	got, ok := h.w.NextDeadline()
	if len(h.live) == 0 {
		if ok {
			h.fail("NextDeadline = %v on an empty wheel", got)
		}
		return
	}
	want := h.live[0].fireAt
	if want == pastDue {
		want = h.now
	}
	if !ok || got != want {
		h.fail("NextDeadline = %v, %v; want %v (deadline %v)", got, ok, want, h.live[0].deadline)
	}
}
