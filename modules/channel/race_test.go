//go:build race

package channel

// raceEnabled scales the stress tests down under the race detector, which
// slows every lock and switch many times over; the run without -race does
// the full counts.
const raceEnabled = true
