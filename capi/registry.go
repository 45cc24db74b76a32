package main

import (
	"context"
	"sync/atomic"

	"github.com/faio-go/faio/modules/runtime"
)

// handles holds every object C has a handle to: runtimes, mutexes,
// channels, and the frames whose handles serve as callback markers.
var handles handleTable

// rtState is a runtime as the C ABI sees it.
type rtState struct {
	rt     *runtime.Runtime
	handle uint64
	// frames has one frame per worker, indexed by worker id.
	frames []*frame
	// closing is set by faio_runtime_free before it closes rt: from then
	// on nothing new is accepted, so every callback accepted before is
	// still invoked exactly once.
	closing atomic.Bool
	// pollFDs: the C program's descriptors registered with rt's readiness
	// poller while a socket operation waits on them (io_portable.go).
	pollFDs pollRegistry
}

// frame is the context of the C callback a worker is running. A worker
// runs one callback at a time and never starts another inside it (no
// export invokes a callback), so a frame per worker is enough and is
// owned, while the callback runs, by the task that invoked it.
//
// The frame's handle is the thread-local marker shim.c sets around the
// callback; the shim passes it to every export, which is how an export
// knows it runs inside a callback (and of which runtime) without asking
// the Go runtime which goroutine it is on.
type frame struct {
	token uint64
	s     *rtState
	// The jobs the running callback started, in order: started when it
	// returns, as children of its task (see drive).
	first job
	more  []job
}

// add records j, started by the callback running in f.
func (f *frame) add(j job) {
	if f.first == nil {
		f.first = j
		return
	}
	f.more = append(f.more, j)
}

// take hands the jobs recorded so far to the caller and empties f.
func (f *frame) take() started {
	st := started{first: f.first, more: f.more}
	f.first, f.more = nil, nil
	return st
}

// frameFor returns the frame of the worker running the task ctx.
func (s *rtState) frameFor(ctx context.Context) *frame {
	return s.frames[runtime.Current(ctx).WorkerID()]
}

// frameOf returns the frame a thread-local marker names, or nil outside a
// callback.
func frameOf(token uint64) *frame {
	if token == 0 {
		return nil
	}
	f, _ := lookupAs[*frame](&handles, token)
	return f
}

// runtimeOf returns the runtime of handle h.
func runtimeOf(h uint64) (*rtState, int32) {
	s, ok := lookupAs[*rtState](&handles, h)
	if !ok {
		return nil, codeEBADHANDLE
	}
	return s, codeOK
}

// start runs j on s. Called from a callback of s (token names a frame of
// s), j is recorded in the frame and starts when the callback returns, as a
// child of the callback's task: so faio_block_on waits for it, and an
// export never starts or resumes a task itself. Otherwise j starts at once
// as an independent task.
func (s *rtState) start(token uint64, j job) int32 {
	if s.closing.Load() {
		return codeESHUTDOWN
	}
	if f := frameOf(token); f != nil && f.s == s {
		f.add(j)
		return codeOK
	}
	h := runtime.SpawnOn(s.rt, func(ctx context.Context) (struct{}, error) {
		drive(ctx, s, j)
		return struct{}{}, nil
	})
	if !h.Spawned() {
		return codeESHUTDOWN
	}
	return codeOK
}
