package timerwheel

import (
	"errors"
	"math"
	"slices"
	"testing"
	"time"
)

const ms = time.Millisecond

func newWheel(t testing.TB, res time.Duration) *Wheel[int] {
	t.Helper()
	w, err := New[int](Config{Resolution: res})
	if err != nil {
		t.Fatal(err)
	}
	return w
}

// advance calls w.Advance and returns what fired, in order, after checking
// the count and the wheel's invariants.
func advance(t testing.TB, w *Wheel[int], now time.Duration) []int {
	t.Helper()
	var got []int
	n := w.Advance(now, func(v int) { got = append(got, v) })
	if n != len(got) {
		t.Fatalf("Advance(%v) returned %d, fired %d", now, n, len(got))
	}
	if err := w.checkInvariants(); err != nil {
		t.Fatalf("after Advance(%v): %v", now, err)
	}
	return got
}

func wantNext(t testing.TB, w *Wheel[int], want time.Duration) {
	t.Helper()
	if got, ok := w.NextDeadline(); !ok || got != want {
		t.Fatalf("NextDeadline = %v, %v; want %v", got, ok, want)
	}
}

func wantEmpty(t testing.TB, w *Wheel[int]) {
	t.Helper()
	if got, ok := w.NextDeadline(); ok || w.Len() != 0 {
		t.Fatalf("NextDeadline = %v, %v with Len %d; want an empty wheel", got, ok, w.Len())
	}
}

func TestNewValidatesResolution(t *testing.T) {
	for _, tc := range []struct {
		res, want time.Duration
		err       error
	}{
		{0, time.Millisecond, nil},
		{time.Nanosecond, time.Nanosecond, nil},
		{3 * time.Millisecond, 3 * time.Millisecond, nil},
		{-time.Millisecond, 0, ErrResolution},
	} {
		w, err := New[int](Config{Resolution: tc.res})
		if !errors.Is(err, tc.err) {
			t.Fatalf("New(%v): error %v, want %v", tc.res, err, tc.err)
		}
		if err != nil {
			if w != nil {
				t.Fatalf("New(%v) returned a wheel with an error", tc.res)
			}
			continue
		}
		if w.Resolution() != tc.want {
			t.Fatalf("New(%v).Resolution() = %v, want %v", tc.res, w.Resolution(), tc.want)
		}
		wantEmpty(t, w)
	}
}

// TestLevelBoundaries files entries on either side of every level
// boundary, from a cursor at 0 and from one in the middle of every level,
// and checks the level each lands on, NextDeadline, and that each fires
// at its exact tick and not one tick before, whether Advance jumps straight
// there or steps through the cascades.
func TestLevelBoundaries(t *testing.T) {
	type point struct {
		ticks uint64
		level int
	}
	var points []point
	for k := 1; k <= numLevels; k++ {
		b := uint64(1) << (slotBits * k)
		points = append(points, point{b - 1, k - 1}, point{b, k}, point{b + 1, k})
	}
	points[len(points)-2].level = topLevel // 2^36 ticks: beyond the range, parked
	points[len(points)-1].level = topLevel
	starts := []uint64{0, 1, 63, 64 + 5, 4096 + 77, 1<<18 + 1, 1<<30 + 12345, 1<<36 - 1}
	for _, start := range starts {
		for _, p := range points {
			for _, stepped := range []bool{false, true} {
				w := newWheel(t, ms)
				advance(t, w, time.Duration(start)*ms)
				d := time.Duration(start+p.ticks) * ms
				w.Insert(d, 1)
				if start == 0 {
					if c := w.levelCounts(); c[p.level] != 1 {
						t.Fatalf("%d ticks from 0: levels %v, want level %d", p.ticks, c, p.level)
					}
				}
				wantNext(t, w, d)
				if stepped {
					// Stop at each cascade point on the way.
					for {
						_, _, st, ok := w.nextSlot()
						if !ok || time.Duration(st)*ms >= d {
							break
						}
						now := time.Duration(st) * ms
						if got := advance(t, w, now); len(got) != 0 {
							t.Fatalf("start %d, +%d ticks: fired at %v", start, p.ticks, now)
						}
						wantNext(t, w, d)
					}
				}
				if got := advance(t, w, d-time.Nanosecond); len(got) != 0 {
					t.Fatalf("start %d, +%d ticks: fired 1ns early", start, p.ticks)
				}
				if got := advance(t, w, d); len(got) != 1 {
					t.Fatalf("start %d, +%d ticks: did not fire at its deadline", start, p.ticks)
				}
				wantEmpty(t, w)
			}
		}
	}
}

// TestLongSleepsFireOnTime is the regression test for the C++ original,
// whose sleeps over 64 ms fired up to seconds off: driven every 1 ms like
// a worker, every entry must fire at the first tick at or after its
// deadline.
func TestLongSleepsFireOnTime(t *testing.T) {
	w := newWheel(t, ms)
	start := 777*ms + 300*time.Microsecond
	advance(t, w, start)
	delays := []time.Duration{
		65 * ms, 100 * ms, 999 * ms, 1000 * ms, 4095 * ms, 4097*ms + 500*time.Microsecond,
		5500 * ms, 70*time.Second + 1, 262145 * ms, 300*time.Second + 999*time.Microsecond,
	}
	deadline := make(map[int]time.Duration)
	for i, d := range delays {
		deadline[i] = start + d
		w.Insert(start+d, i)
	}
	var now time.Duration
	fire := func(v int) {
		if want := (deadline[v] + ms - 1).Truncate(ms); now != want {
			t.Fatalf("delay %v fired at %v, want %v", delays[v], now-start, want-start)
		}
	}
	for now = 778 * ms; w.Len() > 0; now += ms {
		w.Advance(now, fire)
	}
	if err := w.checkInvariants(); err != nil {
		t.Fatal(err)
	}
}

func TestPastDeadlinesFireOnNextAdvance(t *testing.T) {
	w := newWheel(t, ms)
	advance(t, w, 10*ms+ms/2)
	w.Insert(-time.Hour, 1)
	w.Insert(10*ms, 2)
	w.Insert(10*ms+ms/2, 3) // exactly Now
	w.Insert(10*ms+ms/2+1, 4)
	wantNext(t, w, 10*ms+ms/2)
	if got := advance(t, w, 10*ms+ms/2); !slices.Equal(got, []int{1, 2, 3}) {
		t.Fatalf("Advance at the same time fired %v, want [1 2 3]", got)
	}
	wantNext(t, w, 11*ms)
	if got := advance(t, w, 11*ms); !slices.Equal(got, []int{4}) {
		t.Fatalf("fired %v, want [4]", got)
	}
}

func TestAdvanceNeverGoesBack(t *testing.T) {
	w := newWheel(t, ms)
	w.Insert(50*ms, 1)
	advance(t, w, 40*ms)
	if got := advance(t, w, 5*ms); len(got) != 0 || w.Now() != 40*ms {
		t.Fatalf("backwards Advance fired %v, Now %v", got, w.Now())
	}
	w.Insert(30*ms, 2) // in the past of Now
	if got := advance(t, w, 0); !slices.Equal(got, []int{2}) {
		t.Fatalf("fired %v, want [2]", got)
	}
	if got := advance(t, w, 50*ms); !slices.Equal(got, []int{1}) {
		t.Fatalf("fired %v, want [1]", got)
	}
}

func TestCancel(t *testing.T) {
	for _, tc := range []struct {
		name    string
		advance time.Duration // before Cancel; the entry is due at 5 s
		level   int           // where the entry sits when cancelled
	}{
		{"before cascading", 0, 2},
		{"after one cascade", 4096 * ms, 1},
		{"after cascading to level 0", 4993 * ms, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			w := newWheel(t, ms)
			keep := w.Insert(5001*ms, 2)
			h := w.Insert(5000*ms, 1)
			advance(t, w, tc.advance)
			if c := w.levelCounts(); c[tc.level] == 0 {
				t.Fatalf("levels %v, want the entry on level %d", c, tc.level)
			}
			if !w.Cancel(h) {
				t.Fatal("Cancel of a live entry = false")
			}
			if w.Cancel(h) {
				t.Fatal("second Cancel = true")
			}
			if err := w.checkInvariants(); err != nil {
				t.Fatal(err)
			}
			wantNext(t, w, 5001*ms)
			if got := advance(t, w, 6*time.Second); !slices.Equal(got, []int{2}) {
				t.Fatalf("fired %v, want only the other entry", got)
			}
			if w.Cancel(keep) {
				t.Fatal("Cancel after firing = true")
			}
		})
	}
}

func TestStaleHandles(t *testing.T) {
	w := newWheel(t, ms)
	if w.Cancel(Handle{}) {
		t.Fatal("Cancel(zero Handle) = true")
	}
	if w.Cancel(Handle{index: 12, gen: 1}) {
		t.Fatal("Cancel of an index never used = true")
	}
	old := w.Insert(10*ms, 1)
	if !w.Cancel(old) {
		t.Fatal("Cancel of a live entry = false")
	}
	reused := w.Insert(20*ms, 2) // takes the same slab slot
	if reused.index != old.index || reused == old {
		t.Fatalf("handles %+v and %+v: want the slot reused with a new generation", old, reused)
	}
	if w.Cancel(old) {
		t.Fatal("stale Handle cancelled the slot's new entry")
	}
	if got := advance(t, w, 20*ms); !slices.Equal(got, []int{2}) {
		t.Fatalf("fired %v, want [2]", got)
	}
	if w.Cancel(reused) {
		t.Fatal("Cancel after firing = true")
	}
	// The generation skips 0 when it wraps, so no live entry ever matches
	// the zero Handle.
	w.nodes[reused.index].gen = math.MaxUint32
	h := w.Insert(30*ms, 3)
	w.Cancel(h)
	if g := w.nodes[h.index].gen; g != 1 {
		t.Fatalf("generation after wrapping = %d, want 1", g)
	}
}

// TestManyTimersOneSlot piles entries into one level-0 slot and one
// upper slot, cancels every other one, and checks the rest each fire once.
func TestManyTimersOneSlot(t *testing.T) {
	w := newWheel(t, ms)
	const n = 5000
	handles := make([]Handle, 0, 2*n)
	for i := range n {
		handles = append(handles, w.Insert(40*ms, i))
	}
	for i := range n {
		// All in level 2's slot for [8192, 12288) ms, in no order.
		handles = append(handles, w.Insert(time.Duration(8192+(i*7919)%4096)*ms, n+i))
	}
	if c := w.levelCounts(); c[0] != n || c[2] != n {
		t.Fatalf("levels %v", c)
	}
	for i := 0; i < 2*n; i += 2 {
		if !w.Cancel(handles[i]) {
			t.Fatalf("Cancel(%d) = false", i)
		}
	}
	if w.Len() != n {
		t.Fatalf("Len = %d, want %d", w.Len(), n)
	}
	wantNext(t, w, 40*ms)
	fired := make(map[int]int)
	for _, v := range advance(t, w, 40*ms) {
		fired[v]++
	}
	if len(fired) != n/2 {
		t.Fatalf("first slot fired %d entries, want %d", len(fired), n/2)
	}
	// The earliest survivor of the upper slot, found without firing.
	want := time.Duration(math.MaxInt64)
	for i := n + 1; i < 2*n; i += 2 {
		want = min(want, time.Duration(8192+((i-n)*7919)%4096)*ms)
	}
	wantNext(t, w, want)
	for now := 41 * ms; w.Len() > 0; now += 100 * ms {
		for _, v := range advance(t, w, now) {
			fired[v]++
		}
	}
	for v, k := range fired {
		if k != 1 || v%2 == 0 {
			t.Fatalf("entry %d fired %d times", v, k)
		}
	}
	if len(fired) != n {
		t.Fatalf("%d entries fired, want %d", len(fired), n)
	}
}

// TestNextDeadlineAfterCancellingMinimum drives a slot out of tick order
// and cancels its earliest entries one by one: NextDeadline must follow
// the true minimum each time.
func TestNextDeadlineAfterCancellingMinimum(t *testing.T) {
	w := newWheel(t, ms)
	ticks := []time.Duration{9000, 8500, 9500, 8200, 8800, 12000, 8201, 8200}
	handles := make(map[time.Duration][]Handle)
	for i, d := range ticks {
		handles[d] = append(handles[d], w.Insert(d*ms, i))
	}
	sorted := slices.Sorted(slices.Values(ticks))
	for i, d := range sorted {
		wantNext(t, w, d*ms)
		h := handles[d][0]
		handles[d] = handles[d][1:]
		if !w.Cancel(h) {
			t.Fatalf("Cancel #%d = false", i)
		}
		if err := w.checkInvariants(); err != nil {
			t.Fatal(err)
		}
	}
	wantEmpty(t, w)
}

// TestAdvanceFarAhead fires entries from every level, and some beyond the
// range, in one Advance years ahead: all fire once, in tick order.
func TestAdvanceFarAhead(t *testing.T) {
	w := newWheel(t, ms)
	var deadlines []time.Duration
	for i := range 400 {
		d := time.Duration(uint64(i*i*i*7919+i)%(1<<37)+1) * ms
		deadlines = append(deadlines, d)
		w.Insert(d, i)
	}
	got := advance(t, w, 10*365*24*time.Hour)
	if len(got) != len(deadlines) {
		t.Fatalf("fired %d of %d", len(got), len(deadlines))
	}
	for i := 1; i < len(got); i++ {
		if deadlines[got[i]] < deadlines[got[i-1]] {
			t.Fatalf("fired %v before %v", deadlines[got[i-1]], deadlines[got[i]])
		}
	}
	wantEmpty(t, w)
	if w.Now() != 10*365*24*time.Hour {
		t.Fatalf("Now = %v", w.Now())
	}
}

// TestBeyondRange checks entries further out than the wheel spans: they
// are parked, never dropped, and fire at their exact tick however the
// wheel is driven, at a coarse and at a fine resolution.
func TestBeyondRange(t *testing.T) {
	for _, res := range []time.Duration{ms, time.Nanosecond} {
		span := time.Duration(wheelRange) * res
		deadlines := []time.Duration{span, span + res, 3*span + 17*res, 40 * span, math.MaxInt64 / 2 / res * res}
		for _, step := range []time.Duration{0, span / 3, span / 64} {
			w := newWheel(t, res)
			for i, d := range deadlines {
				w.Insert(d, i)
			}
			if c := w.levelCounts(); c[topLevel] != len(deadlines) {
				t.Fatalf("levels %v, want all on the top level", c)
			}
			now := time.Duration(0)
			for i, d := range deadlines {
				wantNext(t, w, d)
				if step > 0 {
					for k := 0; k < 3000 && now+step < d; k++ {
						now += step
						if got := advance(t, w, now); len(got) != 0 {
							t.Fatalf("res %v step %v: fired %v at %v", res, step, got, now)
						}
					}
				}
				if got := advance(t, w, d-1); len(got) != 0 {
					t.Fatalf("res %v: fired %v at %v, before %v", res, got, d-1, d)
				}
				if got := advance(t, w, d); !slices.Equal(got, []int{i}) {
					t.Fatalf("res %v step %v: at %v fired %v, want [%d]", res, step, d, got, i)
				}
				now = d
			}
			wantEmpty(t, w)
		}
	}
}

// TestEndOfTime checks the deadlines whose tick begins after
// math.MaxInt64: NextDeadline saturates and Advance(math.MaxInt64) fires
// them.
func TestEndOfTime(t *testing.T) {
	w := newWheel(t, 3*ms)
	w.Insert(math.MaxInt64, 1)
	w.Insert(math.MaxInt64-1, 2)
	wantNext(t, w, math.MaxInt64)
	if got := advance(t, w, math.MaxInt64-1); len(got) != 0 {
		t.Fatalf("fired %v before the end of time", got)
	}
	if got := advance(t, w, math.MaxInt64); len(got) != 2 {
		t.Fatalf("fired %v at the end of time, want both", got)
	}
}

func TestFireOrder(t *testing.T) {
	w := newWheel(t, ms)
	deadlines := make([]time.Duration, 3000)
	for i := range deadlines {
		deadlines[i] = time.Duration((i*104729)%500000)*time.Microsecond*7 + 1
		w.Insert(deadlines[i], i)
	}
	var got []int
	for now := time.Duration(0); w.Len() > 0; now += 333 * ms {
		got = append(got, advance(t, w, now)...)
	}
	for i := 1; i < len(got); i++ {
		a, b := deadlines[got[i-1]], deadlines[got[i]]
		if ceilTicks(b, ms) < ceilTicks(a, ms) {
			t.Fatalf("%v fired after %v", b, a)
		}
	}
}

// TestTimingAdvanceAcrossManyRanges jumps across entries spread over the
// whole of time at a 1 ns resolution, where the wheel's range is 69 s and
// each entry lies in a range of its own. Turning slot by slot re-placed
// every entry still parked each time the cursor crossed a range, which
// for these 50,000 entries took over ten seconds (hours of CPU under
// -race); one sort takes milliseconds, so the bound has a wide margin.
func TestTimingAdvanceAcrossManyRanges(t *testing.T) {
	const n = 50000
	w := newWheel(t, time.Nanosecond)
	step := time.Duration(math.MaxInt64 / (n + 1))
	for i := range n {
		w.Insert(step*time.Duration(n-i), n-i) // out of order on purpose
	}
	start := time.Now()
	prev := 0
	fired := w.Advance(math.MaxInt64, func(v int) {
		if v != prev+1 {
			t.Fatalf("fired %d after %d", v, prev)
		}
		prev = v
	})
	if took := time.Since(start); took > 2*time.Second {
		t.Fatalf("Advance across %d ranges took %v", n, took)
	}
	if fired != n {
		t.Fatalf("fired %d of %d", fired, n)
	}
	wantEmpty(t, w)
}
