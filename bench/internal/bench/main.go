package bench

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	goruntime "runtime"
	"runtime/pprof"
	"time"

	"github.com/faio-go/faio"
)

// Run time limits: far above what a healthy run takes, so only a hang
// reaches them.
const (
	fullRunTimeout  = 15 * time.Minute
	quickRunTimeout = 2 * time.Minute
)

// Main is the faio-bench program: it parses args (without the program
// name), runs what they select, writes JSON lines and the table to stdout
// and progress to stderr, and returns the exit code: 0 on success, 1 if a
// run failed or did not validate, 2 for a bad command line.
func Main(args []string, stdout, stderr io.Writer) int {
	o, err := ParseArgs(args, stderr)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintf(stderr, "faio-bench: %v\n", err)
		return 2
	}
	if err := setBackendEnv(o.Backend); err != nil {
		fmt.Fprintf(stderr, "faio-bench: %v\n", err)
		return 2
	}
	// As with the backend: every runtime of the run, here and in the
	// processes it starts, is pinned or not as o says.
	pinned := "0"
	if o.Pinned {
		pinned = "1"
	}
	if err := os.Setenv(faio.EnvPinned, pinned); err != nil {
		fmt.Fprintf(stderr, "faio-bench: %v\n", err)
		return 2
	}
	if o.Client != "" {
		return clientMain(o, stdout, stderr)
	}
	if o.HTTPLoad != "" {
		return httpClientMain(o, stdout, stderr)
	}
	wrk, err := findWrk(o.HTTPClient, o.Quick)
	if err != nil {
		fmt.Fprintf(stderr, "faio-bench: %v\n", err)
		return 2
	}
	r := &Runner{
		Workloads: o.Workloads,
		Workers:   o.Workers,
		Impls:     o.Impls,
		Env: Env{
			Sizes:     o.Sizes,
			Backend:   o.Backend,
			Pinned:    o.Pinned,
			File:      o.File,
			InProcess: o.Child,
			Self:      SelfCommand,
			Wrk:       wrk,
			Log:       stderr,
		},
		Runs:     o.Runs,
		PassArgs: args,
		// A later pass sets it (runPassProcess).
		GoroutinesFirst: o.GoroutinesFirst,
		Out:             stdout,
		Progress:        !o.Child,
		Timeout:         fullRunTimeout,
	}
	if o.Quick {
		r.Timeout = quickRunTimeout
	}
	r.OnTimeout = exitOnTimeout(stderr, r.Timeout)
	stop, err := startCPUProfile(o.CPUProfile)
	if err != nil {
		fmt.Fprintf(stderr, "faio-bench: %v\n", err)
		return 2
	}
	if onTimeout := r.OnTimeout; o.CPUProfile != "" {
		// A run that hangs is the one whose profile is wanted: write it
		// out before the timeout ends the process.
		r.OnTimeout = func(desc string) {
			if err := stop(); err != nil {
				fmt.Fprintf(stderr, "faio-bench: %v\n", err)
			}
			onTimeout(desc)
		}
	}
	outcomes := r.Run()
	if err := stop(); err != nil {
		fmt.Fprintf(stderr, "faio-bench: %v\n", err)
		return 1
	}
	if !o.JSONOnly && !o.Child {
		fmt.Fprintf(stdout, "\n%s", renderTableFor(o, outcomes, goruntime.NumCPU()))
	}
	return exitCode(outcomes)
}

// startCPUProfile starts a CPU profile written to path (none if path is
// empty) and returns the function that stops it and closes the file.
func startCPUProfile(path string) (stop func() error, err error) {
	if path == "" {
		return func() error { return nil }, nil
	}
	f, err := os.Create(path)
	if err != nil {
		return nil, fmt.Errorf("-cpuprofile: %w", err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		f.Close()
		return nil, fmt.Errorf("-cpuprofile: %w", err)
	}
	return func() error {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			return fmt.Errorf("-cpuprofile: %w", err)
		}
		return nil
	}, nil
}

// setBackendEnv makes FAIO_BACKEND say b before any runtime starts, so
// that every faio runtime of the run uses b: those of this process (the
// variable overrides faio.Config.IOBackend) and those of the processes it
// starts, which inherit the environment. An environment that says b
// already, or says nothing when b is auto, is left alone.
func setBackendEnv(b faio.Backend) error {
	if cur := os.Getenv(EnvBackend); cur == b.String() || (cur == "" && b == faio.BackendAuto) {
		return nil
	}
	return os.Setenv(EnvBackend, b.String())
}

// renderTableFor renders the table of a run with options o. Only a run at
// the full sizes of WORKLOADS.md is judged against the targets (on the rows
// with cpus workers); a -quick run, or one with sizes of its own (-sizes),
// gets a table that says it is not judged.
func renderTableFor(o Options, outcomes []Outcome, cpus int) string {
	switch {
	case o.Quick:
		return RenderUnjudgedTable(outcomes, "Quick run (-quick: a tenth of the sizes)")
	case o.Sizes != FullSizes():
		return RenderUnjudgedTable(outcomes, "Sizes set by -sizes")
	}
	return RenderTable(outcomes, cpus)
}

// exitCode is 1 if any configuration failed (skips are not failures), 0
// otherwise.
func exitCode(outcomes []Outcome) int {
	for _, o := range outcomes {
		if o.Err != nil {
			return 1
		}
	}
	return 0
}

// findWrk returns the path of wrk for the W9 runs, or "" for the program's
// own client: -http-client auto takes wrk if it is on PATH, except in a
// -quick run (whose purpose is to check every response); wrk insists on it.
func findWrk(choice string, quick bool) (string, error) {
	if choice == HTTPClientOwn || (choice == HTTPClientAuto && quick) {
		return "", nil
	}
	path, err := exec.LookPath("wrk")
	if err != nil {
		if choice == HTTPClientWrk {
			return "", fmt.Errorf("-http-client wrk: %w", err)
		}
		return "", nil
	}
	return path, nil
}

// clientMain runs the W7 client process (see RunClientProcess).
func clientMain(o Options, stdout, stderr io.Writer) int {
	ctx, cancel := context.WithTimeout(context.Background(), childTimeout)
	defer cancel()
	if err := RunClientProcess(ctx, o.Client, o.Sizes, os.Stdin, stdout); err != nil {
		fmt.Fprintf(stderr, "faio-bench client: %v\n", err)
		return 1
	}
	return 0
}

// RunClientProcess is the body of a W7 client process (faio-bench's, and
// echo-models'): RunClient against addr with sizes s, with the handshake of
// clientProcess around its timed part (it prints ClientReady on stdout and
// waits for a line, or the end of stdin, and prints ClientDone when the
// timed part is over), then its report on stdout as one JSON line.
func RunClientProcess(ctx context.Context, addr string, s Sizes, stdin io.Reader, stdout io.Writer) error {
	ready := func() error {
		if _, err := fmt.Fprintln(stdout, ClientReady); err != nil {
			return err
		}
		if _, err := bufio.NewReader(stdin).ReadString('\n'); err != nil && err != io.EOF {
			return fmt.Errorf("bench: waiting for %q: %w", ClientGo, err)
		}
		return nil
	}
	done := func() error {
		_, err := fmt.Fprintln(stdout, ClientDone)
		return err
	}
	report, err := RunClient(ctx, addr, s, ready, done)
	if err != nil {
		return err
	}
	return json.NewEncoder(stdout).Encode(report)
}
