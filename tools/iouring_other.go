//go:build mage && !linux

package main

import "errors"

// ioURingUnavailable: io_uring is Linux's.
func ioURingUnavailable() error { return errors.New("not Linux") }
