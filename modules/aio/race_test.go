//go:build race

package aio

// raceEnabled: the race detector slows every switch and allocation several
// times over, so timing bounds are checked only in the run without it
// (mage test runs TestTiming* a second time, without -race).
const raceEnabled = true
