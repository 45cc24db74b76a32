package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/faio-go/faio/bench/internal/bench"
	"golang.org/x/sys/unix"
)

// w7Sizes are W7's sizes (bench.FullSizes: 64 connections, 64-byte
// messages) with trips timed round trips per connection.
func w7Sizes(trips int) bench.Sizes {
	s := bench.FullSizes()
	s.Trips = trips
	return s
}

// served is what a server counted: connections accepted, bytes echoed.
type served struct {
	conns int64
	bytes int64
}

// A trial is one run in progress: a server of one variant, in this process,
// against one client process.
type trial struct {
	// ctx ends when the trial fails (fail) or runs out of time. Its end
	// kills the client process and closes the write end of the abort pipe,
	// whose read end every server loop watches: no loop outlives a failed
	// trial.
	ctx     context.Context
	fail    context.CancelCauseFunc
	abort   int // read end of the abort pipe
	trips   int
	timeout time.Duration

	cmd       *exec.Cmd
	stdout    int // read end of the client's stdout, read by the server's loop
	stdin     int // write end of the client's stdin
	clientErr bytes.Buffer

	// enters are the io_uring_enter or epoll_wait counters of the server's
	// threads, read (atomically) at ready and done.
	enters []*atomic.Int64

	// The handshake, fed by clientLines.
	pending     []byte
	ready, done bool
	cpu         [2]time.Duration // at ready and done
	entersAt    [2]int64
	report      []byte
}

// measure runs variant v against a client doing trips round trips per
// connection, within timeout. What the client says on its stderr is part
// of the error if it fails.
func measure(v *variant, trips int, timeout time.Duration) (result, error) {
	timed, cancel := context.WithTimeoutCause(context.Background(), timeout,
		fmt.Errorf("no result within %v (-timeout)", timeout))
	defer cancel()
	ctx, fail := context.WithCancelCause(timed)
	defer fail(nil)
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		return result{}, fmt.Errorf("abort pipe: %w", err)
	}
	stop := context.AfterFunc(ctx, func() { unix.Close(p[1]) })
	defer func() {
		if stop() {
			unix.Close(p[1])
		}
		unix.Close(p[0])
	}()
	t := &trial{ctx: ctx, fail: fail, abort: p[0], trips: trips, timeout: timeout, stdout: -1, stdin: -1}

	s, err := v.serve(t)
	if err != nil {
		fail(err) // kills the client if it is still there
	}
	var report bench.ClientReport
	var clientErr error
	if t.cmd != nil {
		report, clientErr = t.waitClient()
	}
	if err := context.Cause(ctx); err != nil {
		return result{}, err // the first failure, or the timeout
	}
	if clientErr != nil {
		return result{}, clientErr
	}
	return t.result(v.name, report, s)
}

// aborted is the error of a server loop that saw the abort pipe end: the
// trial's first failure, or its timeout.
func (t *trial) aborted() error {
	if err := context.Cause(t.ctx); err != nil {
		return err
	}
	return errors.New("the abort pipe ended while the trial runs")
}

// startClient starts the client process against 127.0.0.1:port, with
// pipes of our own as its stdout and stdin: blocking ones, so that a ring's
// read of the stdout waits for data (a non-blocking pipe would fail it with
// EAGAIN).
func (t *trial) startClient(port int) error {
	var out, in [2]int
	if err := unix.Pipe2(out[:], unix.O_CLOEXEC); err != nil {
		return fmt.Errorf("client stdout pipe: %w", err)
	}
	if err := unix.Pipe2(in[:], unix.O_CLOEXEC); err != nil {
		unix.Close(out[0])
		unix.Close(out[1])
		return fmt.Errorf("client stdin pipe: %w", err)
	}
	childOut := os.NewFile(uintptr(out[1]), "client stdout")
	childIn := os.NewFile(uintptr(in[0]), "client stdin")
	defer childOut.Close()
	defer childIn.Close()
	// SelfCommand kills the client when ctx ends, or when the thread that
	// started it exits (Pdeathsig): every locked thread here is unlocked
	// before its goroutine returns, so threads do not exit.
	// The client's own limit is twice the trial's: the trial's ends it
	// (SelfCommand), and a client that gave up first, its connections
	// reset, made a trial that timed out fail with "connection reset by
	// peer" instead (a CI run on a loaded machine, whose timer fired late).
	cmd, err := bench.SelfCommand(t.ctx, "-client", "127.0.0.1:"+strconv.Itoa(port),
		"-trips", strconv.Itoa(t.trips), "-timeout", (2 * t.timeout).String())
	if err == nil {
		cmd.Stdout, cmd.Stdin, cmd.Stderr = childOut, childIn, &t.clientErr
		err = cmd.Start()
	}
	if err != nil {
		unix.Close(out[0])
		unix.Close(in[1])
		return fmt.Errorf("starting the client process: %w", err)
	}
	t.cmd, t.stdout, t.stdin = cmd, out[0], in[1]
	return nil
}

// clientLines takes bytes the client wrote on its stdout: the handshake
// lines and its report.
func (t *trial) clientLines(b []byte) error {
	t.pending = append(t.pending, b...)
	for {
		nl := bytes.IndexByte(t.pending, '\n')
		if nl < 0 {
			return nil
		}
		line := string(t.pending[:nl])
		t.pending = t.pending[nl+1:]
		switch line {
		case bench.ClientReady:
			cpu, err := bench.ProcessCPU()
			if err != nil {
				return err
			}
			t.cpu[0], t.entersAt[0], t.ready = cpu, t.entersSoFar(), true
			if _, err := unix.Write(t.stdin, []byte(bench.ClientGo+"\n")); err != nil {
				return fmt.Errorf("telling the client to go: %w", err)
			}
		case bench.ClientDone:
			cpu, err := bench.ProcessCPU()
			if err != nil {
				return err
			}
			t.cpu[1], t.entersAt[1], t.done = cpu, t.entersSoFar(), t.ready
		default:
			t.report = append(t.report, line...)
		}
	}
}

// addEnters adds a thread's io_uring_enter or epoll_wait counter; call it
// before the client starts.
func (t *trial) addEnters(c *atomic.Int64) { t.enters = append(t.enters, c) }

func (t *trial) entersSoFar() int64 {
	var n int64
	for _, c := range t.enters {
		n += c.Load()
	}
	return n
}

// waitClient ends the client's stdin, waits for the client and decodes
// its report.
func (t *trial) waitClient() (bench.ClientReport, error) {
	unix.Close(t.stdin)
	err := t.cmd.Wait()
	if t.stdout >= 0 {
		unix.Close(t.stdout)
	}
	if err != nil {
		if msg := strings.TrimSpace(t.clientErr.String()); msg != "" {
			return bench.ClientReport{}, fmt.Errorf("client process: %w: %s", err, msg)
		}
		return bench.ClientReport{}, fmt.Errorf("client process: %w", err)
	}
	var r bench.ClientReport
	if err := json.Unmarshal(t.report, &r); err != nil {
		return bench.ClientReport{}, fmt.Errorf("client report %q: %w", t.report, err)
	}
	return r, nil
}

// result checks the client's report and what the server counted against
// W7's sizes (every connection served, every round trip done, every byte,
// warm-up included, echoed once) and makes the result of the trial.
func (t *trial) result(variant string, r bench.ClientReport, s served) (result, error) {
	sizes := w7Sizes(t.trips)
	trips := int64(sizes.Conns) * int64(sizes.Trips)
	var errs []error
	check := func(what string, got, want int64) {
		if got != want {
			errs = append(errs, fmt.Errorf("%s: %d, want %d", what, got, want))
		}
	}
	check("client round trips", r.RoundTrips, trips)
	check("connections served", s.conns, int64(sizes.Conns))
	check("bytes echoed", s.bytes, (trips+int64(sizes.Conns))*int64(sizes.MsgSize))
	if !t.done {
		errs = append(errs, errors.New("the client did not say both ready and done"))
	}
	if err := errors.Join(errs...); err != nil {
		return result{}, err
	}
	rt := float64(r.RoundTrips)
	res := result{
		Variant:     variant,
		RoundTrips:  r.RoundTrips,
		NsPerOp:     float64(r.Nanos) / rt,
		ServerCPUus: float64((t.cpu[1] - t.cpu[0]).Nanoseconds()) / 1e3 / rt,
		P50us:       float64(r.P50Nanos) / 1e3,
		P99us:       float64(r.P99Nanos) / 1e3,
	}
	if len(t.enters) > 0 {
		e := float64(t.entersAt[1]-t.entersAt[0]) / rt
		res.EntersPerRT = &e
	}
	return res, nil
}

// stranded keeps the memory of io_uring threads whose requests could not
// all be cancelled and reaped: the kernel may still write to it, so it must
// stay reachable for the life of the process.
var stranded struct {
	sync.Mutex
	threads []any
}

func strand(th any) {
	stranded.Lock()
	defer stranded.Unlock()
	stranded.threads = append(stranded.threads, th)
}
