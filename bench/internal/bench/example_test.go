package bench_test

import (
	"fmt"
	"io"
	"time"

	"github.com/faio-go/faio/bench/internal/bench"
)

// One measured configuration becomes one JSON line in the format of
// WORKLOADS.md.
func ExampleResult_JSONLine() {
	w, _ := bench.LookupWorkload("W1")
	r := bench.NewResult(w, bench.Faio, 2, bench.Measurement{
		Ops:        1_000_000,
		Elapsed:    123_400 * time.Microsecond,
		GOMAXPROCS: 2,
	})
	fmt.Println(r.JSONLine())
	// Output:
	// {"workload":"W1-spawn","impl":"faio","workers":2,"ops":1000000,"ns_per_op":123.4,"secs":0.1234,"gomaxprocs":2}
}

// The table puts both implementations of a configuration on one row and
// judges the target of WORKLOADS.md on the rows with as many workers as
// CPUs.
func ExampleRenderTable() {
	w, _ := bench.LookupWorkload("W3")
	var outcomes []bench.Outcome
	for _, run := range []struct {
		impl    bench.Impl
		workers int
		elapsed time.Duration
	}{
		{bench.Faio, 2, 30 * time.Millisecond},
		{bench.Goroutines, 2, 60 * time.Millisecond},
		{bench.Faio, 1, 25 * time.Millisecond},
		{bench.Goroutines, 1, 20 * time.Millisecond},
	} {
		r := bench.NewResult(w, run.impl, run.workers, bench.Measurement{Ops: 1_000_000, Elapsed: run.elapsed})
		outcomes = append(outcomes, bench.Outcome{Workload: w, Impl: run.impl, Workers: run.workers, Result: &r})
	}
	fmt.Print(bench.RenderTable(outcomes, 2))
	// Output:
	// | workload | workers | faio ns/op | goroutines ns/op | faio/goroutines | details | target | met |
	// |---|---:|---:|---:|---:|---|---|---|
	// | W3-mutex | 2 | 30.0 | 60.0 | 0.50 |  | ≤ 0.6 | yes |
	// | W3-mutex | 1 | 25.0 | 20.0 | 1.25 |  | — | — |
}

// The command line selects workloads, worker counts and implementations;
// workloads run in the order of WORKLOADS.md.
func ExampleParseArgs() {
	o, err := bench.ParseArgs([]string{"-w", "mutex,W1", "-workers", "2", "-impl", "faio", "-quick"}, io.Discard)
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, w := range o.Workloads {
		fmt.Println(w.Label(), o.Workers, o.Impls, o.Sizes.MutexTasks*o.Sizes.MutexIters)
	}
	// Output:
	// W1-spawn [2] [faio] 100000
	// W3-mutex [2] [faio] 100000
}
