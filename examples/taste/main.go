// Command taste is the program behind the README's "A taste": a task
// writes a file and reads it back through its worker's io_uring, then a
// child task takes a coroutine-aware mutex and sleeps on the worker's timer
// wheel before handing the byte count back.
package main

import (
	"context"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"time"

	"github.com/faio-go/faio"
)

func run(name string) (int, error) {
	rt, err := faio.New(faio.Config{}) // zero value: GOMAXPROCS workers, sane defaults
	if err != nil {
		return 0, err
	}
	defer rt.Close()
	fmt.Println("faio runs on", rt.Backend()) // io_uring, or portable where it is blocked

	var mu faio.Mutex // suspends a task that waits, never its worker
	return faio.BlockOn(rt, func(ctx context.Context) (int, error) {
		if err := faio.WriteFile(ctx, name, []byte("hello, io_uring\n"), 0o644); err != nil {
			return 0, err
		}
		f, err := faio.Open(ctx, name) // read with the worker's io_uring (portable: pread)
		if err != nil {
			return 0, err
		}
		defer f.Close(ctx)
		buf := make([]byte, 4096)
		n, err := f.ReadAt(ctx, buf, 0)
		if err != nil && err != io.EOF {
			return 0, err
		}
		h := faio.Spawn(ctx, func(ctx context.Context) (int, error) {
			if err := mu.Lock(ctx); err != nil { // suspends the task, not the worker
				return 0, err
			}
			defer mu.Unlock()
			return n, faio.Sleep(ctx, 10*time.Millisecond) // on the worker's timer wheel
		})
		return h.Join(ctx) // BlockOn also waits for everything spawned under it
	})
}

func main() {
	dir, err := os.MkdirTemp("", "faio-taste-")
	if err != nil {
		log.Fatal(err)
	}
	n, err := run(filepath.Join(dir, "hello.txt"))
	os.RemoveAll(dir)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("read %d bytes back\n", n)
}
