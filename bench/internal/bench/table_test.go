package bench

import (
	"bytes"
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

func withCPU(m Measurement, perOp time.Duration) Measurement {
	m.HasCPU, m.ServerCPU = true, perOp*time.Duration(m.Ops)
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
		outcome(t, "W7", Faio, 2, withCPU(withP99(ns(700), 500*time.Microsecond), 3*time.Microsecond)),
		outcome(t, "W7", Goroutines, 2, withCPU(withP99(ns(1000), 3*time.Millisecond), 4*time.Microsecond)),
		outcome(t, "W7c", Faio, 2, withCPU(withP99(ns(700), 5*time.Millisecond), 3500*time.Nanosecond)),
		outcome(t, "W7c", Goroutines, 2, withCPU(withP99(ns(1000), 9*time.Millisecond), 4*time.Microsecond)),
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
		"| W7-tcp-echo | 2 | 700.0 | 1000.0 | 0.70 | faio p99 500.0µs, cpu 3.00µs/op; goroutines p99 3.00ms, cpu 4.00µs/op; cpu ratio 0.75 | ≤ 0.77, cpu ≤ 0.77, p99 ≤ 2ms | yes |",
		"| W7c-tcp-echo-many | 2 | 700.0 | 1000.0 | 0.70 | faio p99 5.00ms, cpu 3.50µs/op; goroutines p99 9.00ms, cpu 4.00µs/op; cpu ratio 0.88 | ≤ 0.7, cpu ≤ 0.7 | no: cpu ratio 0.88 > 0.7 |",
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

// The CPU bound compares the server CPU per op of both sides; it needs
// both figures.
func TestTargetCheckCPU(t *testing.T) {
	res := func(m Measurement) Result {
		w, _ := LookupWorkload("W7")
		return NewResult(w, Faio, 2, m)
	}
	target := Target{MaxRatio: 0.77, MaxCPURatio: 0.77}
	gor := res(withCPU(ns(1000), 4*time.Microsecond))
	for _, tc := range []struct {
		name       string
		faio, gor  Result
		misses     string
		ratio      float64
		ratioKnown bool
	}{
		{"met", res(withCPU(ns(770), 3080*time.Nanosecond)), gor, "", 0.77, true},
		{"costly", res(withCPU(ns(700), 3200*time.Nanosecond)), gor, "cpu ratio 0.80 > 0.77", 0.8, true},
		{"both", res(withCPU(ns(800), 4*time.Microsecond)), gor, "ratio 0.80 > 0.77; cpu ratio 1.00 > 0.77", 1, true},
		{"faio unmeasured", res(ns(700)), gor, "cpu not measured", 0, false},
		{"goroutines unmeasured", res(withCPU(ns(700), time.Microsecond)), res(ns(1000)), "cpu not measured", 0, false},
		{"goroutines zero", res(withCPU(ns(700), time.Microsecond)), res(withCPU(ns(1000), 0)), "cpu not measured", 0, false},
	} {
		met, misses := target.Check(tc.faio, tc.gor)
		if met != (tc.misses == "") || strings.Join(misses, "; ") != tc.misses {
			t.Errorf("%s: met %v, misses %q, want %q", tc.name, met, misses, tc.misses)
		}
		if r, ok := CPURatio(tc.faio, tc.gor); ok != tc.ratioKnown || r != tc.ratio {
			t.Errorf("%s: CPURatio %v %v, want %v %v", tc.name, r, ok, tc.ratio, tc.ratioKnown)
		}
	}
	if got := target.String(); got != "≤ 0.77, cpu ≤ 0.77" {
		t.Errorf("String: %q", got)
	}
}

// The targets are those of WORKLOADS.md.
func TestWorkloadTargets(t *testing.T) {
	want := map[string]string{
		"W1-spawn": "≤ 0.5", "W2-ping-pong": "≤ 0.6", "W3-mutex": "≤ 0.6", "W4-mpmc": "≤ 1",
		"W5-timers": "≤ 1.05, p99 ≤ 1ms", "W5b-mass-wake": "≤ 1, all woken ≤ 1s", "W6-file-read": "≤ 1",
		"W6d-file-read-direct": "≤ 1.05, ≤ 8 threads", "W7-tcp-echo": "≤ 0.77, cpu ≤ 0.77, p99 ≤ 2ms",
		"W7c-tcp-echo-many": "≤ 0.7, cpu ≤ 0.7", "W8-yield": "≤ 0.6",
		"W9-http-hello": "≤ 1", "W9-http-16k": "≤ 1", "W10-goroutine-caller": "≤ 1.5, p99 ≤ 1ms",
	}
	ws := Workloads()
	if len(ws) != len(want) {
		t.Fatalf("%d workloads, want %d", len(ws), len(want))
	}
	for _, w := range ws {
		if got := w.Target.String(); got != want[w.Label()] {
			t.Errorf("%s: target %q, want %q", w.Label(), got, want[w.Label()])
		}
		for _, backend := range []string{"", "io_uring"} {
			if got, ok := w.TargetOn(backend); !ok || got != w.Target {
				t.Errorf("%s on %q: target %v %v, want %v", w.Label(), backend, got, ok, w.Target)
			}
		}
		// On the portable backend: within 1.5x on W1 ... W8, nothing
		// on W9 and W10.
		got, ok := w.TargetOn("portable")
		if wantOK := w.ID != "W9" && w.ID != "W10"; ok != wantOK || ok && got.String() != "≤ 1.5" {
			t.Errorf("%s on portable: target %v %v", w.Label(), got, ok)
		}
	}
}

// tableRows returns the cells of the table's workload rows.
func tableRows(t *testing.T, table string) [][]string {
	t.Helper()
	var rows [][]string
	for _, line := range strings.Split(table, "\n") {
		if !strings.HasPrefix(line, "| W") {
			continue
		}
		cells := strings.Split(strings.TrimSuffix(strings.TrimPrefix(line, "| "), " |"), " | ")
		if len(cells) != 8 {
			t.Fatalf("row %q has %d cells, want 8", line, len(cells))
		}
		rows = append(rows, cells)
	}
	return rows
}

// checkNotJudged fails if the table judges a target anywhere: every row's
// target cell must be "—" and its met cell NotJudged (or FAILED), and the
// table must say first that it is not judged.
func checkNotJudged(t *testing.T, table string) {
	t.Helper()
	first, _, _ := strings.Cut(table, "\n")
	if !strings.Contains(first, "not judged against the targets") {
		t.Errorf("the table does not start by saying it is not judged:\n%s", table)
	}
	rows := tableRows(t, table)
	if len(rows) == 0 {
		t.Fatalf("no rows in:\n%s", table)
	}
	for _, r := range rows {
		if target, met := r[6], r[7]; target != "—" || (met != NotJudged && met != "FAILED") {
			t.Errorf("%s workers=%s: target %q, met %q; want \"—\" and %q", r[0], r[1], target, met, NotJudged)
		}
	}
	if strings.Contains(table, "≤") || strings.Contains(table, "| yes |") || strings.Contains(table, "| no: ") {
		t.Errorf("the table shows a target or a verdict:\n%s", table)
	}
}

// judgeableOutcomes miss or meet every kind of bound, so a table that
// judged them would say so.
func judgeableOutcomes(t *testing.T) []Outcome {
	t.Helper()
	w8, _ := LookupWorkload("W8")
	return []Outcome{
		outcome(t, "W1", Faio, 2, ns(200)),
		outcome(t, "W1", Goroutines, 2, ns(500)),
		outcome(t, "W1", Faio, 1, ns(300)),
		outcome(t, "W1", Goroutines, 1, ns(400)),
		outcome(t, "W5", Faio, 2, withP99(ns(1000), 2*time.Millisecond)),
		outcome(t, "W5", Goroutines, 2, withP99(ns(1000), 30*time.Millisecond)),
		outcome(t, "W6d", Faio, 2, withIOWQ(withThreads(ns(900), 22), 6)),
		outcome(t, "W6d", Goroutines, 2, withThreads(ns(1000), 70)),
		{Workload: w8, Impl: Faio, Workers: 2, Err: errors.New("yields done is 9 | want 10")},
		outcome(t, "W8", Goroutines, 2, ns(100)),
	}
}

func onBackend(m Measurement, backend string) Measurement {
	m.Backend = backend
	return m
}

// On the portable backend, W1 ... W8 are judged against PortableTarget
// (the ratio alone), W9 and W10 against nothing; a line before the table
// names the backend, and a failed faio run's row takes the others'.
func TestRenderTablePortable(t *testing.T) {
	p := func(m Measurement) Measurement { return onBackend(m, "portable") }
	w8, _ := LookupWorkload("W8")
	outcomes := []Outcome{
		outcome(t, "W1", Faio, 2, p(ns(700))),
		outcome(t, "W1", Goroutines, 2, ns(500)),
		outcome(t, "W5", Faio, 2, p(withP99(ns(1000), 2*time.Millisecond))),
		outcome(t, "W5", Goroutines, 2, withP99(ns(1000), 30*time.Millisecond)),
		outcome(t, "W6d", Faio, 2, p(withThreads(ns(1600), 22))),
		outcome(t, "W6d", Goroutines, 2, withThreads(ns(1000), 70)),
		{Workload: w8, Impl: Faio, Workers: 2, Err: errors.New("yields done is 9")},
		outcome(t, "W8", Goroutines, 2, ns(100)),
		outcome(t, "W10", Faio, 2, p(withP99(ns(3000), 5*time.Millisecond))),
		outcome(t, "W10", Goroutines, 2, withP99(ns(1000), time.Millisecond)),
	}
	got := RenderTable(outcomes, 2)
	want := strings.Join([]string{
		"faio backend: portable (the faio column and W9's faio-native and faio-adapter ran on it).",
		"",
		"| workload | workers | faio ns/op | goroutines ns/op | faio/goroutines | details | target | met |",
		"|---|---:|---:|---:|---:|---|---|---|",
		"| W1-spawn | 2 | 700.0 | 500.0 | 1.40 |  | ≤ 1.5 | yes |",
		"| W5-timers | 2 | 1000.0 | 1000.0 | 1.00 | faio p99 2.00ms; goroutines p99 30.00ms | ≤ 1.5 | yes |",
		"| W6d-file-read-direct | 2 | 1600.0 | 1000.0 | 1.60 | faio 22 threads; goroutines 70 threads | ≤ 1.5 | no: ratio 1.60 > 1.5 |",
		"| W8-yield | 2 | FAILED | 100.0 | — | faio FAILED: yields done is 9 | ≤ 1.5 | FAILED |",
		"| W10-goroutine-caller | 2 | 3000.0 | 1000.0 | 3.00 | faio p99 5.00ms; goroutines p99 1.00ms | none on portable | — |",
		"",
	}, "\n")
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	// The same runs on io_uring are judged against the usual targets.
	for i := range outcomes {
		if r := outcomes[i].Result; r != nil && r.Backend != "" {
			r.Backend = "io_uring"
		}
	}
	got = RenderTable(outcomes, 2)
	for _, s := range []string{"faio backend: io_uring (", "| ≤ 0.5 | no: ratio 1.40 > 0.5 |", "| ≤ 1.5, p99 ≤ 1ms | no: ratio 3.00 > 1.5; p99 5.00ms > 1ms |"} {
		if !strings.Contains(got, s) {
			t.Errorf("io_uring table lacks %q:\n%s", s, got)
		}
	}
	// An unjudged table names the backend too, after its first line.
	got = RenderUnjudgedTable(outcomes, "Quick run (-quick: a tenth of the sizes)")
	if lines := strings.Split(got, "\n"); len(lines) < 3 || !strings.HasPrefix(lines[2], "faio backend: io_uring (") {
		t.Errorf("unjudged table:\n%s", got)
	}
	checkNotJudged(t, got)
}

func TestRenderUnjudgedTable(t *testing.T) {
	got := RenderUnjudgedTable(judgeableOutcomes(t), "Quick run (-quick: a tenth of the sizes)")
	want := strings.Join([]string{
		"Quick run (-quick: a tenth of the sizes): figures not judged against the targets of bench/WORKLOADS.md.",
		"",
		"| workload | workers | faio ns/op | goroutines ns/op | faio/goroutines | details | target | met |",
		"|---|---:|---:|---:|---:|---|---|---|",
		"| W1-spawn | 2 | 200.0 | 500.0 | 0.40 |  | — | not judged |",
		"| W1-spawn | 1 | 300.0 | 400.0 | 0.75 |  | — | not judged |",
		"| W5-timers | 2 | 1000.0 | 1000.0 | 1.00 | faio p99 2.00ms; goroutines p99 30.00ms | — | not judged |",
		"| W6d-file-read-direct | 2 | 900.0 | 1000.0 | 0.90 | faio 22 threads (6 io-wq); goroutines 70 threads | — | not judged |",
		`| W8-yield | 2 | FAILED | 100.0 | — | faio FAILED: yields done is 9 \| want 10 | — | FAILED |`,
		"",
	}, "\n")
	if got != want {
		t.Errorf("got:\n%s\nwant:\n%s", got, want)
	}
	checkNotJudged(t, got)
}

// A -quick run (or one with -sizes) is not judged; a run at the full sizes
// is, exactly as RenderTable judges it.
func TestQuickRunTableNotJudged(t *testing.T) {
	outcomes := judgeableOutcomes(t)
	checkNotJudged(t, renderTableFor(Options{Quick: true, Sizes: QuickSizes()}, outcomes, 2))
	checkNotJudged(t, renderTableFor(Options{Sizes: tinySizes()}, outcomes, 2))

	full := renderTableFor(Options{Sizes: FullSizes()}, outcomes, 2)
	if want := RenderTable(outcomes, 2); full != want {
		t.Errorf("full run table:\n%s\nwant:\n%s", full, want)
	}
	for _, s := range []string{"| ≤ 0.5 | yes |", "| no: p99 2.00ms > 1ms |", "| no: 22 threads > 8 |"} {
		if !strings.Contains(full, s) {
			t.Errorf("full run table lacks %q:\n%s", s, full)
		}
	}
}

// The program's own -quick table, end to end (at tiny sizes, so it stays
// fast): the runs are reported, nothing is judged.
func TestMainQuickTableNotJudged(t *testing.T) {
	var out, errOut bytes.Buffer
	code := Main([]string{"-quick", "-sizes", sizesArg(t, tinySizes()), "-w", "W1,W8", "-file", t.TempDir() + "/data"}, &out, &errOut)
	t.Log(errOut.String())
	if code != 0 {
		t.Fatalf("Main returned %d\n%s", code, out.String())
	}
	_, table, ok := strings.Cut(out.String(), "\n\n")
	if !ok {
		t.Fatalf("no table after the JSON lines:\n%s", out.String())
	}
	checkNotJudged(t, table)
	var r Runner
	if rows := tableRows(t, table); len(rows) != 2*len(r.WorkersFor(Workloads()[0])) {
		t.Errorf("%d rows, want W1 and W8 at each worker count:\n%s", len(rows), table)
	}
}
