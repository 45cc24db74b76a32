package bench

import (
	"context"
	"fmt"
	"io"
	"os/exec"
	"slices"
	"strings"
	"time"

	"github.com/faio-go/faio"
)

// Impl names one implementation of a workload.
type Impl string

// The two implementations every workload has.
const (
	// Faio runs the workload as faio tasks, with faio's sync, channel,
	// timers and io_uring I/O.
	Faio Impl = "faio"
	// Goroutines runs it the way a Go programmer would without faio:
	// goroutines, sync.WaitGroup and sync.Mutex, Go channels, time.Sleep,
	// os.File and net.
	Goroutines Impl = "goroutines"
)

// Impls lists the implementations in the order they run.
var Impls = []Impl{Faio, Goroutines}

// The implementations of W9, an HTTP/1.1 server: two on faio (the faio
// side of -impl and of the table), two without it (the goroutines side).
const (
	// FaioNative is faiohttp.Server: each connection a faio task.
	FaioNative Impl = "faio-native"
	// FaioAdapter is net/http's http.Server on a faio listener
	// (aio.Listener.NetListener): net/http's goroutines, faio's I/O.
	FaioAdapter Impl = "faio-adapter"
	// NetHTTP is net/http's http.Server on a net listener.
	NetHTTP Impl = "net/http"
	// FastHTTP is github.com/valyala/fasthttp, the fast Go reference.
	FastHTTP Impl = "fasthttp"
)

// Env is what one run of a workload works with.
type Env struct {
	Workers int    // faio workers, or GOMAXPROCS of the goroutine side
	Sizes   Sizes  // how much work
	File    string // the W6/W6d data file
	// Backend is the faio.Config.IOBackend of every faio runtime of the
	// run, and the -backend of the child processes that start runtimes
	// (the W6d runs) unless it is BackendAuto. FAIO_BACKEND, when set,
	// overrides it, as it does for any faio runtime: Main sets the
	// variable to -backend, so the two agree.
	Backend faio.Backend
	// Pinned sets faio.Config.PinnedWorkers in every faio runtime of the
	// run, and -pinned in the child processes that start runtimes.
	Pinned bool
	// InProcess is set in a child process started for an isolated
	// workload (W5, W6d): the workload runs here instead of starting another.
	InProcess bool
	// Self starts this program again with args: the W7 and W9 clients
	// and the isolated W5 and W6d runs are such processes (nil: SelfCommand).
	Self func(ctx context.Context, args ...string) (*exec.Cmd, error)
	// Wrk is the path of wrk, the W9 load generator; "" means the
	// program's own HTTP client (-http-client).
	Wrk string
	// Log receives progress and notes (stderr); it must not be nil.
	Log io.Writer
	// faioStats are the counters of the last faio runtime withRuntime
	// closed in this run, for the per-worker balance of the JSON line.
	faioStats *faio.Stats
}

// Measurement is what a run reports once its result has been validated.
type Measurement struct {
	Ops     int64         // the unit ns_per_op divides by
	Elapsed time.Duration // the timed part of the run
	// Latency (W7, W7c: one round trip, W9: one request) or lateness (W5:
	// actual minus requested sleep) percentiles; HasLatency says whether
	// they were measured.
	HasLatency    bool
	P50, P99, Max time.Duration
	// ServerCPU is the user and system CPU time of the server's process
	// during the timed part (W7, W7c: the client is another process);
	// HasCPU says whether it was measured.
	HasCPU      bool
	ServerCPU   time.Duration
	Client      string  // W9: the load generator, "wrk" or "own"
	Bytes       int64   // bytes read (W6, W6d), for mib_s
	Threads     int     // peak OS threads of the process (W6d)
	IOWQThreads int     // io_uring io-wq workers among them
	RSSMiB      float64 // peak RSS measured by a child process; 0: measure here
	GOMAXPROCS  int     // GOMAXPROCS of the process that ran it; 0: this one
	// Backend is the backend the faio runtime ran on, "io_uring" or
	// "portable" (Stats().Backend); "" on the goroutine side, and for a
	// faio run in this process, where the runner fills it in.
	Backend string
	// Polls and Steals per faio worker (nil for goroutines): how evenly
	// the work spread.
	Polls, Steals []uint64
	// SleepMargin is W5b's margin from the start of the run to the
	// sleepers' deadline: sleep_margin, or twice or four times it
	// where spawning the sleepers took longer (see massWake).
	SleepMargin time.Duration
}

// Workload is one row of WORKLOADS.md with its implementations: faio and
// goroutines, or (W9) a list of its own.
type Workload struct {
	ID   string // "W1", "W6d"
	Name string // "spawn"
	Unit string // what one op is
	// AlsoOneWorker: the default run adds workers = 1 (W1, W3, W8).
	AlsoOneWorker bool
	Target        Target
	// setup prepares what both implementations need (the data file), once
	// per process, before the first run; nil if nothing.
	setup func(env *Env) error
	faio  func(env *Env) (Measurement, error)
	gor   func(env *Env) (Measurement, error)
	// impls, when set, replaces faio and gor (W9): the implementations
	// in run order, each on one side.
	impls []implRun
	// body is the response body of an HTTP workload (W9).
	body []byte
}

// implRun is one implementation of a workload. Its side, Faio or
// Goroutines, is the -impl value that selects it and the rule for
// GOMAXPROCS; the first implementation of each side fills that side's
// column of the table.
type implRun struct {
	impl Impl
	side Impl
	run  func(env *Env) (Measurement, error)
}

// variants returns w's implementations in run order.
func (w *Workload) variants() []implRun {
	if w.impls != nil {
		return w.impls
	}
	return []implRun{{Faio, Faio, w.faio}, {Goroutines, Goroutines, w.gor}}
}

// variantsOn returns w's implementations on the given sides (Faio,
// Goroutines), in run order.
func (w *Workload) variantsOn(sides []Impl) []implRun {
	var vs []implRun
	for _, v := range w.variants() {
		if slices.Contains(sides, v.side) {
			vs = append(vs, v)
		}
	}
	return vs
}

// side returns the side (Faio or Goroutines) of w's implementation impl;
// impl itself if w has no such implementation.
func (w *Workload) side(impl Impl) Impl {
	for _, v := range w.variants() {
		if v.impl == impl {
			return v.side
		}
	}
	return impl
}

// primary returns the implementation in side's column of the table: the
// first on that side.
func (w *Workload) primary(side Impl) Impl {
	for _, v := range w.variants() {
		if v.side == side {
			return v.impl
		}
	}
	return side
}

// Label is the workload's name in JSON lines and tables: "W1-spawn".
func (w *Workload) Label() string { return w.ID + "-" + w.Name }

// Setup prepares the workload's shared resources; it returns an error
// wrapping ErrSkip when the workload cannot run on this machine.
func (w *Workload) Setup(env *Env) error {
	if w.setup == nil {
		return nil
	}
	return w.setup(env)
}

// Run runs the workload once with impl and validates the outcome: an error
// means the run failed or its result was wrong.
func (w *Workload) Run(env *Env, impl Impl) (Measurement, error) {
	for _, v := range w.variants() {
		if v.impl == impl {
			return v.run(env)
		}
	}
	return Measurement{}, fmt.Errorf("bench: %s has no implementation %q", w.Label(), impl)
}

// Workloads returns every workload in WORKLOADS.md order.
func Workloads() []*Workload {
	return []*Workload{
		{ID: "W1", Name: "spawn", Unit: "one task spawned + completed", AlsoOneWorker: true,
			Target: Target{MaxRatio: 0.5}, faio: spawnFaio, gor: spawnGoroutines},
		{ID: "W2", Name: "ping-pong", Unit: "one round trip",
			Target: Target{MaxRatio: 0.6}, faio: pingPongFaio, gor: pingPongGoroutines},
		{ID: "W3", Name: "mutex", Unit: "one lock/unlock pair", AlsoOneWorker: true,
			Target: Target{MaxRatio: 0.6}, faio: mutexFaio, gor: mutexGoroutines},
		{ID: "W4", Name: "mpmc", Unit: "one item delivered",
			Target: Target{MaxRatio: 1.0}, faio: mpmcFaio, gor: mpmcGoroutines},
		{ID: "W5", Name: "timers", Unit: "one timer",
			Target: Target{MaxRatio: 1.05, MaxP99: time.Millisecond}, faio: timersFaio, gor: timersGoroutines},
		{ID: "W5b", Name: "mass-wake", Unit: "one sleeper woken",
			Target: Target{MaxRatio: 1.0, MaxWake: time.Second}, faio: massWakeFaio, gor: massWakeGoroutines},
		{ID: "W6", Name: "file-read", Unit: "one read",
			Target: Target{MaxRatio: 1.0}, setup: setupFileRead, faio: fileReadFaio, gor: fileReadGoroutines},
		{ID: "W6d", Name: "file-read-direct", Unit: "one read",
			Target: Target{MaxRatio: 1.05, MaxThreads: 8}, setup: setupDirectRead, faio: directReadFaio, gor: directReadGoroutines},
		{ID: "W7", Name: "tcp-echo", Unit: "one round trip",
			Target: Target{MaxRatio: 0.77, MaxCPURatio: 0.77, MaxP99: 2 * time.Millisecond}, faio: echoFaio, gor: echoGoroutines},
		{ID: "W7c", Name: "tcp-echo-many", Unit: "one round trip",
			Target: Target{MaxRatio: 0.7, MaxCPURatio: 0.7}, faio: echoManyFaio, gor: echoManyGoroutines},
		{ID: "W8", Name: "yield", Unit: "one yield", AlsoOneWorker: true,
			Target: Target{MaxRatio: 0.6}, faio: yieldFaio, gor: yieldGoroutines},
		httpWorkload("http-hello", helloBody),
		httpWorkload("http-16k", body16k),
		{ID: "W10", Name: "goroutine-caller", Unit: "one round trip",
			Target: Target{MaxRatio: 1.5, MaxP99: time.Millisecond}, faio: callerFaio, gor: callerGoroutines},
	}
}

// LookupWorkload finds a workload by id ("W3", "w3"), label ("W3-mutex")
// or name ("mutex"), ignoring case. W9's two workloads share the id: "W9"
// finds the first, W9-http-hello.
func LookupWorkload(name string) (*Workload, bool) {
	for _, w := range Workloads() {
		if w.matches(name) {
			return w, true
		}
	}
	return nil, false
}

// matches reports whether name is w's id, label or name, ignoring case.
func (w *Workload) matches(name string) bool {
	return strings.EqualFold(name, w.ID) || strings.EqualFold(name, w.Label()) || strings.EqualFold(name, w.Name)
}

// SkipError is returned by Setup when a workload cannot run on this machine
// (O_DIRECT on a file system without it): the workload is left out with a
// note, which is not a failure.
type SkipError struct {
	Reason string
}

// Error says that the workload was skipped, and why.
func (e *SkipError) Error() string { return "skipped: " + e.Reason }
