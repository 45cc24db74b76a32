package bench

import (
	"errors"
	"slices"
	"strings"
	"testing"
	"time"
)

// Each workload's check must pass the right outcome and catch the wrong
// ones (a lost or duplicated task, item, yield or byte).

func TestCheckAllDone(t *testing.T) {
	if err := checkAllDone([]byte{1, 1, 1}); err != nil {
		t.Errorf("all done: %v", err)
	}
	err := checkAllDone([]byte{1, 0, 1, 0})
	if !errors.Is(err, ErrValidation) || !strings.Contains(err.Error(), "2 of 4 tasks did not run (first: #1)") {
		t.Errorf("two missing: %v", err)
	}
}

func TestCheckHop(t *testing.T) {
	if err := checkHop(7, 7); err != nil {
		t.Error(err)
	}
	if err := checkHop(6, 7); !errors.Is(err, ErrValidation) {
		t.Errorf("wrong counter: %v", err)
	}
}

func TestMutexResult(t *testing.T) {
	s := Sizes{MutexTasks: 10, MutexIters: 100}
	m, err := mutexResult(s, 1000, time.Second)
	if err != nil || m.Ops != 1000 || m.Elapsed != time.Second {
		t.Errorf("exact counter: %+v, %v", m, err)
	}
	if _, err := mutexResult(s, 999, time.Second); !errors.Is(err, ErrValidation) {
		t.Errorf("lost increment: %v", err)
	}
	taskErr := errors.New("lock cancelled")
	if _, err := mutexResult(s, 1000, time.Second, nil, taskErr); err != taskErr {
		t.Errorf("task error: %v", err)
	}
}

func TestMpmcResult(t *testing.T) {
	s := Sizes{Producers: 2, ItemsPerProducer: 3} // values 1..6, sum 21
	for _, tc := range []struct {
		name    string
		tallies []tally
		ok      bool
	}{
		{"exact", []tally{{4, 10}, {2, 11}}, true},
		{"lost", []tally{{4, 10}, {1, 5}}, false},
		{"duplicated", []tally{{4, 10}, {3, 17}}, false},
		{"swapped value", []tally{{4, 10}, {2, 12}}, false},
	} {
		m, err := mpmcResult(s, tc.tallies, time.Millisecond)
		if tc.ok && (err != nil || m.Ops != 6) || !tc.ok && !errors.Is(err, ErrValidation) {
			t.Errorf("%s: %+v, %v", tc.name, m, err)
		}
	}
}

func TestTimersResult(t *testing.T) {
	late := []time.Duration{3 * time.Microsecond, time.Microsecond, 2 * time.Microsecond, 0}
	m, err := timersResult(late, 100*time.Millisecond)
	if err != nil || m.Ops != 4 || !m.HasLatency || m.P50 != time.Microsecond || m.P99 != 3*time.Microsecond || m.Max != 3*time.Microsecond {
		t.Errorf("all fired: %+v, %v", m, err)
	}
	if _, err := timersResult([]time.Duration{0, notFired}, time.Second); !errors.Is(err, ErrValidation) ||
		!strings.Contains(err.Error(), "1 never fired") {
		t.Errorf("missing timer: %v", err)
	}
	if _, err := timersResult([]time.Duration{0, -time.Millisecond}, time.Second); !errors.Is(err, ErrValidation) ||
		!strings.Contains(err.Error(), "1 fired early (up to 1ms early)") {
		t.Errorf("early timer: %v", err)
	}
}

// The sleep durations are fixed by the seed and stay in range, so both
// implementations sleep the same ones.
func TestSleepDurations(t *testing.T) {
	s := Sizes{Timers: 1000, MinSleep: time.Millisecond, MaxSleep: 100 * time.Millisecond}
	a, b := sleepDurations(s), sleepDurations(s)
	for i := range a {
		if a[i] != b[i] || a[i] < s.MinSleep || a[i] > s.MaxSleep || a[i]%time.Microsecond != 0 {
			t.Fatalf("duration %d: %v then %v", i, a[i], b[i])
		}
	}
}

func TestCheckRead(t *testing.T) {
	const off = 8192
	good := make([]byte, 4096)
	fillPattern(good, off)
	if err := checkRead(good, len(good), off, 0); err != nil {
		t.Errorf("good block: %v", err)
	}
	if err := checkRead(good, 100, off, 1); !errors.Is(err, ErrValidation) {
		t.Errorf("short read: %v", err)
	}
	if err := checkRead(good, len(good), off+4096, 1); !errors.Is(err, ErrValidation) {
		t.Errorf("block from the wrong offset: %v", err)
	}
	torn := append([]byte(nil), good...)
	torn[2048] ^= 1
	if err := checkRead(torn, len(torn), off, fullCheckEvery); !errors.Is(err, ErrValidation) {
		t.Errorf("bad middle word on a fully checked read: %v", err)
	}
	// Between the full checks only the ends are looked at.
	if err := checkRead(torn, len(torn), off, 1); err != nil {
		t.Errorf("bad middle word on an end-checked read: %v", err)
	}
	torn = append(torn[:0], good...)
	torn[len(torn)-1] ^= 1
	if err := checkRead(torn, len(torn), off, 1); !errors.Is(err, ErrValidation) {
		t.Errorf("bad last word: %v", err)
	}
}

func TestEchoResult(t *testing.T) {
	s := Sizes{Conns: 2, Trips: 10, MsgSize: 64}
	report := ClientReport{Conns: 2, Trips: 10, RoundTrips: 20, Nanos: 1e6, P50Nanos: 10, P99Nanos: 20, MaxNanos: 30}
	// 20 timed trips and 2 warm-up trips of 64 bytes.
	full := echoTotals{conns: 2, bytes: 22 * 64}
	m, err := echoResult(s, report, full, 3*time.Millisecond)
	if err != nil || m.Ops != 20 || m.Elapsed != time.Millisecond || m.P99 != 20 || !m.HasCPU || m.ServerCPU != 3*time.Millisecond {
		t.Errorf("exact: %+v, %v", m, err)
	}
	short := report
	short.RoundTrips = 19
	for name, tc := range map[string]struct {
		r ClientReport
		t echoTotals
	}{
		"missing round trip": {short, full},
		"missing connection": {report, echoTotals{conns: 1, bytes: full.bytes}},
		"bytes lost":         {report, echoTotals{conns: 2, bytes: full.bytes - 1}},
	} {
		if _, err := echoResult(s, tc.r, tc.t, time.Millisecond); !errors.Is(err, ErrValidation) {
			t.Errorf("%s: %v", name, err)
		}
	}
}

func TestCheckEcho(t *testing.T) {
	msg := make([]byte, 64)
	stampMessage(msg, 3, 7)
	echo := append([]byte(nil), msg...)
	if err := checkEcho(msg, echo, 3, 7); err != nil {
		t.Error(err)
	}
	other := make([]byte, 64)
	stampMessage(other, 3, 8)
	if err := checkEcho(msg, other, 3, 7); !errors.Is(err, ErrValidation) {
		t.Errorf("echo of another trip: %v", err)
	}
	stampMessage(other, 4, 7)
	if err := checkEcho(msg, other, 3, 7); !errors.Is(err, ErrValidation) {
		t.Errorf("echo of another connection: %v", err)
	}
}

func TestYieldResult(t *testing.T) {
	s := Sizes{YieldTasks: 3, Yields: 5}
	if m, err := yieldResult(s, []int64{5, 5, 5}, time.Second); err != nil || m.Ops != 15 {
		t.Errorf("exact: %+v, %v", m, err)
	}
	if _, err := yieldResult(s, []int64{5, 4, 5}, time.Second); !errors.Is(err, ErrValidation) {
		t.Errorf("lost yield: %v", err)
	}
}

func TestFirstError(t *testing.T) {
	var f firstError
	f.set(nil)
	if f.get() != nil {
		t.Fatal("nil recorded")
	}
	a, b := errors.New("a"), errors.New("b")
	f.set(a)
	f.set(b)
	if f.get() != a {
		t.Errorf("got %v, want the first error", f.get())
	}
}

// W5b starts again with twice the margin when spawning overran the
// deadline, and only then; after the last attempt the overrun is a
// validation failure that names the margin.
func TestMassWakeRetriesWithALongerMargin(t *testing.T) {
	env := &Env{Sizes: Sizes{Sleepers: 10, SleepMargin: time.Second}, Log: testLog{t}}
	var margins []time.Duration
	overrunUntil := func(ok time.Duration) func(time.Duration) (Measurement, error) {
		margins = margins[:0]
		return func(margin time.Duration) (Measurement, error) {
			margins = append(margins, margin)
			start := time.Unix(0, 0)
			deadline := start.Add(margin)
			spawned := start.Add(ok) // spawning took ok, which fits a margin ≥ ok
			woke := make([]time.Time, 10)
			for i := range woke {
				woke[i] = deadline.Add(time.Duration(i) * time.Millisecond)
			}
			return massWakeResult(env.Sizes, margin, deadline, spawned, woke)
		}
	}

	m, err := massWake(env, overrunUntil(3*time.Second))
	if err != nil || m.SleepMargin != 4*time.Second || m.Ops != 10 || m.Elapsed != 9*time.Millisecond {
		t.Errorf("overran twice: %+v, %v", m, err)
	}
	if want := []time.Duration{time.Second, 2 * time.Second, 4 * time.Second}; !slices.Equal(margins, want) {
		t.Errorf("margins tried %v, want %v", margins, want)
	}

	m, err = massWake(env, overrunUntil(time.Second))
	if err != nil || m.SleepMargin != time.Second || len(margins) != 1 {
		t.Errorf("fits the first margin: %+v, %v after margins %v", m, err, margins)
	}

	_, err = massWake(env, overrunUntil(5*time.Second))
	if !errors.Is(err, ErrValidation) || !strings.Contains(err.Error(), "sleep_margin 4s too short") || len(margins) != massWakeAttempts {
		t.Errorf("overran every attempt: %v after margins %v", err, margins)
	}

	// Any other failure ends the run at once.
	calls := 0
	_, err = massWake(env, func(time.Duration) (Measurement, error) {
		calls++
		return Measurement{}, ErrValidation
	})
	if !errors.Is(err, ErrValidation) || calls != 1 {
		t.Errorf("other failure: %v after %d calls", err, calls)
	}
}

// A real W5b run whose spawning cannot fit its margin fails after the last
// attempt instead of reporting a figure that includes the spawning.
func TestMassWakeGoroutinesOverrunFails(t *testing.T) {
	env := &Env{Workers: 2, Sizes: tinySizes(), Log: testLog{t}}
	env.Sizes.SleepMargin = time.Nanosecond
	_, err := massWakeGoroutines(env)
	if !errors.Is(err, ErrValidation) || !strings.Contains(err.Error(), "sleep_margin 4ns too short") {
		t.Errorf("got %v", err)
	}
}
