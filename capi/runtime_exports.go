package main

/*
#include "capi.h"
*/
import "C"

import (
	"context"
	"sync/atomic"
	"time"

	"github.com/faio-go/faio/modules/runtime"
)

// This file implements the runtime functions of faio.h (shim.c calls the
// exports). The exports convert C types and nothing else; the logic is in
// the plain Go functions below them.

//export faiocgo_runtime_new
func faiocgo_runtime_new(workers, ringEntries, localQueueCapacity, globalQueueInterval, ioInterval, submitBatch C.int32_t, timerResolutionNs, stallThresholdNs C.int64_t, ioBackend C.int32_t, out *C.uint64_t) C.int {
	h, rc := newRuntime(runtime.Config{
		IOBackend:           runtime.Backend(ioBackend), // the enum's values are Backend's
		Workers:             int(workers),
		RingEntries:         int(ringEntries),
		LocalQueueCapacity:  int(localQueueCapacity),
		GlobalQueueInterval: int(globalQueueInterval),
		IOInterval:          int(ioInterval),
		SubmitBatch:         int(submitBatch),
		TimerResolution:     time.Duration(timerResolutionNs),
		StallThreshold:      time.Duration(stallThresholdNs),
	})
	*out = C.uint64_t(h)
	return C.int(rc)
}

//export faiocgo_runtime_free
func faiocgo_runtime_free(h, token C.uint64_t) C.int {
	return C.int(freeRuntime(uint64(h), uint64(token)))
}

//export faiocgo_spawn
func faiocgo_spawn(h C.uint64_t, fn, arg C.uintptr_t, token C.uint64_t) C.int {
	s, rc := runtimeOf(uint64(h))
	if s == nil {
		return C.int(rc)
	}
	return C.int(s.start(uint64(token), &taskJob{fn: uintptr(fn), arg: uintptr(arg)}))
}

//export faiocgo_block_on
func faiocgo_block_on(h C.uint64_t, fn, arg C.uintptr_t, token C.uint64_t) C.int {
	return C.int(blockOn(uint64(h), &taskJob{fn: uintptr(fn), arg: uintptr(arg)}, uint64(token)))
}

//export faiocgo_stats
func faiocgo_stats(h C.uint64_t, out *C.faio_runtime_stats) C.int {
	s, rc := runtimeOf(uint64(h))
	if s == nil {
		return C.int(rc)
	}
	st := s.rt.Stats()
	out.workers = C.int64_t(st.Workers)
	out.live = C.int64_t(st.Live)
	out.spawned = C.uint64_t(st.Spawned)
	out.completed = C.uint64_t(st.Completed)
	out.polls = C.uint64_t(st.Polls)
	out.steals = C.uint64_t(st.Steals)
	out.steal_attempts = C.uint64_t(st.StealAttempts)
	out.stolen = C.uint64_t(st.Stolen)
	out.global_pops = C.uint64_t(st.GlobalPops)
	out.parks = C.uint64_t(st.Parks)
	out.wakes = C.uint64_t(st.Wakes)
	out.io_submitted = C.uint64_t(st.IOSubmitted)
	out.io_completed = C.uint64_t(st.IOCompleted)
	out.io_errors = C.uint64_t(st.IOErrors)
	out.stalls = C.uint64_t(st.Stalls)
	out.coroutines = C.uint64_t(st.Coroutines)
	out.backend = C.int32_t(st.Backend)
	return C.int(codeOK)
}

// offExport runs f on a new goroutine and waits for it. An export runs on
// a goroutine locked to its C thread, and switching coroutines there is
// fatal ("coro: OS thread locking must match"): Close stops the workers'
// pooled coroutines, and New may create coroutines that must not record a
// locked creator. A fresh goroutine is not locked.
func offExport[T any](f func() T) T {
	done := make(chan T, 1)
	go func() { done <- f() }()
	return <-done
}

// newRuntime starts a runtime and registers it and one frame per worker.
func newRuntime(cfg runtime.Config) (uint64, int32) {
	type result struct {
		rt  *runtime.Runtime
		err error
	}
	r := offExport(func() result {
		rt, err := runtime.New(cfg)
		return result{rt, err}
	})
	if r.err != nil {
		return 0, errorCode(r.err)
	}
	rt := r.rt
	s := &rtState{rt: rt}
	fail := func(err error) (uint64, int32) {
		for _, f := range s.frames {
			handles.remove(f.token)
		}
		offExport(rt.Close)
		return 0, errorCode(err)
	}
	for range rt.Workers() {
		f := &frame{s: s}
		tok, err := handles.insert(f)
		if err != nil {
			return fail(err)
		}
		f.token = tok
		s.frames = append(s.frames, f)
	}
	h, err := handles.insert(s)
	if err != nil {
		return fail(err)
	}
	s.handle = h
	return h, codeOK
}

// freeRuntime shuts the runtime h down and frees its handles. Of several
// concurrent calls one does it; the others return FAIO_EBADHANDLE at once.
func freeRuntime(h, token uint64) int32 {
	if token != 0 {
		return codeEWOULDBLOCK
	}
	s, rc := runtimeOf(h)
	if s == nil {
		return rc
	}
	if !s.closing.CompareAndSwap(false, true) {
		return codeEBADHANDLE
	}
	err := offExport(s.rt.Close)
	handles.remove(h)
	for _, f := range s.frames {
		handles.remove(f.token)
	}
	return errorCode(err)
}

// blockOn runs j as a BlockOn root on runtime h.
func blockOn(h uint64, j job, token uint64) int32 {
	if token != 0 {
		return codeEWOULDBLOCK
	}
	s, rc := runtimeOf(h)
	if s == nil {
		return rc
	}
	if s.closing.Load() {
		return codeESHUTDOWN
	}
	// ran tells a shutdown that cancelled fn's work (FAIO_ECANCELED) from
	// one that refused fn (FAIO_ESHUTDOWN, as every refused call): a C
	// caller whose fn owns arg must know which, to free arg exactly once
	// (found by a reviewer: both returned FAIO_ESHUTDOWN).
	var ran atomic.Bool
	_, err := runtime.BlockOn(s.rt, func(ctx context.Context) (struct{}, error) {
		ran.Store(true)
		drive(ctx, s, j)
		return struct{}{}, nil
	})
	code := errorCode(err)
	if code == codeESHUTDOWN && ran.Load() {
		return codeECANCELED
	}
	return code
}
