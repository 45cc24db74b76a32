package bench

import (
	"debug/elf"
	"os"
	"sync"
)

// SchedLineOffset returns where Go's scheduler state, the runtime's
// global runtime.sched, starts within a 64-byte cache line in this
// executable, from its symbol table; -1 when that cannot be read (a
// stripped or non-ELF executable).
//
// It is a property of the build, not of the code measured: the linker
// lays out the runtime's globals by size, so any change anywhere in the
// program can move runtime.sched by 32 bytes, and with it which of its
// hot fields share a cache line. The goroutine side of W1 (go +
// WaitGroup) ran 15-20% slower at offset 32 than at offset 0 in the same
// code (a 32-byte global added to the program flipped it), while faio's
// side did not move: every JSON line records the offset, so that ratios
// from builds that differ in it are not read as a change of either side.
var SchedLineOffset = sync.OnceValue(func() int {
	exe, err := os.Executable()
	if err != nil {
		return -1
	}
	return schedLineOffsetOf(exe)
})

// schedLineOffsetOf is SchedLineOffset for the executable at path.
func schedLineOffsetOf(path string) int {
	f, err := elf.Open(path)
	if err != nil {
		return -1
	}
	defer f.Close()
	syms, err := f.Symbols()
	if err != nil {
		return -1
	}
	for _, s := range syms {
		if s.Name == "runtime.sched" {
			return int(s.Value % 64)
		}
	}
	return -1
}
