package bench

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/faio-go/faio"
)

// Options are the parsed command line of faio-bench.
type Options struct {
	Workloads []*Workload // -w, in WORKLOADS.md order
	Workers   []int       // -workers; nil: the defaults of WORKLOADS.md
	Impls     []Impl      // -impl
	JSONOnly  bool        // -json-only: no table
	Quick     bool        // -quick: a tenth of the sizes
	File      string      // -file, or the default data file for Sizes
	Sizes     Sizes       // FullSizes, QuickSizes, or -sizes
	// HTTPClient is -http-client, the W9 load generator: HTTPClientAuto,
	// HTTPClientWrk or HTTPClientOwn.
	HTTPClient string
	// Backend is -backend, the backend of every faio runtime of the run:
	// faio.BackendAuto, BackendIOUring or BackendPortable. Without the
	// flag it is what FAIO_BACKEND says, or BackendAuto.
	Backend faio.Backend
	// Pinned is -pinned: every faio runtime of the run has pinned workers
	// (faio.Config.PinnedWorkers). Without the flag it is what
	// FAIO_PINNED says ("1" or "0"), or false.
	Pinned bool
	// CPUProfile is -cpuprofile: the file a CPU profile of this process's
	// runs is written to (runtime/pprof), empty for none. Runs in child
	// processes (W6d, W7's client) are not in it.
	CPUProfile string
	// Runs is -runs: how many times the whole selection runs, one pass
	// after another, each after the first in a process of its own (see
	// Runner.Runs), so that the faio and goroutine runs of a pass are
	// same-run pairs; the table shows each row's median pair. Default 1.
	Runs int
	// GoroutinesFirst is -goroutines-first: each configuration runs its
	// goroutine side before its faio side (see Runner.GoroutinesFirst).
	GoroutinesFirst bool

	// Internal flags, for the processes the program starts of itself.
	Client   string // -client ADDR: be the W7 (W7c) client of the server at ADDR
	HTTPLoad string // -http-load ADDR: be the W9 client (of workload -w) of the server at ADDR
	Child    bool   // -child: run the selected configurations here, JSON only
}

// The values of -http-client.
const (
	// HTTPClientAuto uses wrk if it is on PATH, except in a -quick run,
	// which uses the program's own client: it checks every response.
	HTTPClientAuto = "auto"
	// HTTPClientWrk uses wrk, which must be on PATH.
	HTTPClientWrk = "wrk"
	// HTTPClientOwn uses the program's own client, in a process of its
	// own.
	HTTPClientOwn = "own"
)

// EnvBackend is the environment variable by which faio's runtime lets an
// operator choose its backend ("auto", "io_uring" or "portable"); it
// overrides faio.Config.IOBackend. Main sets it to -backend, so that every
// runtime of the run, in this process and in the ones it starts, uses it.
const EnvBackend = "FAIO_BACKEND"

// ErrUsage is wrapped by every error ParseArgs returns for a bad command
// line.
var ErrUsage = errors.New("usage")

// ParseArgs parses the command line (without the program name). Usage text
// and -h output go to output; -h returns flag.ErrHelp.
func ParseArgs(args []string, output io.Writer) (Options, error) {
	fs := flag.NewFlagSet("faio-bench", flag.ContinueOnError)
	fs.SetOutput(output)
	var (
		wFlag       = fs.String("w", "all", "comma-separated workloads to run (W1 ... W10, W5b, W6d, W7c, or their labels or names)")
		workersFlag = fs.String("workers", "", "comma-separated worker counts (default: the number of CPUs, and also 1 for W1, W3, W8)")
		implFlag    = fs.String("impl", "both", "implementation to run: faio, goroutines or both (W9: faio-native and faio-adapter, net/http and fasthttp)")
		sizesFlag   = fs.String("sizes", "", "internal: the sizes as JSON, for child processes")
		backendFlag = fs.String("backend", faio.BackendAuto.String(), "faio's backend for every faio run: auto (io_uring where the kernel allows it, else portable), io_uring or portable (default: $"+EnvBackend+" if set, else auto)")
		o           Options
	)
	fs.BoolVar(&o.Pinned, "pinned", false, "run faio with pinned workers (faio.Config.PinnedWorkers: a thread per worker, tasks placed when spawned and never moved; default: $"+faio.EnvPinned+"=1 if set)")
	fs.StringVar(&o.CPUProfile, "cpuprofile", "", "write a CPU profile of the runs made in this process to this file (go tool pprof); W5, W6d and W7's client run in processes of their own")
	fs.BoolVar(&o.JSONOnly, "json-only", false, "print the JSON lines only, no table")
	fs.BoolVar(&o.Quick, "quick", false, "a tenth of the sizes and a 64 MiB data file (CI smoke run)")
	fs.IntVar(&o.Runs, "runs", 1, "run the whole selection this many times, one pass after another, each after the first in a fresh process (a -cpuprofile covers the first); the table shows each row's pass with the median faio/goroutines ratio and lists every pass's ratio (this machine moves by 1.5x between runs: use 3)")
	fs.StringVar(&o.File, "file", "", "the W6/W6d data file, created once and reused (default: in the temporary directory)")
	fs.StringVar(&o.HTTPClient, "http-client", HTTPClientAuto, "W9 load generator: auto (wrk if on PATH, the own client with -quick), wrk or own")
	fs.StringVar(&o.Client, "client", "", "internal: run as the W7 (or W7c) client of the echo server at this address")
	fs.StringVar(&o.HTTPLoad, "http-load", "", "internal: run as the W9 client (of the one workload -w) of the HTTP server at this address")
	fs.BoolVar(&o.Child, "child", false, "internal: run the selected configurations in this process and print JSON only")
	fs.BoolVar(&o.GoroutinesFirst, "goroutines-first", false, "internal: run each configuration's goroutine side before its faio side (-runs alternates the order from pass to pass)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: faio-bench [flags]\n\nRuns the workloads of bench/WORKLOADS.md with faio and with goroutines, prints a JSON line\nper configuration and a Markdown table comparing them.\n\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return Options{}, err
		}
		return Options{}, fmt.Errorf("%w: %w", ErrUsage, err)
	}
	if fs.NArg() > 0 {
		return Options{}, fmt.Errorf("%w: unexpected arguments %q", ErrUsage, fs.Args())
	}
	var err error
	if o.Workloads, err = parseWorkloads(*wFlag); err != nil {
		return Options{}, err
	}
	if o.Workers, err = parseWorkers(*workersFlag); err != nil {
		return Options{}, err
	}
	if o.Impls, err = parseImpls(*implFlag); err != nil {
		return Options{}, err
	}
	if o.Sizes, err = parseSizes(*sizesFlag, o.Quick); err != nil {
		return Options{}, err
	}
	if o.Backend, err = parseBackend(fs, *backendFlag); err != nil {
		return Options{}, err
	}
	if o.Pinned, err = parsePinned(fs, o.Pinned); err != nil {
		return Options{}, err
	}
	if o.Runs < 1 {
		return Options{}, fmt.Errorf("%w: -runs wants a count of at least 1, got %d", ErrUsage, o.Runs)
	}
	if o.Child && o.Runs != 1 {
		return Options{}, fmt.Errorf("%w: -runs with -child: a child process makes one run", ErrUsage)
	}
	switch o.HTTPClient {
	case HTTPClientAuto, HTTPClientWrk, HTTPClientOwn:
	default:
		return Options{}, fmt.Errorf("%w: -http-client wants auto, wrk or own, got %q", ErrUsage, o.HTTPClient)
	}
	if o.File == "" {
		o.File = DefaultDataFile(o.Sizes.FileSize)
	}
	return o, nil
}

// parseWorkloads resolves a comma list of workload names; "all" (or
// nothing) selects every workload, and an id selects every workload that
// has it (W9: both). The result is in WORKLOADS.md order, without
// duplicates.
func parseWorkloads(list string) ([]*Workload, error) {
	all := Workloads()
	if strings.TrimSpace(list) == "" || strings.EqualFold(strings.TrimSpace(list), "all") {
		return all, nil
	}
	want := map[string]bool{}
	for _, name := range strings.Split(list, ",") {
		name = strings.TrimSpace(name)
		found := false
		for _, w := range all {
			if w.matches(name) {
				want[w.Label()], found = true, true
			}
		}
		if !found {
			return nil, fmt.Errorf("%w: unknown workload %q (want W1 ... W10, W5b, W6d, W7c or all)", ErrUsage, name)
		}
	}
	var ws []*Workload
	for _, w := range all {
		if want[w.Label()] {
			ws = append(ws, w)
		}
	}
	return ws, nil
}

// parseWorkers parses a comma list of positive worker counts; an empty list
// means the defaults (nil).
func parseWorkers(list string) ([]int, error) {
	if strings.TrimSpace(list) == "" {
		return nil, nil
	}
	var ns []int
	seen := map[int]bool{}
	for _, f := range strings.Split(list, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("%w: -workers wants positive integers, got %q", ErrUsage, strings.TrimSpace(f))
		}
		if !seen[n] {
			seen[n] = true
			ns = append(ns, n)
		}
	}
	return ns, nil
}

func parseImpls(s string) ([]Impl, error) {
	switch strings.TrimSpace(s) {
	case "both":
		return []Impl{Faio, Goroutines}, nil
	case string(Faio):
		return []Impl{Faio}, nil
	case string(Goroutines):
		return []Impl{Goroutines}, nil
	}
	return nil, fmt.Errorf("%w: -impl wants faio, goroutines or both, got %q", ErrUsage, s)
}

// parsePinned resolves -pinned: the flag if given, else FAIO_PINNED if
// set ("1" or "0", as the runtime reads it), else false.
func parsePinned(fs *flag.FlagSet, flagValue bool) (bool, error) {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == "pinned" })
	if given {
		return flagValue, nil
	}
	switch v := os.Getenv(faio.EnvPinned); v {
	case "", "0":
		return false, nil
	case "1":
		return true, nil
	default:
		return false, fmt.Errorf("%w: %s=%q, want 1 or 0", ErrUsage, faio.EnvPinned, v)
	}
}

// parseBackend resolves -backend: the flag if given, else FAIO_BACKEND if
// set (the runtime would obey it anyway), else auto.
func parseBackend(fs *flag.FlagSet, value string) (faio.Backend, error) {
	given := false
	fs.Visit(func(f *flag.Flag) { given = given || f.Name == "backend" })
	source := "-backend"
	if env := os.Getenv(EnvBackend); !given && env != "" {
		value, source = env, EnvBackend
	}
	for _, b := range []faio.Backend{faio.BackendAuto, faio.BackendIOUring, faio.BackendPortable} {
		if value == b.String() {
			return b, nil
		}
	}
	return 0, fmt.Errorf("%w: %s wants auto, io_uring or portable, got %q", ErrUsage, source, value)
}

// parseSizes decodes -sizes, which must name every field it sets correctly
// and give sizes that Validate accepts; without it the sizes are FullSizes
// or QuickSizes.
func parseSizes(s string, quick bool) (Sizes, error) {
	if s == "" {
		if quick {
			return QuickSizes(), nil
		}
		return FullSizes(), nil
	}
	dec := json.NewDecoder(bytes.NewReader([]byte(s)))
	dec.DisallowUnknownFields()
	var sz Sizes
	if err := dec.Decode(&sz); err != nil {
		return Sizes{}, fmt.Errorf("%w: -sizes: %w", ErrUsage, err)
	}
	if err := sz.Validate(); err != nil {
		return Sizes{}, fmt.Errorf("%w: -sizes: %w", ErrUsage, err)
	}
	return sz, nil
}
