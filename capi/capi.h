/*
 * Private declarations shared by the Go files of package capi (through their
 * cgo preambles) and shim.c. Declarations only: cgo copies the preamble of a
 * file with //export into two C files.
 */
#ifndef FAIO_CAPI_H
#define FAIO_CAPI_H

#include <stdint.h>
#include "faio.h"

/*
 * Callback trampolines (shim.c). Go calls them to invoke a C callback on a
 * worker; they mark the thread as running a callback of frame (the
 * thread-local marker read by the blocking calls and by faio_current) for
 * exactly the duration of the call. Function pointers and user data travel
 * through Go as integers, so Go never holds a value it could mistake for a
 * Go pointer.
 */
void faiocall_task(uintptr_t fn, uintptr_t arg, uint64_t frame, uint64_t rt);
void faiocall_done(uintptr_t fn, uintptr_t arg, int status, uint64_t frame, uint64_t rt);
void faiocall_recv(uintptr_t fn, uintptr_t arg, uintptr_t item, int status, uint64_t frame, uint64_t rt);
void faiocall_io(uintptr_t fn, uintptr_t arg, int64_t result, uint64_t frame, uint64_t rt);

#endif
