package bench

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/faio-go/faio"
)

func ids(ws []*Workload) string {
	var s []string
	for _, w := range ws {
		s = append(s, w.ID)
	}
	return strings.Join(s, ",")
}

func TestParseArgsDefaults(t *testing.T) {
	t.Setenv(EnvBackend, "")
	t.Setenv(faio.EnvPinned, "")
	o, err := ParseArgs(nil, io.Discard)
	if err != nil {
		t.Fatal(err)
	}
	if got := ids(o.Workloads); got != "W1,W2,W3,W4,W5,W5b,W6,W6d,W7,W7c,W8,W9,W9,W10" {
		t.Errorf("workloads %s", got)
	}
	if o.Workers != nil || fmt.Sprint(o.Impls) != "[faio goroutines]" || o.JSONOnly || o.Quick || o.Child || o.Client != "" ||
		o.HTTPClient != HTTPClientAuto || o.HTTPLoad != "" || o.Backend != faio.BackendAuto || o.Pinned || o.Runs != 1 {
		t.Errorf("defaults %+v", o)
	}
	if o.Sizes != FullSizes() || o.File != filepath.Join(os.TempDir(), "faio-bench-w6-1GiB.dat") {
		t.Errorf("sizes %+v, file %s", o.Sizes, o.File)
	}
}

func TestParseArgs(t *testing.T) {
	t.Setenv(EnvBackend, "")
	for _, tc := range []struct {
		args  []string
		check func(o Options) bool
	}{
		{[]string{"-w", "w8, W3-mutex,spawn,W3"}, func(o Options) bool { return ids(o.Workloads) == "W1,W3,W8" }},
		{[]string{"-w", "W6d"}, func(o Options) bool { return ids(o.Workloads) == "W6d" }},
		{[]string{"-w", "all"}, func(o Options) bool { return len(o.Workloads) == 14 }},
		{[]string{"-w", "W9"}, func(o Options) bool {
			return len(o.Workloads) == 2 && o.Workloads[0].Label() == "W9-http-hello" && o.Workloads[1].Label() == "W9-http-16k"
		}},
		{[]string{"-w", "w9-HTTP-16k,W1"}, func(o Options) bool {
			return len(o.Workloads) == 2 && o.Workloads[0].ID == "W1" && o.Workloads[1].Label() == "W9-http-16k"
		}},
		{[]string{"-http-client", "wrk"}, func(o Options) bool { return o.HTTPClient == HTTPClientWrk }},
		{[]string{"-http-client", "own"}, func(o Options) bool { return o.HTTPClient == HTTPClientOwn }},
		{[]string{"-http-load", "127.0.0.1:9", "-w", "W9-http-hello"}, func(o Options) bool {
			return o.HTTPLoad == "127.0.0.1:9" && len(o.Workloads) == 1
		}},
		{[]string{"-workers", "2, 1,2"}, func(o Options) bool { return fmt.Sprint(o.Workers) == "[2 1]" }},
		{[]string{"-impl", "faio"}, func(o Options) bool { return fmt.Sprint(o.Impls) == "[faio]" }},
		{[]string{"-impl", "goroutines"}, func(o Options) bool { return fmt.Sprint(o.Impls) == "[goroutines]" }},
		{[]string{"-json-only"}, func(o Options) bool { return o.JSONOnly }},
		{[]string{"-quick"}, func(o Options) bool {
			return o.Quick && o.Sizes == QuickSizes() && o.File == filepath.Join(os.TempDir(), "faio-bench-w6-64MiB.dat")
		}},
		{[]string{"-quick", "-file", "/data/f"}, func(o Options) bool { return o.File == "/data/f" }},
		{[]string{"-client", "127.0.0.1:9"}, func(o Options) bool { return o.Client == "127.0.0.1:9" }},
		{[]string{"-child"}, func(o Options) bool { return o.Child && o.Runs == 1 }},
		{[]string{"-runs", "3"}, func(o Options) bool { return o.Runs == 3 }},
		{[]string{"-backend", "auto"}, func(o Options) bool { return o.Backend == faio.BackendAuto }},
		{[]string{"-backend", "io_uring"}, func(o Options) bool { return o.Backend == faio.BackendIOUring }},
		{[]string{"-backend", "portable"}, func(o Options) bool { return o.Backend == faio.BackendPortable }},
		{[]string{"-sizes", `{"spawns":5,"ping_pongs":1,"mutex_tasks":1,"mutex_iters":1,"producers":1,"consumers":1,
			"items_per_producer":1,"chan_cap":1,"timers":1,"min_sleep":1000,"max_sleep":1000,"sleepers":1,"sleep_margin":1000000,"file_size":8192,
			"block_size":4096,"reads":1,"direct_reads":1,"in_flight":1,"conns":1,"trips":1,"msg_size":16,"many_conns":1,"many_trips":1,
			"yield_tasks":1,"yields":1,"http_conns":1,"http_requests":1,"http_duration":1000000000}`}, func(o Options) bool {
			return o.Sizes.Spawns == 5 && o.Sizes.MinSleep == time.Microsecond && strings.HasSuffix(o.File, "faio-bench-w6-8192B.dat")
		}},
	} {
		o, err := ParseArgs(tc.args, io.Discard)
		if err != nil || !tc.check(o) {
			t.Errorf("%q: %+v, %v", tc.args, o, err)
		}
	}
}

func TestParseArgsErrors(t *testing.T) {
	t.Setenv(EnvBackend, "")
	for _, tc := range []struct {
		args []string
		msg  string
	}{
		{[]string{"-w", "W11"}, `unknown workload "W11"`},
		{[]string{"-w", "W1,"}, `unknown workload ""`},
		{[]string{"-workers", "0"}, `positive integers, got "0"`},
		{[]string{"-workers", "two"}, `positive integers, got "two"`},
		{[]string{"-impl", "tokio"}, `faio, goroutines or both, got "tokio"`},
		{[]string{"-http-client", "curl"}, `auto, wrk or own, got "curl"`},
		{[]string{"-backend", "uring"}, `-backend wants auto, io_uring or portable, got "uring"`},
		{[]string{"-backend", ""}, `-backend wants auto, io_uring or portable, got ""`},
		{[]string{"-backend", "Portable"}, `-backend wants auto, io_uring or portable, got "Portable"`},
		{[]string{"-runs", "0"}, "-runs wants a count of at least 1, got 0"},
		{[]string{"-runs", "2", "-child"}, "-runs with -child"},
		{[]string{"-nosuchflag"}, "flag provided but not defined"},
		{[]string{"extra"}, `unexpected arguments ["extra"]`},
		{[]string{"-sizes", `{"spawns":1`}, "-sizes"},
		{[]string{"-sizes", `{"bogus":1}`}, `unknown field "bogus"`},
		{[]string{"-sizes", `{"spawns":1}`}, "ping_pongs must be positive"},
	} {
		_, err := ParseArgs(tc.args, io.Discard)
		if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%q: error %v, want ErrUsage with %q", tc.args, err, tc.msg)
		}
	}
	if _, err := ParseArgs([]string{"-h"}, io.Discard); !errors.Is(err, flag.ErrHelp) {
		t.Errorf("-h: %v", err)
	}
}

// Without -backend, FAIO_BACKEND chooses (the runtime obeys it anyway);
// -backend overrides it; a bad FAIO_BACKEND is a usage error too.
func TestParseArgsBackendFromEnvironment(t *testing.T) {
	t.Setenv(EnvBackend, "portable")
	if o, err := ParseArgs(nil, io.Discard); err != nil || o.Backend != faio.BackendPortable {
		t.Errorf("FAIO_BACKEND=portable: %v, %v", o.Backend, err)
	}
	if o, err := ParseArgs([]string{"-backend", "auto"}, io.Discard); err != nil || o.Backend != faio.BackendAuto {
		t.Errorf("FAIO_BACKEND=portable -backend auto: %v, %v", o.Backend, err)
	}
	t.Setenv(EnvBackend, "uring")
	if _, err := ParseArgs(nil, io.Discard); !errors.Is(err, ErrUsage) ||
		!strings.Contains(err.Error(), `FAIO_BACKEND wants auto, io_uring or portable, got "uring"`) {
		t.Errorf("FAIO_BACKEND=uring: %v", err)
	}
	if o, err := ParseArgs([]string{"-backend", "portable"}, io.Discard); err != nil || o.Backend != faio.BackendPortable {
		t.Errorf("FAIO_BACKEND=uring -backend portable: %v, %v", o.Backend, err)
	}
}

// -pinned, or without it FAIO_PINNED ("1" or "0"), pins the workers of
// every faio runtime of the run; a bad FAIO_PINNED is a usage error.
func TestParseArgsPinned(t *testing.T) {
	for _, tc := range []struct {
		env  string
		args []string
		want bool
		err  string
	}{
		{"", nil, false, ""},
		{"", []string{"-pinned"}, true, ""},
		{"1", nil, true, ""},
		{"0", nil, false, ""},
		{"1", []string{"-pinned=false"}, false, ""},
		{"0", []string{"-pinned"}, true, ""},
		{"yes", nil, false, `FAIO_PINNED="yes", want 1 or 0`},
	} {
		t.Setenv(faio.EnvPinned, tc.env)
		o, err := ParseArgs(tc.args, io.Discard)
		if tc.err != "" {
			if !errors.Is(err, ErrUsage) || !strings.Contains(err.Error(), tc.err) {
				t.Errorf("FAIO_PINNED=%q %q: %v, want a usage error saying %s", tc.env, tc.args, err, tc.err)
			}
			continue
		}
		if err != nil || o.Pinned != tc.want {
			t.Errorf("FAIO_PINNED=%q %q: Pinned %v, %v; want %v", tc.env, tc.args, o.Pinned, err, tc.want)
		}
	}
}

func TestSizes(t *testing.T) {
	full, quick := FullSizes(), QuickSizes()
	if err := full.Validate(); err != nil {
		t.Errorf("full: %v", err)
	}
	if err := quick.Validate(); err != nil {
		t.Errorf("quick: %v", err)
	}
	// The counts of WORKLOADS.md, and a tenth of the work in -quick.
	if full.Spawns != 1e6 || full.MutexTasks*full.MutexIters != 1e6 || full.Producers*full.ItemsPerProducer != 4e6 ||
		full.Timers != 1e5 || full.FileSize != 1<<30 || full.Reads != 1e6 || full.DirectReads != 2e5 ||
		full.InFlight != 64 || full.Conns != 64 || full.Trips != 20000 || full.MsgSize != 64 || full.YieldTasks*full.Yields != 1e6 {
		t.Errorf("full sizes %+v", full)
	}
	for id := range map[string]bool{"W1": true, "W2": true, "W3": true, "W4": true, "W5": true, "W6": true, "W6d": true, "W7": true, "W7c": true, "W8": true, "W9": true} {
		if f, q := expectedOps(id, full), expectedOps(id, quick); f != 10*q {
			t.Errorf("%s: quick does %d ops, full %d", id, q, f)
		}
	}
	if quick.Trips != 2000 || quick.FileSize != 64<<20 || quick.MutexTasks != 1000 || quick.YieldTasks != 1000 {
		t.Errorf("quick sizes %+v", quick)
	}
	// W7c: 1,000 connections, as many round trips in all as W7; -quick
	// cuts the connections, not the round trips per connection.
	if full.ManyConns != 1000 || full.ManyTrips != 1280 || quick.ManyConns != 100 || quick.ManyTrips != 1280 ||
		expectedOps("W7c", full) != expectedOps("W7", full) {
		t.Errorf("W7c sizes: full %+v, quick %+v", full, quick)
	}
	if many := full.manyConns(); many.Conns != 1000 || many.Trips != 1280 || many.MsgSize != full.MsgSize || many.ManyConns != 1000 {
		t.Errorf("manyConns: %+v", many)
	}
	if full.HTTPConns != 64 || full.HTTPRequests != 5000 || full.HTTPDuration != 10*time.Second ||
		quick.HTTPConns != 64 || quick.HTTPRequests != 500 || quick.HTTPDuration != time.Second {
		t.Errorf("W9 sizes: full %+v, quick %+v", full, quick)
	}

	bad := full
	bad.BlockSize, bad.MsgSize, bad.MinSleep, bad.Conns, bad.ManyTrips = 1000, 8, 200*time.Millisecond, 0, 0
	err := bad.Validate()
	for _, msg := range []string{"block_size must be a positive multiple of 4096", "msg_size must be at least 16",
		"max_sleep 100ms is below min_sleep 200ms", "conns must be positive", "many_trips must be positive"} {
		if !errors.Is(err, ErrSizes) || !strings.Contains(err.Error(), msg) {
			t.Errorf("error %v lacks %q", err, msg)
		}
	}
	for _, d := range []time.Duration{0, 500 * time.Millisecond, 1500 * time.Millisecond} {
		bad = full
		bad.HTTPDuration = d
		if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "http_duration must be a whole number of seconds") {
			t.Errorf("http_duration %v: %v", d, err)
		}
	}
	bad = full
	bad.FileSize = 1<<30 + 4
	if err := bad.Validate(); err == nil || !strings.Contains(err.Error(), "not a multiple of block_size") {
		t.Errorf("unaligned file size: %v", err)
	}
}

func TestMainUsageErrors(t *testing.T) {
	var out, errOut strings.Builder
	if code := Main([]string{"-impl", "rust"}, &out, &errOut); code != 2 || out.Len() != 0 || !strings.Contains(errOut.String(), "-impl") {
		t.Errorf("bad flag: code %d, stdout %q, stderr %q", code, out.String(), errOut.String())
	}
	errOut.Reset()
	if code := Main([]string{"-backend", "uring"}, &out, &errOut); code != 2 || out.Len() != 0 ||
		!strings.Contains(errOut.String(), `-backend wants auto, io_uring or portable, got "uring"`) {
		t.Errorf("bad -backend: code %d, stdout %q, stderr %q", code, out.String(), errOut.String())
	}
	errOut.Reset()
	if code := Main([]string{"-h"}, &out, &errOut); code != 0 || !strings.Contains(errOut.String(), "Usage: faio-bench") {
		t.Errorf("-h: code %d, stderr %q", code, errOut.String())
	}
}

func TestLookupWorkload(t *testing.T) {
	for _, name := range []string{"W7", "w7", "W7-tcp-echo", "tcp-echo", "TCP-ECHO"} {
		if w, ok := LookupWorkload(name); !ok || w.ID != "W7" {
			t.Errorf("%q: %v %v", name, w, ok)
		}
	}
	for _, name := range []string{"W7c", "w7C", "W7c-tcp-echo-many", "tcp-echo-many"} {
		if w, ok := LookupWorkload(name); !ok || w.ID != "W7c" {
			t.Errorf("%q: %v %v", name, w, ok)
		}
	}
	if _, ok := LookupWorkload("W6D"); !ok {
		t.Error("W6D not found")
	}
	if _, ok := LookupWorkload("W11"); ok {
		t.Error("W11 found")
	}
	// W9's workloads share the id: it finds the first; a label or name
	// finds each.
	for name, label := range map[string]string{"W9": "W9-http-hello", "w9-http-16k": "W9-http-16k", "http-16k": "W9-http-16k"} {
		if w, ok := LookupWorkload(name); !ok || w.Label() != label {
			t.Errorf("%q: %v %v, want %s", name, w, ok, label)
		}
	}
}
