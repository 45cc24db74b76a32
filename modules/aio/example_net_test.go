package aio_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"syscall"

	"github.com/faio-go/faio/modules/aio"
	"github.com/faio-go/faio/modules/runtime"
)

// Unix domain sockets: the same Listener and Conn as TCP's, on a socket
// file that Close removes.
func ExampleListen_unix() {
	dir, err := os.MkdirTemp("", "faio-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	rt, err := runtime.New(runtime.Config{Workers: 2})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()
	name := filepath.Join(dir, "echo.sock")
	reply, err := runtime.BlockOn(rt, func(ctx context.Context) (string, error) {
		l, err := aio.Listen(ctx, "unix", name)
		if err != nil {
			return "", err
		}
		defer l.Close(ctx)
		runtime.Spawn(ctx, func(ctx context.Context) (int64, error) {
			c, err := l.Accept(ctx)
			if err != nil {
				return 0, err
			}
			defer c.Close(ctx)
			return io.Copy(c.NetConn(), io.LimitReader(c.NetConn(), 4))
		})
		c, err := aio.Dial(ctx, "unix", name)
		if err != nil {
			return "", err
		}
		defer c.Close(ctx)
		if _, err := c.Write(ctx, []byte("ping")); err != nil {
			return "", err
		}
		buf := make([]byte, 4)
		_, err = c.ReadFull(ctx, buf)
		return string(buf), err
	})
	_, statErr := os.Stat(name)
	fmt.Println(reply, err, errors.Is(statErr, os.ErrNotExist))
	// Output: ping <nil> true
}

// SO_REUSEPORT: two listeners on one port, say one per worker or per
// process; the kernel spreads the connections among them.
func ExampleListenConfig() {
	rt, err := runtime.New(runtime.Config{Workers: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()
	ctx := runtime.WithRuntime(context.Background(), rt)
	lc := aio.ListenConfig{ReusePort: true}
	first, err := lc.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer first.Close(ctx)
	second, err := lc.Listen(ctx, "tcp", first.Addr().String())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer second.Close(ctx)
	_, err = aio.Listen(ctx, "tcp", first.Addr().String()) // without ReusePort
	fmt.Println(first.Addr().String() == second.Addr().String(), errors.Is(err, syscall.EADDRINUSE))
	// Output: true true
}

// Vectored I/O: a header and a body go out with one writev, without
// being copied together first.
func ExampleConn_Writev() {
	rt, err := runtime.New(runtime.Config{Workers: 2})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()
	got, err := runtime.BlockOn(rt, func(ctx context.Context) (string, error) {
		l, err := aio.Listen(ctx, "tcp", "127.0.0.1:0")
		if err != nil {
			return "", err
		}
		defer l.Close(ctx)
		runtime.Spawn(ctx, func(ctx context.Context) (int, error) {
			c, err := aio.Dial(ctx, "tcp", l.Addr().String())
			if err != nil {
				return 0, err
			}
			defer c.Close(ctx)
			return c.Writev(ctx, [][]byte{[]byte("header\n"), []byte("body")})
		})
		c, err := l.Accept(ctx)
		if err != nil {
			return "", err
		}
		defer c.Close(ctx)
		data, err := io.ReadAll(c.NetConn())
		return string(data), err
	})
	fmt.Printf("%q %v\n", got, err)
	// Output: "header\nbody" <nil>
}

// Peek shows what waits on a connection without taking it, and io.EOF
// once the peer has closed and nothing is left: a server watches with it
// for a client that goes away while it works, and the client's next bytes
// stay for the next Read.
func ExampleConn_Peek() {
	rt, err := runtime.New(runtime.Config{Workers: 2})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()
	_, err = runtime.BlockOn(rt, func(ctx context.Context) (struct{}, error) {
		l, err := aio.Listen(ctx, "tcp", "127.0.0.1:0")
		if err != nil {
			return struct{}{}, err
		}
		defer l.Close(ctx)
		client, err := aio.Dial(ctx, "tcp", l.Addr().String())
		if err != nil {
			return struct{}{}, err
		}
		c, err := l.Accept(ctx)
		if err != nil {
			return struct{}{}, err
		}
		defer c.Close(ctx)
		if _, err := client.Write(ctx, []byte("next request")); err != nil {
			return struct{}{}, err
		}
		if err := client.Close(ctx); err != nil {
			return struct{}{}, err
		}
		peek := make([]byte, 4)
		n, err := c.Peek(ctx, peek)
		fmt.Printf("Peek: %q %v\n", peek[:n], err)
		all, err := io.ReadAll(c.NetConn())
		fmt.Printf("Read: %q %v\n", all, err)
		n, err = c.Peek(ctx, peek)
		fmt.Println("Peek at the end:", n, err)
		return struct{}{}, nil
	})
	fmt.Println(err)
	// Output:
	// Peek: "next" <nil>
	// Read: "next request" <nil>
	// Peek at the end: 0 EOF
	// <nil>
}

// A NetConn's Writev sends a header and a body kept apart in one call, as
// net.Buffers would on a *net.TCPConn.
func ExampleNetConn_Writev() {
	rt, err := runtime.New(runtime.Config{Workers: 2})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()
	got, err := runtime.BlockOn(rt, func(ctx context.Context) (string, error) {
		l, err := aio.Listen(ctx, "tcp", "127.0.0.1:0")
		if err != nil {
			return "", err
		}
		defer l.Close(ctx)
		runtime.Spawn(ctx, func(ctx context.Context) (int, error) {
			c, err := aio.Dial(ctx, "tcp", l.Addr().String())
			if err != nil {
				return 0, err
			}
			nc := c.NetConn()
			defer nc.Close()
			return nc.Writev([][]byte{[]byte("HTTP/1.1 200 OK\r\n\r\n"), []byte("hello")})
		})
		c, err := l.Accept(ctx)
		if err != nil {
			return "", err
		}
		defer c.Close(ctx)
		data, err := io.ReadAll(c.NetConn())
		return string(data), err
	})
	fmt.Printf("%q %v\n", got, err)
	// Output: "HTTP/1.1 200 OK\r\n\r\nhello" <nil>
}

// SendFile: part of a file goes to a connection without passing through
// user memory (splice on io_uring, sendfile(2) elsewhere).
func ExampleConn_SendFile() {
	dir, err := os.MkdirTemp("", "faio-example")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer os.RemoveAll(dir)
	name := filepath.Join(dir, "page.html")
	if err := os.WriteFile(name, []byte("<p>hello, sendfile</p>"), 0o600); err != nil {
		fmt.Println(err)
		return
	}
	rt, err := runtime.New(runtime.Config{Workers: 2})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()
	got, err := runtime.BlockOn(rt, func(ctx context.Context) (string, error) {
		l, err := aio.Listen(ctx, "tcp", "127.0.0.1:0")
		if err != nil {
			return "", err
		}
		defer l.Close(ctx)
		runtime.Spawn(ctx, func(ctx context.Context) (int64, error) {
			c, err := aio.Dial(ctx, "tcp", l.Addr().String())
			if err != nil {
				return 0, err
			}
			defer c.Close(ctx)
			f, err := aio.Open(ctx, name)
			if err != nil {
				return 0, err
			}
			defer f.Close(ctx)
			return c.SendFile(ctx, f, 3, 15) // "hello, sendfile"
		})
		c, err := l.Accept(ctx)
		if err != nil {
			return "", err
		}
		defer c.Close(ctx)
		data, err := io.ReadAll(c.NetConn())
		return string(data), err
	})
	fmt.Println(got, err)
	// Output: hello, sendfile <nil>
}
