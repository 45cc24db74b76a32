package aio

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/faio-go/faio/modules/runtime"
	"golang.org/x/sys/unix"
)

// A WriteZC whose data is queued (its first completion posted) waits only
// for the kernel's notification, which a peer whose window is full holds
// back. Cancelling it is answered -ENOENT (the send itself is done): the
// driver must not then ask the cancel again every millisecond for as long
// as the notification takes (it submitted some 370 entries in 200 ms;
// found by a reviewer).
func TestCancelledWriteZCWaitsQuietly(t *testing.T) {
	rt := newRuntime(t, runtime.Config{Workers: 1})
	if rt.Backend() != runtime.BackendIOUring {
		t.Skip("WriteZC's notification wait is io_uring's")
	}
	var spent uint64
	skipped := false
	runTask(t, rt, func(ctx context.Context) error {
		client, server, err := connPair(ctx, "tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		defer client.Close(ctx)
		defer server.Close(ctx)
		if err := server.setsockopt(unix.SOL_SOCKET, unix.SO_RCVBUF, 16384); err != nil {
			return err
		}
		if err := client.setsockopt(unix.SOL_SOCKET, unix.SO_SNDBUF, 4<<20); err != nil {
			return err
		}
		// Fill the peer's window; the rest waits in the send queue.
		fctx, fcancel := context.WithTimeout(ctx, 200*time.Millisecond)
		n, _ := client.Write(fctx, make([]byte, 256<<10))
		fcancel()
		wctx, cancel := context.WithCancel(ctx)
		defer cancel()
		h := runtime.Spawn(ctx, func(ctx context.Context) (int, error) {
			return client.WriteZC(wctx, make([]byte, 1024))
		})
		if err := runtime.Sleep(ctx, 50*time.Millisecond); err != nil {
			return err
		}
		select {
		case <-h.Done():
			skipped = true // the kernel let go of the buffer at once
			return nil
		default:
		}
		cancel()
		if err := runtime.Sleep(ctx, 20*time.Millisecond); err != nil {
			return err
		}
		before := rt.Stats().IOSubmitted
		if err := runtime.Sleep(ctx, 200*time.Millisecond); err != nil {
			return err
		}
		spent = rt.Stats().IOSubmitted - before
		// Release the send: read what was written.
		go io.CopyN(io.Discard, server.NetConn(), int64(n)+1024)
		h.Join(context.Background())
		return nil
	})
	if skipped {
		t.Skip("the WriteZC completed before it could be cancelled")
	}
	if spent > 20 {
		t.Errorf("%d entries submitted in 200 ms while a cancelled WriteZC waited for its notification", spent)
	}
}
