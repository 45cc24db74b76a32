package bench

import (
	"bufio"
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	goruntime "runtime"
	"runtime/debug"
	"runtime/pprof"
	"slices"
	"time"
)

// Outcome is what became of one configuration (workload, implementation,
// workers): a Result, a failure, or a skip.
type Outcome struct {
	Workload *Workload
	Impl     Impl
	Workers  int
	Result   *Result // set when the run succeeded and validated
	Err      error   // set when it failed (validation errors wrap ErrValidation)
	Skip     string  // set when it cannot run on this machine: why
	Pass     int     // which pass of Runner.Runs it belongs to, from 0
}

// Runner runs workloads and prints a JSON line per successful
// configuration.
type Runner struct {
	Workloads []*Workload
	// Workers lists the worker counts of every workload; nil means the
	// counts of WORKLOADS.md: the number of CPUs, and 1 as well for the
	// workloads marked AlsoOneWorker.
	Workers []int
	// Impls are the sides to run, Faio and Goroutines: each workload
	// runs its implementations on them (W9 has two on each).
	Impls []Impl
	// Env is the template of every run's environment (Workers is set per
	// run); its Log also receives the progress lines (nil: discarded).
	Env Env
	// Runs is how many passes over every configuration Run makes, one
	// after another (0 means 1), so that a pass's faio and goroutine runs
	// are same-run pairs. The first pass runs in this process; each later
	// one runs in a process of its own, started with Env.Self and
	// PassArgs, so that it starts as fresh as the first: a process keeps
	// what earlier runs left (Go never frees a goroutine's descriptor, and
	// after W5b's million sleepers the collector walks a million dead
	// ones, which slowed a later W1 by half).
	Runs int
	// PassArgs is the command line of a later pass (see Runs): the
	// program's own arguments, which select the same configurations. Run
	// adds -runs 1, -json-only and an empty -cpuprofile (a profile covers
	// the first pass; a later pass writing the same file would clobber
	// it) and reads the JSON lines it prints.
	PassArgs []string
	// GoroutinesFirst runs each configuration's goroutine side before its
	// faio side. Run sets it for every other later pass (the second, the
	// fourth, ...), so that whatever the first side of a pair leaves for
	// the second (dead goroutines to reuse, warm caches) favours neither
	// side in every pass.
	GoroutinesFirst bool
	// Out receives the JSON lines (nil: discarded).
	Out io.Writer
	// Progress turns on a line on Env.Log before and after every run.
	Progress bool
	// Timeout bounds each run (0: no bound); when one overruns,
	// OnTimeout is called with the run's description, from another
	// goroutine, while the run goes on.
	Timeout   time.Duration
	OnTimeout func(run string)
}

// WorkersFor returns the worker counts w runs with.
func (r *Runner) WorkersFor(w *Workload) []int {
	if r.Workers != nil {
		return r.Workers
	}
	n := goruntime.NumCPU()
	if w.AlsoOneWorker && n != 1 {
		return []int{n, 1}
	}
	return []int{n}
}

// Run runs every configuration, in order: per pass (Runs of them), per
// workload, per worker count, per implementation (those of the workload on
// the sides in Impls; every other later pass has the goroutine side's
// first, see GoroutinesFirst). A workload's Setup runs once, before its first run
// in this process.
func (r *Runner) Run() []Outcome {
	if r.Env.Log == nil {
		r.Env.Log = io.Discard
	}
	if r.Out == nil {
		r.Out = io.Discard
	}
	first := r.runPass()
	outcomes := first
	for pass := 1; pass < r.Runs; pass++ {
		outcomes = append(outcomes, r.runChildPass(pass, first)...)
	}
	return outcomes
}

// runPass runs every configuration once, in this process.
func (r *Runner) runPass() []Outcome {
	total := 0
	for _, w := range r.Workloads {
		total += len(r.WorkersFor(w)) * len(w.variantsOn(r.Impls))
	}
	var outcomes []Outcome
	k := 0
	for _, w := range r.Workloads {
		env := r.Env
		setupErr := w.Setup(&env)
		var skip *SkipError
		switch {
		case errors.As(setupErr, &skip):
			fmt.Fprintf(r.Env.Log, "faio-bench: %s %v\n", w.Label(), setupErr)
		case setupErr != nil:
			fmt.Fprintf(r.Env.Log, "faio-bench: %s setup FAILED: %v\n", w.Label(), setupErr)
		}
		for _, workers := range r.WorkersFor(w) {
			for _, v := range r.order(w.variantsOn(r.Impls)) {
				k++
				o := Outcome{Workload: w, Impl: v.impl, Workers: workers}
				switch {
				case skip != nil:
					o.Skip = skip.Reason
				case setupErr != nil:
					o.Err = setupErr
				default:
					o = r.runOne(env, o, fmt.Sprintf("[%d/%d] %s %s workers=%d", k, total, w.Label(), v.impl, workers))
				}
				outcomes = append(outcomes, o)
			}
		}
	}
	return outcomes
}

// order returns vs, a workload's implementations in the order its
// runs are made: as listed, or with GoroutinesFirst the goroutine side's
// first, each side's in its listed order.
func (r *Runner) order(vs []implRun) []implRun {
	if r.GoroutinesFirst {
		slices.SortStableFunc(vs, func(a, b implRun) int {
			return cmp.Compare(sideRank(a.side), sideRank(b.side))
		})
	}
	return vs
}

func sideRank(side Impl) int {
	if side == Goroutines {
		return 0
	}
	return 1
}

// runChildPass runs pass number pass (from 0) in a process of its own and
// returns its outcomes, one per configuration of first (the first pass's),
// in the same order. Its JSON lines go to Out as they come and its
// progress to Env.Log. A configuration the first pass skipped is skipped;
// one the process printed no line for failed (the process said why on
// Env.Log).
func (r *Runner) runChildPass(pass int, first []Outcome) []Outcome {
	fmt.Fprintf(r.Env.Log, "faio-bench: pass %d of %d, in a process of its own\n", pass+1, r.Runs)
	results := map[string]Result{}
	runErr := r.runPassProcess(pass, func(res Result) { results[resultKey(res.Workload, res.Impl, res.Workers)] = res })
	outcomes := make([]Outcome, len(first))
	for i, f := range first {
		o := Outcome{Workload: f.Workload, Impl: f.Impl, Workers: f.Workers, Pass: pass}
		if res, ok := results[resultKey(f.Workload.Label(), f.Impl, f.Workers)]; ok {
			o.Result = &res
		} else if f.Skip != "" {
			o.Skip = f.Skip
		} else {
			why := "it printed no result for this configuration"
			if runErr != nil {
				why += fmt.Sprintf(" (%v)", runErr)
			}
			o.Err = fmt.Errorf("bench: pass %d ran in a process of its own: %s", pass+1, why)
		}
		outcomes[i] = o
	}
	return outcomes
}

func resultKey(label string, impl Impl, workers int) string {
	return fmt.Sprintf("%s/%s/%d", label, impl, workers)
}

// runPassProcess runs the program for a later pass (see PassArgs),
// copies each JSON line it prints to Out and hands it to got, and returns
// how the process ended.
func (r *Runner) runPassProcess(pass int, got func(Result)) error {
	args := append(slices.Clip(r.PassArgs), "-runs", "1", "-json-only", "-cpuprofile", "")
	if pass%2 == 1 && !r.GoroutinesFirst {
		args = append(args, "-goroutines-first")
	}
	cmd, err := r.Env.start(context.Background(), args...)
	if err != nil {
		return err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	cmd.Stderr = r.Env.Log
	if err := cmd.Start(); err != nil {
		return err
	}
	sc := bufio.NewScanner(stdout)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		line := sc.Bytes()
		if len(line) == 0 || line[0] != '{' {
			continue
		}
		fmt.Fprintf(r.Out, "%s\n", line)
		var res Result
		if err := json.Unmarshal(line, &res); err != nil {
			fmt.Fprintf(r.Env.Log, "faio-bench: a line of the pass that is not a result: %v\n", err)
			continue
		}
		got(res)
	}
	return cmd.Wait()
}

// runOne runs one configuration with a clean heap, an implementation on
// the goroutine side with GOMAXPROCS equal to its worker count, and prints
// its JSON line.
func (r *Runner) runOne(env Env, o Outcome, desc string) Outcome {
	env.Workers = o.Workers
	if r.Progress {
		fmt.Fprintf(r.Env.Log, "faio-bench: %s ...\n", desc)
	}
	// Garbage of earlier runs is collected now, not during this one, and
	// the peak RSS counts this run only.
	debug.FreeOSMemory()
	rssOK := resetPeakRSS() == nil
	// Both sides run on as many Ps as workers: faio's workers are
	// goroutines too (a runtime's default Workers is GOMAXPROCS), and a
	// faio runtime of 1 worker on 2 Ps would get a second CPU for the
	// collector, its timers and BlockOn's caller that the goroutine side
	// at GOMAXPROCS 1 does not have.
	procs := o.Workers
	old := goruntime.GOMAXPROCS(procs)
	defer goruntime.GOMAXPROCS(old)
	var watchdog *time.Timer
	if r.Timeout > 0 && r.OnTimeout != nil {
		watchdog = time.AfterFunc(r.Timeout, func() { r.OnTimeout(desc) })
	}
	start := time.Now()
	m, err := o.Workload.Run(&env, o.Impl)
	wall := time.Since(start)
	if watchdog != nil {
		watchdog.Stop()
	}
	if err != nil {
		o.Err = err
		fmt.Fprintf(r.Env.Log, "faio-bench: %s FAILED: %v\n", desc, err)
		return o
	}
	if m.RSSMiB == 0 && rssOK {
		m.RSSMiB, _ = peakRSSMiB()
	}
	if m.GOMAXPROCS == 0 {
		m.GOMAXPROCS = procs
	}
	if st := env.faioStats; st != nil && m.Backend == "" && o.Workload.side(o.Impl) == Faio {
		m.Backend = st.Backend.String()
	}
	if st := env.faioStats; st != nil && m.Polls == nil {
		for _, w := range st.PerWorker {
			m.Polls = append(m.Polls, w.Polls)
			m.Steals = append(m.Steals, w.Steals)
		}
	}
	res := NewResult(o.Workload, o.Impl, o.Workers, m)
	res.Pinned = env.Pinned && o.Workload.side(o.Impl) == Faio
	if off := SchedLineOffset(); off >= 0 {
		res.SchedOffset = &off
	}
	o.Result = &res
	fmt.Fprintln(r.Out, res.JSONLine())
	if r.Progress {
		fmt.Fprintf(r.Env.Log, "faio-bench: %s: %.1f ns/op, %.2fs\n", desc, res.NsPerOp, wall.Seconds())
	}
	return o
}

// exitOnTimeout is the program's OnTimeout: a hung run (a lost wake-up,
// a deadlock) ends the program with the goroutine stacks on stderr rather
// than hanging a CI job.
func exitOnTimeout(log io.Writer, limit time.Duration) func(string) {
	return func(desc string) {
		fmt.Fprintf(log, "faio-bench: %s did not finish within %v; goroutines:\n", desc, limit)
		pprof.Lookup("goroutine").WriteTo(log, 1)
		os.Exit(3)
	}
}
