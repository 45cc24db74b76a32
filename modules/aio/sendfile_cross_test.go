package aio

import (
	"context"
	"io"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/faio-go/faio/modules/runtime"
)

// A task of an io_uring runtime copies a file to a connection that a
// portable runtime made (io.Copy on its NetConn, whose context names no
// task): onRing asks the connection's runtime, says "no ring", and the
// sendfile op, which has no ring form, is submitted to the calling task's
// ring.
func TestSendFileToAPortableRuntimesConnFromARingTask(t *testing.T) {
	rtP := newRuntime(t, runtime.Config{Workers: 1, IOBackend: runtime.BackendPortable})
	rtU := newRuntime(t, runtime.Config{Workers: 1})
	if rtU.Backend() != runtime.BackendIOUring {
		t.Skip("no io_uring")
	}
	name := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(name, randomBytes(100000, 1), 0o600); err != nil {
		t.Fatal(err)
	}
	gctx := goroutineCtx(rtP)
	client, server, err := goroutinePair(gctx, "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer client.Close(gctx)
	defer server.Close(gctx)
	f, err := Open(gctx, name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close(gctx)
	got := make(chan int, 1)
	go func() {
		b, _ := readAllFrom(gctx, server)
		got <- len(b)
	}()
	within(t, 20*time.Second, "copy", func() {
		runTask(t, rtU, func(ctx context.Context) error {
			n, err := io.Copy(client.NetConn(), f.IO())
			t.Logf("io.Copy = %d, %v", n, err)
			if n != 100000 || err != nil {
				t.Errorf("io.Copy = %d, %v", n, err)
			}
			return client.CloseWrite(ctx)
		})
	})
	if n := <-got; n != 100000 {
		t.Errorf("received %d", n)
	}
}
