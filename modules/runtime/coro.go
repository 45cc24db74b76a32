package runtime

import (
	"fmt"
	"iter"
	"runtime/debug"
	"sync"
)

// coro is a pooled stackful coroutine. Its goroutine runs one task's
// function at a time; between tasks it waits in yield for the next one.
// Creating a coroutine costs about a microsecond, a resume and yield about a
// tenth of that, hence the pool.
type coro struct {
	next  func() (struct{}, bool)
	stop  func()
	yield func(struct{}) bool
	g     uintptr
	task  *Task
}

// coroutines maps the identity of every live coroutine goroutine to its
// coro, so BlockOn and Close can refuse to run on one.
var coroutines sync.Map // uintptr -> *coro

func newCoro() *coro {
	c := &coro{}
	c.next, c.stop = iter.Pull(c.loop)
	return c
}

func (c *coro) loop(yield func(struct{}) bool) {
	c.yield = yield
	c.g = getg()
	coroutines.Store(c.g, c)
	defer coroutines.Delete(c.g)
	for {
		c.task.coroG.Store(c.g)
		c.task.execute()
		if !yield(struct{}{}) {
			return
		}
	}
}

// onCoroutine reports whether the caller runs on a faio coroutine or worker.
func onCoroutine() bool {
	_, ok := coroutines.Load(getg())
	return ok
}

// PanicError is the error Join returns for a task that panicked.
type PanicError struct {
	Value any    // the value passed to panic
	Stack []byte // the task's stack at the panic
}

func (e *PanicError) Error() string {
	return fmt.Sprintf("faio task panicked: %v\n\n%s", e.Value, e.Stack)
}

// Unwrap returns the panic value if it is an error.
func (e *PanicError) Unwrap() error {
	err, _ := e.Value.(error)
	return err
}

// execute runs the task's function on its coroutine.
func (t *Task) execute() {
	if t.rt.cfg.PanicPolicy == PanicCrash {
		t.body.run(t)
		t.yieldReason = reasonDone
		return
	}
	defer func() {
		if r := recover(); r != nil {
			t.body.fail(&PanicError{Value: r, Stack: debug.Stack()})
		}
		t.yieldReason = reasonDone
	}()
	t.body.run(t)
}
