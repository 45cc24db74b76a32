package aio

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"testing"
	"time"

	"github.com/faio-go/faio/modules/runtime"
)

// splitRandom cuts data into buffers of random sizes, empty ones included.
func splitRandom(data []byte, rng *rand.Rand) [][]byte {
	var bufs [][]byte
	for len(data) > 0 {
		n := min(rng.IntN(8<<10), len(data))
		if rng.IntN(10) == 0 {
			n = 0
		}
		bufs = append(bufs, data[:n])
		data = data[n:]
	}
	return bufs
}

// vecRoundTrip writes 8 MiB in about 2,000 buffers (so more than IOV_MAX)
// with one Writev to a reader that starts late and reads with Readv into
// buffers of other random sizes: the socket buffers fill up, the writes
// come back short and Writev resumes in the middle of a buffer. Every byte
// is checked, and the stream ends with io.EOF after CloseWrite.
func vecRoundTrip(ctx context.Context, client, server *Conn, spawn spawnFunc) error {
	rng := rand.New(rand.NewPCG(1, 2))
	data := randomBytes(8<<20, 5)
	bufs := splitRandom(data, rng)
	wait := spawn(func() error {
		n, err := client.Writev(ctx, bufs)
		if err != nil || n != len(data) {
			return fmt.Errorf("Writev = %d, %v; want %d", n, err, len(data))
		}
		return client.CloseWrite(ctx)
	})
	time.Sleep(50 * time.Millisecond) // a slow reader: the writer waits for room
	got := make([]byte, 0, len(data))
	for {
		into := splitRandom(make([]byte, 1+rng.IntN(256<<10)), rng)
		n, err := server.Readv(ctx, into)
		if err == io.EOF {
			if n != 0 {
				return fmt.Errorf("Readv = %d, io.EOF", n)
			}
			break
		}
		if err != nil {
			return err
		}
		if n == 0 {
			return errors.New("Readv = 0, nil")
		}
		for _, b := range into {
			k := min(len(b), n)
			got = append(got, b[:k]...)
			n -= k
		}
	}
	if werr := wait(); werr != nil {
		return werr
	}
	if !bytes.Equal(got, data) {
		return fmt.Errorf("read %d bytes, wrote %d: not the same", len(got), len(data))
	}
	return nil
}

// Vectored I/O from tasks and from goroutines, on both backends, over TCP
// and Unix sockets.
func TestConnWritevReadv(t *testing.T) {
	onConnPairs(t, "Writev", func(ctx context.Context, client, server *Conn, spawn spawnFunc) error {
		return vecRoundTrip(ctx, client, server, spawn)
	})
}

// goroutinePair is connPair for plain goroutines: the Accept runs in a
// goroutine of its own, since the Dial waits for it.
func goroutinePair(ctx context.Context, network, addr string) (client, server *Conn, err error) {
	l, err := Listen(ctx, network, addr)
	if err != nil {
		return nil, nil, err
	}
	defer l.Close(ctx)
	type accepted struct {
		c   *Conn
		err error
	}
	ch := make(chan accepted, 1)
	go func() {
		c, err := l.Accept(ctx)
		ch <- accepted{c, err}
	}()
	client, err = Dial(ctx, network, l.Addr().String())
	a := <-ch
	if err != nil || a.err != nil {
		if client != nil {
			client.Close(ctx)
		}
		if a.c != nil {
			a.c.Close(ctx)
		}
		return nil, nil, errors.Join(err, a.err)
	}
	return client, a.c, nil
}

// The edges of Writev and Readv: nothing to transfer, a Writev cut short
// by its context (it returns promptly, with the bytes that went out), and
// both after Close.
func TestConnWritevEdges(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend.String(), func(t *testing.T) {
			rt := newRuntime(t, runtime.Config{Workers: 2, IOBackend: backend})
			checkFromTask(t, rt, "tcp", "127.0.0.1:0", func(ctx context.Context, client, server *Conn, _ spawnFunc) error {
				if n, err := client.Writev(ctx, nil); n != 0 || err != nil {
					return fmt.Errorf("Writev(nil) = %d, %v", n, err)
				}
				if n, err := server.Readv(ctx, [][]byte{nil, {}}); n != 0 || err != nil {
					return fmt.Errorf("Readv of empty buffers = %d, %v", n, err)
				}
				// Nobody reads: 64 MiB cannot all go out.
				big := make([]byte, 64<<20)
				short, cancel := context.WithTimeout(ctx, 50*time.Millisecond)
				start := time.Now()
				n, err := client.Writev(short, [][]byte{big[:1<<20], big[1<<20:]})
				cancel()
				if !errors.Is(err, context.DeadlineExceeded) || n <= 0 || n >= len(big) || time.Since(start) > 5*time.Second {
					return fmt.Errorf("Writev to nobody with a 50 ms context = %d, %v after %v", n, err, time.Since(start))
				}
				if err := client.Close(ctx); err != nil {
					return err
				}
				if _, err := client.Writev(ctx, [][]byte{[]byte("x")}); !errors.Is(err, net.ErrClosed) {
					return fmt.Errorf("Writev after Close = %v", err)
				}
				if _, err := client.Readv(ctx, [][]byte{make([]byte, 1)}); !errors.Is(err, net.ErrClosed) {
					return fmt.Errorf("Readv after Close = %v", err)
				}
				return nil
			})
		})
	}
}
