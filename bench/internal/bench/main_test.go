package bench

import (
	"bytes"
	"encoding/json"
	"os"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// TestMain lets the test binary stand in for the program: the processes a
// run starts of itself (the W7 and W9 clients, the W5 and W6d children) are this binary
// with SelfEnv set, and it then runs Main instead of the tests.
func TestMain(m *testing.M) {
	if os.Getenv(SelfEnv) == "1" {
		os.Exit(Main(os.Args[1:], os.Stdout, os.Stderr))
	}
	// fasthttp refreshes its Date header in a goroutine that it starts
	// once per process and never ends, and a stopped server's worker-pool
	// cleaner notices the stop only after its sleep (10 s).
	goleak.VerifyTestMain(m,
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.updateServerDate.func1"),
		goleak.IgnoreAnyFunction("github.com/valyala/fasthttp.(*workerPool).Start.func2"))
}

// tinySizes are sizes small enough for every workload to run in well under
// a second, even under the race detector, while keeping real concurrency
// (several tasks, connections and readers in flight).
func tinySizes() Sizes {
	return Sizes{
		Spawns:           2_000,
		PingPongs:        1_000,
		MutexTasks:       20,
		MutexIters:       100,
		Producers:        4,
		Consumers:        4,
		ItemsPerProducer: 1_000,
		ChanCap:          16,
		Timers:           300,
		MinSleep:         time.Millisecond,
		MaxSleep:         5 * time.Millisecond,
		Sleepers:         500,
		SleepMargin:      200 * time.Millisecond,
		FileSize:         1 << 20,
		BlockSize:        4096,
		Reads:            2_000,
		DirectReads:      300,
		InFlight:         8,
		Conns:            4,
		Trips:            50,
		MsgSize:          64,
		ManyConns:        12,
		ManyTrips:        20,
		YieldTasks:       10,
		Yields:           100,
		HTTPConns:        4,
		HTTPRequests:     50,
		HTTPDuration:     time.Second,
	}
}

// tinyEnv is an Env for tiny runs with its data file in a test directory.
func tinyEnv(t *testing.T, workers int) *Env {
	t.Helper()
	return &Env{
		Workers: workers,
		Sizes:   tinySizes(),
		File:    t.TempDir() + "/data",
		Self:    SelfCommand,
		Log:     testLog{t},
	}
}

// testLog sends progress and notes to the test log.
type testLog struct{ t *testing.T }

func (l testLog) Write(p []byte) (int, error) {
	l.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}

// sizesArg is -sizes for s.
func sizesArg(t *testing.T, s Sizes) string {
	t.Helper()
	b, err := json.Marshal(s)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// jsonLines parses the JSON lines of a run's stdout, up to the table.
func jsonLines(t *testing.T, out *bytes.Buffer) []Result {
	t.Helper()
	var rs []Result
	for _, line := range strings.Split(out.String(), "\n") {
		if !strings.HasPrefix(line, "{") {
			continue
		}
		var r Result
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatalf("line %q: %v", line, err)
		}
		rs = append(rs, r)
	}
	return rs
}
