#include "textflag.h"

// func getg() uintptr
//
// Returns the calling goroutine's g (register g on arm64), used only as an
// identity, never dereferenced.
TEXT ·getg(SB),NOSPLIT,$0-8
	MOVD g, R0
	MOVD R0, ret+0(FP)
	RET
