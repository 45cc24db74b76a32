package aio

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/faio-go/faio/modules/runtime"
)

// A stream written in pieces from 1 byte to 200 KiB, on both sides of the
// size up to which a socket operation is a raw system call (rawCopyMax),
// while the reader takes small pieces and pauses now and then, so that
// writes find the send buffer full, copy part of their piece and wait for
// room: every byte arrives, in order, from tasks and from goroutines, on
// both backends, over TCP and Unix sockets.
func TestConnWriteReadSizes(t *testing.T) {
	onConnPairs(t, "Write", func(ctx context.Context, client, server *Conn, spawn spawnFunc) error {
		rng := rand.New(rand.NewPCG(1, 2))
		data := make([]byte, 6<<20)
		for i := range data {
			data[i] = byte(rng.Uint32())
		}
		sizes := []int{1, 100, rawCopyMax - 1, rawCopyMax, rawCopyMax + 1, 200 << 10}
		wait := spawn(func() error {
			for rest := data; len(rest) > 0; {
				n := min(len(rest), sizes[rng.IntN(len(sizes))])
				m, err := client.Write(ctx, rest[:n])
				if err != nil {
					return err
				}
				if m != n {
					return fmt.Errorf("Write wrote %d of %d bytes without an error", m, n)
				}
				rest = rest[n:]
			}
			return client.CloseWrite(ctx)
		})
		var got []byte
		buf := make([]byte, rawCopyMax+100)
		for reads := 0; ; reads++ {
			if reads%50 == 0 {
				// Let the send buffer fill (Sleep suspends a task
				// rather than its worker, and sleeps a goroutine).
				if err := runtime.Sleep(ctx, time.Millisecond); err != nil {
					return err
				}
			}
			n, err := server.Read(ctx, buf[:1+reads%len(buf)])
			got = append(got, buf[:n]...)
			if err == io.EOF {
				break
			}
			if err != nil {
				return err
			}
		}
		if err := wait(); err != nil {
			return err
		}
		if !bytes.Equal(got, data) {
			return fmt.Errorf("received %d bytes that differ from the %d sent", len(got), len(data))
		}
		return nil
	})
}
