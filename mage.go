//go:build ignore

// mage.go lets `go run mage.go <target>` build and run the targets of
// magefile.go without mage installed.
package main

import (
	"os"

	"github.com/magefile/mage/mage"
)

func main() { os.Exit(mage.Main()) }
