package main

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/faio-go/faio"
)

// cHosts builds libfaio.so and the C and C++ examples against it (with
// examples/c/build.sh and examples/cpp/build.sh, which need gcc and g++),
// runs them, and reports their last line. The demo runs from the
// repository root (go run mage.go demo). Without gcc or g++ ($CC, $CXX)
// the step is skipped, saying so.
func cHosts(*faio.Runtime) (string, error) {
	for _, c := range []struct{ env, def string }{{"CC", "gcc"}, {"CXX", "g++"}} {
		name := os.Getenv(c.env)
		if name == "" {
			name = c.def
		}
		if _, err := exec.LookPath(name); err != nil {
			return fmt.Sprintf("skipped: %s not found (the C and C++ examples need gcc and g++)", name), nil
		}
	}
	dir, err := os.MkdirTemp("", "faio-demo-c-")
	if err != nil {
		return "", err
	}
	defer os.RemoveAll(dir)
	start := time.Now()
	if _, err := runCmd("bash", "examples/c/build.sh", dir); err != nil {
		return "", err
	}
	lib := "LIBFAIO_DIR=" + dir
	if _, err := runEnv([]string{lib}, "bash", "examples/cpp/build.sh", dir); err != nil {
		return "", err
	}
	built := time.Since(start)
	cOut, err := runCmd(filepath.Join(dir, "faio-example-c"), "include/faio.h")
	if err != nil {
		return "", err
	}
	cppOut, err := runCmd(filepath.Join(dir, "faio-example-cpp"))
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("libfaio.so and both examples built in %v; C: %s; C++: %s",
		built.Round(100*time.Millisecond), lastLine(cOut), lastLine(cppOut)), nil
}

func runCmd(name string, args ...string) (string, error) { return runEnv(nil, name, args...) }

func runEnv(env []string, name string, args ...string) (string, error) {
	cmd := exec.Command(name, args...)
	cmd.Env = append(os.Environ(), env...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out.String())
	}
	return out.String(), nil
}

func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return strings.TrimSpace(lines[len(lines)-1])
}

// httpServer runs examples/http in its self-test mode: a static file
// server on faiohttp serving include/ over TLS, every file fetched and
// checked. It runs in a process of its own (one faio runtime per example).
func httpServer(*faio.Runtime) (string, error) {
	out, err := runCmd("go", "run", "./examples/http", "-selftest", "-tls", "-root", "include")
	if err != nil {
		return "", err
	}
	return lastLine(out), nil
}
