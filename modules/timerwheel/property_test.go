package timerwheel

import (
	"flag"
	"os"
	"strconv"
	"sync/atomic"
	"testing"

	"pgregory.net/rapid"
)

// minSequences is how many random operation sequences the property test
// must check in a default run.
const minSequences = 10000

func TestMain(m *testing.M) {
	flag.Parse()
	// rapid checks 100 cases by default; raise that unless the caller chose
	// a number on the command line or through RAPID_CHECKS.
	explicit := false
	flag.Visit(func(f *flag.Flag) { explicit = explicit || f.Name == "rapid.checks" })
	if _, ok := os.LookupEnv("RAPID_CHECKS"); !ok && !explicit {
		if err := flag.Set("rapid.checks", strconv.Itoa(minSequences)); err != nil {
			panic(err)
		}
	}
	os.Exit(m.Run())
}

// rapidChooser draws the harness's decisions from rapid.
type rapidChooser struct{ t *rapid.T }

func (c rapidChooser) intn(label string, n int) int {
	return rapid.IntRange(0, n-1).Draw(c.t, label)
}

func (c rapidChooser) int64In(label string, lo, hi int64) int64 {
	return rapid.Int64Range(lo, hi).Draw(c.t, label)
}

// TestWheelMatchesModel runs random sequences of Insert, Cancel and
// Advance (with callbacks that insert and cancel) against the reference
// model in model_test.go, checking every fired entry, every return value,
// Len, Now, NextDeadline and the wheel's internal invariants after each
// operation.
func TestWheelMatchesModel(t *testing.T) {
	var sequences atomic.Int64
	rapid.Check(t, func(rt *rapid.T) {
		sequences.Add(1)
		h := newHarness(rt, rapidChooser{rt})
		for range rapid.IntRange(1, 200).Draw(rt, "ops") {
			h.step()
		}
	})
	want, err := strconv.Atoi(flag.Lookup("rapid.checks").Value.String())
	if err != nil {
		t.Fatal(err)
	}
	if testing.Short() {
		want /= 5 // as rapid itself does
	}
	if got := sequences.Load(); got < int64(want) {
		t.Fatalf("rapid ran %d sequences, want at least %d", got, want)
	}
	t.Logf("checked %d sequences", sequences.Load())
}
