//go:build amd64 || arm64

package runtime

// getg returns an identity of the calling goroutine that stays the same for
// the goroutine's whole life and differs between live goroutines. A task's
// context may be handed to other goroutines; comparing getg() with the
// identity of the task's coroutine is how Suspend tells the task itself
// (which may switch its coroutine) from a foreign goroutine (which must
// block instead).
func getg() uintptr
