package runtime

import "unsafe"

// Profiler labels (runtime/pprof.SetGoroutineLabels, pprof.Do) belong to a
// goroutine, and a goroutine starts with its creator's. A task runs on a
// pooled coroutine whose goroutine served other tasks before, so the
// labels it carries are those of whichever task last set them. To give a
// task the labels a goroutine would have, newTask records its spawner's
// labels and execute installs them before the task's function runs: each
// task starts with its spawner's labels and never with another task's.
//
// The two functions are the runtime's own accessors behind runtime/pprof
// (runtime_getProfLabel and runtime_setProfLabel); the Go runtime keeps
// their signatures stable for linkname users (go.dev/issue/67401).

//go:linkname getProfLabel runtime/pprof.runtime_getProfLabel
func getProfLabel() unsafe.Pointer

//go:linkname setProfLabel runtime/pprof.runtime_setProfLabel
func setProfLabel(labels unsafe.Pointer)
