package main

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/faio-go/faio/bench/internal/bench"
	"github.com/faio-go/faio/modules/uring"
	"go.uber.org/goleak"
)

// TestMain lets the test binary stand in for the program: the client
// processes a trial starts (bench.SelfCommand) are this binary with
// bench.SelfEnv set, and it then runs the program instead of the tests.
func TestMain(m *testing.M) {
	if os.Getenv(bench.SelfEnv) == "1" {
		os.Exit(run(os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	}
	// Under the race detector a process sleeps a second before it exits
	// (GORACE's atexit_sleep_ms): not the client processes.
	os.Setenv("GORACE", strings.TrimSpace(os.Getenv("GORACE")+" atexit_sleep_ms=0"))
	goleak.VerifyTestMain(m)
}

// tinyTrips keeps a run of W7's 64 connections well under a second, even
// under the race detector.
const tinyTrips = 20

// skipUnsupported skips the test of an io_uring variant where io_uring, or
// the ring flags the variant needs, are not available.
func skipUnsupported(t *testing.T, v *variant) {
	t.Helper()
	if v.uring == nil {
		return
	}
	try := func(flags uint32) error {
		r, err := uring.New(8, &uring.Params{Flags: flags})
		if err == nil {
			r.Close()
		}
		return err
	}
	if err := try(0); err != nil {
		t.Skipf("io_uring unavailable: %v", err)
	}
	if v.uring.flags != 0 {
		if err := try(v.uring.flags); err != nil {
			t.Skipf("the kernel refuses the ring flags %#x (IORING_SETUP_COOP_TASKRUN|TASKRUN_FLAG): %v", v.uring.flags, err)
		}
	}
}

// openFds counts this process's open file descriptors.
func openFds(t *testing.T) int {
	t.Helper()
	fds, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	return len(fds)
}

// TestVariants runs every variant at a tiny size and checks what each run
// reports, and that the runs leave no descriptor open.
func TestVariants(t *testing.T) {
	// A first run opens what the process keeps (Go's netpoller).
	if _, err := measure(lookupVariant("gonet2"), tinyTrips, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	fds := openFds(t)
	want := int64(w7Sizes(tinyTrips).Conns * tinyTrips)
	for i := range variants {
		v := &variants[i]
		t.Run(v.name, func(t *testing.T) {
			skipUnsupported(t, v)
			r, err := measure(v, tinyTrips, 30*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			line, _ := json.Marshal(r)
			t.Logf("%s", line)
			if r.Variant != v.name {
				t.Errorf("variant %q, want %q", r.Variant, v.name)
			}
			if r.RoundTrips != want {
				t.Errorf("round_trips %d, want %d", r.RoundTrips, want)
			}
			if r.ServerCPUus <= 0 || r.NsPerOp <= 0 || r.P50us <= 0 || r.P99us < r.P50us {
				t.Errorf("server_cpu_us %v, ns_per_op %v, p50_us %v, p99_us %v: want them positive, p99 >= p50",
					r.ServerCPUus, r.NsPerOp, r.P50us, r.P99us)
			}
			switch {
			case v.goProcs > 0 && r.EntersPerRT != nil:
				t.Errorf("enters_per_rt %v for a Go net server", *r.EntersPerRT)
			case v.goProcs == 0 && (r.EntersPerRT == nil || *r.EntersPerRT <= 0):
				t.Errorf("enters_per_rt %v, want a positive count", r.EntersPerRT)
			}
		})
	}
	if n := openFds(t); n != fds {
		t.Errorf("%d descriptors open after the runs, %d before", n, fds)
	}
}

// TestTimeout checks that a run that cannot finish in time fails with the
// timeout, soon after it, with every io_uring request reaped.
func TestTimeout(t *testing.T) {
	for _, name := range []string{"single2", "multishot", "uring-poll", "epoll2", "gonet2"} {
		v := lookupVariant(name)
		t.Run(name, func(t *testing.T) {
			skipUnsupported(t, v)
			start := time.Now()
			_, err := measure(v, 1_000_000, 300*time.Millisecond)
			if err == nil || !strings.Contains(err.Error(), "no result within") {
				t.Fatalf("error %v, want the timeout", err)
			}
			if d := time.Since(start); d > 10*time.Second {
				t.Errorf("the run took %v to end after a 300ms timeout", d)
			}
		})
	}
	if n := len(stranded.threads); n > 0 {
		t.Errorf("%d io_uring threads stranded with requests in flight", n)
	}
}

// TestResultChecks checks that a run whose counts are off fails.
func TestResultChecks(t *testing.T) {
	tr := &trial{trips: tinyTrips, ready: true, done: true, cpu: [2]time.Duration{0, time.Millisecond}}
	s := w7Sizes(tinyTrips)
	trips := int64(s.Conns * s.Trips)
	good := bench.ClientReport{RoundTrips: trips, Nanos: 1e6, P50Nanos: 1e3, P99Nanos: 2e3}
	full := served{conns: int64(s.Conns), bytes: (trips + int64(s.Conns)) * int64(s.MsgSize)}
	if _, err := tr.result("x", good, full); err != nil {
		t.Fatalf("right counts: %v", err)
	}
	short := good
	short.RoundTrips--
	for _, c := range []struct {
		what   string
		report bench.ClientReport
		s      served
		done   bool
	}{
		{"client round trips", short, full, true},
		{"connections served", good, served{conns: full.conns - 1, bytes: full.bytes}, true},
		{"bytes echoed", good, served{conns: full.conns, bytes: full.bytes - 1}, true},
		{"ready and done", good, full, false},
	} {
		tr.done = c.done
		if _, err := tr.result("x", c.report, c.s); err == nil || !strings.Contains(err.Error(), c.what) {
			t.Errorf("%s off: error %v", c.what, err)
		}
	}
}

func TestBadCommandLines(t *testing.T) {
	for _, args := range [][]string{
		{"-variant", "nope"},
		{"-variant", "single,"},
		{"-trips", "0"},
		{"-rounds", "0"},
		{"-timeout", "0s"},
		{"-trips", "x"},
		{"extra"},
	} {
		var out, errOut bytes.Buffer
		if code := run(args, strings.NewReader(""), &out, &errOut); code != 2 {
			t.Errorf("%q: exit code %d, want 2", args, code)
		}
		if errOut.Len() == 0 || out.Len() > 0 {
			t.Errorf("%q: stdout %q, stderr %q: want the error on stderr only", args, out.String(), errOut.String())
		}
	}
	if code := run([]string{"-h"}, strings.NewReader(""), &bytes.Buffer{}, &bytes.Buffer{}); code != 0 {
		t.Errorf("-h: exit code %d, want 0", code)
	}
}

// TestRun runs the program: JSON lines per run, alternating, then the
// table.
func TestRun(t *testing.T) {
	var out, errOut bytes.Buffer
	code := run([]string{"-variant", "epoll,gonet2", "-trips", "5", "-rounds", "2"}, strings.NewReader(""), &out, &errOut)
	if code != 0 {
		t.Fatalf("exit code %d; stderr %s", code, errOut.String())
	}
	jsonPart, table, ok := strings.Cut(out.String(), "\n\n")
	if !ok {
		t.Fatalf("no table after the JSON lines:\n%s", out.String())
	}
	var got []string
	for line := range strings.SplitSeq(strings.TrimSpace(jsonPart), "\n") {
		var r result
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		got = append(got, r.Variant)
	}
	if want := "epoll gonet2 epoll gonet2"; strings.Join(got, " ") != want {
		t.Errorf("runs %q, want %q", got, want)
	}
	if !strings.Contains(table, "| epoll | 2 |") || !strings.Contains(table, "CPU / gonet2") {
		t.Errorf("table:\n%s", table)
	}
}

func TestRenderTable(t *testing.T) {
	enters := 0.5
	rs := []result{
		{Variant: "single", ServerCPUus: 6, NsPerOp: 9000, P50us: 500, P99us: 4000, EntersPerRT: &enters},
		{Variant: "gonet2", ServerCPUus: 8, NsPerOp: 8000, P50us: 400, P99us: 4000},
		{Variant: "single", ServerCPUus: 4, NsPerOp: 7000, P50us: 300, P99us: 2000, EntersPerRT: &enters},
		{Variant: "single", ServerCPUus: 5, NsPerOp: 8000, P50us: 400, P99us: 3000, EntersPerRT: &enters},
	}
	got := renderTable(rs)
	for _, want := range []string{
		"| single | 3 | 5.00 | 8000 | 400 | 3000 | 0.500 | 0.62 | 1.00 |",
		"| gonet2 | 1 | 8.00 | 8000 | 400 | 4000 | – | 1.00 | 1.00 |",
	} {
		if !strings.Contains(got, want) {
			t.Errorf("table without %q:\n%s", want, got)
		}
	}
	if got := renderTable(rs[2:]); strings.Contains(got, "gonet2") {
		t.Errorf("ratio columns without a gonet2 run:\n%s", got)
	}
	if m := median([]float64{4, 1, 3, 2}); m != 2.5 {
		t.Errorf("median of 1..4 = %v, want 2.5", m)
	}
}
