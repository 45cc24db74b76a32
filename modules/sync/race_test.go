//go:build race

package sync

// raceEnabled scales the stress tests down under the race detector, which
// slows every switch and atomic several times over; the full sizes run
// without it.
const raceEnabled = true
