//go:build !race

package aio

const raceEnabled = false
