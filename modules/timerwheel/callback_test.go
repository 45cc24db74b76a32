package timerwheel

import (
	"slices"
	"testing"
	"time"
)

// TestIntervalRearmsFromCallback re-inserts each entry from its own fire
// callback, as the runtime's Interval does.
func TestIntervalRearmsFromCallback(t *testing.T) {
	w := newWheel(t, ms)
	const period = 10 * ms
	var fires []time.Duration
	rearm := func(v int) {
		fires = append(fires, w.Now())
		w.Insert(w.Now()+period, v)
	}
	w.Insert(period, 1)
	for now := time.Duration(0); now <= time.Second; now += ms {
		w.Advance(now, rearm)
		if err := w.checkInvariants(); err != nil {
			t.Fatal(err)
		}
	}
	if len(fires) != 100 {
		t.Fatalf("fired %d times in 1 s, want 100", len(fires))
	}
	for i, at := range fires {
		if want := time.Duration(i+1) * period; at != want {
			t.Fatalf("fire %d at %v, want %v", i, at, want)
		}
	}
}

// TestZeroPeriodRearmDoesNotLoop re-inserts with a deadline already past:
// the new entry waits for the next Advance instead of firing forever.
func TestZeroPeriodRearmDoesNotLoop(t *testing.T) {
	w := newWheel(t, ms)
	w.Insert(0, 1)
	for i := 1; i <= 3; i++ {
		n := w.Advance(5*ms, func(v int) { w.Insert(0, v) })
		if n != 1 || w.Len() != 1 {
			t.Fatalf("Advance #%d fired %d, Len %d; want 1 and 1", i, n, w.Len())
		}
		wantNext(t, w, 5*ms)
	}
}

// TestCallbackCancels cancels, from a fire callback, an entry due in the
// same Advance (it must not fire), the firing entry itself (already gone),
// and an entry due later.
func TestCallbackCancels(t *testing.T) {
	w := newWheel(t, ms)
	var hs [4]Handle
	var results []bool
	hs[0] = w.Insert(10*ms, 0)
	hs[1] = w.Insert(10*ms, 1)
	hs[2] = w.Insert(11*ms, 2)
	hs[3] = w.Insert(500*ms, 3)
	var fired []int
	n := w.Advance(20*ms, func(v int) {
		fired = append(fired, v)
		if v == 0 {
			results = append(results, w.Cancel(hs[0]), w.Cancel(hs[2]), w.Cancel(hs[3]))
		}
	})
	if n != 2 || !slices.Equal(fired, []int{0, 1}) {
		t.Fatalf("fired %v (count %d), want [0 1]", fired, n)
	}
	if !slices.Equal(results, []bool{false, true, true}) {
		t.Fatalf("Cancel from callback = %v, want [false true true]", results)
	}
	wantEmpty(t, w)
}

// TestNestedAdvance calls Advance from a fire callback: every entry still
// fires exactly once.
func TestNestedAdvance(t *testing.T) {
	w := newWheel(t, ms)
	for i := range 10 {
		w.Insert(time.Duration(i+1)*ms, i)
	}
	count := make(map[int]int)
	var fire func(int)
	fire = func(v int) {
		count[v]++
		if v == 2 {
			w.Advance(8*ms, fire)
		}
	}
	w.Advance(5*ms, fire)
	if err := w.checkInvariants(); err != nil {
		t.Fatal(err)
	}
	for i := range 8 {
		if count[i] != 1 {
			t.Fatalf("entry %d fired %d times", i, count[i])
		}
	}
	if len(count) != 8 || w.Len() != 2 {
		t.Fatalf("fired %v, Len %d", count, w.Len())
	}
}

// TestPanicInCallbackKeepsTheRest checks that a panicking callback loses
// nothing: the entries not yet fired stay due for the next Advance.
func TestPanicInCallbackKeepsTheRest(t *testing.T) {
	w := newWheel(t, ms)
	for i := range 5 {
		w.Insert(ms, i)
	}
	func() {
		defer func() {
			if recover() == nil {
				t.Fatal("the callback's panic did not propagate")
			}
		}()
		w.Advance(ms, func(v int) {
			if v == 1 {
				panic("boom")
			}
		})
	}()
	if err := w.checkInvariants(); err != nil {
		t.Fatal(err)
	}
	if w.Len() != 3 {
		t.Fatalf("Len = %d after the panic, want 3", w.Len())
	}
	wantNext(t, w, ms)
	if got := advance(t, w, ms); !slices.Equal(got, []int{2, 3, 4}) {
		t.Fatalf("next Advance fired %v, want [2 3 4]", got)
	}
}

func TestAdvanceNilFirePanics(t *testing.T) {
	w := newWheel(t, ms)
	w.Insert(ms, 1)
	defer func() {
		if recover() == nil {
			t.Fatal("Advance(nil) did not panic")
		}
		if w.Len() != 1 {
			t.Fatalf("Advance(nil) lost the entry: Len %d", w.Len())
		}
	}()
	w.Advance(ms, nil)
}

// TestSteadyStateDoesNotAllocate checks the no-allocation promise once
// the slab has grown.
func TestSteadyStateDoesNotAllocate(t *testing.T) {
	w, err := New[*int](Config{})
	if err != nil {
		t.Fatal(err)
	}
	v := new(int)
	for i := range 1000 {
		w.Insert(time.Duration(i)*time.Second, v)
	}
	d := time.Duration(0)
	fire := func(*int) {}
	if a := testing.AllocsPerRun(1000, func() {
		d += 7 * ms
		w.Cancel(w.Insert(d, v))
	}); a != 0 {
		t.Fatalf("Insert+Cancel: %v allocs per run", a)
	}
	now := time.Duration(0)
	if a := testing.AllocsPerRun(1000, func() {
		w.Insert(now+5*time.Second, v)
		now += 5 * ms
		w.Advance(now, fire)
		w.NextDeadline()
	}); a != 0 {
		t.Fatalf("Insert+Advance: %v allocs per run", a)
	}
}
