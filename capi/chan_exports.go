package main

/*
#include "capi.h"
*/
import "C"

import (
	"context"

	"github.com/faio-go/faio/modules/channel"
)

// maxChannelCapacity bounds faio_chan_new: the buffer is allocated up
// front (8 bytes an item), and a size_t from C can ask for anything; an
// allocation the Go runtime cannot satisfy is fatal, not an error.
const maxChannelCapacity = 1 << 24

// chanObj is a faio_chan: both ends of a channel of pointer-sized items
// (held as uintptr: items are opaque to Go and may be any integer) and the
// runtime its callbacks run on. faio_chan_close closes the one Sender;
// faio_chan_free closes the Receiver too.
type chanObj struct {
	s  *rtState
	tx *channel.Sender[uintptr]
	rx *channel.Receiver[uintptr]
}

func chanOf(h C.uint64_t) *chanObj {
	c, _ := lookupAs[*chanObj](&handles, uint64(h))
	return c
}

//export faiocgo_chan_new
func faiocgo_chan_new(rt, capacity C.uint64_t, out *C.uint64_t) C.int {
	s, rc := runtimeOf(uint64(rt))
	if s == nil {
		return C.int(rc)
	}
	if capacity > maxChannelCapacity {
		return C.int(codeEINVAL)
	}
	if s.closing.Load() {
		return C.int(codeESHUTDOWN)
	}
	tx, rx := channel.New[uintptr](int(capacity))
	h, err := handles.insert(&chanObj{s: s, tx: tx, rx: rx})
	if err != nil {
		return C.int(errorCode(err))
	}
	*out = C.uint64_t(h)
	return C.int(codeOK)
}

//export faiocgo_chan_free
func faiocgo_chan_free(h C.uint64_t) C.int {
	c, ok := removeAs[*chanObj](&handles, uint64(h))
	if !ok {
		return C.int(codeEBADHANDLE)
	}
	// Calls that looked the handle up before the removal see closed ends.
	_ = c.tx.Close()
	_ = c.rx.Close()
	return C.int(codeOK)
}

//export faiocgo_chan_runtime
func faiocgo_chan_runtime(h C.uint64_t, out *C.uint64_t) C.int {
	c := chanOf(h)
	if c == nil {
		return C.int(codeEBADHANDLE)
	}
	*out = C.uint64_t(c.s.handle)
	return C.int(codeOK)
}

//export faiocgo_chan_close
func faiocgo_chan_close(h C.uint64_t) C.int {
	c := chanOf(h)
	if c == nil {
		return C.int(codeEBADHANDLE)
	}
	return C.int(errorCode(c.tx.Close()))
}

//export faiocgo_chan_send
func faiocgo_chan_send(h C.uint64_t, item, cb, arg C.uintptr_t, token C.uint64_t) C.int {
	c := chanOf(h)
	if c == nil {
		return C.int(codeEBADHANDLE)
	}
	return C.int(c.s.start(uint64(token), &sendJob{c: c, item: uintptr(item), cb: uintptr(cb), arg: uintptr(arg)}))
}

//export faiocgo_chan_recv
func faiocgo_chan_recv(h C.uint64_t, cb, arg C.uintptr_t, token C.uint64_t) C.int {
	c := chanOf(h)
	if c == nil {
		return C.int(codeEBADHANDLE)
	}
	return C.int(c.s.start(uint64(token), &recvJob{c: c, cb: uintptr(cb), arg: uintptr(arg)}))
}

//export faiocgo_chan_try_send
func faiocgo_chan_try_send(h C.uint64_t, item C.uintptr_t) C.int {
	c := chanOf(h)
	if c == nil {
		return C.int(codeEBADHANDLE)
	}
	return C.int(errorCode(c.tx.TrySend(uintptr(item))))
}

//export faiocgo_chan_try_recv
func faiocgo_chan_try_recv(h C.uint64_t, out *C.uintptr_t) C.int {
	c := chanOf(h)
	if c == nil {
		return C.int(codeEBADHANDLE)
	}
	v, err := c.rx.TryRecv()
	if err != nil {
		return C.int(errorCode(err))
	}
	*out = C.uintptr_t(v)
	return C.int(codeOK)
}

//export faiocgo_chan_send_blocking
func faiocgo_chan_send_blocking(h C.uint64_t, item C.uintptr_t, token C.uint64_t) C.int {
	if token != 0 {
		return C.int(codeEWOULDBLOCK)
	}
	c := chanOf(h)
	if c == nil {
		return C.int(codeEBADHANDLE)
	}
	// Background: a plain goroutine's wait, which blocks the host thread.
	return C.int(errorCode(c.tx.Send(context.Background(), uintptr(item))))
}

//export faiocgo_chan_recv_blocking
func faiocgo_chan_recv_blocking(h C.uint64_t, out *C.uintptr_t, token C.uint64_t) C.int {
	if token != 0 {
		return C.int(codeEWOULDBLOCK)
	}
	c := chanOf(h)
	if c == nil {
		return C.int(codeEBADHANDLE)
	}
	v, err := c.rx.Recv(context.Background())
	if err != nil {
		return C.int(errorCode(err))
	}
	*out = C.uintptr_t(v)
	return C.int(codeOK)
}

// sendJob is faio_chan_send: it waits in its task until the item is taken
// or buffered, or the channel closes.
type sendJob struct {
	c             *chanObj
	item, cb, arg uintptr
}

func (j *sendJob) run(ctx context.Context, s *rtState) started {
	return callDone(ctx, s, j.cb, j.arg, errorCode(j.c.tx.Send(ctx, j.item)))
}

// recvJob is faio_chan_recv.
type recvJob struct {
	c       *chanObj
	cb, arg uintptr
}

func (j *recvJob) run(ctx context.Context, s *rtState) started {
	v, err := j.c.rx.Recv(ctx)
	if err != nil {
		v = 0
	}
	return callRecv(ctx, s, j.cb, j.arg, v, errorCode(err))
}
