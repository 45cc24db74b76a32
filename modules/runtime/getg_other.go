//go:build !amd64 && !arm64

package runtime

import (
	rt "runtime"
)

// getg returns the calling goroutine's id, parsed from its stack header. It
// is slower than the assembly version used on amd64 and arm64, but gives the
// same guarantee: stable for the goroutine's life, distinct between live
// goroutines.
func getg() uintptr {
	var buf [64]byte
	b := buf[:rt.Stack(buf[:], false)]
	// "goroutine 123 [running]:"
	const prefix = len("goroutine ")
	var id uintptr
	for i := prefix; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
		id = id*10 + uintptr(b[i]-'0')
	}
	return id
}
