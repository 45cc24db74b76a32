// Package ringq holds the run queues of faio-go's work-stealing scheduler.
//
// Three queues, one per role:
//
//   - LocalQueue is each worker's own run queue: a fixed power-of-two ring
//     with a single producer (the worker that owns it) and many consumers
//     (the owner popping, other workers stealing). Tasks spawned on a
//     worker go here. An idle worker calls victim.StealInto(own) to move
//     half of the busiest queue into its own and run one of the stolen
//     tasks at once. The ring is lock-free: see the LocalQueue type for the
//     packed head word and the happens-before argument.
//
//   - GlobalQueue is the shared injection queue: unbounded, any number of
//     producers and consumers, a mutex around a growable ring. Spawns from
//     outside the workers go here, and so does the overflow of a full
//     LocalQueue: Push moves half of the full queue plus the new item to
//     its Sink (a GlobalQueue) in one batch instead of failing. Workers
//     check it every few ticks and refill their local queues from it with
//     PopBatch. Close stops new work while letting the workers drain it.
//
//   - RingBuffer is a plain bounded FIFO without locking, used as the
//     buffer of a channel that already holds its own lock.
//
// How they fit in a worker loop:
//
//	if task, ok := local.Pop(); ok {
//		run(task)
//	} else if task, ok := busiest.StealInto(local); ok {
//		run(task)
//	} else if task, ok := global.Pop(); ok {
//		run(task)
//	}
//	...
//	local.Push(spawned, global) // overflows into global when full
//
// None of Push, Pop or StealInto on a LocalQueue allocates, and every queue
// zeroes a slot when its item leaves, so the garbage collector never sees a
// finished task through a queue.
package ringq
