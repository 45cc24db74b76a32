package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/faio-go/faio/bench/internal/bench"
	"golang.org/x/sys/unix"
)

// serveGo is the server of the gonet variants: Go's net package with a
// goroutine per connection, under GOMAXPROCS procs.
func serveGo(t *trial, procs int) (served, error) {
	prev := runtime.GOMAXPROCS(procs) // before the listener, as a program would
	defer runtime.GOMAXPROCS(prev)
	ln, err := net.Listen("tcp4", "127.0.0.1:0")
	if err != nil {
		return served{}, err
	}
	defer context.AfterFunc(t.ctx, func() { ln.Close() })()

	var conns, echoed atomic.Int64
	var mu sync.Mutex
	var connErr error
	record := func(err error) {
		mu.Lock()
		defer mu.Unlock()
		if connErr == nil {
			connErr = err
		}
	}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				if !errors.Is(err, net.ErrClosed) {
					record(fmt.Errorf("accept: %w", err))
				}
				return
			}
			conns.Add(1)
			wg.Go(func() {
				defer context.AfterFunc(t.ctx, func() { c.Close() })()
				n, err := bench.EchoConn(c)
				echoed.Add(n)
				if err != nil {
					record(err)
					t.fail(err)
				}
			})
		}
	})

	err = t.startClient(ln.Addr().(*net.TCPAddr).Port)
	if err == nil {
		err = readClientGo(t)
	}
	if err != nil {
		t.fail(err) // ends the connections
	}
	ln.Close()
	wg.Wait()
	mu.Lock()
	defer mu.Unlock()
	return served{conns: conns.Load(), bytes: echoed.Load()}, errors.Join(err, connErr)
}

// readClientGo reads the client's stdout to its end through Go's poller
// (the pipe made non-blocking, as a Go program's would be).
func readClientGo(t *trial) error {
	if err := unix.SetNonblock(t.stdout, true); err != nil {
		return fmt.Errorf("client stdout: %w", err)
	}
	f := os.NewFile(uintptr(t.stdout), "client stdout")
	t.stdout = -1 // f has it now
	defer f.Close()
	buf := make([]byte, pipeBufSize)
	for {
		n, err := f.Read(buf)
		if n > 0 {
			if err := t.clientLines(buf[:n]); err != nil {
				return err
			}
		}
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return fmt.Errorf("client stdout: %w", err)
		}
	}
}
