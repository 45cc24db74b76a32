package bench

import (
	"bytes"
	"os"
	"strings"
	"testing"

	"github.com/faio-go/faio"
)

// A quick W1 with -backend portable: the faio line says "portable", the
// goroutine line has no backend, the table names it, and FAIO_BACKEND is
// set for the processes the run starts.
func TestMainBackendPortable(t *testing.T) {
	t.Setenv(EnvBackend, "") // restored after the test; Main sets it
	var out, errOut bytes.Buffer
	code := Main([]string{"-quick", "-w", "W1", "-workers", "1", "-backend", "portable"}, &out, &errOut)
	t.Log(errOut.String())
	if code != 0 {
		t.Fatalf("Main returned %d\n%s", code, out.String())
	}
	results := jsonLines(t, &out)
	if len(results) != 2 {
		t.Fatalf("%d JSON lines, want 2:\n%s", len(results), out.String())
	}
	for _, r := range results {
		if want := map[Impl]string{Faio: "portable", Goroutines: ""}[r.Impl]; r.Backend != want {
			t.Errorf("%s: backend %q, want %q", r.Impl, r.Backend, want)
		}
	}
	if !strings.Contains(out.String(), `"backend":"portable"`) {
		t.Errorf("no \"backend\":\"portable\" in:\n%s", out.String())
	}
	if !strings.Contains(out.String(), "\nfaio backend: portable (") {
		t.Errorf("the table does not name the backend:\n%s", out.String())
	}
	if got := os.Getenv(EnvBackend); got != "portable" {
		t.Errorf("%s=%q after the run, want portable", EnvBackend, got)
	}
}

// -backend reaches the runtimes of the child processes: the isolated W6d
// runs report the backend of their own runtime, W7's and W9's servers run
// on it while their clients are children, and a child started without
// -backend takes it from the environment it inherits.
func TestBackendReachesChildProcesses(t *testing.T) {
	t.Setenv(EnvBackend, "")
	s := tinySizes()
	var out, errOut bytes.Buffer
	code := Main([]string{"-backend", "portable", "-w", "W6d,W7,W9-http-hello,W10", "-workers", "1", "-impl", "faio", "-sizes", sizesArg(t, s),
		"-file", t.TempDir() + "/data", "-http-client", "own", "-json-only"}, &out, &errOut)
	t.Log(errOut.String())
	if code != 0 {
		t.Fatalf("Main returned %d\n%s", code, out.String())
	}
	seen := map[string]int{}
	for _, r := range jsonLines(t, &out) {
		w, _ := LookupWorkload(r.Workload)
		if w.side(r.Impl) != Faio || r.Backend != "portable" {
			t.Errorf("%s %s: backend %q, want faio runs on portable", r.Workload, r.Impl, r.Backend)
		}
		seen[r.Workload]++
	}
	want := map[string]int{"W6d-file-read-direct": 1, "W7-tcp-echo": 1, "W9-http-hello": 2, "W10-goroutine-caller": 1}
	if strings.Contains(errOut.String(), "W6d-file-read-direct skipped") {
		t.Log("W6d skipped: no O_DIRECT here")
		delete(want, "W6d-file-read-direct")
	}
	for label, n := range want {
		if seen[label] != n {
			t.Errorf("%d %s results, want %d", seen[label], label, n)
		}
	}

	// Any workload runs in a child as W6d does; this one gets no
	// -backend (Env.Backend is auto) and inherits FAIO_BACKEND.
	env := tinyEnv(t, 1)
	m, err := runIsolated(env, "W1", Faio)
	if err != nil || m.Backend != "portable" {
		t.Errorf("child inheriting FAIO_BACKEND=portable: backend %q, %v", m.Backend, err)
	}
	// Without the variable, Env.Backend reaches the child as -backend.
	t.Setenv(EnvBackend, "")
	env.Backend = faio.BackendPortable
	m, err = runIsolated(env, "W1", Faio)
	if err != nil || m.Backend != "portable" {
		t.Errorf("child given -backend portable: backend %q, %v", m.Backend, err)
	}
}
