package main

/*
#include "capi.h"
*/
import "C"

import (
	"context"
	"sync"

	fsync "github.com/faio-go/faio/modules/sync"
)

// mutexObj is a faio_mutex: a faio Mutex and the runtime its lock
// callbacks run on.
type mutexObj struct {
	s  *rtState
	mu fsync.Mutex
	// freed ends at faio_mutex_free, which holds mu for good, the waits of
	// the locks that looked the handle up just before its removal: they
	// return FAIO_EBADHANDLE instead of waiting forever.
	freed    context.Context
	setFreed context.CancelFunc
	// freeing serialises the calls of free, so that of concurrent
	// faio_mutex_free calls one frees m and the others see it freed.
	freeing sync.Mutex
}

func newMutexObj(s *rtState) *mutexObj {
	m := &mutexObj{s: s}
	m.freed, m.setFreed = context.WithCancel(context.Background())
	return m
}

// free takes m's lock for good and ends the waits of late lockers. It
// returns FAIO_EBUSY, changing nothing, when m is held or waited for, and
// FAIO_EBADHANDLE when another call freed it first: that call's lock,
// held for good, must not read as m being locked.
func (m *mutexObj) free() int32 {
	m.freeing.Lock()
	defer m.freeing.Unlock()
	if m.freed.Err() != nil {
		return codeEBADHANDLE
	}
	// Taking the lock proves no one holds it or waits for it (the lock
	// goes to queued waiters first).
	if !m.mu.TryLock() {
		return codeEBUSY
	}
	m.setFreed()
	return codeOK
}

// lockBlocking locks m, blocking the calling thread: FAIO_EBADHANDLE if m
// is freed first.
func (m *mutexObj) lockBlocking() int32 {
	if m.mu.Lock(m.freed) != nil {
		return codeEBADHANDLE
	}
	return codeOK
}

// lock locks m for a task (ctx): ctx's error if it ends first, and
// FAIO_EBADHANDLE if m is freed first.
func (m *mutexObj) lock(ctx context.Context) int32 {
	if m.mu.TryLock() {
		return codeOK
	}
	lctx, cancel := context.WithCancel(ctx)
	stop := context.AfterFunc(m.freed, cancel)
	err := m.mu.Lock(lctx)
	stop()
	cancel()
	if err != nil && m.freed.Err() != nil {
		return codeEBADHANDLE
	}
	return errorCode(err)
}

//export faiocgo_mutex_new
func faiocgo_mutex_new(rt C.uint64_t, out *C.uint64_t) C.int {
	s, rc := runtimeOf(uint64(rt))
	if s == nil {
		return C.int(rc)
	}
	if s.closing.Load() {
		return C.int(codeESHUTDOWN)
	}
	h, err := handles.insert(newMutexObj(s))
	if err != nil {
		return C.int(errorCode(err))
	}
	*out = C.uint64_t(h)
	return C.int(codeOK)
}

//export faiocgo_mutex_free
func faiocgo_mutex_free(h C.uint64_t) C.int {
	m, ok := lookupAs[*mutexObj](&handles, uint64(h))
	if !ok {
		return C.int(codeEBADHANDLE)
	}
	// The lock is never released: a call that looked the handle up just
	// before the removal finds it held, and, being freed, gives up.
	if rc := m.free(); rc != codeOK {
		return C.int(rc)
	}
	if _, ok := removeAs[*mutexObj](&handles, uint64(h)); !ok {
		return C.int(codeEBADHANDLE)
	}
	return C.int(codeOK)
}

//export faiocgo_mutex_runtime
func faiocgo_mutex_runtime(h C.uint64_t, out *C.uint64_t) C.int {
	m, ok := lookupAs[*mutexObj](&handles, uint64(h))
	if !ok {
		return C.int(codeEBADHANDLE)
	}
	*out = C.uint64_t(m.s.handle)
	return C.int(codeOK)
}

//export faiocgo_mutex_lock
func faiocgo_mutex_lock(h C.uint64_t, cb, arg C.uintptr_t, token C.uint64_t) C.int {
	m, ok := lookupAs[*mutexObj](&handles, uint64(h))
	if !ok {
		return C.int(codeEBADHANDLE)
	}
	return C.int(m.s.start(uint64(token), &lockJob{m: m, cb: uintptr(cb), arg: uintptr(arg)}))
}

//export faiocgo_mutex_try_lock
func faiocgo_mutex_try_lock(h C.uint64_t) C.int {
	m, ok := lookupAs[*mutexObj](&handles, uint64(h))
	if !ok {
		return C.int(codeEBADHANDLE)
	}
	if !m.mu.TryLock() {
		return C.int(codeEBUSY)
	}
	return C.int(codeOK)
}

//export faiocgo_mutex_unlock
func faiocgo_mutex_unlock(h C.uint64_t) C.int {
	m, ok := lookupAs[*mutexObj](&handles, uint64(h))
	if !ok {
		return C.int(codeEBADHANDLE)
	}
	return C.int(m.unlock())
}

// unlock unlocks m for faio_mutex_unlock: FAIO_EBADHANDLE once m is freed,
// whose lock free holds for good (a stray unlock that looked the handle up
// before the removal must not release it).
func (m *mutexObj) unlock() int32 {
	m.freeing.Lock()
	defer m.freeing.Unlock()
	if m.freed.Err() != nil {
		return codeEBADHANDLE
	}
	return unlock(&m.mu)
}

//export faiocgo_mutex_lock_blocking
func faiocgo_mutex_lock_blocking(h, token C.uint64_t) C.int {
	if token != 0 {
		return C.int(codeEWOULDBLOCK)
	}
	m, ok := lookupAs[*mutexObj](&handles, uint64(h))
	if !ok {
		return C.int(codeEBADHANDLE)
	}
	// A plain goroutine's wait: this blocks the host thread, as asked.
	return C.int(m.lockBlocking())
}

// unlock unlocks mu, turning the panic of an unlock of an unlocked mutex
// into FAIO_ENOTLOCKED. The Mutex panics before changing anything, so it
// is unchanged.
func unlock(mu *fsync.Mutex) (rc int32) {
	defer func() {
		if recover() != nil {
			rc = codeENOTLOCKED
		}
	}()
	mu.Unlock()
	return codeOK
}

// lockJob is faio_mutex_lock: it waits for the lock in its task, then
// invokes the callback holding it.
type lockJob struct {
	m       *mutexObj
	cb, arg uintptr
}

func (j *lockJob) run(ctx context.Context, s *rtState) started {
	return callDone(ctx, s, j.cb, j.arg, j.m.lock(ctx))
}
