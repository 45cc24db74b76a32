package main

import (
	"fmt"

	"github.com/faio-go/faio/modules/runtime"
)

// A handle stays valid until it is removed; afterwards it is refused even
// when its slot holds a new value.
func Example_handles() {
	var tab handleTable
	h, _ := tab.insert("first")
	fmt.Println(tab.lookup(h))
	tab.remove(h)
	h2, _ := tab.insert("second")
	fmt.Println(tab.lookup(h), tab.lookup(h2), tab.remove(h))
	// Output:
	// first
	// <nil> second <nil>
}

// The life of a runtime as faio_runtime_new, faio_block_on and
// faio_runtime_free see it: jobs started inside a callback run after it, as
// children the block_on waits for; a freed handle is refused.
func Example() {
	h, _ := newRuntime(runtime.Config{Workers: 1})
	var log []string
	root := &goJob{callback: func(s *rtState, token uint64, _ int32) {
		s.start(token, &goJob{callback: func(*rtState, uint64, int32) { log = append(log, "child") }})
		log = append(log, "root returns")
	}}
	fmt.Println(blockOn(h, root, 0) == codeOK, log)
	fmt.Println(freeRuntime(h, 0) == codeOK, freeRuntime(h, 0) == codeEBADHANDLE)
	// Output:
	// true [root returns child]
	// true true
}
