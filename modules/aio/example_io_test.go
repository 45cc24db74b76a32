package aio_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/faio-go/faio/modules/aio"
	"github.com/faio-go/faio/modules/runtime"
)

// Files: write at offsets from two tasks, then read the result back.
func ExampleFile() {
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
	text, err := runtime.BlockOn(rt, func(ctx context.Context) (string, error) {
		name := filepath.Join(dir, "greeting")
		f, err := aio.Create(ctx, name)
		if err != nil {
			return "", err
		}
		// WriteAt calls run concurrently; neither moves the file position.
		a := runtime.Spawn(ctx, func(ctx context.Context) (int, error) { return f.WriteAt(ctx, []byte("hello, "), 0) })
		b := runtime.Spawn(ctx, func(ctx context.Context) (int, error) { return f.WriteAt(ctx, []byte("world"), 7) })
		if _, err := a.Join(ctx); err != nil {
			return "", err
		}
		if _, err := b.Join(ctx); err != nil {
			return "", err
		}
		if err := f.Close(ctx); err != nil {
			return "", err
		}
		data, err := aio.ReadFile(ctx, name)
		return string(data), err
	})
	fmt.Println(text, err)
	// Output: hello, world <nil>
}

// TCP: an echo server and a client in two tasks, over the loopback.
func ExampleListen() {
	rt, err := runtime.New(runtime.Config{Workers: 2})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()
	reply, err := runtime.BlockOn(rt, func(ctx context.Context) (string, error) {
		l, err := aio.Listen(ctx, "tcp", "127.0.0.1:0")
		if err != nil {
			return "", err
		}
		defer l.Close(ctx)
		runtime.Spawn(ctx, func(ctx context.Context) (int, error) {
			c, err := l.Accept(ctx)
			if err != nil {
				return 0, err
			}
			defer c.Close(ctx)
			buf := make([]byte, 64)
			n, err := c.Read(ctx, buf)
			if err != nil {
				return 0, err
			}
			return c.Write(ctx, buf[:n])
		})
		c, err := aio.Dial(ctx, "tcp", l.Addr().String())
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
	fmt.Println(reply, err)
	// Output: ping <nil>
}

// UDP: a datagram to an unconnected socket and its answer, from a plain
// goroutine, with runtime.WithRuntime naming the runtime.
func ExampleListenUDP() {
	rt, err := runtime.New(runtime.Config{Workers: 1})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()
	ctx := runtime.WithRuntime(context.Background(), rt)
	server, err := aio.ListenUDP(ctx, "udp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	defer server.Close(ctx)
	client, err := aio.DialUDP(ctx, "udp", server.LocalAddr().String())
	if err != nil {
		fmt.Println(err)
		return
	}
	defer client.Close(ctx)
	if _, err := client.Write(ctx, []byte("marco")); err != nil {
		fmt.Println(err)
		return
	}
	buf := make([]byte, 16)
	n, from, err := server.ReadFrom(ctx, buf)
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(string(buf[:n]), from.String() == client.LocalAddr().String())
	if _, err := server.WriteTo(ctx, []byte("polo"), from); err != nil {
		fmt.Println(err)
		return
	}
	n, err = client.Read(ctx, buf)
	fmt.Println(string(buf[:n]), err)
	// Output:
	// marco true
	// polo <nil>
}
