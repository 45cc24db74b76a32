package runtime_test

import (
	"context"
	"fmt"

	"github.com/faio-go/faio/modules/runtime"
	"golang.org/x/sys/unix"
)

// A task reads from a non-blocking pipe as soon as the other end writes,
// suspended meanwhile: the try is the system call, and Wait runs it again
// each time the descriptor becomes readable.
func ExampleRuntime_RegisterFD() {
	rt, err := runtime.New(runtime.Config{Workers: 2, IOBackend: runtime.BackendPortable})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_NONBLOCK|unix.O_CLOEXEC); err != nil {
		fmt.Println(err)
		return
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	r, err := rt.RegisterFD(p[0])
	if err != nil {
		fmt.Println(err)
		return
	}
	defer r.Close() // before the descriptor closes

	msg, err := runtime.BlockOn(rt, func(ctx context.Context) (string, error) {
		runtime.Spawn(ctx, func(ctx context.Context) (int, error) {
			return unix.Write(p[1], []byte("ready"))
		})
		buf := make([]byte, 16)
		var n int
		var rerr error
		err := r.Wait(ctx, false, func() bool {
			n, rerr = unix.Read(p[0], buf)
			return rerr != unix.EAGAIN // false: not yet, wait for readiness
		})
		if err == nil {
			err = rerr
		}
		return string(buf[:n]), err
	})
	fmt.Println(msg, err)
	// Output: ready <nil>
}
