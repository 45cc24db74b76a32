package bench

import (
	"context"
	"errors"
	"fmt"
	"os/exec"
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

// W5b makes a second attempt with twice the margin when spawning overran
// the deadline, and only then; a child process makes no second attempt.
func TestMassWakeRetriesWithALongerMargin(t *testing.T) {
	env := &Env{Sizes: Sizes{Sleepers: 10, SleepMargin: time.Second}, Log: testLog{t}}
	var calls []string
	// spawnTook returns an attempt named name whose spawning took d,
	// which fits a margin of at least d.
	spawnTook := func(name string, d time.Duration) func(time.Duration) (Measurement, error) {
		return func(margin time.Duration) (Measurement, error) {
			calls = append(calls, fmt.Sprintf("%s %v", name, margin))
			start := time.Unix(0, 0)
			deadline := start.Add(margin)
			woke := make([]time.Time, 10)
			for i := range woke {
				woke[i] = deadline.Add(time.Duration(i) * time.Millisecond)
			}
			return massWakeResult(env.Sizes, margin, deadline, start.Add(d), woke)
		}
	}
	for _, tc := range []struct {
		name            string
		first, later    time.Duration // spawning times of the first attempt and the later ones
		inProcess       bool
		wantCalls       []string
		wantMargin      time.Duration // 0: fails
		wantErrContains string
	}{
		{"fits", time.Second, time.Second, false, []string{"child 1s"}, time.Second, ""},
		{"overran once", 1500 * time.Millisecond, 1500 * time.Millisecond, false, []string{"child 1s", "child 2s"}, 2 * time.Second, ""},
		{"overran twice", 3 * time.Second, 3 * time.Second, false, []string{"child 1s", "child 2s", "child 4s"}, 4 * time.Second, ""},
		{"overran thrice", 5 * time.Second, 5 * time.Second, false, []string{"child 1s", "child 2s", "child 4s"}, 0, "past the deadline at 4s"},
		{"child overran", 3 * time.Second, 0, true, []string{"here 1s"}, 0, "past the deadline at 1s"},
	} {
		calls = nil
		env.InProcess = tc.inProcess
		m, err := massWake(env, spawnTook("here", tc.first), spawnTook("child", tc.later))
		if !slices.Equal(calls, tc.wantCalls) {
			t.Errorf("%s: attempts %q, want %q", tc.name, calls, tc.wantCalls)
		}
		if tc.wantMargin != 0 {
			if err != nil || m.SleepMargin != tc.wantMargin || m.Ops != 10 || m.Elapsed != 9*time.Millisecond {
				t.Errorf("%s: %+v, %v", tc.name, m, err)
			}
		} else if !errors.Is(err, ErrValidation) || !strings.Contains(err.Error(), tc.wantErrContains) {
			t.Errorf("%s: error %v, want one with %q", tc.name, err, tc.wantErrContains)
		}
	}

	// Any other failure ends the run at once.
	env.InProcess = false
	n := 0
	_, err := massWake(env, func(time.Duration) (Measurement, error) {
		n++
		return Measurement{}, ErrValidation
	}, func(time.Duration) (Measurement, error) {
		n++
		return Measurement{}, ErrValidation
	})
	if !errors.Is(err, ErrValidation) || n != 1 {
		t.Errorf("other failure: %v after %d attempts", err, n)
	}
}

// An attempt in a child process brings back everything a W5b line
// reports: the lateness, the margin, the peak RSS.
func TestMassWakeInAChildProcess(t *testing.T) {
	env := tinyEnv(t, 2)
	m, err := massWakeIsolated(env, Goroutines, 300*time.Millisecond)
	if err != nil {
		t.Fatal(err)
	}
	if m.Ops != int64(env.Sizes.Sleepers) || !m.HasLatency || m.P50 > m.P99 || m.P99 > m.Max || (m.Max-m.Elapsed).Abs() > time.Microsecond ||
		m.SleepMargin != 300*time.Millisecond || m.Bytes != 0 || m.GOMAXPROCS != 2 {
		t.Errorf("got %+v", m)
	}
}

// A real W5b run whose spawning cannot fit either margin fails, here and
// in the child of its second attempt, instead of reporting a figure that
// includes the spawning.
func TestMassWakeOverrunFails(t *testing.T) {
	env := tinyEnv(t, 2)
	env.Sizes.SleepMargin = time.Nanosecond
	_, err := massWakeGoroutines(env)
	if err == nil || !strings.Contains(err.Error(), "W5b goroutines in a child process") {
		t.Errorf("got %v", err)
	}
}

// Each W5 run happens in a child process of its own, and brings back
// everything a W5 line reports: the lateness, the peak RSS and, for faio,
// the per-worker balance.
func TestTimersRunInAChildProcess(t *testing.T) {
	env := tinyEnv(t, 2)
	var started []string
	env.Self = func(ctx context.Context, args ...string) (*exec.Cmd, error) {
		started = append(started, strings.Join(args[:5], " "))
		return SelfCommand(ctx, args...)
	}
	w, _ := LookupWorkload("W5")
	for _, impl := range Impls {
		started = nil
		m, err := w.Run(env, impl)
		if err != nil {
			t.Fatalf("%s: %v", impl, err)
		}
		if want := []string{"-child -w W5 -impl " + string(impl)}; !slices.Equal(started, want) {
			t.Errorf("%s: started %q, want %q", impl, started, want)
		}
		if m.Ops != int64(env.Sizes.Timers) || !m.HasLatency || m.P50 > m.P99 || m.P99 > m.Max || m.P50 < 0 ||
			m.RSSMiB <= 0 || m.GOMAXPROCS != 2 || (impl == Faio) != (len(m.Polls) == 2) {
			t.Errorf("%s: got %+v", impl, m)
		}
	}
}
