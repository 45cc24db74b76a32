#include "textflag.h"

// func getg() uintptr
//
// Returns the address of the calling goroutine's g, read from thread-local
// storage. It is used only as an identity (which goroutine is running), never
// dereferenced.
TEXT ·getg(SB),NOSPLIT,$0-8
	MOVQ (TLS), AX
	MOVQ AX, ret+0(FP)
	RET
