package release

import (
	"fmt"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"golang.org/x/mod/modfile"
)

// A Module is one module of the workspace, as Modules reports it.
type Module struct {
	// Dir is the module's directory relative to the repository root,
	// slash-separated: "." for the root module, "modules/ringq" for another.
	Dir string
	// Path is the module path declared by its go.mod.
	Path string
	// Requires lists the paths of the sibling modules (modules of the same
	// workspace) that its go.mod requires, directly or as // indirect,
	// sorted.
	Requires []string
	// Released reports whether Release tags the module.
	Released bool
	// Reason says why the module is not released; empty when it is.
	Reason string
}

// Tag returns the git tag that marks version of the module: version itself
// for the root module, Dir + "/" + version for the others.
func (m Module) Tag(version string) string {
	if m.Dir == "." {
		return version
	}
	return m.Dir + "/" + version
}

// GoMod returns the path of the module's go.mod under repoRoot.
func (m Module) GoMod(repoRoot string) string {
	return filepath.Join(repoRoot, filepath.FromSlash(m.Dir), "go.mod")
}

// unreleased gives the modules that are never released, by path, with the
// reason. Modules whose path ends in /tools are not released either.
var unreleased = map[string]string{
	"github.com/faio-go/faio/capi":  "the C library (package main, -buildmode=c-shared): its cgo flags include ../include from outside the module, so it builds only inside the repository",
	"github.com/faio-go/faio/bench": "the benchmark program: no package to import (its library is internal), and `go install ...@version` refuses a module with replace directives; it is run from the checkout",
}

// buildOnly are modules the build needs and users must not get through a
// released module's requirements.
var buildOnly = []string{"github.com/magefile/mage"}

// Modules reads repoRoot/go.work and the go.mod of every module it uses,
// and returns the modules in dependency order: every module comes after the
// siblings it requires (leaves first), and modules of the same depth are
// ordered by path. A cycle among the requirements is an error, as are a
// module directory outside repoRoot, a released module whose path does not
// match its directory (the go command could not find it at its tag), and a
// requirement of a path under the root module's path that no workspace
// module provides.
func Modules(repoRoot string) ([]Module, error) {
	workPath := filepath.Join(repoRoot, "go.work")
	data, err := os.ReadFile(workPath)
	if err != nil {
		return nil, err
	}
	work, err := modfile.ParseWork(workPath, data, nil)
	if err != nil {
		return nil, err
	}

	var mods []Module
	byPath := map[string]int{}
	requires := map[string][]string{} // module path -> every required path
	for _, u := range work.Use {
		if filepath.IsAbs(u.Path) {
			return nil, fmt.Errorf("go.work uses %s: an absolute directory cannot be tagged in this repository", u.Path)
		}
		dir := path.Clean(filepath.ToSlash(u.Path))
		if dir == ".." || strings.HasPrefix(dir, "../") {
			return nil, fmt.Errorf("go.work uses %s, outside the repository", u.Path)
		}
		m := Module{Dir: dir}
		gomod := m.GoMod(repoRoot)
		data, err := os.ReadFile(gomod)
		if err != nil {
			return nil, err
		}
		f, err := modfile.Parse(gomod, data, nil)
		if err != nil {
			return nil, err
		}
		if f.Module == nil {
			return nil, fmt.Errorf("%s: no module directive", gomod)
		}
		m.Path = f.Module.Mod.Path
		if i, dup := byPath[m.Path]; dup {
			return nil, fmt.Errorf("module %s is in both %s and %s", m.Path, mods[i].Dir, dir)
		}
		for _, r := range f.Require {
			requires[m.Path] = append(requires[m.Path], r.Mod.Path)
		}
		m.Released = true
		if strings.HasSuffix(m.Path, "/tools") {
			m.Released, m.Reason = false, "the build's own tools (mage), not for users"
		} else if why, ok := unreleased[m.Path]; ok {
			m.Released, m.Reason = false, why
		}
		byPath[m.Path] = len(mods)
		mods = append(mods, m)
	}

	rootPath := ""
	for _, m := range mods {
		if m.Dir == "." {
			rootPath = m.Path
		}
	}
	for i := range mods {
		m := &mods[i]
		if m.Released && rootPath != "" && m.Dir != "." && m.Path != rootPath+"/"+m.Dir {
			return nil, fmt.Errorf("module %s is in directory %s: the go command looks for it in %s", m.Path, m.Dir, strings.TrimPrefix(m.Path, rootPath+"/"))
		}
		for _, r := range requires[m.Path] {
			if _, ok := byPath[r]; ok {
				if !slices.Contains(m.Requires, r) {
					m.Requires = append(m.Requires, r)
				}
			} else if rootPath != "" && strings.HasPrefix(r, rootPath+"/") {
				return nil, fmt.Errorf("%s requires %s, which is not a module of go.work", m.Path, r)
			}
		}
		slices.Sort(m.Requires)
	}
	return sortByDependency(mods)
}

// sortByDependency orders mods leaves first: by depth (the length of the
// longest chain of sibling requirements below a module), then by path.
func sortByDependency(mods []Module) ([]Module, error) {
	depth := map[string]int{}
	left := slices.Clone(mods)
	for level := 0; len(left) > 0; level++ {
		var next []Module
		var placed []string
		for _, m := range left {
			ready := true
			for _, r := range m.Requires {
				if d, ok := depth[r]; !ok || d >= level {
					ready = false
					break
				}
			}
			if ready {
				placed = append(placed, m.Path)
			} else {
				next = append(next, m)
			}
		}
		if len(placed) == 0 {
			var cycle []string
			for _, m := range left {
				cycle = append(cycle, m.Path)
			}
			return nil, fmt.Errorf("the requirements of these modules form a cycle: %s", strings.Join(cycle, ", "))
		}
		for _, p := range placed {
			depth[p] = level
		}
		left = next
	}
	out := slices.Clone(mods)
	slices.SortStableFunc(out, func(a, b Module) int {
		if d := depth[a.Path] - depth[b.Path]; d != 0 {
			return d
		}
		return strings.Compare(a.Path, b.Path)
	})
	return out, nil
}
