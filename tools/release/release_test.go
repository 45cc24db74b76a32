package release

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/module"
	"golang.org/x/mod/zip"
)

// testVersion is the version the tests release, always in throwaway clones.
const testVersion = "v0.1.0"

// outsideRequires are the modules the outside module of
// TestReleaseEndToEnd requires at testVersion. main.go uses runtime, sync
// and channel; every module listed is also imported blank (imports.go), so
// that `go mod tidy` keeps it and the build compiles its package.
var outsideRequires = []string{
	"github.com/faio-go/faio",
	"github.com/faio-go/faio/modules/aio",
	"github.com/faio-go/faio/modules/runtime",
	"github.com/faio-go/faio/modules/sync",
	"github.com/faio-go/faio/modules/channel",
}

// outsideMain is the outside module's program: tasks that add under a
// faio Mutex and send what they added through a faio channel.
const outsideMain = `package main

import (
	"context"
	"fmt"
	"os"

	"github.com/faio-go/faio/modules/channel"
	"github.com/faio-go/faio/modules/runtime"
	faiosync "github.com/faio-go/faio/modules/sync"
)

func main() {
	rt, err := runtime.New(runtime.Config{})
	if err != nil {
		fmt.Fprintln(os.Stderr, "runtime.New:", err)
		os.Exit(1)
	}
	sum, err := runtime.BlockOn(rt, func(ctx context.Context) (int, error) {
		var mu faiosync.Mutex
		total := 0
		tx, rx := channel.New[int](2)
		var handles []*runtime.JoinHandle[struct{}]
		for i := 1; i <= 8; i++ {
			handles = append(handles, runtime.Spawn(ctx, func(ctx context.Context) (struct{}, error) {
				if err := mu.Lock(ctx); err != nil {
					return struct{}{}, err
				}
				total += i
				mu.Unlock()
				return struct{}{}, tx.Send(ctx, i)
			}))
		}
		received := 0
		for range handles {
			v, err := rx.Recv(ctx)
			if err != nil {
				return 0, err
			}
			received += v
		}
		for _, h := range handles {
			if _, err := h.Join(ctx); err != nil {
				return 0, err
			}
		}
		if err := mu.Lock(ctx); err != nil {
			return 0, err
		}
		defer mu.Unlock()
		if received != total {
			return 0, fmt.Errorf("received %d, added %d", received, total)
		}
		return received, nil
	})
	if cerr := rt.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	fmt.Printf("outside module: sum %d\n", sum)
}
`

// TestReleaseEndToEnd releases a clone of the repository's HEAD, first as a
// dry run and then for real, checks the go.mod files and the tags, serves
// the tagged modules from a file-system module proxy and builds and runs a
// module outside the repository that requires them, without go.work and
// without the network.
func TestReleaseEndToEnd(t *testing.T) {
	needGit(t)
	repo := cloneHEAD(t)
	head := gitT(t, repo, "rev-parse", "HEAD")

	var log bytes.Buffer
	dry, err := Release(repo, testVersion, Options{DryRun: true, CloneDir: filepath.Join(t.TempDir(), "dry"), Log: &log})
	t.Logf("dry run log:\n%s", log.String())
	if err != nil {
		t.Fatalf("dry run: %v", err)
	}
	if dry.Dir == repo {
		t.Fatalf("dry run released in the repository itself")
	}
	if got := gitT(t, repo, "rev-parse", "HEAD"); got != head {
		t.Errorf("dry run moved HEAD of the repository from %s to %s", head, got)
	}
	if tags := gitT(t, repo, "tag", "-l"); tags != "" {
		t.Errorf("dry run tagged the repository: %s", tags)
	}
	if st := gitT(t, repo, "status", "--porcelain"); st != "" {
		t.Errorf("dry run changed the repository's work tree:\n%s", st)
	}
	checkRelease(t, dry, head)

	log.Reset()
	res, err := Release(repo, testVersion, Options{Log: &log})
	t.Logf("release log:\n%s", log.String())
	if err != nil {
		t.Fatalf("release: %v", err)
	}
	if res.Dir != repo {
		t.Errorf("release made in %s, want %s", res.Dir, repo)
	}
	checkRelease(t, res, head)
	if !strings.Contains(log.String(), res.PushCommand) || !strings.HasPrefix(res.PushCommand, "git push --atomic origin ") {
		t.Errorf("push command %q missing from the log or malformed", res.PushCommand)
	}
	if _, err := Release(repo, testVersion, Options{}); err == nil || !strings.Contains(err.Error(), "already released") {
		t.Errorf("releasing %s twice: got %v, want an error saying it is already released", testVersion, err)
	}

	proxy := buildProxy(t, res)
	buildOutside(t, proxy)
}

// checkRelease checks the release res made on top of parent: one commit
// "release <version>" whose go.mod files require every sibling at the
// version and keep their replace directives, and a tag per released
// module, in dependency order, on that commit.
func checkRelease(t *testing.T, res *Result, parent string) {
	t.Helper()
	if got := gitT(t, res.Dir, "rev-parse", res.Commit+"^"); got != parent {
		t.Errorf("release commit's parent is %s, want %s", got, parent)
	}
	if msg := gitT(t, res.Dir, "log", "-1", "--format=%s", res.Commit); msg != "release "+res.Version {
		t.Errorf("release commit message %q, want %q", msg, "release "+res.Version)
	}
	if st := gitT(t, res.Dir, "status", "--porcelain"); st != "" {
		t.Errorf("work tree not clean after the release:\n%s", st)
	}
	siblings := map[string]bool{}
	for _, m := range res.Modules {
		siblings[m.Path] = true
	}
	var wantTags []string
	for _, m := range res.Modules {
		if !m.Released {
			continue
		}
		wantTags = append(wantTags, m.Tag(res.Version))
		if m.Dir == "." && m.Tag(res.Version) != res.Version || m.Dir != "." && m.Tag(res.Version) != m.Dir+"/"+res.Version {
			t.Errorf("module %s in %s: tag %s", m.Path, m.Dir, m.Tag(res.Version))
		}
		now := goModAt(t, res.Dir, res.Commit, m)
		before := goModAt(t, res.Dir, parent, m)
		for _, r := range now.Require {
			if siblings[r.Mod.Path] && r.Mod.Version != res.Version {
				t.Errorf("%s at the release requires %s %s, want %s", m.Path, r.Mod.Path, r.Mod.Version, res.Version)
			}
		}
		if len(now.Require) != len(before.Require) || len(now.Replace) != len(before.Replace) {
			t.Errorf("%s: %d requires and %d replaces before the release, %d and %d after", m.Path, len(before.Require), len(before.Replace), len(now.Require), len(now.Replace))
		}
	}
	if !slices.Equal(res.Tags, wantTags) {
		t.Errorf("tags %v, want %v", res.Tags, wantTags)
	}
	for _, tag := range wantTags {
		if got := gitT(t, res.Dir, "rev-parse", tag+"^{commit}"); got != res.Commit {
			t.Errorf("tag %s points to %s, want the release commit %s", tag, got, res.Commit)
		}
	}
}

// goModAt parses m's go.mod at commit rev of the repository in dir.
func goModAt(t *testing.T, dir, rev string, m Module) *modfile.File {
	t.Helper()
	name := "go.mod"
	if m.Dir != "." {
		name = m.Dir + "/go.mod"
	}
	f, err := modfile.Parse(name, []byte(gitT(t, dir, "show", rev+":"+name)), nil)
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// buildProxy writes a file-system module proxy (GOPROXY=file://...,
// https://go.dev/ref/mod#goproxy-protocol) serving each released module at
// the release's version, made from its tag as the go command would make it
// from the repository, and returns its directory.
func buildProxy(t *testing.T, res *Result) string {
	t.Helper()
	proxy := filepath.Join(t.TempDir(), "proxy")
	for _, m := range res.Modules {
		if !m.Released {
			continue
		}
		tag := m.Tag(res.Version)
		escaped, err := module.EscapePath(m.Path)
		if err != nil {
			t.Fatal(err)
		}
		dir := filepath.Join(proxy, filepath.FromSlash(escaped), "@v")
		if err := os.MkdirAll(dir, 0o777); err != nil {
			t.Fatal(err)
		}
		base := filepath.Join(dir, res.Version)
		subdir := m.Dir
		if subdir == "." {
			subdir = ""
		}
		var z bytes.Buffer
		if err := zip.CreateFromVCS(&z, module.Version{Path: m.Path, Version: res.Version}, res.Dir, tag, subdir); err != nil {
			t.Fatalf("zip of %s: %v", m.Path, err)
		}
		name := "go.mod"
		if subdir != "" {
			name = subdir + "/go.mod"
		}
		info, err := json.Marshal(map[string]string{
			"Version": res.Version,
			"Time":    gitT(t, res.Dir, "log", "-1", "--format=%cI", tag),
		})
		if err != nil {
			t.Fatal(err)
		}
		for file, data := range map[string][]byte{
			base + ".zip":              z.Bytes(),
			base + ".mod":              []byte(runT(t, res.Dir, nil, "git", "show", tag+":"+name)),
			base + ".info":             info,
			filepath.Join(dir, "list"): []byte(res.Version + "\n"),
		} {
			if err := os.WriteFile(file, data, 0o666); err != nil {
				t.Fatal(err)
			}
		}
	}
	return proxy
}

// buildOutside creates a module outside the repository that requires
// outsideRequires at testVersion, resolves them from proxy (the rest, such
// as golang.org/x/sys, from the local module cache's download directory,
// itself a valid file proxy), builds it and runs it. GOWORK=off and a
// fresh module cache keep the checkout and earlier runs out of it; no
// proxy falls back to the network.
func buildOutside(t *testing.T, proxy string) {
	t.Helper()
	modcache := strings.TrimSpace(runT(t, "", nil, "go", "env", "GOMODCACHE"))
	if modcache == "" {
		t.Fatal("go env GOMODCACHE is empty")
	}
	dir := filepath.Join(t.TempDir(), "outside")
	if err := os.MkdirAll(dir, 0o777); err != nil {
		t.Fatal(err)
	}
	var gomod, imports strings.Builder
	gomod.WriteString("module example.com/faiooutside\n\ngo 1.26.0\n\nrequire (\n")
	imports.WriteString("package main\n\n// Every module required, so that go mod tidy keeps it.\nimport (\n")
	for _, p := range outsideRequires {
		fmt.Fprintf(&gomod, "\t%s %s\n", p, testVersion)
		fmt.Fprintf(&imports, "\t_ %q\n", p)
	}
	gomod.WriteString(")\n")
	imports.WriteString(")\n")
	for name, data := range map[string]string{"go.mod": gomod.String(), "imports.go": imports.String(), "main.go": outsideMain} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(data), 0o666); err != nil {
			t.Fatal(err)
		}
	}
	env := []string{
		"GOWORK=off",
		"GOFLAGS=-mod=mod -modcacherw",
		"GOPROXY=file://" + filepath.ToSlash(proxy) + ",file://" + filepath.ToSlash(filepath.Join(modcache, "cache", "download")),
		"GOPRIVATE=",
		"GONOPROXY=",
		"GONOSUMDB=*",
		"GONOSUMCHECK=1",
		"GOSUMDB=off",
		"GOTOOLCHAIN=local",
		"GOMODCACHE=" + filepath.Join(t.TempDir(), "modcache"),
	}
	runT(t, dir, env, "go", "mod", "tidy")
	t.Logf("outside go.mod after go mod tidy:\n%s", readT(t, filepath.Join(dir, "go.mod")))
	// The build's own requirement stays in the tools module: a user of
	// faio does not get mage.
	for _, f := range []string{"go.mod", "go.sum"} {
		if strings.Contains(readT(t, filepath.Join(dir, f)), "magefile/mage") {
			t.Errorf("the outside module's %s names mage: importing faio pulls in the build's dependency", f)
		}
	}
	runT(t, dir, env, "go", "build", "-o", "outside", ".")
	out := runT(t, dir, env, filepath.Join(dir, "outside"))
	t.Logf("outside program: %s", strings.TrimSpace(out))
	if !strings.Contains(out, "outside module: sum 36") {
		t.Errorf("outside program printed %q, want the sum 36", out)
	}
}

// TestModulesOrder checks the modules of HEAD come leaves first, each after
// the siblings it requires, and which are released (all but capi, bench
// and tools).
func TestModulesOrder(t *testing.T) {
	needGit(t)
	mods, err := Modules(cloneHEAD(t))
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	var dirs, released []string
	for _, m := range mods {
		dirs = append(dirs, m.Dir)
		if m.Released {
			released = append(released, m.Dir)
		}
		for _, r := range m.Requires {
			if !seen[r] {
				t.Errorf("%s comes before %s, which it requires", m.Path, r)
			}
		}
		seen[m.Path] = true
		switch {
		case strings.HasSuffix(m.Path, "/tools") || m.Path == "github.com/faio-go/faio/capi" || m.Path == "github.com/faio-go/faio/bench":
			if m.Released || m.Reason == "" {
				t.Errorf("%s: released %v, reason %q; want not released, with a reason", m.Path, m.Released, m.Reason)
			}
		case !m.Released:
			t.Errorf("%s is not released: %s", m.Path, m.Reason)
		}
	}
	t.Logf("order: %s", strings.Join(dirs, " "))
	if want := []string{"modules/ringq", "modules/statemachine", "modules/timerwheel", "modules/uring", "modules/watchdog", "modules/driver", "modules/runtime"}; len(released) < len(want) || !slices.Equal(released[:len(want)], want) {
		t.Errorf("released modules in the order %v, want it to start with %v", released, want)
	}
}

// TestModulesCycle checks a cycle of requirements is refused.
func TestModulesCycle(t *testing.T) {
	root := t.TempDir()
	files := map[string]string{
		"go.work":  "go 1.26.0\n\nuse (\n\t.\n\t./a\n\t./b\n)\n",
		"go.mod":   "module example.com/r\n\ngo 1.26.0\n",
		"a/go.mod": "module example.com/r/a\n\ngo 1.26.0\n\nrequire example.com/r/b v0.0.0\n",
		"b/go.mod": "module example.com/r/b\n\ngo 1.26.0\n\nrequire example.com/r/a v0.0.0 // indirect\n",
	}
	for name, data := range files {
		p := filepath.Join(root, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o777); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(data), 0o666); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := Modules(root); err == nil || !strings.Contains(err.Error(), "cycle") {
		t.Fatalf("Modules with a cycle: got %v, want an error about the cycle", err)
	}
}

// TestCheckVersion checks which versions are accepted.
func TestCheckVersion(t *testing.T) {
	for v, ok := range map[string]bool{
		"v0.1.0": true, "v1.2.3": true, "v0.2.0-rc.1": true,
		"v0.0.0": false, "0.1.0": false, "v0.1": false, "v1": false,
		"v1.2.3+build": false, "v2.0.0": false, "": false, "latest": false,
	} {
		if err := CheckVersion(v); (err == nil) != ok {
			t.Errorf("CheckVersion(%q) = %v, want ok=%v", v, err, ok)
		}
	}
}

// TestReleaseRefusesDirtyTree checks a work tree with changes is refused,
// in a dry run too, and nothing is made.
func TestReleaseRefusesDirtyTree(t *testing.T) {
	needGit(t)
	repo := cloneHEAD(t)
	if err := os.WriteFile(filepath.Join(repo, "stray.txt"), []byte("x\n"), 0o666); err != nil {
		t.Fatal(err)
	}
	for _, dry := range []bool{false, true} {
		_, err := Release(repo, testVersion, Options{DryRun: dry, CloneDir: filepath.Join(t.TempDir(), "dry")})
		if err == nil || !strings.Contains(err.Error(), "stray.txt") {
			t.Errorf("dry run %v with an untracked file: got %v, want an error naming it", dry, err)
		}
	}
	if tags := gitT(t, repo, "tag", "-l"); tags != "" {
		t.Errorf("tags made despite the refusal: %s", tags)
	}
}

// needGit skips the test when git is missing.
func needGit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skipf("git is needed to clone the repository and make tags: %v", err)
	}
}

// cloneHEAD clones the HEAD of the repository holding the test (the
// directory with go.work above the working directory) into a temporary
// directory, without its tags, and gives the clone an identity and no
// signing, so commits and tags need no setup. Uncommitted work in the
// repository is not in the clone.
func cloneHEAD(t *testing.T) string {
	t.Helper()
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	src := wd
	for {
		if _, err := os.Stat(filepath.Join(src, "go.work")); err == nil {
			break
		}
		parent := filepath.Dir(src)
		if parent == src {
			t.Fatalf("no go.work in %s or above", wd)
		}
		src = parent
	}
	repo := filepath.Join(t.TempDir(), "repo")
	runT(t, "", nil, "git", "clone", "-q", "--no-tags", "--", src, repo)
	for _, kv := range [][2]string{
		{"user.name", "faio release test"}, {"user.email", "release-test@invalid"},
		{"commit.gpgSign", "false"}, {"tag.gpgSign", "false"},
	} {
		gitT(t, repo, "config", kv[0], kv[1])
	}
	return repo
}

// gitT runs git in dir and returns its trimmed output, failing the test on
// an error.
func gitT(t *testing.T, dir string, args ...string) string {
	t.Helper()
	out, err := git(dir, args...)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// runT runs a command in dir with env added to the environment, within a
// minute, and returns its standard output, failing the test on an error.
func runT(t *testing.T, dir string, env []string, name string, args ...string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Dir = dir
	cmd.Env = append(gitEnv(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("%s %s (in %s): %v\n%s%s", name, strings.Join(args, " "), dir, err, stdout.String(), stderr.String())
	}
	return stdout.String()
}

// readT returns the content of a file, failing the test on an error.
func readT(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}
