package bench

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// readWrkSample reads a wrk output captured on the project's machine
// (testdata/wrk-*.txt: wrk 4.1.0, -t2 -c64 --latency, against a net/http
// server answering 16 KiB, a 404, and dropping every 1000th connection).
func readWrkSample(t *testing.T, name string) string {
	t.Helper()
	b, err := os.ReadFile("testdata/" + name)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func TestParseWrk(t *testing.T) {
	const gib, mib = 1 << 30, 1 << 20
	for _, tc := range []struct {
		file string
		want wrkReport
	}{
		{"wrk-16k.txt", wrkReport{Requests: 78380, ReqPerSec: 39117.57, BytesRead: 1.20 * gib, BytesSlack: 0.005 * gib,
			P50: 1350 * time.Microsecond, P99: 6830 * time.Microsecond, Max: 11270 * time.Microsecond}},
		{"wrk-non2xx.txt", wrkReport{Requests: 87892, ReqPerSec: 79936.26, BytesRead: 6.87 * mib, BytesSlack: 0.005 * mib,
			P50: 609 * time.Microsecond, P99: 6790 * time.Microsecond, Max: 12060 * time.Microsecond, Non2xx: 87892}},
		{"wrk-socket-errors.txt", wrkReport{Requests: 33205, ReqPerSec: 33017.10, BytesRead: 522.72 * mib, BytesSlack: 0.005 * mib,
			P50: 1700 * time.Microsecond, P99: 6920 * time.Microsecond, Max: 11310 * time.Microsecond, SocketErrors: 33}},
	} {
		got, err := parseWrk(readWrkSample(t, tc.file))
		if err != nil {
			t.Errorf("%s: %v", tc.file, err)
			continue
		}
		if got != tc.want {
			t.Errorf("%s:\ngot  %+v\nwant %+v", tc.file, got, tc.want)
		}
	}
}

func TestParseWrkUnits(t *testing.T) {
	for s, want := range map[string]time.Duration{
		"501.00us": 501 * time.Microsecond, "1.50ms": 1500 * time.Microsecond, "2.01s": 2010 * time.Millisecond,
		"1.00m": time.Minute, "1.00h": time.Hour, "0.00us": 0,
	} {
		if got, err := parseWrkTime(s); err != nil || got != want {
			t.Errorf("%q: %v, %v; want %v", s, got, err, want)
		}
	}
	for _, s := range []string{"", "12", "1.5xs", "-1.00ms", "ms"} {
		if _, err := parseWrkTime(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
	for s, want := range map[string][2]float64{
		"100.00B": {100, 0.005}, "5.75KB": {5.75 * 1024, 0.005 * 1024}, "1.27GB": {1.27 * (1 << 30), 0.005 * (1 << 30)},
	} {
		if n, slack, err := parseWrkBytes(s); err != nil || math.Abs(n-want[0]) > 1e-6 || math.Abs(slack-want[1]) > 1e-9 {
			t.Errorf("%q: %v ± %v, %v; want %v", s, n, slack, err, want)
		}
	}
	for _, s := range []string{"", "B", "12", "1.2XB", "-1B"} {
		if _, _, err := parseWrkBytes(s); err == nil {
			t.Errorf("%q accepted", s)
		}
	}
}

// Output that lacks a part of the summary, or garbles one, is an error.
func TestParseWrkErrors(t *testing.T) {
	good := readWrkSample(t, "wrk-16k.txt")
	withoutLines := func(drop ...string) string {
		var b strings.Builder
		for line := range strings.Lines(good) {
			if !strings.Contains(line, drop[0]) && (len(drop) < 2 || !strings.Contains(line, drop[1])) {
				b.WriteString(line)
			}
		}
		return b.String()
	}
	for name, out := range map[string]string{
		"nothing":          "",
		"an error message": "unable to connect to 127.0.0.1:1 Connection refused\n",
		"no --latency":     withoutLines("%"),
		"no requests line": withoutLines("requests in"),
		"no rate":          withoutLines("Requests/sec"),
		"no max":           withoutLines("Latency  "),
		"garbled count":    strings.Replace(good, "78380 requests", "7838O requests", 1),
		"garbled p99":      strings.Replace(good, "6.83ms", "6.83xs", 1),
		"garbled errors":   strings.Replace(good, "Requests/sec", "  Socket errors: connect x\nRequests/sec", 1),
	} {
		if _, err := parseWrk(out); !errors.Is(err, ErrWrkOutput) {
			t.Errorf("%s: error %v, want ErrWrkOutput", name, err)
		}
	}
}

// A clean wrk run that fits the body validates, with ns_per_op = 1e9 /
// requests per second; errors, a server that answered fewer requests and
// a body of another size do not.
func TestWrkResult(t *testing.T) {
	s := FullSizes()
	clean, err := parseWrk(readWrkSample(t, "wrk-16k.txt"))
	if err != nil {
		t.Fatal(err)
	}
	body := make([]byte, 16<<10) // the sample's server answered 16 KiB of zeros
	m, err := wrkResult(s, body, clean, clean.Requests+40)
	if err != nil {
		t.Fatal(err)
	}
	w, _ := LookupWorkload("W9-http-16k")
	r := NewResult(w, FaioNative, 2, m)
	if r.Ops != 78380 || r.NsPerOp != round(1e9/39117.57, 10) || math.Abs(r.Secs-2.003703) > 1e-6 ||
		*r.P50us != 1350 || *r.P99us != 6830 || *r.MaxUs != 11270 || r.Client != "wrk" {
		t.Errorf("result %s", r.JSONLine())
	}

	nonOK, _ := parseWrk(readWrkSample(t, "wrk-non2xx.txt"))
	dropped, _ := parseWrk(readWrkSample(t, "wrk-socket-errors.txt"))
	for _, tc := range []struct {
		name   string
		r      wrkReport
		body   []byte
		served int64
		msg    string
	}{
		{"non-2xx", nonOK, nil, 1e9, "87892 responses that were not 2xx or 3xx"},
		{"socket errors", dropped, body, 1e9, "33 socket errors"},
		{"served fewer", clean, body, clean.Requests - 1, "the server answered 78379 requests, wrk counted 78380"},
		{"body too short", clean, helloBody, 1e9, "does not fit a 13-byte body"},
		{"body too long", clean, make([]byte, 32<<10), 1e9, "does not fit a 32768-byte body"},
		{"no requests", wrkReport{}, body, 1e9, "wrk did 0 requests"},
	} {
		if _, err := wrkResult(s, tc.body, tc.r, tc.served); !errors.Is(err, ErrValidation) || !strings.Contains(err.Error(), tc.msg) {
			t.Errorf("%s: error %v, want ErrValidation with %q", tc.name, err, tc.msg)
		}
	}
}

func TestBodies(t *testing.T) {
	if string(helloBody) != "Hello, World!" || len(body16k) != 16<<10 || !bytes.HasPrefix(body16k, []byte("0000 ")) ||
		!bytes.Contains(body16k, []byte("\n00ff ")) || body16k[len(body16k)-1] != '\n' {
		t.Errorf("bodies %q, %q...", helloBody, body16k[:80])
	}
	for _, w := range Workloads() {
		if (w.ID == "W9") != (w.body != nil) {
			t.Errorf("%s: body %q", w.Label(), w.body)
		}
	}
}

// readOne runs readHTTPResponse on a raw response.
func readOne(raw string, want []byte) error {
	return readHTTPResponse(bufio.NewReader(strings.NewReader(raw)), want, make([]byte, len(want)))
}

func TestReadHTTPResponse(t *testing.T) {
	good := "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\ncontent-length:  13\r\nDate: x\r\n\r\nHello, World!"
	br := bufio.NewReader(strings.NewReader(good + good))
	got := make([]byte, 13)
	for i := range 2 {
		if err := readHTTPResponse(br, helloBody, got); err != nil {
			t.Fatalf("response %d: %v", i, err)
		}
	}
	for name, raw := range map[string]string{
		"status 404":       strings.Replace(good, "200 OK", "404 Not Found", 1),
		"HTTP/1.0":         strings.Replace(good, "HTTP/1.1", "HTTP/1.0", 1),
		"no length":        strings.Replace(good, "content-length:  13\r\n", "", 1),
		"other length":     strings.Replace(good, "13", "12", 1),
		"bad length":       strings.Replace(good, "13", "1x", 1),
		"chunked":          strings.Replace(good, "Date: x", "Transfer-Encoding: chunked", 1),
		"closing":          strings.Replace(good, "Date: x", "Connection: Close", 1),
		"bad header line":  strings.Replace(good, "Date: x", "Date x", 1),
		"other body":       strings.Replace(good, "World", "world", 1),
		"short body":       strings.TrimSuffix(good, "!"),
		"cut header":       "HTTP/1.1 200 OK\r\nContent-Len",
		"nothing":          "",
		"other body bytes": strings.Replace(good, "Hello", "Hallo", 1),
	} {
		err := readOne(raw, helloBody)
		if err == nil {
			t.Errorf("%s: accepted", name)
			continue
		}
		// A response that arrived whole but is wrong is a validation
		// failure; one cut short is an I/O error.
		cut := name == "short body" || name == "cut header" || name == "nothing"
		if errors.Is(err, ErrValidation) == cut {
			t.Errorf("%s: %v (ErrValidation %v)", name, err, !cut)
		}
	}
}

// serveHTTPTest runs a net/http server with h on loopback until the test
// ends.
func serveHTTPTest(t *testing.T, h http.Handler) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: h}
	done := make(chan struct{})
	go func() { defer close(done); srv.Serve(l) }()
	t.Cleanup(func() { srv.Close(); <-done })
	return l.Addr().String()
}

func TestRunHTTPClient(t *testing.T) {
	s := tinySizes()
	h := newHTTPHandler(body16k)
	addr := serveHTTPTest(t, h)
	r, err := RunHTTPClient(context.Background(), addr, body16k, s)
	if err != nil {
		t.Fatal(err)
	}
	n := int64(s.HTTPConns * s.HTTPRequests)
	if r.Conns != s.HTTPConns || r.Trips != s.HTTPRequests || r.RoundTrips != n || r.Nanos <= 0 ||
		r.P50Nanos <= 0 || r.P50Nanos > r.P99Nanos || r.P99Nanos > r.MaxNanos {
		t.Errorf("report %+v", r)
	}
	if got := h.served.Load(); got != n+int64(s.HTTPConns) {
		t.Errorf("served %d, want %d timed and %d warm-up requests", got, n, s.HTTPConns)
	}
	m, err := httpClientResult(s, r, h.served.Load())
	if err != nil || m.Ops != n || m.Client != "own" || !m.HasLatency {
		t.Errorf("measurement %+v, %v", m, err)
	}
	if _, err := httpClientResult(s, r, h.served.Load()-1); !errors.Is(err, ErrValidation) {
		t.Errorf("one request short: %v", err)
	}
}

// A server that gets one response of many wrong fails the client.
func TestRunHTTPClientCatchesBadResponse(t *testing.T) {
	for name, bad := range map[string]func(w http.ResponseWriter){
		"status": func(w http.ResponseWriter) { w.WriteHeader(http.StatusServiceUnavailable) },
		"body":   func(w http.ResponseWriter) { w.Write(bytes.ToUpper(body16k)) },
		"length": func(w http.ResponseWriter) { w.Write(body16k[1:]) },
	} {
		t.Run(name, func(t *testing.T) {
			var n atomic.Int64
			addr := serveHTTPTest(t, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				if n.Add(1) == 37 {
					bad(w)
					return
				}
				w.Write(body16k)
			}))
			if _, err := RunHTTPClient(context.Background(), addr, body16k, tinySizes()); !errors.Is(err, ErrValidation) {
				t.Errorf("error %v, want ErrValidation", err)
			}
		})
	}
}

func TestRunHTTPClientRefusesOtherHosts(t *testing.T) {
	if _, err := RunHTTPClient(context.Background(), "192.0.2.1:80", helloBody, tinySizes()); !errors.Is(err, ErrNotLoopback) {
		t.Errorf("error %v, want ErrNotLoopback", err)
	}
}

// -http-load runs the client of exactly one W9 workload.
func TestMainHTTPLoadWantsOneW9Workload(t *testing.T) {
	for _, w := range []string{"W9", "W1", "all"} {
		var out, errOut strings.Builder
		code := Main([]string{"-http-load", "127.0.0.1:9", "-w", w, "-sizes", sizesArg(t, tinySizes())}, &out, &errOut)
		if code != 2 || out.Len() != 0 || !strings.Contains(errOut.String(), "one W9 workload") {
			t.Errorf("-w %s: code %d, stdout %q, stderr %q", w, code, out.String(), errOut.String())
		}
	}
}

func TestFindWrk(t *testing.T) {
	onPath, lookErr := exec.LookPath("wrk")
	for _, tc := range []struct {
		choice string
		quick  bool
		want   string
	}{
		{HTTPClientOwn, false, ""},
		{HTTPClientAuto, true, ""},
		{HTTPClientAuto, false, onPath},
		{HTTPClientWrk, true, onPath},
	} {
		got, err := findWrk(tc.choice, tc.quick)
		if wantErr := tc.choice == HTTPClientWrk && lookErr != nil; got != tc.want || (err != nil) != wantErr {
			t.Errorf("%s quick=%v: %q, %v; want %q", tc.choice, tc.quick, got, err, tc.want)
		}
	}
}

// checkW9Lines checks the JSON lines of a W9 run: each workload selected
// has its four implementations, in order, each with the figures W9
// promises.
func checkW9Lines(t *testing.T, rs []Result, labels []string, client string, s Sizes) {
	t.Helper()
	var want, got []string
	for _, l := range labels {
		for _, impl := range []Impl{FaioNative, FaioAdapter, NetHTTP, FastHTTP} {
			want = append(want, l+" "+string(impl))
		}
	}
	for _, r := range rs {
		got = append(got, r.Workload+" "+string(r.Impl))
		w, ok := LookupWorkload(r.Workload)
		key := fmt.Sprintf("%s %s", r.Workload, r.Impl)
		if !ok || w.ID != "W9" {
			t.Errorf("%s: not a W9 workload", key)
			continue
		}
		if client == HTTPClientOwn && r.Ops != int64(s.HTTPConns*s.HTTPRequests) || r.Ops <= 0 {
			t.Errorf("%s: ops %d", key, r.Ops)
		}
		if r.NsPerOp <= 0 || r.Secs <= 0 || math.Abs(r.NsPerOp*float64(r.Ops)/1e9-r.Secs) > 1e-3*r.Secs+1e-5 {
			t.Errorf("%s: ns_per_op %v, secs %v, ops %d", key, r.NsPerOp, r.Secs, r.Ops)
		}
		if r.P50us == nil || r.P99us == nil || r.MaxUs == nil || *r.P50us <= 0 || *r.P50us > *r.P99us || *r.P99us > *r.MaxUs {
			t.Errorf("%s: latencies %v %v %v", key, r.P50us, r.P99us, r.MaxUs)
		}
		if r.Client != client {
			t.Errorf("%s: client %q, want %q", key, r.Client, client)
		}
		onFaio := w.side(r.Impl) == Faio
		if onFaio != (len(r.Polls) == r.Workers) || (!onFaio && r.GOMAXPROCS != r.Workers) {
			t.Errorf("%s: polls %v, gomaxprocs %d", key, r.Polls, r.GOMAXPROCS)
		}
	}
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("runs %q, want %q", got, want)
	}
}

// A quick W9 run with the own client, through the whole program (the
// client is a process of this test binary): the four servers of both
// workloads answer, every response checks out, and the table puts
// faio-native against net/http, the other two in the details, not judged.
func TestMainW9OwnClient(t *testing.T) {
	s := tinySizes()
	var out, errOut bytes.Buffer
	code := Main([]string{"-quick", "-sizes", sizesArg(t, s), "-w", "W9", "-http-client", "own"}, &out, &errOut)
	t.Log(errOut.String())
	if code != 0 {
		t.Fatalf("Main returned %d\n%s", code, out.String())
	}
	checkW9Lines(t, jsonLines(t, &out), []string{"W9-http-hello", "W9-http-16k"}, HTTPClientOwn, s)
	_, table, _ := strings.Cut(out.String(), "\n\n")
	checkNotJudged(t, table)
	rows := tableRows(t, table)
	if len(rows) != 2 {
		t.Fatalf("rows %q", rows)
	}
	for _, r := range rows {
		if !strings.HasPrefix(r[5], "faio-native p99 ") || !strings.Contains(r[5], "; faio-adapter ") ||
			!strings.Contains(r[5], " ns/op, p99 ") || !strings.Contains(r[5], "; fasthttp ") || !strings.HasSuffix(r[5], "; client own") {
			t.Errorf("%s: details %q", r[0], r[5])
		}
	}
}

// -impl picks the sides: faio runs faio-native and faio-adapter.
func TestMainW9FaioSide(t *testing.T) {
	var out, errOut bytes.Buffer
	code := Main([]string{"-sizes", sizesArg(t, tinySizes()), "-w", "W9-http-hello", "-impl", "faio", "-http-client", "own", "-json-only"}, &out, &errOut)
	if code != 0 {
		t.Fatalf("Main returned %d\n%s", code, errOut.String())
	}
	var impls []Impl
	for _, r := range jsonLines(t, &out) {
		impls = append(impls, r.Impl)
	}
	if fmt.Sprint(impls) != "[faio-native faio-adapter]" {
		t.Errorf("impls %v", impls)
	}
}

// W9 with wrk, when wrk is on PATH: one second per server.
func TestMainW9Wrk(t *testing.T) {
	if _, err := exec.LookPath("wrk"); err != nil {
		t.Skip("wrk is not on PATH")
	}
	if testing.Short() {
		t.Skip("four seconds of wrk")
	}
	s := tinySizes()
	var out, errOut bytes.Buffer
	code := Main([]string{"-sizes", sizesArg(t, s), "-w", "W9-http-16k", "-http-client", "wrk"}, &out, &errOut)
	t.Log(errOut.String())
	if code != 0 {
		t.Fatalf("Main returned %d\n%s", code, out.String())
	}
	checkW9Lines(t, jsonLines(t, &out), []string{"W9-http-16k"}, HTTPClientWrk, s)
	if !strings.Contains(out.String(), "; client wrk |") {
		t.Errorf("the table does not name wrk:\n%s", out.String())
	}
}

// A W9 row compares faio-native with net/http and judges the target on
// that ratio; faio-adapter and fasthttp are in the details.
func TestRenderTableW9(t *testing.T) {
	lat := func(m Measurement) Measurement { m = withP99(m, time.Millisecond); m.Client = "wrk"; return m }
	outcomes := []Outcome{
		outcome(t, "W9", FaioNative, 2, lat(ns(900))),
		outcome(t, "W9", FaioAdapter, 2, lat(ns(2000))),
		outcome(t, "W9", NetHTTP, 2, lat(ns(1000))),
		outcome(t, "W9", FastHTTP, 2, lat(ns(500))),
		outcome(t, "W9-http-16k", FaioNative, 2, lat(ns(1200))),
		outcome(t, "W9-http-16k", NetHTTP, 2, lat(ns(1000))),
	}
	got := RenderTable(outcomes, 2)
	for _, row := range []string{
		"| W9-http-hello | 2 | 900.0 | 1000.0 | 0.90 | faio-native p99 1.00ms; faio-adapter 2000.0 ns/op, p99 1.00ms; net/http p99 1.00ms; fasthttp 500.0 ns/op, p99 1.00ms; client wrk | ≤ 1 | yes |",
		"| W9-http-16k | 2 | 1200.0 | 1000.0 | 1.20 | faio-native p99 1.00ms; net/http p99 1.00ms; client wrk | ≤ 1 | no: ratio 1.20 > 1 |",
	} {
		if !strings.Contains(got, row+"\n") {
			t.Errorf("table lacks\n%s\ngot:\n%s", row, got)
		}
	}
}
