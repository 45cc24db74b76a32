package bench

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"
)

// -runs 3 runs the selection three times, the first pass in this process
// and each later one in a process of its own, prints every run's JSON
// line, and shows each row's median pass in the table.
func TestMainPasses(t *testing.T) {
	var stdout, stderr bytes.Buffer
	args := []string{"-runs", "3", "-w", "W3,W8", "-workers", "2", "-file", t.TempDir() + "/data", "-sizes", sizesArg(t, tinySizes())}
	if code := Main(args, &stdout, &stderr); code != 0 {
		t.Fatalf("exit code %d, stderr:\n%s", code, stderr.String())
	}
	lines := jsonLines(t, &stdout)
	var got []string
	for _, l := range lines {
		got = append(got, fmt.Sprintf("%s/%s/%d", l.Workload, l.Impl, l.Workers))
	}
	// Pass 2 runs the goroutine side of each pair first.
	pass := "W3-mutex/faio/2 W3-mutex/goroutines/2 W8-yield/faio/2 W8-yield/goroutines/2"
	swapped := "W3-mutex/goroutines/2 W3-mutex/faio/2 W8-yield/goroutines/2 W8-yield/faio/2"
	if want := pass + " " + swapped + " " + pass; strings.Join(got, " ") != want {
		t.Errorf("JSON lines %v, want %s", got, want)
	}
	for _, p := range []string{"pass 2 of 3, in a process of its own", "pass 3 of 3, in a process of its own"} {
		if !strings.Contains(stderr.String(), p) {
			t.Errorf("stderr does not say %q:\n%s", p, stderr.String())
		}
	}
	table := stdout.String()[strings.Index(stdout.String(), "| workload"):]
	if n := strings.Count(table, "ratios of 3 passes: "); n != 2 {
		t.Errorf("%d rows list the ratios of 3 passes:\n%s", n, table)
	}
}

// A later pass's results come from its process's JSON lines, matched to
// the configurations of the first pass; a configuration it printed no line
// for failed, unless the first pass skipped it, and a process that fails
// to run fails every configuration of its pass.
func TestRunnerChildPass(t *testing.T) {
	skipping := fakeWorkload(func(*Env) error { return &SkipError{Reason: "not here"} }, okRun, okRun)
	skipping.ID = "WS"
	line := `{"workload":"WT-fake","impl":"faio","workers":2,"ops":10,"ns_per_op":300,"secs":0.000003,"gomaxprocs":2}`
	for _, tc := range []struct {
		name    string
		command []string
		want    []string // per configuration of pass 2: result ns/op, "skip" or an error's text
	}{
		{"one line", []string{"sh", "-c", "echo '" + line + "'; echo progress >&2; exit 1"},
			[]string{"300", "printed no result for this configuration (exit status 1)", "skip", "skip"}},
		{"no process", []string{"/nonexistent/faio-bench"},
			[]string{"no such file or directory", "no such file or directory", "skip", "skip"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out bytes.Buffer
			var gotArgs []string
			self := func(ctx context.Context, args ...string) (*exec.Cmd, error) {
				gotArgs = args
				return exec.CommandContext(ctx, tc.command[0], tc.command[1:]...), nil
			}
			r := &Runner{Workloads: []*Workload{fakeWorkload(nil, okRun, okRun), skipping}, Workers: []int{2},
				Impls: Impls, Runs: 2, PassArgs: []string{"-runs", "2", "-w", "WT"},
				Env: Env{Log: testLog{t}, Self: self}, Out: &out}
			outcomes := r.Run()
			if strings.Join(gotArgs, " ") != "-runs 2 -w WT -runs 1 -json-only -cpuprofile  -goroutines-first" {
				t.Errorf("pass 2 ran with %q", gotArgs)
			}
			if len(outcomes) != 8 {
				t.Fatalf("%d outcomes: %+v", len(outcomes), outcomes)
			}
			for i, o := range outcomes[4:] {
				var got string
				switch {
				case o.Result != nil:
					got = fmt.Sprint(o.Result.NsPerOp)
				case o.Skip != "":
					got = "skip"
				case o.Err != nil:
					got = o.Err.Error()
				}
				if o.Pass != 1 || o.Workload != outcomes[i].Workload || o.Impl != outcomes[i].Impl || !strings.Contains(got, tc.want[i]) {
					t.Errorf("pass 2, configuration %d: pass %d, %s %s: %q, want %q", i, o.Pass, o.Workload.Label(), o.Impl, got, tc.want[i])
				}
			}
			if tc.name == "one line" && !strings.Contains(out.String(), line) {
				t.Errorf("the pass's JSON line did not reach Out:\n%s", out.String())
			}
		})
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

// A failure of an implementation that has no column (W9's fasthttp) in one
// pass shows that pass and says FAILED, instead of showing it as the
// median pass and judging it.
func TestRenderTablePassesNonPrimaryFailure(t *testing.T) {
	w9, _ := LookupWorkload("W9")
	pass := func(o Outcome, p int) Outcome { o.Pass = p; return o }
	var outcomes []Outcome
	for p, faioNs := range []int64{900, 600, 700} {
		outcomes = append(outcomes,
			pass(outcome(t, "W9", FaioNative, 2, ns(faioNs)), p),
			pass(outcome(t, "W9", FaioAdapter, 2, ns(1500)), p),
			pass(outcome(t, "W9", NetHTTP, 2, ns(1000)), p))
		if p == 1 {
			outcomes = append(outcomes, Outcome{Workload: w9, Impl: FastHTTP, Workers: 2, Err: errors.New("boom"), Pass: p})
		} else {
			outcomes = append(outcomes, pass(outcome(t, "W9", FastHTTP, 2, ns(500)), p))
		}
	}
	got := RenderTable(outcomes, 2)
	want := "| W9-http-hello | 2 | 600.0 | 1000.0 | 0.60 | faio-adapter 1500.0 ns/op; fasthttp FAILED: boom; ratios of 3 passes: 0.90, 0.60, 0.70, a failed pass shown | ≤ 1 | FAILED |"
	if !strings.Contains(got, want) {
		t.Errorf("got:\n%s\nwant the row:\n%s", got, want)
	}
}

// With GoroutinesFirst, a workload's goroutine-side implementations run
// before its faio-side ones, each side's in its listed order.
func TestRunnerGoroutinesFirstOrder(t *testing.T) {
	w9, _ := LookupWorkload("W9")
	for _, tc := range []struct {
		first bool
		want  []Impl
	}{
		{false, []Impl{FaioNative, FaioAdapter, NetHTTP, FastHTTP}},
		{true, []Impl{NetHTTP, FastHTTP, FaioNative, FaioAdapter}},
	} {
		r := &Runner{GoroutinesFirst: tc.first}
		var got []Impl
		for _, v := range r.order(w9.variantsOn(Impls)) {
			got = append(got, v.impl)
		}
		if !slices.Equal(got, tc.want) {
			t.Errorf("GoroutinesFirst %v: order %v, want %v", tc.first, got, tc.want)
		}
	}
}
