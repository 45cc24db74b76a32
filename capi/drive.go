package main

/*
#include "capi.h"
*/
import "C"

import (
	"context"

	"github.com/faio-go/faio/modules/runtime"
)

// A job is one operation started from C: a task body, a lock, a channel
// operation, a sleep or an I/O. It runs in a task of its runtime, waits
// there if it must (the task suspends, its worker runs others), and ends by
// invoking its C callback exactly once, whatever happened (a cancelled wait
// reports FAIO_ECANCELED).
type job interface {
	// run does the job in the task ctx of s and returns the jobs its
	// callback started.
	run(ctx context.Context, s *rtState) started
}

// started are the jobs one callback started, in order.
type started struct {
	first job
	more  []job
}

// drive runs j in the task ctx, then what its callback started: each job
// but the last as a child task, the last in this task (a chain of
// callbacks, each starting the next operation, runs in one task). Jobs that
// cannot be spawned because the runtime is closing run here too, so that
// their callbacks are still invoked.
//
// Each job run here after the first charges the task's cooperative budget:
// a callback chain that never waits would otherwise keep the worker from
// its other tasks for good. A task a callback spawned (faio_spawn) is run
// here after a yield, behind the tasks already waiting, as a new task
// would be: faio.hpp's yield is such a spawn, and it ran on inline some
// 124 times before the tasks it yielded to (found by a reviewer).
func drive(ctx context.Context, s *rtState, j job) {
	var backlog []job
	for first := true; j != nil; first = false {
		if !first {
			// ctx.Err() is each job's own business. A spawned
			// task goes behind the waiting ones (see above).
			if _, ok := j.(*taskJob); ok {
				_ = runtime.Yield(ctx)
			} else {
				_ = runtime.Consume(ctx)
			}
		}
		st := j.run(ctx, s)
		j = nil
		if st.first != nil {
			j = st.first
			for _, next := range st.more {
				spawnJob(ctx, s, j, &backlog)
				j = next
			}
		}
		if j == nil && len(backlog) > 0 {
			j = backlog[len(backlog)-1]
			backlog = backlog[:len(backlog)-1]
		}
	}
}

// spawnJob starts j as a child of the task ctx, or queues it in backlog
// if the runtime no longer spawns.
func spawnJob(ctx context.Context, s *rtState, j job, backlog *[]job) {
	h := runtime.Spawn(ctx, func(ctx context.Context) (struct{}, error) {
		drive(ctx, s, j)
		return struct{}{}, nil
	})
	if !h.Spawned() {
		*backlog = append(*backlog, j)
	}
}

// The call* functions invoke a C callback from the task ctx of s, marking
// the thread with the worker's frame meanwhile, and return what the
// callback started. The frame must be looked up at each call: a task may
// move to another worker at every suspension.

func callTask(ctx context.Context, s *rtState, fn, arg uintptr) started {
	f := s.frameFor(ctx)
	C.faiocall_task(C.uintptr_t(fn), C.uintptr_t(arg), C.uint64_t(f.token), C.uint64_t(s.handle))
	return f.take()
}

func callDone(ctx context.Context, s *rtState, cb, arg uintptr, status int32) started {
	f := s.frameFor(ctx)
	C.faiocall_done(C.uintptr_t(cb), C.uintptr_t(arg), C.int(status), C.uint64_t(f.token), C.uint64_t(s.handle))
	return f.take()
}

func callRecv(ctx context.Context, s *rtState, cb, arg, item uintptr, status int32) started {
	f := s.frameFor(ctx)
	C.faiocall_recv(C.uintptr_t(cb), C.uintptr_t(arg), C.uintptr_t(item), C.int(status), C.uint64_t(f.token), C.uint64_t(s.handle))
	return f.take()
}

func callIO(ctx context.Context, s *rtState, cb, arg uintptr, result int64) started {
	f := s.frameFor(ctx)
	C.faiocall_io(C.uintptr_t(cb), C.uintptr_t(arg), C.int64_t(result), C.uint64_t(f.token), C.uint64_t(s.handle))
	return f.take()
}

// taskJob runs a faio_task_fn.
type taskJob struct{ fn, arg uintptr }

func (j *taskJob) run(ctx context.Context, s *rtState) started {
	return callTask(ctx, s, j.fn, j.arg)
}
