// Package ringq holds the run queues of faio-go's scheduler.
package ringq
