package bench

import (
	"fmt"
	"strings"
	"time"

	"github.com/faio-go/faio"
)

// Target is a goal of WORKLOADS.md for faio against goroutines in the same
// run, at workers = the number of CPUs.
type Target struct {
	// MaxRatio bounds faio's ns/op divided by the goroutines' ns/op.
	MaxRatio float64
	// MaxCPURatio bounds faio's server CPU time per op divided by the
	// goroutines' (W7, W7c); 0: no bound.
	MaxCPURatio float64
	// MaxP99 bounds faio's p99 (W5: sleep lateness, W7: round trip);
	// 0: no bound.
	MaxP99 time.Duration
	// MaxThreads bounds faio's peak OS threads (W6d); 0: no bound.
	MaxThreads int
	// MaxWake bounds faio's time from the deadline to the last wake-up
	// (W5b: the run's secs); 0: no bound.
	MaxWake time.Duration
}

// PortableTarget is the target of W1 ... W8 (W5b and W6d among them) when
// faio runs on the portable backend (-backend portable, or auto without
// io_uring): within 1.5 times the goroutines' ns/op. W9 and W10 have no
// target there.
var PortableTarget = Target{MaxRatio: 1.5}

// TargetOn returns w's target for a faio run on backend, "io_uring" or
// "portable" ("": not known, taken as io_uring), and false if w has none on
// that backend.
func (w *Workload) TargetOn(backend string) (Target, bool) {
	if backend != faio.BackendPortable.String() {
		return w.Target, true
	}
	if w.ID == "W9" || w.ID == "W10" {
		return Target{}, false
	}
	return PortableTarget, true
}

// String writes the target as the table shows it: "≤ 0.77, cpu ≤ 0.77,
// p99 ≤ 2ms".
func (t Target) String() string {
	parts := []string{fmt.Sprintf("≤ %g", t.MaxRatio)}
	if t.MaxCPURatio > 0 {
		parts = append(parts, fmt.Sprintf("cpu ≤ %g", t.MaxCPURatio))
	}
	if t.MaxP99 > 0 {
		parts = append(parts, fmt.Sprintf("p99 ≤ %v", t.MaxP99))
	}
	if t.MaxThreads > 0 {
		parts = append(parts, fmt.Sprintf("≤ %d threads", t.MaxThreads))
	}
	if t.MaxWake > 0 {
		parts = append(parts, fmt.Sprintf("all woken ≤ %v", t.MaxWake))
	}
	return strings.Join(parts, ", ")
}

// Ratio returns faio's ns/op over the goroutines' ns/op (0 if the latter is
// 0, which a validated run never reports).
func Ratio(faio, gor Result) float64 {
	if gor.NsPerOp == 0 {
		return 0
	}
	return faio.NsPerOp / gor.NsPerOp
}

// CPURatio returns faio's server CPU time per op over the goroutines', and
// false unless both were measured and the latter is not 0.
func CPURatio(faio, gor Result) (float64, bool) {
	if faio.ServerCPUus == nil || gor.ServerCPUus == nil || *gor.ServerCPUus == 0 {
		return 0, false
	}
	return *faio.ServerCPUus / *gor.ServerCPUus, true
}

// Check reports whether faio's result meets the target against gor's, and
// if not, every bound it misses.
func (t Target) Check(faio, gor Result) (met bool, misses []string) {
	if r := Ratio(faio, gor); gor.NsPerOp == 0 || r > t.MaxRatio {
		misses = append(misses, fmt.Sprintf("ratio %.2f > %g", r, t.MaxRatio))
	}
	if t.MaxCPURatio > 0 {
		switch r, ok := CPURatio(faio, gor); {
		case !ok:
			misses = append(misses, "cpu not measured")
		case r > t.MaxCPURatio:
			misses = append(misses, fmt.Sprintf("cpu ratio %.2f > %g", r, t.MaxCPURatio))
		}
	}
	if t.MaxP99 > 0 {
		limit := float64(t.MaxP99.Nanoseconds()) / 1e3
		switch {
		case faio.P99us == nil:
			misses = append(misses, "p99 not measured")
		case *faio.P99us > limit:
			misses = append(misses, fmt.Sprintf("p99 %s > %v", formatMicros(*faio.P99us), t.MaxP99))
		}
	}
	if t.MaxThreads > 0 {
		switch {
		case faio.Threads == 0:
			misses = append(misses, "threads not measured")
		case faio.Threads > t.MaxThreads:
			misses = append(misses, fmt.Sprintf("%d threads > %d", faio.Threads, t.MaxThreads))
		}
	}
	if t.MaxWake > 0 && faio.Secs > t.MaxWake.Seconds() {
		misses = append(misses, fmt.Sprintf("all woken in %.2fs > %v", faio.Secs, t.MaxWake))
	}
	return len(misses) == 0, misses
}

// formatMicros writes a duration given in microseconds with a unit that
// keeps it short: "812.3µs", "31.01ms".
func formatMicros(us float64) string {
	if us >= 1000 {
		return fmt.Sprintf("%.2fms", us/1000)
	}
	return fmt.Sprintf("%.1fµs", us)
}
