package bench

import (
	"bytes"
	"errors"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// -runs 3 runs every configuration three times, pass after pass (faio and
// goroutines of a pass next to each other), sets the workload up once and
// prints a JSON line per run.
func TestRunnerPasses(t *testing.T) {
	var setups, faioRuns, gorRuns atomic.Int32
	var order []string
	faioRun := func(*Env) (Measurement, error) {
		order = append(order, "f")
		return Measurement{Ops: 10, Elapsed: time.Duration(faioRuns.Add(1)) * time.Microsecond}, nil
	}
	gorRun := func(*Env) (Measurement, error) {
		gorRuns.Add(1)
		order = append(order, "g")
		return okRun(nil)
	}
	var out bytes.Buffer
	r := &Runner{Workloads: []*Workload{fakeWorkload(func(*Env) error { setups.Add(1); return nil }, faioRun, gorRun)},
		Workers: []int{2}, Impls: Impls, Runs: 3, Env: Env{Log: testLog{t}}, Out: &out}
	outcomes := r.Run()
	if setups.Load() != 1 || faioRuns.Load() != 3 || gorRuns.Load() != 3 || strings.Join(order, "") != "fgfgfg" {
		t.Fatalf("setups %d, faio runs %d, goroutine runs %d, order %v", setups.Load(), faioRuns.Load(), gorRuns.Load(), order)
	}
	if len(outcomes) != 6 || len(jsonLines(t, &out)) != 6 {
		t.Fatalf("%d outcomes, JSON:\n%s", len(outcomes), out.String())
	}
	for i, o := range outcomes {
		if o.Pass != i/2 {
			t.Errorf("outcome %d is of pass %d", i, o.Pass)
		}
	}
	// faio took 1, 2 and 3 µs against 1 µs: the median pass is the second.
	table := RenderTable(outcomes, 2)
	if !strings.Contains(table, "| WT-fake | 2 | 200.0 | 100.0 | 2.00 | ratios of 3 passes: 1.00, 2.00, 3.00, the median pass shown | ≤ 1 | no: ratio 2.00 > 1 |") {
		t.Errorf("table:\n%s", table)
	}
}

// The table of several passes shows, per row, the one pass whose ratio is
// the median, with all its figures (so that p99 and CPU come from the
// same pair as the ratio) and the judgement made on it; a failed pass is
// shown whatever the others did.
func TestRenderTablePasses(t *testing.T) {
	pass := func(o Outcome, p int) Outcome { o.Pass = p; return o }
	w7 := func(p int, faioNs, faioP99 int64) []Outcome {
		return []Outcome{
			pass(outcome(t, "W7", Faio, 2, withCPU(withP99(ns(faioNs), time.Duration(faioP99)*time.Microsecond), 3*time.Microsecond)), p),
			pass(outcome(t, "W7", Goroutines, 2, withCPU(withP99(ns(1000), 3*time.Millisecond), 4*time.Microsecond)), p),
		}
	}
	var outcomes []Outcome
	outcomes = append(outcomes, w7(0, 900, 100)...)
	outcomes = append(outcomes, w7(1, 600, 3000)...)
	outcomes = append(outcomes, w7(2, 700, 500)...)
	got := RenderTable(outcomes, 2)
	want := "| W7-tcp-echo | 2 | 700.0 | 1000.0 | 0.70 | faio p99 500.0µs, cpu 3.00µs/op; goroutines p99 3.00ms, cpu 4.00µs/op; cpu ratio 0.75; " +
		"ratios of 3 passes: 0.90, 0.60, 0.70, the median pass shown | ≤ 0.77, cpu ≤ 0.77, p99 ≤ 2ms | yes |"
	if !strings.Contains(got, want) {
		t.Errorf("got:\n%s\nwant the row:\n%s", got, want)
	}

	w8, _ := LookupWorkload("W8")
	outcomes = []Outcome{
		pass(outcome(t, "W8", Faio, 2, ns(50)), 0),
		pass(outcome(t, "W8", Goroutines, 2, ns(100)), 0),
		{Workload: w8, Impl: Faio, Workers: 2, Err: errors.New("yields done is 9"), Pass: 1},
		pass(outcome(t, "W8", Goroutines, 2, ns(100)), 1),
	}
	got = RenderTable(outcomes, 2)
	want = "| W8-yield | 2 | FAILED | 100.0 | — | faio FAILED: yields done is 9; ratios of 1 of 2 passes: 0.50 | ≤ 0.6 | FAILED |"
	if !strings.Contains(got, want) {
		t.Errorf("got:\n%s\nwant the row:\n%s", got, want)
	}
}
