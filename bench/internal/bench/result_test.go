package bench

import (
	"bytes"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"
)

// jsonKeys returns the keys of a one-object JSON line in order.
func jsonKeys(t *testing.T, line string) []string {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader([]byte(line)))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		t.Fatalf("%q does not start an object: %v %v", line, tok, err)
	}
	var keys []string
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		keys = append(keys, tok.(string))
		var v any
		if err := dec.Decode(&v); err != nil {
			t.Fatal(err)
		}
	}
	return keys
}

// The required fields come first and in the order of WORKLOADS.md; the
// extras follow only when measured.
func TestJSONLineFieldOrder(t *testing.T) {
	w1, _ := LookupWorkload("W1")
	w6d, _ := LookupWorkload("W6d")
	w7, _ := LookupWorkload("W7")
	w9, _ := LookupWorkload("W9")
	required := []string{"workload", "impl", "workers", "ops", "ns_per_op", "secs"}
	for _, tc := range []struct {
		w      *Workload
		m      Measurement
		extras []string
	}{
		{w1, Measurement{Ops: 1000, Elapsed: time.Millisecond, RSSMiB: 12.34, GOMAXPROCS: 2},
			[]string{"rss_mib", "gomaxprocs"}},
		{w6d, Measurement{Ops: 1000, Elapsed: time.Second, Bytes: 4096000, Threads: 6, GOMAXPROCS: 2},
			[]string{"iops", "mib_s", "threads", "iowq_threads", "gomaxprocs"}},
		{w7, Measurement{Ops: 1000, Elapsed: time.Second, HasLatency: true, P50: time.Microsecond, P99: 2 * time.Microsecond, Max: time.Millisecond,
			HasCPU: true, ServerCPU: 5 * time.Millisecond, GOMAXPROCS: 2},
			[]string{"p50_us", "p99_us", "max_us", "server_cpu_us", "gomaxprocs"}},
		{w9, Measurement{Ops: 1000, Elapsed: time.Second, HasLatency: true, P50: time.Microsecond, P99: 2 * time.Microsecond, Max: time.Millisecond,
			Client: "wrk", RSSMiB: 15.8, GOMAXPROCS: 2, Backend: "portable", Polls: []uint64{1, 2}, Steals: []uint64{0, 1}},
			[]string{"p50_us", "p99_us", "max_us", "client", "rss_mib", "gomaxprocs", "backend", "polls", "steals"}},
	} {
		line := NewResult(tc.w, Faio, 2, tc.m).JSONLine()
		got := fmt.Sprint(jsonKeys(t, line))
		if want := fmt.Sprint(append(required, tc.extras...)); got != want {
			t.Errorf("%s: keys %s, want %s\n%s", tc.w.ID, got, want, line)
		}
	}
}

func TestJSONLineValues(t *testing.T) {
	w3, _ := LookupWorkload("W3")
	m := Measurement{Ops: 1_000_000, Elapsed: 123_456_789 * time.Nanosecond, GOMAXPROCS: 1}
	got := NewResult(w3, Goroutines, 1, m).JSONLine()
	want := `{"workload":"W3-mutex","impl":"goroutines","workers":1,"ops":1000000,"ns_per_op":123.5,"secs":0.123457,"gomaxprocs":1}`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	// A latency of zero is still reported when measured.
	w5, _ := LookupWorkload("W5")
	got = NewResult(w5, Faio, 2, Measurement{Ops: 1, Elapsed: time.Millisecond, HasLatency: true}).JSONLine()
	want = `{"workload":"W5-timers","impl":"faio","workers":2,"ops":1,"ns_per_op":1000000,"secs":0.001,"p50_us":0,"p99_us":0,"max_us":0,"gomaxprocs":0}`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
}

func TestJSONLineRoundTrip(t *testing.T) {
	w6, _ := LookupWorkload("W6")
	r := NewResult(w6, Faio, 2, Measurement{Ops: 1000, Elapsed: 2 * time.Millisecond, Bytes: 4096000, RSSMiB: 30, GOMAXPROCS: 2})
	var back Result
	if err := json.Unmarshal([]byte(r.JSONLine()), &back); err != nil {
		t.Fatal(err)
	}
	if back.JSONLine() != r.JSONLine() || back.IOPS != 500000 || back.MiBs != 1953.1 || back.Elapsed() != 2*time.Millisecond {
		t.Errorf("round trip: %+v", back)
	}
}

// server_cpu_us is the server's CPU time over the ops, in µs to 0.01.
func TestJSONLineServerCPU(t *testing.T) {
	w7c, _ := LookupWorkload("W7c")
	m := Measurement{Ops: 1_280_000, Elapsed: 10 * time.Second, HasCPU: true, ServerCPU: 6_543_210 * time.Microsecond, GOMAXPROCS: 2}
	got := NewResult(w7c, Goroutines, 2, m).JSONLine()
	want := `{"workload":"W7c-tcp-echo-many","impl":"goroutines","workers":2,"ops":1280000,"ns_per_op":7812.5,"secs":10,"server_cpu_us":5.11,"gomaxprocs":2}`
	if got != want {
		t.Errorf("got  %s\nwant %s", got, want)
	}
	for _, tc := range []struct {
		cpu  time.Duration
		ops  int64
		want float64
	}{
		{6_543_210 * time.Microsecond, 1_280_000, 5.11},
		{3 * time.Millisecond, 1000, 3},
		{1234 * time.Nanosecond, 1000, 0}, // 1.234 ns per op
		{5 * time.Nanosecond, 1, 0.01},
		{time.Second, 0, 0},
	} {
		if got := *cpuPerOp(tc.cpu, tc.ops); got != tc.want {
			t.Errorf("cpuPerOp(%v, %d) = %v, want %v", tc.cpu, tc.ops, got, tc.want)
		}
	}
	// Measured as 0 is still reported; not measured is left out.
	w7, _ := LookupWorkload("W7")
	if line := NewResult(w7, Faio, 2, Measurement{Ops: 10, Elapsed: time.Millisecond, HasCPU: true}).JSONLine(); !strings.Contains(line, `"server_cpu_us":0,`) {
		t.Errorf("zero CPU: %s", line)
	}
	if line := NewResult(w7, Faio, 2, Measurement{Ops: 10, Elapsed: time.Millisecond}).JSONLine(); strings.Contains(line, "server_cpu_us") {
		t.Errorf("unmeasured CPU: %s", line)
	}
}
