// Package channel provides a bounded multi-producer multi-consumer
// Channel[T] with Sender and Receiver ends for faio-go tasks.
//
// The package is being built; see the project README for its status.
package channel
