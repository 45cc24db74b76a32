package bench

import (
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// The offset read from a program's symbol table agrees with the address
// go tool nm gives runtime.sched; a stripped program (as go test runs
// this one) gives -1.
func TestSchedLineOffset(t *testing.T) {
	if testing.Short() {
		t.Skip("builds a program")
	}
	dir := t.TempDir()
	src := filepath.Join(dir, "main.go")
	if err := os.WriteFile(src, []byte("package main\n\nfunc main() { go func() {}() }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	run := func(args ...string) string {
		t.Helper()
		cmd := exec.Command("go", args...)
		cmd.Dir = dir
		cmd.Env = append(cmd.Environ(), "GO111MODULE=off", "GOWORK=off")
		out, err := cmd.CombinedOutput()
		if err != nil {
			t.Fatalf("go %s: %v\n%s", strings.Join(args, " "), err, out)
		}
		return string(out)
	}
	full, stripped := filepath.Join(dir, "full"), filepath.Join(dir, "stripped")
	run("build", "-o", full, src)
	run("build", "-ldflags=-s", "-o", stripped, src)
	want := -1
	for _, line := range strings.Split(run("tool", "nm", full), "\n") {
		if f := strings.Fields(line); len(f) == 3 && f[2] == "runtime.sched" {
			addr, err := strconv.ParseUint(f[0], 16, 64)
			if err != nil {
				t.Fatal(err)
			}
			want = int(addr % 64)
		}
	}
	if want < 0 {
		t.Fatal("go tool nm lists no runtime.sched")
	}
	if got := schedLineOffsetOf(full); got != want {
		t.Errorf("offset of runtime.sched = %d, want %d (go tool nm)", got, want)
	}
	if got := schedLineOffsetOf(stripped); got != -1 {
		t.Errorf("offset in a stripped program = %d, want -1", got)
	}
	if got := schedLineOffsetOf(src); got != -1 {
		t.Errorf("offset in a source file = %d, want -1", got)
	}
}
