package runtime

import "testing"

// A report of a stall of task x on coroutine c that arrives after x has
// finished and runInline has started y on c must not mark the worker stuck:
// Sample names a run by coroutine and task, and markStuck checked only the
// coroutine, so the worker was marked stuck while it ran y, which the
// watchdog never found stuck (found by a reviewer).
func TestMarkStuckIgnoresANewTaskOnTheSameCoroutine(t *testing.T) {
	x, y := &Task{}, &Task{}
	c := &coro{}
	w := &worker{}
	rt := &Runtime{workers: []*worker{w}}

	// The watchdog sampled (c, x)...
	run := runSample{c, x}
	// ...then x finished and runInline started y on c (it clears the
	// mark, of which there is none yet, and names y).
	c.task = y
	c.watched.Store(y)
	w.current.Store(c)

	// The delayed report of x's stall arrives.
	(*watchedWorkers)(rt).markStuck(0, run)
	if w.stuck() {
		t.Fatalf("worker marked stuck on (c, y) by the report of a stall of (c, x), which has ended")
	}
}
