package bench

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func outcome(t *testing.T, id string, impl Impl, workers int, m Measurement) Outcome {
	t.Helper()
	w, ok := LookupWorkload(id)
	if !ok {
		t.Fatalf("no workload %s", id)
	}
	r := NewResult(w, impl, workers, m)
	return Outcome{Workload: w, Impl: impl, Workers: workers, Result: &r}
}

func ns(n int64) Measurement { return Measurement{Ops: 1000, Elapsed: time.Duration(n * 1000)} }

func withP99(m Measurement, p99 time.Duration) Measurement {
	m.HasLatency, m.P50, m.P99, m.Max = true, p99/2, p99, 2*p99
	return m
}

func withThreads(m Measurement, n int) Measurement {
	m.Threads = n
	return m
}

func withIOWQ(m Measurement, n int) Measurement {
	m.IOWQThreads = n
	return m
}

func TestRenderTable(t *testing.T) {
	w6d, _ := LookupWorkload("W6d")
	w8, _ := LookupWorkload("W8")
	outcomes := []Outcome{
		outcome(t, "W1", Faio, 2, ns(200)),
		outcome(t, "W1", Goroutines, 2, ns(500)),
		outcome(t, "W1", Faio, 1, ns(300)),
		outcome(t, "W1", Goroutines, 1, ns(400)),
		outcome(t, "W5", Faio, 2, withP99(ns(1000), 2*time.Millisecond)),
		outcome(t, "W5", Goroutines, 2, withP99(ns(1000), 30*time.Millisecond)),
		{Workload: w6d, Impl: Faio, Workers: 2, Skip: "no O_DIRECT on tmpfs"},
		{Workload: w6d, Impl: Goroutines, Workers: 2, Skip: "no O_DIRECT on tmpfs"},
		outcome(t, "W7", Faio, 2, withP99(ns(700), 500*time.Microsecond)),
		outcome(t, "W7", Goroutines, 2, withP99(ns(1000), 3*time.Millisecond)),
		{Workload: w8, Impl: Faio, Workers: 2, Err: errors.New("yields done is 9 | want 10")},
		outcome(t, "W8", Goroutines, 2, ns(100)),
	}
	got := RenderTable(outcomes, 2)
	want := strings.Join([]string{
		"| workload | workers | faio ns/op | goroutines ns/op | faio/goroutines | details | target | met |",
		"|---|---:|---:|---:|---:|---|---|---|",
		"| W1-spawn | 2 | 200.0 | 500.0 | 0.40 |  | ≤ 0.5 | yes |",
		"| W1-spawn | 1 | 300.0 | 400.0 | 0.75 |  | — | — |",
		"| W5-timers | 2 | 1000.0 | 1000.0 | 1.00 | faio p99 2.00ms; goroutines p99 30.00ms | ≤ 1.05, p99 ≤ 1ms | no: p99 2.00ms > 1ms |",
		"| W6d-file-read-direct | 2 | skipped | skipped | — | skipped: no O_DIRECT on tmpfs | ≤ 1.05, ≤ 8 threads | — |",
		"| W7-tcp-echo | 2 | 700.0 | 1000.0 | 0.70 | faio p99 500.0µs; goroutines p99 3.00ms | ≤ 0.77, p99 ≤ 2ms | yes |",
		`| W8-yield | 2 | FAILED | 100.0 | — | faio FAILED: yields done is 9 \| want 10 | ≤ 0.6 | FAILED |`,
		"",
	}, "\n")
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
}

// A run of one implementation has no ratio to judge.
func TestRenderTableOneImpl(t *testing.T) {
	got := RenderTable([]Outcome{outcome(t, "W6d", Faio, 2, withIOWQ(withThreads(ns(900), 12), 6))}, 2)
	if !strings.Contains(got, "| W6d-file-read-direct | 2 | 900.0 | — | — | faio 12 threads (6 io-wq) | ≤ 1.05, ≤ 8 threads | — |") {
		t.Errorf("table:\n%s", got)
	}
}

func TestTargetCheck(t *testing.T) {
	res := func(m Measurement) Result {
		w, _ := LookupWorkload("W6d")
		return NewResult(w, Faio, 2, m)
	}
	target := Target{MaxRatio: 1.05, MaxThreads: 8, MaxP99: time.Millisecond}
	for _, tc := range []struct {
		name   string
		faio   Measurement
		misses string
	}{
		{"met", withP99(withThreads(ns(100), 8), time.Millisecond), ""},
		{"slow", withP99(withThreads(ns(106), 8), time.Millisecond), "ratio 1.06 > 1.05"},
		{"threads", withP99(withThreads(ns(100), 9), time.Millisecond), "9 threads > 8"},
		{"late", withP99(withThreads(ns(100), 8), 2*time.Millisecond), "p99 2.00ms > 1ms"},
		{"unmeasured", ns(100), "p99 not measured; threads not measured"},
	} {
		met, misses := target.Check(res(tc.faio), res(ns(100)))
		if met != (tc.misses == "") || strings.Join(misses, "; ") != tc.misses {
			t.Errorf("%s: met %v, misses %q, want %q", tc.name, met, misses, tc.misses)
		}
	}
	if got := target.String(); got != "≤ 1.05, p99 ≤ 1ms, ≤ 8 threads" {
		t.Errorf("String: %q", got)
	}
}

// The targets are those of WORKLOADS.md.
func TestWorkloadTargets(t *testing.T) {
	want := map[string]string{
		"W1": "≤ 0.5", "W2": "≤ 0.6", "W3": "≤ 0.6", "W4": "≤ 1",
		"W5": "≤ 1.05, p99 ≤ 1ms", "W6": "≤ 1", "W6d": "≤ 1.05, ≤ 8 threads",
		"W7": "≤ 0.77, p99 ≤ 2ms", "W8": "≤ 0.6",
	}
	ws := Workloads()
	if len(ws) != len(want) {
		t.Fatalf("%d workloads, want %d", len(ws), len(want))
	}
	for _, w := range ws {
		if got := w.Target.String(); got != want[w.ID] {
			t.Errorf("%s: target %q, want %q", w.ID, got, want[w.ID])
		}
	}
}
