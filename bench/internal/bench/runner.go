package bench

import (
	"errors"
	"fmt"
	"io"
	"os"
	goruntime "runtime"
	"runtime/debug"
	"runtime/pprof"
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
	// are same-run pairs.
	Runs int
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
// the sides in Impls). A workload's Setup runs once, before its first run.
func (r *Runner) Run() []Outcome {
	if r.Env.Log == nil {
		r.Env.Log = io.Discard
	}
	if r.Out == nil {
		r.Out = io.Discard
	}
	passes := max(r.Runs, 1)
	total := 0
	for _, w := range r.Workloads {
		total += len(r.WorkersFor(w)) * len(w.variantsOn(r.Impls))
	}
	total *= passes
	type setup struct {
		env  Env
		err  error
		skip *SkipError
	}
	setups := make(map[*Workload]*setup)
	var outcomes []Outcome
	k := 0
	for pass := range passes {
		for _, w := range r.Workloads {
			s := setups[w]
			if s == nil {
				s = &setup{env: r.Env}
				s.err = w.Setup(&s.env)
				switch {
				case errors.As(s.err, &s.skip):
					fmt.Fprintf(r.Env.Log, "faio-bench: %s %v\n", w.Label(), s.err)
				case s.err != nil:
					fmt.Fprintf(r.Env.Log, "faio-bench: %s setup FAILED: %v\n", w.Label(), s.err)
				}
				setups[w] = s
			}
			for _, workers := range r.WorkersFor(w) {
				for _, v := range w.variantsOn(r.Impls) {
					k++
					o := Outcome{Workload: w, Impl: v.impl, Workers: workers, Pass: pass}
					switch {
					case s.skip != nil:
						o.Skip = s.skip.Reason
					case s.err != nil:
						o.Err = s.err
					default:
						o = r.runOne(s.env, o, fmt.Sprintf("[%d/%d] %s %s workers=%d", k, total, w.Label(), v.impl, workers))
					}
					outcomes = append(outcomes, o)
				}
			}
		}
	}
	return outcomes
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
	procs := goruntime.GOMAXPROCS(0)
	if o.Workload.side(o.Impl) == Goroutines {
		procs = o.Workers
		old := goruntime.GOMAXPROCS(procs)
		defer goruntime.GOMAXPROCS(old)
	}
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
