package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestRun(t *testing.T) {
	name := filepath.Join(t.TempDir(), "hello.txt")
	n, err := run(name)
	if err != nil {
		t.Fatal(err)
	}
	if want := len("hello, io_uring\n"); n != want {
		t.Fatalf("run read %d bytes, want %d", n, want)
	}
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	if string(data) != "hello, io_uring\n" {
		t.Fatalf("file holds %q", data)
	}
}

// TestReadmeQuotesThisFile keeps the README's "A taste" block a verbatim
// excerpt of main.go, so what the README shows is what compiles here.
func TestReadmeQuotesThisFile(t *testing.T) {
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Skip("no README:", err)
	}
	src, err := os.ReadFile("main.go")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile("(?s)## A taste\n.*?```go\n(.*?)```").FindSubmatch(readme)
	if m == nil {
		t.Fatal(`README.md has no go block under "## A taste"`)
	}
	if !strings.Contains(string(m[1]), "func run(") || !strings.Contains(string(src), string(m[1])) {
		t.Fatal(`README.md's "A taste" block is not a verbatim excerpt of examples/taste/main.go`)
	}
}

// TestReadmeListsTheMageTargets keeps the README's listing of the build's
// targets what 'go run mage.go -l' prints (the listing of the test target
// had fallen behind what it runs).
func TestReadmeListsTheMageTargets(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the magefile")
	}
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Skip("no README:", err)
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("no go command:", err)
	}
	cmd := exec.Command(gobin, "run", "mage.go", "-l")
	cmd.Dir = "../.."
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("go run mage.go -l: %v\n%s", err, out)
	}
	if !strings.Contains(string(readme), "```\n"+string(out)+"```\n") {
		t.Errorf("README.md does not show 'go run mage.go -l' as it prints now:\n%s", out)
	}
}
