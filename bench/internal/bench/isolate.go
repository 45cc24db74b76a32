package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/faio-go/faio"
)

// SelfEnv is set to "1" in the environment of every process the program
// starts of itself (the W7 client, isolated W5 and W6d runs). The program does not
// need it; a test binary uses it to act as the program (see TestMain).
const SelfEnv = "FAIO_BENCH_SELF"

// SelfCommand returns a command that runs this executable again with args.
// The child is killed if ctx ends or the parent dies first.
func SelfCommand(ctx context.Context, args ...string) (*exec.Cmd, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, fmt.Errorf("bench: locating this program to start it again: %w", err)
	}
	cmd := exec.CommandContext(ctx, exe, args...)
	cmd.Env = append(os.Environ(), SelfEnv+"=1")
	cmd.SysProcAttr = &syscall.SysProcAttr{Pdeathsig: syscall.SIGKILL}
	return cmd, nil
}

// start starts this program again for env (Env.Self, or SelfCommand when
// it is nil).
func (env *Env) start(ctx context.Context, args ...string) (*exec.Cmd, error) {
	if env.Self == nil {
		return SelfCommand(ctx, args...)
	}
	return env.Self(ctx, args...)
}

// childTimeout bounds a child process when the Env sets no limit.
const childTimeout = 10 * time.Minute

// runIsolated runs one configuration of the workload id in a child process
// (the internal -child flag) and returns the measurement from the JSON line
// it prints.
func runIsolated(env *Env, id string, impl Impl) (Measurement, error) {
	sizes, err := json.Marshal(env.Sizes)
	if err != nil {
		return Measurement{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), childTimeout)
	defer cancel()
	args := []string{"-child", "-w", id, "-impl", string(impl),
		"-workers", strconv.Itoa(env.Workers), "-file", env.File, "-sizes", string(sizes)}
	if env.Backend != faio.BackendAuto {
		// Auto leaves the child to FAIO_BACKEND, inherited, as it
		// leaves this process's runtimes.
		args = append(args, "-backend", env.Backend.String())
	}
	if env.Pinned {
		args = append(args, "-pinned")
	}
	cmd, err := env.start(ctx, args...)
	if err != nil {
		return Measurement{}, err
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, env.Log
	if err := cmd.Run(); err != nil {
		return Measurement{}, fmt.Errorf("bench: %s %s in a child process: %w", id, impl, err)
	}
	r, err := parseChildResult(out.Bytes(), impl)
	if err != nil {
		return Measurement{}, fmt.Errorf("bench: %s %s in a child process: %w", id, impl, err)
	}
	iowq := 0
	if r.IOWQThreads != nil {
		iowq = *r.IOWQThreads
	}
	m := Measurement{
		Ops:         r.Ops,
		IOWQThreads: iowq,
		Elapsed:     r.Elapsed(),
		Threads:     r.Threads,
		RSSMiB:      r.RSSMiB,
		GOMAXPROCS:  r.GOMAXPROCS,
		Backend:     r.Backend,
		Polls:       r.Polls,
		Steals:      r.Steals,
		SleepMargin: secondsDuration(r.SleepMarginS),
	}
	if r.MiBs > 0 { // a read workload (W6d)
		m.Bytes = r.Ops * int64(env.Sizes.BlockSize)
	}
	if r.P50us != nil && r.P99us != nil && r.MaxUs != nil {
		m.HasLatency = true
		m.P50, m.P99, m.Max = microsDuration(*r.P50us), microsDuration(*r.P99us), microsDuration(*r.MaxUs)
	}
	return m, nil
}

// secondsDuration turns a JSON figure in seconds back into a duration.
func secondsDuration(s float64) time.Duration { return time.Duration(math.Round(s * 1e9)) }

// microsDuration turns a JSON figure in µs back into a duration.
func microsDuration(us float64) time.Duration { return time.Duration(math.Round(us * 1e3)) }

// parseChildResult reads the one JSON line a child prints for its one
// configuration.
func parseChildResult(out []byte, impl Impl) (Result, error) {
	lines := strings.Split(strings.TrimSpace(string(out)), "\n")
	if len(lines) != 1 || lines[0] == "" {
		return Result{}, fmt.Errorf("want one result line, got %q", out)
	}
	var r Result
	if err := json.Unmarshal([]byte(lines[0]), &r); err != nil {
		return Result{}, fmt.Errorf("parsing %q: %w", lines[0], err)
	}
	if r.Impl != impl || r.Ops <= 0 {
		return Result{}, fmt.Errorf("unexpected result %q", lines[0])
	}
	return r, nil
}
