// Package bench will hold the W1..W8 workloads of shared/bench/WORKLOADS.md,
// run against faio-go and against plain goroutines side by side.
//
// The workloads are being built; see the project README for their status.
package bench
