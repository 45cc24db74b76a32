package bench

import (
	"math"
	"slices"
	"time"
)

// percentile returns the p-th percentile (0 < p <= 100) of sorted by the
// nearest-rank method: the smallest value with at least p% of the values at
// or below it. It returns 0 for no values.
func percentile(sorted []time.Duration, p float64) time.Duration {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(math.Ceil(p / 100 * float64(len(sorted))))
	rank = min(max(rank, 1), len(sorted))
	return sorted[rank-1]
}

// withLatencies sorts ds in place and records its p50, p99 and maximum in
// m.
func withLatencies(m Measurement, ds []time.Duration) Measurement {
	slices.Sort(ds)
	m.HasLatency = true
	m.P50 = percentile(ds, 50)
	m.P99 = percentile(ds, 99)
	if len(ds) > 0 {
		m.Max = ds[len(ds)-1]
	}
	return m
}
