//go:build mage

// The build of faio-go. Run a target from the repository's root with `go run
// mage.go <target>` (nothing to install) or `mage -d tools -w . <target>`
// once mage is installed; `go run mage.go -l` lists them.
package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/faio-go/faio/tools/release"
	"github.com/magefile/mage/mg"
	"github.com/magefile/mage/sh"
)

// staticcheckVersion is the staticcheck release used when none is on PATH.
const staticcheckVersion = "v0.8.2"

// Aliases gives the plain "build" and "bench" targets next to the build:
// and bench: namespaces.
var Aliases = map[string]interface{}{
	"build": BuildAll,
	"bench": BenchAll,
}

// modules returns the directories of every module in go.work, in its order.
func modules() ([]string, error) {
	out, err := exec.Command("go", "work", "edit", "-json").Output()
	if err != nil {
		return nil, fmt.Errorf("reading go.work: %w", err)
	}
	var work struct {
		Use []struct{ DiskPath string }
	}
	if err := json.Unmarshal(out, &work); err != nil {
		return nil, fmt.Errorf("parsing go.work: %w", err)
	}
	var dirs []string
	for _, u := range work.Use {
		dirs = append(dirs, filepath.Clean(u.DiskPath))
	}
	return dirs, nil
}

// packagePatterns returns "./dir/..." for every module with Go packages.
func packagePatterns() ([]string, error) {
	dirs, err := modules()
	if err != nil {
		return nil, err
	}
	var pats []string
	for _, d := range dirs {
		// "./..." of the root module is package faio and the examples:
		// the nested modules are not part of it.
		pats = append(pats, "./"+d+"/...")
	}
	return pats, nil
}

// goCmd runs go with args, streaming its output.
func goCmd(args ...string) error {
	if mg.Verbose() {
		fmt.Println("go", strings.Join(args, " "))
	}
	return sh.RunV("go", args...)
}

// BuildAll compiles every package of every module.
func BuildAll() error {
	pats, err := packagePatterns()
	if err != nil {
		return err
	}
	return goCmd(append([]string{"build"}, pats...)...)
}

// Build holds the builds of artefacts other than Go packages.
type Build mg.Namespace

// Capi builds build/libfaio.so from capi/ (-buildmode=c-shared).
func (Build) Capi() error {
	if err := os.MkdirAll("build", 0o755); err != nil {
		return err
	}
	return goCmd("build", "-buildmode=c-shared", "-o", "build/libfaio.so", "./capi")
}

// Lint checks formatting (gofmt), go vet and staticcheck over every module.
func Lint() error {
	out, err := exec.Command("gofmt", "-l", ".").Output()
	if err != nil {
		return fmt.Errorf("gofmt: %w", err)
	}
	if files := strings.TrimSpace(string(out)); files != "" {
		return fmt.Errorf("gofmt would reformat:\n%s", files)
	}
	pats, err := packagePatterns()
	if err != nil {
		return err
	}
	if err := goCmd(append([]string{"vet"}, pats...)...); err != nil {
		return err
	}
	return staticcheck(pats)
}

func staticcheck(pats []string) error {
	if path, err := exec.LookPath("staticcheck"); err == nil {
		return sh.RunV(path, pats...)
	}
	args := append([]string{"run", "honnef.co/go/tools/cmd/staticcheck@" + staticcheckVersion}, pats...)
	return goCmd(args...)
}

// Test runs go vet and the race-enabled tests of every module, the timing
// tests (TestTiming*) once more without the race detector, the task and
// I/O tests again on pinned workers and on the portable backend, then the
// C and C++ tests.
func Test() error {
	pats, err := packagePatterns()
	if err != nil {
		return err
	}
	if err := ioURingUnavailable(); err != nil {
		// As in a container under Docker's default seccomp profile.
		fmt.Printf("io_uring is unavailable here (%v): the tests that need a ring skip, and everything else runs on the portable backend\n", err)
	}
	if err := goCmd(append([]string{"vet"}, pats...)...); err != nil {
		return err
	}
	if err := crossBuild(); err != nil {
		return err
	}
	args := append([]string{"test", "-race", "-count=1", "-timeout=20m"}, pats...)
	if err := goCmd(args...); err != nil {
		return err
	}
	// Timing bounds (sleep lateness and the like) mean nothing under the
	// race detector's slowdown: tests named TestTiming* check them in a
	// second run without it.
	args = append([]string{"test", "-count=1", "-run=^TestTiming", "-timeout=10m"}, pats...)
	if err := goCmd(args...); err != nil {
		return err
	}
	if err := testPinned(); err != nil {
		return err
	}
	if err := testPortable(); err != nil {
		return err
	}
	return sh.RunV("bash", "capi/test/run.sh")
}

// crossPackages build on every system Go supports: the scheduler, sync,
// channel and the facade (without its Linux-only I/O), on the portable
// backend. uring, aio, faiohttp and libfaio.so are Linux-only.
var crossPackages = []string{".", "./modules/runtime", "./modules/sync", "./modules/channel"}

// crossBuild builds crossPackages for macOS and Windows.
func crossBuild() error {
	for _, goos := range []string{"darwin", "windows"} {
		args := append([]string{"build"}, crossPackages...)
		fmt.Printf("GOOS=%s go %s\n", goos, strings.Join(args, " "))
		if err := sh.RunWithV(map[string]string{"GOOS": goos, "CGO_ENABLED": "0"}, "go", args...); err != nil {
			return fmt.Errorf("GOOS=%s: %w", goos, err)
		}
	}
	return nil
}

// portablePackages are the packages whose tests run again on the portable
// backend: everything that runs tasks or does I/O.
var portablePackages = []string{".", "./modules/runtime", "./modules/sync", "./modules/channel", "./modules/aio", "./modules/faiohttp"}

// testPinned runs the task and I/O tests again with every runtime's
// workers pinned to their threads (FAIO_PINNED=1, Config.PinnedWorkers),
// whose rings are set up with COOP_TASKRUN and whose tasks never move once
// started.
func testPinned() error {
	args := append([]string{"test", "-race", "-count=1", "-timeout=20m"}, portablePackages...)
	fmt.Println("FAIO_PINNED=1 go", strings.Join(args, " "))
	return sh.RunWithV(map[string]string{"FAIO_PINNED": "1"}, "go", args...)
}

// testPortable runs the task and I/O tests on the portable backend twice:
// chosen by FAIO_BACKEND=portable, and chosen by BackendAuto under a
// seccomp filter that refuses io_uring as Docker's default profile does
// (tools/noiouring), where the runtime's TestBackendChosen checks that
// Auto fell back.
func testPortable() error {
	args := append([]string{"test", "-race", "-count=1", "-timeout=20m"}, portablePackages...)
	if mg.Verbose() {
		fmt.Println("FAIO_BACKEND=portable go", strings.Join(args, " "))
	}
	if err := sh.RunWithV(map[string]string{"FAIO_BACKEND": "portable"}, "go", args...); err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "noiouring")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	launcher := filepath.Join(dir, "noiouring")
	if err := goCmd("build", "-o", launcher, "./tools/noiouring"); err != nil {
		return err
	}
	args = append([]string{"--", "go", "test", "-count=1", "-timeout=20m"}, portablePackages...)
	fmt.Println("under a seccomp filter refusing io_uring:", strings.Join(args[1:], " "))
	env := map[string]string{"FAIO_BACKEND": "", "FAIO_TEST_WANT_BACKEND": "portable"}
	return sh.RunWithV(env, launcher, args...)
}

// BenchAll runs the Go benchmarks of every module, then the W1..W10
// workload program (faio against goroutines, see bench/).
func BenchAll() error {
	pats, err := packagePatterns()
	if err != nil {
		return err
	}
	args := append([]string{"test", "-run=^$", "-bench=.", "-benchmem"}, pats...)
	if err := goCmd(args...); err != nil {
		return err
	}
	return Bench{}.Workloads()
}

// Bench holds the workload program's targets.
type Bench mg.Namespace

const benchCmd = "./bench/cmd/faio-bench"

// benchLdflags keeps the symbol table, which go run strips by default:
// faio-bench reads runtime.sched's place from it (sched_offset).
const benchLdflags = "-ldflags=-s=false"

// Workloads runs every workload of bench/WORKLOADS.md with faio and
// with plain goroutines, then prints the JSON lines and the ratio table.
func (Bench) Workloads() error {
	return goCmd("run", benchLdflags, benchCmd)
}

// Quick runs every workload at a tenth of its size and checks the results
// (CI's smoke test; no timing is asserted).
func (Bench) Quick() error {
	return goCmd("run", benchLdflags, benchCmd, "-quick")
}

// Demo runs the demonstration program in examples/demo.
func Demo() error {
	return goCmd("run", "./examples/demo")
}

// Tidy runs `go mod tidy` in every module, each on its own (the siblings
// come from their replace directives, never from the network), and `go
// work sync`.
func Tidy() error {
	dirs, err := modules()
	if err != nil {
		return err
	}
	for _, d := range dirs {
		cmd := exec.Command("go", "mod", "tidy")
		cmd.Dir = d
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOWORK=off")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Run(); err != nil {
			return fmt.Errorf("go mod tidy in %s: %v\n%s", d, err, stderr.String())
		}
	}
	return goCmd("work", "sync")
}

// Release releases every module at version (vX.Y.Z): a commit "release
// vX.Y.Z" in which the modules require each other at that version, and one
// tag per module on it (modules/ringq/vX.Y.Z, ..., vX.Y.Z for the root
// module), leaves first. Nothing is pushed: it prints the git push command
// that publishes the release. With FAIO_RELEASE_DRYRUN=1 it is ReleaseDry.
func Release(version string) error {
	_, err := release.Release(".", version, release.Options{
		DryRun: os.Getenv("FAIO_RELEASE_DRYRUN") == "1",
		Log:    os.Stdout,
	})
	return err
}

// ReleaseDry does what Release would in a throwaway clone, whose path it
// prints, and leaves this checkout untouched.
func ReleaseDry(version string) error {
	_, err := release.Release(".", version, release.Options{DryRun: true, Log: os.Stdout})
	return err
}
