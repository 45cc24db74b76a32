package ringq_test

import (
	"errors"
	"fmt"

	"github.com/faio-go/faio/modules/ringq"
)

// A worker pushes the tasks it spawns to its own queue and pops them in
// FIFO order.
func ExampleLocalQueue() {
	q, err := ringq.NewLocalQueue[string](4)
	if err != nil {
		panic(err)
	}
	global := ringq.NewGlobalQueue[string]()
	for _, task := range []string{"a", "b", "c"} {
		if err := q.Push(task, global); err != nil {
			panic(err)
		}
	}
	fmt.Println(q.Len(), q.RemainingCap())
	for task, ok := q.Pop(); ok; task, ok = q.Pop() {
		fmt.Print(task, " ")
	}
	fmt.Println()
	// Output:
	// 3 1
	// a b c
}

// A full queue does not refuse a push: it moves its oldest half and the new
// item to the global queue in one batch.
func ExampleLocalQueue_Push() {
	q, _ := ringq.NewLocalQueue[int](4)
	global := ringq.NewGlobalQueue[int]()
	for v := 1; v <= 5; v++ {
		if err := q.Push(v, global); err != nil {
			panic(err)
		}
	}
	fmt.Println("global:", global.PopBatch(nil, global.Len()))
	fmt.Println("local:", q.Len())

	// Without a sink a full queue says so and keeps the item out.
	q.PushBatch([]int{6, 7})
	err := q.Push(8, nil)
	fmt.Println(errors.Is(err, ringq.ErrFull))
	// Output:
	// global: [1 2 5]
	// local: 2
	// true
}

// An idle worker steals half of a busy worker's queue: it runs one stolen
// task at once and finds the rest in its own queue.
func ExampleLocalQueue_StealInto() {
	busy, _ := ringq.NewLocalQueue[int](8)
	idle, _ := ringq.NewLocalQueue[int](8)
	busy.PushBatch([]int{1, 2, 3, 4, 5, 6})

	task, ok := busy.StealInto(idle)
	fmt.Println("run now:", task, ok)
	fmt.Println("busy keeps", busy.Len(), "idle holds", idle.Len())
	// Output:
	// run now: 3 true
	// busy keeps 3 idle holds 2
}

// The global queue takes work from anywhere and, once closed, refuses new
// work while the workers drain what is left.
func ExampleGlobalQueue() {
	q := ringq.NewGlobalQueue[string]()
	_ = q.Push("root")
	_ = q.PushBatch([]string{"x", "y", "z"})
	q.Close()
	fmt.Println(q.Push("late"))
	batch := q.PopBatch(nil, 3)
	last, _ := q.Pop()
	fmt.Println(batch, last, q.Len())
	// Output:
	// faio/ringq: queue closed
	// [root x y] z 0
}

// A ring buffer is the storage of a bounded channel; capacity 0 is a
// rendezvous channel's, always full and always empty.
func ExampleRingBuffer() {
	r, _ := ringq.NewRingBuffer[int](2)
	fmt.Println(r.Push(1), r.Push(2), r.Push(3), r.Full())
	v, _ := r.Pop()
	next, _ := r.Peek()
	fmt.Println(v, next, r.Len())

	zero, _ := ringq.NewRingBuffer[int](0)
	fmt.Println(zero.Push(1), zero.Full(), zero.Len())
	// Output:
	// true true false true
	// 1 2 1
	// false true 0
}
