package runtime

import (
	"os/exec"
	"regexp"
	"testing"
)

// The checks every task operation makes are meant to be inlined into it:
// Err (each Consume, so each channel operation and lock, asks), charge
// (the cooperative budget), link (each suspension) and running. A change
// that pushes one over the compiler's inlining budget costs every such
// call a function call; Err's did, by about 2 ns of an uncontended
// Lock and Unlock's 20 (BenchmarkUncontended in modules/sync).
func TestHotPathsInline(t *testing.T) {
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command on PATH to ask the compiler:", err)
	}
	out, err := exec.Command(goTool, "build", "-gcflags=-m", ".").CombinedOutput()
	if err != nil {
		t.Fatalf("go build -gcflags=-m: %v\n%s", err, out)
	}
	for _, fn := range []string{`\(\*Task\)\.Err`, `\(\*Task\)\.charge`, `\(\*Task\)\.link`, `\(\*Task\)\.running`} {
		if !regexp.MustCompile(`can inline ` + fn + `\b`).Match(out) {
			t.Errorf("%s is no longer inlinable (go build -gcflags=-m -m tells why)", fn)
		}
	}
}
