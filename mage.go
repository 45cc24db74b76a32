//go:build ignore

// mage.go lets `go run mage.go <target>` build and run the targets of
// tools/magefile.go without mage installed. The magefile lives in the tools
// module, so that mage is a requirement of the build alone and not of the
// module users import; the targets run in this directory, the repository's
// root.
package main

import (
	"os"

	"github.com/magefile/mage/mage"
)

func main() {
	args := append([]string{"-d", "tools", "-w", "."}, os.Args[1:]...)
	os.Exit(mage.ParseAndRun(os.Stdout, os.Stderr, os.Stdin, args))
}
