//go:build tools

// Package tools records the build's own dependencies, so that `go mod tidy`
// keeps them in this module's go.mod: mage runs the targets of magefile.go
// (`go run mage.go <target>` resolves mage through the workspace), and
// nothing a user of faio imports depends on it.
package tools

import (
	_ "github.com/magefile/mage/mage"
	_ "github.com/magefile/mage/mg"
	_ "github.com/magefile/mage/sh"
)
