package bench

import (
	"bytes"
	"errors"
	"fmt"
	goruntime "runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// expectedOps is the op count of each workload at sizes s.
func expectedOps(id string, s Sizes) int64 {
	switch id {
	case "W1":
		return int64(s.Spawns)
	case "W2":
		return int64(s.PingPongs)
	case "W3":
		return int64(s.MutexTasks * s.MutexIters)
	case "W4":
		return int64(s.Producers * s.ItemsPerProducer)
	case "W5":
		return int64(s.Timers)
	case "W5b":
		return int64(s.Sleepers)
	case "W6":
		return int64(s.Reads)
	case "W6d":
		return int64(s.DirectReads)
	case "W7":
		return int64(s.Conns * s.Trips)
	case "W7c":
		return int64(s.ManyConns * s.ManyTrips)
	case "W8":
		return int64(s.YieldTasks * s.Yields)
	case "W9": // with the own client; wrk's count is its own
		return int64(s.HTTPConns * s.HTTPRequests)
	case "W10":
		return int64(s.Trips)
	}
	return -1
}

// Every workload, every implementation, the default worker counts, through
// the whole program: the W7 and W9 clients and the W5 and W6d children are
// processes of this test binary. Each run must validate and print a JSON
// line with the figures its workload promises.
func TestMainRunsEveryWorkload(t *testing.T) {
	s := tinySizes()
	procs := goruntime.GOMAXPROCS(0)
	var out, errOut bytes.Buffer
	code := Main([]string{"-sizes", sizesArg(t, s), "-file", t.TempDir() + "/data", "-http-client", "own"}, &out, &errOut)
	t.Log(errOut.String())
	if code != 0 {
		t.Fatalf("Main returned %d\n%s", code, out.String())
	}
	if got := goruntime.GOMAXPROCS(0); got != procs {
		t.Errorf("GOMAXPROCS is %d after the run, was %d", got, procs)
	}

	results := jsonLines(t, &out)
	byKey := map[string]Result{}
	for _, r := range results {
		byKey[fmt.Sprintf("%s/%s/%d", r.Workload, r.Impl, r.Workers)] = r
	}
	directSkipped := strings.Contains(errOut.String(), "W6d-file-read-direct skipped")
	runner := Runner{}
	want := 0
	for _, w := range Workloads() {
		if w.ID == "W6d" && directSkipped {
			t.Log("W6d skipped: no O_DIRECT here")
			continue
		}
		for _, workers := range runner.WorkersFor(w) {
			for _, v := range w.variants() {
				want++
				key := fmt.Sprintf("%s/%s/%d", w.Label(), v.impl, workers)
				r, ok := byKey[key]
				if !ok {
					t.Errorf("no result for %s", key)
					continue
				}
				checkResult(t, w, v.impl, workers, r, s)
			}
		}
	}
	if len(results) != want {
		t.Errorf("%d JSON lines, want %d", len(results), want)
	}
	if !strings.Contains(out.String(), "| workload | workers | faio ns/op |") {
		t.Errorf("no table in the output:\n%s", out.String())
	}
}

// checkResult checks the fields one configuration's result must have.
func checkResult(t *testing.T, w *Workload, impl Impl, workers int, r Result, s Sizes) {
	t.Helper()
	key := fmt.Sprintf("%s/%s/%d", w.Label(), impl, workers)
	if r.Ops != expectedOps(w.ID, s) {
		t.Errorf("%s: ops %d, want %d", key, r.Ops, expectedOps(w.ID, s))
	}
	if r.NsPerOp <= 0 || r.Secs <= 0 {
		t.Errorf("%s: ns_per_op %v, secs %v", key, r.NsPerOp, r.Secs)
	}
	if w.side(impl) == Goroutines && r.GOMAXPROCS != workers {
		t.Errorf("%s: gomaxprocs %d, want the worker count", key, r.GOMAXPROCS)
	}
	if (w.ID == "W9") != (r.Client != "") {
		t.Errorf("%s: client %q", key, r.Client)
	}
	isEcho := w.ID == "W7" || w.ID == "W7c"
	hasLatency := w.ID == "W5" || w.ID == "W5b" || isEcho || w.ID == "W9" || w.ID == "W10"
	if (r.P99us != nil) != hasLatency || (r.P50us != nil) != hasLatency {
		t.Errorf("%s: p50/p99 present %v, want %v", key, r.P99us != nil, hasLatency)
	}
	if (r.ServerCPUus != nil) != isEcho || isEcho && *r.ServerCPUus <= 0 {
		t.Errorf("%s: server_cpu_us %v, want a positive figure: %v", key, r.ServerCPUus, isEcho)
	}
	if hasLatency && (*r.P50us > *r.P99us || *r.P99us > *r.MaxUs) {
		t.Errorf("%s: p50 %v, p99 %v, max %v out of order", key, *r.P50us, *r.P99us, *r.MaxUs)
	}
	if isRead := w.ID == "W6" || w.ID == "W6d"; isRead != (r.IOPS > 0 && r.MiBs > 0) {
		t.Errorf("%s: iops %v, mib_s %v", key, r.IOPS, r.MiBs)
	}
	if (w.ID == "W5b") != (r.SleepMarginS >= s.SleepMargin.Seconds()) {
		t.Errorf("%s: sleep_margin_s %v with sleep_margin %v", key, r.SleepMarginS, s.SleepMargin)
	}
	if (w.ID == "W6d") != (r.Threads > 0 && r.IOWQThreads != nil) {
		t.Errorf("%s: threads %d, io-wq %v", key, r.Threads, r.IOWQThreads)
	}
	if onFaio := w.side(impl) == Faio; onFaio && r.Backend != "io_uring" && r.Backend != "portable" || !onFaio && r.Backend != "" {
		t.Errorf("%s: backend %q", key, r.Backend)
	}
}

// W6d in the process itself, as a child runs it.
func TestDirectReadInProcess(t *testing.T) {
	env := tinyEnv(t, 2)
	env.InProcess = true
	w, _ := LookupWorkload("W6d")
	var skip *SkipError
	if err := w.Setup(env); errors.As(err, &skip) {
		t.Skip(err)
	} else if err != nil {
		t.Fatal(err)
	}
	for _, impl := range Impls {
		m, err := w.Run(env, impl)
		if err != nil {
			t.Fatalf("%s: %v", impl, err)
		}
		if m.Ops != int64(env.Sizes.DirectReads) || m.Threads <= 0 || m.Bytes != m.Ops*int64(env.Sizes.BlockSize) {
			t.Errorf("%s: %+v", impl, m)
		}
	}
}

// fakeWorkload is a workload whose implementations the test supplies.
func fakeWorkload(setup func(*Env) error, faio, gor func(*Env) (Measurement, error)) *Workload {
	return &Workload{ID: "WT", Name: "fake", Unit: "one op", Target: Target{MaxRatio: 1},
		setup: setup, faio: faio, gor: gor}
}

func okRun(*Env) (Measurement, error) {
	return Measurement{Ops: 10, Elapsed: time.Microsecond}, nil
}

// A run that fails validation prints no JSON line, shows in the table as
// failed and makes the exit code 1; the other implementation still runs.
func TestRunnerReportsFailure(t *testing.T) {
	bad := func(*Env) (Measurement, error) {
		return Measurement{}, fmt.Errorf("%w: counter is 3, want 4", ErrValidation)
	}
	var out bytes.Buffer
	r := &Runner{Workloads: []*Workload{fakeWorkload(nil, bad, okRun)}, Workers: []int{2},
		Impls: Impls, Env: Env{Log: testLog{t}}, Out: &out}
	outcomes := r.Run()
	if len(outcomes) != 2 || !errors.Is(outcomes[0].Err, ErrValidation) || outcomes[1].Result == nil {
		t.Fatalf("outcomes %+v", outcomes)
	}
	if lines := jsonLines(t, &out); len(lines) != 1 || lines[0].Impl != Goroutines {
		t.Errorf("JSON lines %+v, want the goroutine run's only", lines)
	}
	if exitCode(outcomes) != 1 {
		t.Error("exit code 0 after a failed run")
	}
	table := RenderTable(outcomes, 2)
	if !strings.Contains(table, "| WT-fake | 2 | FAILED | 100.0 | — |") || !strings.Contains(table, "counter is 3, want 4") {
		t.Errorf("table:\n%s", table)
	}
}

// A workload whose setup says it cannot run here is skipped, which is not a
// failure; a setup error fails every configuration of the workload.
func TestRunnerSetupSkipAndFailure(t *testing.T) {
	for _, tc := range []struct {
		name     string
		setupErr error
		skip     bool
	}{
		{"skip", &SkipError{Reason: "no O_DIRECT on tmpfs"}, true},
		{"failure", errors.New("disk full"), false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var ran atomic.Int32
			run := func(*Env) (Measurement, error) { ran.Add(1); return okRun(nil) }
			var out bytes.Buffer
			r := &Runner{Workloads: []*Workload{fakeWorkload(func(*Env) error { return tc.setupErr }, run, run)},
				Workers: []int{1, 2}, Impls: Impls, Env: Env{Log: testLog{t}}, Out: &out}
			outcomes := r.Run()
			if ran.Load() != 0 || out.Len() != 0 || len(outcomes) != 4 {
				t.Fatalf("ran %d, out %q, outcomes %+v", ran.Load(), out.String(), outcomes)
			}
			for _, o := range outcomes {
				if tc.skip && (o.Skip != "no O_DIRECT on tmpfs" || o.Err != nil) || !tc.skip && !errors.Is(o.Err, tc.setupErr) {
					t.Errorf("outcome %+v", o)
				}
			}
			if want := map[bool]int{true: 0, false: 1}[tc.skip]; exitCode(outcomes) != want {
				t.Errorf("exit code %d, want %d", exitCode(outcomes), want)
			}
		})
	}
}

// A run that overruns the time limit is reported while it still runs.
func TestRunnerTimeout(t *testing.T) {
	slow := func(*Env) (Measurement, error) {
		time.Sleep(100 * time.Millisecond)
		return okRun(nil)
	}
	fired := make(chan string, 2)
	r := &Runner{Workloads: []*Workload{fakeWorkload(nil, slow, okRun)}, Workers: []int{1},
		Impls: Impls, Env: Env{Log: testLog{t}}, Out: &bytes.Buffer{},
		Timeout: 10 * time.Millisecond, OnTimeout: func(desc string) { fired <- desc }}
	r.Run()
	select {
	case desc := <-fired:
		if desc != "[1/2] WT-fake faio workers=1" {
			t.Errorf("timeout reported for %q, want the faio run", desc)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("no timeout reported")
	}
	if len(fired) != 0 {
		t.Errorf("the fast run was reported too: %q", <-fired)
	}
}

// Both sides run with GOMAXPROCS equal to the worker count, which is
// restored afterwards.
func TestRunnerSetsGOMAXPROCS(t *testing.T) {
	procs := goruntime.GOMAXPROCS(0)
	seen := map[Impl]int{}
	probe := func(impl Impl) func(*Env) (Measurement, error) {
		return func(*Env) (Measurement, error) {
			seen[impl] = goruntime.GOMAXPROCS(0)
			return okRun(nil)
		}
	}
	var out bytes.Buffer
	r := &Runner{Workloads: []*Workload{fakeWorkload(nil, probe(Faio), probe(Goroutines))}, Workers: []int{3},
		Impls: Impls, Env: Env{Log: testLog{t}}, Out: &out}
	outcomes := r.Run()
	if seen[Goroutines] != 3 || seen[Faio] != 3 {
		t.Errorf("GOMAXPROCS seen %v, want 3 on both sides", seen)
	}
	if outcomes[1].Result.GOMAXPROCS != 3 || outcomes[0].Result.GOMAXPROCS != 3 {
		t.Errorf("results %+v %+v", *outcomes[0].Result, *outcomes[1].Result)
	}
	if got := goruntime.GOMAXPROCS(0); got != procs {
		t.Errorf("GOMAXPROCS %d after the run, want %d", got, procs)
	}
}

// The default worker counts are those of WORKLOADS.md.
func TestWorkersFor(t *testing.T) {
	n := goruntime.NumCPU()
	var r Runner
	for _, w := range Workloads() {
		got := r.WorkersFor(w)
		want := []int{n}
		if (w.ID == "W1" || w.ID == "W3" || w.ID == "W8") && n != 1 {
			want = []int{n, 1}
		}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("%s: workers %v, want %v", w.ID, got, want)
		}
	}
	r.Workers = []int{4}
	if got := r.WorkersFor(Workloads()[0]); fmt.Sprint(got) != "[4]" {
		t.Errorf("-workers 4 gave %v", got)
	}
}

// W7c through the runner, at a quick run's connection count (100) and few
// round trips: both servers serve every connection, and each JSON line has
// the round-trip latencies and the server's CPU time per round trip, which
// the table shows with their ratio.
func TestRunnerW7c(t *testing.T) {
	s := tinySizes()
	s.ManyConns, s.ManyTrips = QuickSizes().ManyConns, 20
	w, ok := LookupWorkload("W7c")
	if !ok {
		t.Fatal("no W7c")
	}
	var out bytes.Buffer
	r := &Runner{Workloads: []*Workload{w}, Workers: []int{2}, Impls: Impls,
		Env: Env{Sizes: s, Self: SelfCommand, Log: testLog{t}}, Out: &out}
	outcomes := r.Run()
	results := jsonLines(t, &out)
	if len(results) != 2 || exitCode(outcomes) != 0 {
		t.Fatalf("%d JSON lines, outcomes %+v:\n%s", len(results), outcomes, out.String())
	}
	for _, res := range results {
		if res.Workload != "W7c-tcp-echo-many" || res.Ops != int64(100*20) {
			t.Errorf("%s %s: %d ops, want 2000", res.Workload, res.Impl, res.Ops)
		}
		checkResult(t, w, res.Impl, 2, res, s)
		for _, key := range []string{`"p99_us":`, `"server_cpu_us":`} {
			if line := res.JSONLine(); !strings.Contains(line, key) {
				t.Errorf("%s: no %s in %s", res.Impl, key, line)
			}
		}
	}
	table := RenderUnjudgedTable(outcomes, "Sizes set by -sizes")
	if !strings.Contains(table, "| W7c-tcp-echo-many | 2 |") || !strings.Contains(table, "µs/op; cpu ratio ") {
		t.Errorf("table:\n%s", table)
	}
}
