package main

import (
	"fmt"
	"slices"
	"strings"
)

// result is one run's JSON line.
type result struct {
	Variant     string  `json:"variant"`
	RoundTrips  int64   `json:"round_trips"`   // timed round trips, all connections
	NsPerOp     float64 `json:"ns_per_op"`     // wall time of the timed part per round trip
	ServerCPUus float64 `json:"server_cpu_us"` // server CPU time (user+sys) per round trip
	P50us       float64 `json:"p50_us"`        // round-trip latency
	P99us       float64 `json:"p99_us"`
	// EntersPerRT is the io_uring_enter or epoll_wait calls per round trip
	// (io_uring and epoll variants).
	EntersPerRT *float64 `json:"enters_per_rt,omitempty"`
}

// reference is the variant the table's ratios are to.
const reference = "gonet2"

// renderTable renders the medians of results per variant, in the order the
// variants first ran, as a Markdown table, with the ratios of server CPU
// and ns/op to those of gonet2 when it ran.
func renderTable(results []result) string {
	var names []string
	byName := map[string][]result{}
	for _, r := range results {
		if _, ok := byName[r.Variant]; !ok {
			names = append(names, r.Variant)
		}
		byName[r.Variant] = append(byName[r.Variant], r)
	}
	med := func(name string, f func(result) float64) float64 {
		rs := byName[name]
		vs := make([]float64, len(rs))
		for i, r := range rs {
			vs[i] = f(r)
		}
		return median(vs)
	}
	cpu := func(r result) float64 { return r.ServerCPUus }
	ns := func(r result) float64 { return r.NsPerOp }
	_, withRef := byName[reference]

	var b strings.Builder
	b.WriteString("| variant | runs | server CPU µs/RT | ns/op | p50 µs | p99 µs | enters/RT |")
	sep := "|---|---:|---:|---:|---:|---:|---:|"
	if withRef {
		b.WriteString(" CPU / " + reference + " | ns/op / " + reference + " |")
		sep += "---:|---:|"
	}
	b.WriteString("\n" + sep + "\n")
	for _, name := range names {
		enters := "–"
		if byName[name][0].EntersPerRT != nil {
			enters = fmt.Sprintf("%.3f", med(name, func(r result) float64 { return *r.EntersPerRT }))
		}
		fmt.Fprintf(&b, "| %s | %d | %.2f | %.0f | %.0f | %.0f | %s |", name, len(byName[name]),
			med(name, cpu), med(name, ns),
			med(name, func(r result) float64 { return r.P50us }),
			med(name, func(r result) float64 { return r.P99us }), enters)
		if withRef {
			fmt.Fprintf(&b, " %.2f | %.2f |", med(name, cpu)/med(reference, cpu), med(name, ns)/med(reference, ns))
		}
		b.WriteString("\n")
	}
	return b.String()
}

// median returns the median of vs (the mean of the middle two for an even
// count), which must not be empty.
func median(vs []float64) float64 {
	s := slices.Sorted(slices.Values(vs))
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}
