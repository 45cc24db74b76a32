// Package release makes a release of faio-go's separately versioned
// modules: one commit and one git tag per module, made locally, pushed by
// the maintainer. The mage target `release` calls Release:
//
//	go run mage.go release v0.1.0
//
// # The modules
//
// The modules are those of go.work (Modules reads it and each go.mod), and
// they release together: one version number for all of them, so a user who
// requires runtime v0.3.0 and channel v0.3.0 gets code from one commit. A
// module is released unless it is one of these:
//
//   - a module whose path ends in /tools (this one): the build's own
//     dependencies (mage), kept out of the modules users import;
//   - github.com/faio-go/faio/capi, the C library: a package main built with
//     -buildmode=c-shared whose cgo flags include ../include from outside
//     its directory, so it builds only inside the repository and cannot be
//     built from a module download;
//   - github.com/faio-go/faio/bench, the benchmark program: it has no
//     package anyone could import (its library is internal), and its
//     command cannot be installed with `go install ...@version`, which the
//     go command refuses for a module with replace directives.
//
// A released module may not require one that is not released.
//
// # Tags
//
// The go command finds version vX.Y.Z of the module in directory dir of a
// repository at the tag dir/vX.Y.Z, and of the module at the repository's
// root at the tag vX.Y.Z (https://go.dev/ref/mod#vcs-version); the same
// scheme serves golang.org/x/tools and aws-sdk-go-v2. Release creates one
// annotated tag per released module, all on one commit, in dependency
// order: modules/ringq/v0.1.0, modules/statemachine/v0.1.0, ...,
// modules/runtime/v0.1.0, ..., and v0.1.0 for the root module last. The
// order is the one a reader of `git tag` or of the push expects, leaves
// first; `git push --atomic` publishes them all at once.
//
// # Why the requires are rewritten
//
// During development the modules require each other at v0.0.0, a version
// that exists nowhere, and resolve it with replace directives pointing at
// the sibling directories (and with go.work). A user's build ignores the
// replace directives of the modules it depends on, so it takes those
// require lines at face value: a released sync that still required runtime
// v0.0.0 would not build anywhere but in this checkout. Release therefore
// rewrites every require of a sibling module, in every module's go.mod, from
// its current version to the version being released, commits that as
// "release vX.Y.Z", and tags that commit. The go.mod files then stay at that
// version until the next release.
//
// The replace directives stay. They only apply when the module is the main
// module, that is to the development in this checkout (and GOWORK=off
// builds inside it), where they keep each module building against the
// sibling directories rather than against the published versions; users of
// the modules never see them. The one thing they prevent is `go install
// pkg@version` of a command in a module that has them, which the go command
// refuses for any module with replace directives.
//
// # Checks
//
// Release refuses a version that is not a canonical semantic version
// (vX.Y.Z, optionally with a pre-release), v0.0.0, a major version above v1
// (that needs /vN module paths), a version some module is already tagged
// with, a version lower than one a sibling require already names, and a work
// tree with uncommitted or untracked changes (a release is made from a
// commit). After rewriting the go.mod files it checks, for each released
// module on its own (GOWORK=off, GOPROXY=off, -mod=readonly), that `go list
// -deps -test ./...` resolves: a package imported from a sibling without a
// require line builds in the workspace but not for users. Nothing Release
// runs uses the network, and it pushes nothing: it prints the `git push`
// command that publishes the release.
//
// # Dry run
//
// With Options.DryRun, Release does the same in a throwaway clone of the
// repository (Options.CloneDir, or a new temporary directory that is kept
// for inspection), logs what it did and returns the clone's path in
// Result.Dir; the repository itself is left untouched.
package release
