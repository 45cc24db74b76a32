package bench

import (
	"encoding/json"
	"fmt"
	"math"
	"time"
)

// Result is one measured configuration, printed as one JSON line in the
// format of WORKLOADS.md. The required fields come first, in this order:
// workload, impl, workers, ops, ns_per_op, secs. The optional ones follow and
// are left out when not measured.
type Result struct {
	Workload string  `json:"workload"`
	Impl     Impl    `json:"impl"`
	Workers  int     `json:"workers"`
	Ops      int64   `json:"ops"`
	NsPerOp  float64 `json:"ns_per_op"`
	Secs     float64 `json:"secs"`
	// W5, W5b: lateness of the sleeps; W7, W7c, W10: round-trip latency;
	// W9: request latency.
	P50us *float64 `json:"p50_us,omitempty"`
	P99us *float64 `json:"p99_us,omitempty"`
	MaxUs *float64 `json:"max_us,omitempty"`
	// W7, W7c: the server process's user and system CPU time during the
	// timed part, per op (round trip), in µs.
	ServerCPUus *float64 `json:"server_cpu_us,omitempty"`
	// W9: the load generator, "wrk" or "own" (the program's own client).
	Client string `json:"client,omitempty"`
	// W6, W6d.
	IOPS float64 `json:"iops,omitempty"`
	MiBs float64 `json:"mib_s,omitempty"`
	// W6d: peak OS threads of the process during the run, and how many
	// of them were io_uring io-wq workers at that moment.
	Threads     int  `json:"threads,omitempty"`
	IOWQThreads *int `json:"iowq_threads,omitempty"`
	// W5b: the margin from the start of the run to the sleepers'
	// deadline, in seconds: sleep_margin, or twice or four times it where
	// spawning took longer.
	SleepMarginS float64 `json:"sleep_margin_s,omitempty"`
	// Peak resident memory during the run (0: not available).
	RSSMiB float64 `json:"rss_mib,omitempty"`
	// GOMAXPROCS while the run ran: the worker count, on both sides.
	GOMAXPROCS int `json:"gomaxprocs"`
	// faio (W9: faio-native, faio-adapter): the backend its runtime ran
	// on, "io_uring" or "portable" (-backend); absent for goroutines.
	Backend string `json:"backend,omitempty"`
	// faio: the runtime had pinned workers (-pinned).
	Pinned bool `json:"pinned,omitempty"`
	// faio: task resumptions and successful steals of each worker, in
	// worker order, so the balance of the run is visible.
	Polls  []uint64 `json:"polls,omitempty"`
	Steals []uint64 `json:"steals,omitempty"`
	// Where runtime.sched starts in its cache line in the executable
	// that ran (see SchedLineOffset); absent when unknown.
	SchedOffset *int `json:"sched_offset,omitempty"`
}

// NewResult turns a validated measurement into its Result, rounding every
// figure to what the measurement can support (0.1 ns per op, 1 µs of wall
// time, 0.1 µs of latency, 0.01 µs of CPU time per op).
func NewResult(w *Workload, impl Impl, workers int, m Measurement) Result {
	secs := m.Elapsed.Seconds()
	r := Result{
		Workload:   w.Label(),
		Impl:       impl,
		Workers:    workers,
		Ops:        m.Ops,
		Secs:       round(secs, 1e6),
		RSSMiB:     round(m.RSSMiB, 10),
		Client:     m.Client,
		Threads:    m.Threads,
		GOMAXPROCS: m.GOMAXPROCS,
		Backend:    m.Backend,
		Polls:      m.Polls,
		Steals:     m.Steals,
	}
	if m.Ops > 0 {
		r.NsPerOp = round(float64(m.Elapsed.Nanoseconds())/float64(m.Ops), 10)
	}
	if m.SleepMargin > 0 {
		r.SleepMarginS = round(m.SleepMargin.Seconds(), 1e3)
	}
	if m.Threads > 0 {
		iowq := m.IOWQThreads
		r.IOWQThreads = &iowq
	}
	if m.HasLatency {
		r.P50us, r.P99us, r.MaxUs = micros(m.P50), micros(m.P99), micros(m.Max)
	}
	if m.HasCPU {
		r.ServerCPUus = cpuPerOp(m.ServerCPU, m.Ops)
	}
	if m.Bytes > 0 && secs > 0 {
		r.IOPS = round(float64(m.Ops)/secs, 1)
		r.MiBs = round(float64(m.Bytes)/(1<<20)/secs, 10)
	}
	return r
}

// JSONLine returns the result as one line of JSON, without the newline.
func (r Result) JSONLine() string {
	b, err := json.Marshal(r)
	if err != nil {
		// Only NaN or infinite floats can fail, and NewResult makes none.
		panic(fmt.Sprintf("bench: encoding %+v: %v", r, err))
	}
	return string(b)
}

// Elapsed returns Secs as a duration.
func (r Result) Elapsed() time.Duration {
	return time.Duration(math.Round(r.Secs * 1e9))
}

// cpuPerOp is CPU time cpu spread over ops ops, in µs rounded to 0.01
// (0 for no ops).
func cpuPerOp(cpu time.Duration, ops int64) *float64 {
	v := 0.0
	if ops > 0 {
		v = round(float64(cpu.Nanoseconds())/1e3/float64(ops), 100)
	}
	return &v
}

func micros(d time.Duration) *float64 {
	v := round(float64(d.Nanoseconds())/1e3, 10)
	return &v
}

// round rounds x to the nearest 1/per.
func round(x, per float64) float64 {
	if math.IsNaN(x) || math.IsInf(x, 0) {
		return 0
	}
	return math.Round(x*per) / per
}
