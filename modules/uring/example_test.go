package uring_test

import (
	"errors"
	"fmt"
	"log"
	"net/netip"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/faio-go/faio/modules/uring"
	"golang.org/x/sys/unix"
)

// Open a ring, read a file through it and print the bytes.
func Example() {
	dir, err := os.MkdirTemp("", "uring-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	path := filepath.Join(dir, "greeting")
	if err := os.WriteFile(path, []byte("hello, io_uring\n"), 0o600); err != nil {
		log.Fatal(err)
	}
	f, err := os.Open(path)
	if err != nil {
		log.Fatal(err)
	}
	defer f.Close()

	ring, err := uring.New(8, nil)
	if err != nil {
		log.Fatal(err) // e.g. io_uring disabled: the error says why
	}
	defer ring.Close()

	buf := make([]byte, 64) // referenced until its CQE is reaped
	sqe := ring.GetSQE()
	sqe.PrepRead(int(f.Fd()), buf, 0)
	sqe.SetUserData(1)
	cqe, err := ring.WaitCQE(time.Second) // submits the read, waits for its CQE
	if err != nil {
		log.Fatal(err)
	}
	n, err := cqe.Res, cqe.Err()
	ring.CQESeen(cqe)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("%q\n", buf[:n])
	// Output: "hello, io_uring\n"
}

// Ask the kernel which operations it implements before relying on them.
func ExampleRing_Probe() {
	ring, err := uring.New(4, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer ring.Close()
	probe, err := ring.Probe()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(uring.OpRead, probe.Supported(uring.OpRead))
	fmt.Println(uring.Op(250), probe.Supported(250))
	// Output:
	// read true
	// op(250) false
}

// A wait with a timeout reports expiry as an error matching syscall.ETIME.
func ExampleRing_WaitCQE() {
	ring, err := uring.New(4, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer ring.Close()
	_, err = ring.WaitCQE(time.Millisecond) // nothing is in flight
	fmt.Println(errors.Is(err, uring.ErrTimeout), errors.Is(err, syscall.ETIME))
	// Output: true true
}

// Batch reaping: queue several requests, submit them with one system call,
// then handle every completion with one head update.
func ExampleRing_ForEachCQE() {
	ring, err := uring.New(8, nil)
	if err != nil {
		log.Fatal(err)
	}
	defer ring.Close()
	for i := range 3 {
		sqe := ring.GetSQE()
		sqe.PrepNop()
		sqe.SetUserData(uint64(i))
	}
	if _, err := ring.SubmitAndWait(3); err != nil {
		log.Fatal(err)
	}
	ring.ForEachCQE(func(c *uring.CQE) {
		fmt.Println("done", c.UserData, c.Err())
	})
	// Output:
	// done 0 <nil>
	// done 1 <nil>
	// done 2 <nil>
}

// Build the socket address for PrepConnect outside the hot path; the
// storage must stay referenced until the connect completes.
func ExampleSockaddrFromAddrPort() {
	var sa uring.RawSockaddrAny
	n, err := uring.SockaddrFromAddrPort(netip.MustParseAddrPort("127.0.0.1:8080"), &sa)
	if err != nil {
		log.Fatal(err)
	}
	back, _ := uring.AddrPortFromSockaddr(&sa, n)
	fmt.Println(n, back, sa.Addr.Family == unix.AF_INET)
	// Output: 16 127.0.0.1:8080 true
}
