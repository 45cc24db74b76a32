package aio

import (
	"bytes"
	"context"
	"fmt"
	"io"
	"testing"
	"time"

	"github.com/faio-go/faio/modules/runtime"
)

// zcRoundTrip writes 4 MiB with WriteZC in chunks of 256 KiB to a reader
// that starts late (the sends come back short and resume mid-chunk) and
// checks every byte.
func zcRoundTrip(ctx context.Context, client, server *Conn, spawn spawnFunc) error {
	data := randomBytes(4<<20, 9)
	wait := spawn(func() error {
		for off := 0; off < len(data); off += 256 << 10 {
			chunk := data[off:min(off+256<<10, len(data))]
			if n, err := client.WriteZC(ctx, chunk); err != nil || n != len(chunk) {
				return fmt.Errorf("WriteZC at %d = %d, %v; want %d", off, n, err, len(chunk))
			}
		}
		return client.CloseWrite(ctx)
	})
	time.Sleep(20 * time.Millisecond)
	got, err := io.ReadAll(server.NetConn())
	if werr := wait(); werr != nil {
		return werr
	}
	if err != nil {
		return err
	}
	if !bytes.Equal(got, data) {
		return fmt.Errorf("read %d bytes, wrote %d: not the same", len(got), len(data))
	}
	return nil
}

// WriteZC from tasks and goroutines, on both backends, over TCP (zero-copy
// on io_uring) and Unix sockets (which refuse it: plain sends).
func TestConnWriteZC(t *testing.T) {
	onConnPairs(t, "WriteZC", zcRoundTrip)
}

// On io_uring a task's WriteZC really is a zero-copy send: each one
// completes with two CQEs (the count and the notification), where a Write
// completes with one. A reader task drains the peer meanwhile: a
// notification comes only once the kernel lets go of the data, which on
// loopback is when the peer has read it.
func TestWriteZCUsesSendZC(t *testing.T) {
	rt := newRuntime(t, runtime.Config{Workers: 1, IOBackend: runtime.BackendAuto})
	if rt.Backend() != runtime.BackendIOUring {
		t.Skip("no io_uring")
	}
	const rounds = 100
	var writes, zcs uint64
	checkFromTask(t, rt, "tcp", "127.0.0.1:0", func(ctx context.Context, client, server *Conn, _ spawnFunc) (err error) {
		reader := runtime.Spawn(ctx, func(ctx context.Context) (int64, error) {
			return io.Copy(io.Discard, server.NetConn())
		})
		buf := make([]byte, 1024)
		measure := func(write func(context.Context, []byte) (int, error)) (uint64, error) {
			before := rt.Stats().IOCompleted
			for range rounds {
				if _, err := write(ctx, buf); err != nil {
					return 0, err
				}
			}
			return rt.Stats().IOCompleted - before, nil
		}
		if writes, err = measure(client.Write); err != nil {
			return err
		}
		if zcs, err = measure(client.WriteZC); err != nil {
			return err
		}
		if err := client.CloseWrite(ctx); err != nil {
			return err
		}
		n, err := reader.Join(ctx)
		if err == nil && n != 2*rounds*int64(len(buf)) {
			err = fmt.Errorf("the peer read %d bytes, want %d", n, 2*rounds*len(buf))
		}
		return err
	})
	if zcs < writes+rounds/2 {
		t.Fatalf("%d CQEs for %d WriteZCs, %d for as many Writes: want about %d more", zcs, rounds, writes, rounds)
	}
}
