package release

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/mod/modfile"
	"golang.org/x/mod/semver"
)

// Options configures Release.
type Options struct {
	// DryRun makes the release in a throwaway clone of the repository and
	// leaves the repository untouched.
	DryRun bool
	// CloneDir is where a dry run clones the repository: a directory that
	// does not exist yet or is empty. Empty means a new temporary
	// directory. The clone is kept either way, for inspection.
	CloneDir string
	// Log receives a report of every step, ending with the push command;
	// nil discards it.
	Log io.Writer
}

// A Result describes the release Release made.
type Result struct {
	// Version is the version released.
	Version string
	// Dir is the repository holding the release commit and tags: the
	// repository itself, or the clone of a dry run.
	Dir string
	// Commit is the hash of the commit the tags point to.
	Commit string
	// Modules are all the modules of the workspace, in dependency order.
	Modules []Module
	// Tags are the tags created, in dependency order.
	Tags []string
	// Changed are the go.mod files rewritten, relative to Dir.
	Changed []string
	// PushCommand is the git command that publishes the release.
	PushCommand string
}

// CheckVersion reports whether version can be released: a canonical
// semantic version vX.Y.Z (a pre-release suffix such as -rc.1 is allowed,
// build metadata is not), not v0.0.0 (the development version), and of
// major version 0 or 1 (v2 and above need /vN module paths).
func CheckVersion(version string) error {
	switch {
	case !semver.IsValid(version):
		return fmt.Errorf("version %q is not a semantic version vX.Y.Z", version)
	case semver.Canonical(version) != version:
		return fmt.Errorf("version %q is not canonical: write %s", version, semver.Canonical(version))
	case version == "v0.0.0":
		return errors.New("v0.0.0 is the version the modules require each other at during development; release v0.1.0 or later")
	case semver.Major(version) != "v0" && semver.Major(version) != "v1":
		return fmt.Errorf("version %s: major versions above v1 need module paths ending in /%s", version, semver.Major(version))
	}
	return nil
}

// Release releases every released module of the repository at repoRoot
// (the directory holding go.work, at the top of its git repository) at
// version. It checks the version (CheckVersion) and that no module is
// tagged with it yet, refuses a work tree with uncommitted or untracked
// changes, rewrites every require of a sibling module in every module's
// go.mod to version (replace directives stay), checks that each released
// module resolves its imports on its own, commits the go.mod files as
// "release <version>" and tags that commit once per released module, in
// dependency order (Module.Tag). It needs no network and pushes nothing:
// Result.PushCommand, also logged, is the command that publishes the
// release. With opts.DryRun it does all of that in a clone, Result.Dir.
//
// When a check fails after the go.mod files were rewritten, Release puts
// them back; when a tag cannot be created, it deletes the tags it created
// and reports the release commit, which it leaves in place.
func Release(repoRoot, version string, opts Options) (*Result, error) {
	log := opts.Log
	if log == nil {
		log = io.Discard
	}
	logf := func(format string, args ...any) { fmt.Fprintf(log, format+"\n", args...) }

	if err := CheckVersion(version); err != nil {
		return nil, err
	}
	if _, err := exec.LookPath("git"); err != nil {
		return nil, fmt.Errorf("release needs git: %w", err)
	}
	root, err := filepath.Abs(repoRoot)
	if err != nil {
		return nil, err
	}
	top, err := git(root, "rev-parse", "--show-toplevel")
	if err != nil {
		return nil, err
	}
	if !sameDir(top, root) {
		return nil, fmt.Errorf("%s is not the top of its git repository (%s): tags name module directories relative to the repository's root", root, top)
	}

	mods, err := Modules(root)
	if err != nil {
		return nil, err
	}
	if err := checkModules(mods); err != nil {
		return nil, err
	}
	if status, err := git(root, "status", "--porcelain"); err != nil {
		return nil, err
	} else if status != "" {
		return nil, fmt.Errorf("the work tree of %s has changes; a release is made from a commit, so commit or remove them first:\n%s", root, firstLines(status, 10))
	}
	var tagged []string
	for _, m := range mods {
		if m.Released {
			if _, err := git(root, "rev-parse", "-q", "--verify", "refs/tags/"+m.Tag(version)); err == nil {
				tagged = append(tagged, m.Tag(version))
			}
		}
	}
	if len(tagged) > 0 {
		return nil, fmt.Errorf("%s is already released: tags %s exist", version, strings.Join(tagged, ", "))
	}
	if _, err := rewrites(root, mods, version); err != nil {
		return nil, err
	}

	dir := root
	if opts.DryRun {
		if dir, err = cloneForDryRun(root, opts.CloneDir); err != nil {
			return nil, err
		}
		logf("dry run: releasing %s in a clone of %s at %s (kept; remove it when done)", version, root, dir)
		if mods, err = Modules(dir); err != nil {
			return nil, err
		}
	}
	res := &Result{Version: version, Dir: dir, Modules: mods}

	logf("modules in dependency order:")
	for _, m := range mods {
		if m.Released {
			logf("  %-30s %s", m.Tag(version), m.Path)
		} else {
			logf("  (not released) %s: %s", m.Dir, m.Reason)
		}
	}
	for _, m := range mods {
		if m.Released {
			for _, b := range buildOnly {
				if slices.Contains(requirePaths(dir, m), b) {
					logf("warning: %s requires %s, the build's dependency: its users get it in their module graph; require it from the tools module only", m.Path, b)
				}
			}
		}
	}

	edits, err := rewrites(dir, mods, version)
	if err != nil {
		return nil, err
	}
	restore := func() {
		for _, e := range edits {
			os.WriteFile(filepath.Join(dir, filepath.FromSlash(e.file)), e.old, 0o666)
		}
	}
	for _, e := range edits {
		if err := os.WriteFile(filepath.Join(dir, filepath.FromSlash(e.file)), e.new, 0o666); err != nil {
			restore()
			return nil, err
		}
		res.Changed = append(res.Changed, e.file)
		logf("rewrote %s: %s", e.file, strings.Join(e.changes, ", "))
	}
	for _, m := range mods {
		if m.Released {
			if err := checkAlone(dir, m); err != nil {
				restore()
				return nil, err
			}
		}
	}
	logf("every released module resolves its imports on its own (GOWORK=off GOPROXY=off go list -mod=readonly -deps -test ./...)")

	if len(res.Changed) > 0 {
		if _, err := git(dir, append([]string{"add", "--"}, res.Changed...)...); err != nil {
			restore()
			return nil, err
		}
		if _, err := git(dir, "commit", "-q", "-m", "release "+version); err != nil {
			git(dir, append([]string{"reset", "-q", "--"}, res.Changed...)...)
			restore()
			return nil, err
		}
	} else {
		logf("no go.mod needed a change: tagging HEAD")
	}
	if res.Commit, err = git(dir, "rev-parse", "HEAD"); err != nil {
		return nil, err
	}
	logf("commit %s \"release %s\"", res.Commit, version)

	for _, m := range mods {
		if !m.Released {
			continue
		}
		tag := m.Tag(version)
		if _, err := git(dir, "tag", "-a", "-m", m.Path+" "+version, tag, res.Commit); err != nil {
			for _, t := range res.Tags {
				git(dir, "tag", "-d", t)
			}
			return nil, fmt.Errorf("%w (the tags made before it were deleted; the release commit %s stays)", err, res.Commit)
		}
		res.Tags = append(res.Tags, tag)
		logf("tag %s", tag)
	}

	push := []string{"git", "push", "--atomic", "origin"}
	if branch, err := git(dir, "symbolic-ref", "-q", "--short", "HEAD"); err == nil && branch != "" {
		push = append(push, branch)
	}
	res.PushCommand = strings.Join(append(push, res.Tags...), " ")
	if opts.DryRun {
		logf("dry run done; %s is untouched. A real release would end with:", root)
	} else {
		logf("released %s locally; nothing was pushed. Publish it with:", version)
	}
	logf("  %s", res.PushCommand)
	return res, nil
}

// checkModules checks that something is released and that no released
// module requires a module that is not.
func checkModules(mods []Module) error {
	released := map[string]bool{}
	for _, m := range mods {
		released[m.Path] = m.Released
	}
	some := false
	for _, m := range mods {
		if !m.Released {
			continue
		}
		some = true
		for _, r := range m.Requires {
			if !released[r] {
				return fmt.Errorf("%s requires %s, which is not released: its users could not get it", m.Path, r)
			}
		}
	}
	if !some {
		return errors.New("go.work names no module to release")
	}
	return nil
}

// An edit is the new content of one go.mod file.
type edit struct {
	file     string // relative to the repository root, slash-separated
	old, new []byte
	changes  []string // "dir old => new" for each sibling require changed
}

// rewrites returns the go.mod files of mods, released or not (except the
// tools module, which requires no sibling), whose sibling requires must
// change to reach version, with their new content. A sibling required at a
// version above version is an error.
func rewrites(repoRoot string, mods []Module, version string) ([]edit, error) {
	short := map[string]string{} // module path -> its directory (path of the root module), for the log
	for _, m := range mods {
		short[m.Path] = m.Dir
		if m.Dir == "." {
			short[m.Path] = m.Path
		}
	}
	var edits []edit
	for _, m := range mods {
		if len(m.Requires) == 0 {
			continue
		}
		gomod := m.GoMod(repoRoot)
		old, err := os.ReadFile(gomod)
		if err != nil {
			return nil, err
		}
		f, err := modfile.Parse(gomod, old, nil)
		if err != nil {
			return nil, err
		}
		var changes []string
		for _, r := range f.Require {
			if !slices.Contains(m.Requires, r.Mod.Path) || r.Mod.Version == version {
				continue
			}
			if semver.Compare(r.Mod.Version, version) > 0 {
				return nil, fmt.Errorf("%s requires %s %s, above %s", m.Path, r.Mod.Path, r.Mod.Version, version)
			}
			changes = append(changes, fmt.Sprintf("%s %s => %s", short[r.Mod.Path], r.Mod.Version, version))
		}
		if len(changes) == 0 {
			continue
		}
		for _, p := range m.Requires {
			if err := f.AddRequire(p, version); err != nil {
				return nil, err
			}
		}
		f.Cleanup()
		data, err := f.Format()
		if err != nil {
			return nil, err
		}
		file := "go.mod"
		if m.Dir != "." {
			file = m.Dir + "/go.mod"
		}
		edits = append(edits, edit{file: file, old: old, new: data, changes: changes})
	}
	return edits, nil
}

// requirePaths returns every path m's go.mod in repoRoot requires.
func requirePaths(repoRoot string, m Module) []string {
	data, err := os.ReadFile(m.GoMod(repoRoot))
	if err != nil {
		return nil
	}
	f, err := modfile.ParseLax("go.mod", data, nil)
	if err != nil {
		return nil
	}
	var paths []string
	for _, r := range f.Require {
		paths = append(paths, r.Mod.Path)
	}
	return paths
}

// checkAlone checks that module m of the repository at repoRoot resolves
// the imports of its packages and their tests from its own go.mod, outside
// the workspace and without the network. In the workspace a package may
// import any workspace module without requiring it; a user's build would
// not find it.
func checkAlone(repoRoot string, m Module) error {
	cmd := exec.Command("go", "list", "-deps", "-test", "./...")
	cmd.Dir = filepath.Join(repoRoot, filepath.FromSlash(m.Dir))
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOPROXY=off", "GOFLAGS=-mod=readonly")
	var stderr bytes.Buffer
	cmd.Stdout = io.Discard
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s does not build on its own (GOWORK=off GOPROXY=off go list -mod=readonly -deps -test ./... in %s): %v\n%s", m.Path, m.Dir, err, firstLines(stderr.String(), 20))
	}
	return nil
}

// cloneForDryRun clones the repository at root into dir (a new temporary
// directory if dir is empty) and configures the clone so that committing
// and tagging work without asking anything: an identity if git has none,
// no signing.
func cloneForDryRun(root, dir string) (string, error) {
	if dir == "" {
		var err error
		if dir, err = os.MkdirTemp("", "faio-release-*"); err != nil {
			return "", err
		}
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return "", err
	}
	if _, err := git(root, "clone", "-q", "--", root, dir); err != nil {
		return "", err
	}
	settings := [][2]string{{"commit.gpgSign", "false"}, {"tag.gpgSign", "false"}}
	// Asked of the clone: a clone does not inherit its source's local
	// config, only the global and system ones.
	if name, _ := git(dir, "config", "user.name"); name == "" {
		settings = append(settings, [2]string{"user.name", "faio release dry run"})
	}
	if email, _ := git(dir, "config", "user.email"); email == "" {
		settings = append(settings, [2]string{"user.email", "release-dry-run@invalid"})
	}
	for _, s := range settings {
		if _, err := git(dir, "config", s[0], s[1]); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// git runs git in dir and returns its standard output, trimmed.
func git(dir string, args ...string) (string, error) {
	cmd := exec.Command("git", args...)
	cmd.Dir = dir
	cmd.Env = gitEnv()
	var stdout, stderr bytes.Buffer
	cmd.Stdout = &stdout
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("git %s (in %s): %v: %s", strings.Join(args, " "), dir, err, strings.TrimSpace(stderr.String()))
	}
	return strings.TrimSpace(stdout.String()), nil
}

// gitEnv is the environment without the variables that would point git at
// another repository than the one of its working directory.
func gitEnv() []string {
	var env []string
	for _, kv := range os.Environ() {
		switch strings.SplitN(kv, "=", 2)[0] {
		case "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY":
			continue
		}
		env = append(env, kv)
	}
	return env
}

// sameDir reports whether a and b name the same directory.
func sameDir(a, b string) bool {
	ia, err1 := os.Stat(a)
	ib, err2 := os.Stat(b)
	return err1 == nil && err2 == nil && os.SameFile(ia, ib)
}

// firstLines returns the first n lines of s, saying how many were left out.
func firstLines(s string, n int) string {
	lines := strings.Split(strings.TrimRight(s, "\n"), "\n")
	if len(lines) <= n {
		return strings.Join(lines, "\n")
	}
	return strings.Join(lines[:n], "\n") + fmt.Sprintf("\n... and %d more lines", len(lines)-n)
}
