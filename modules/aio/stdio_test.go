package aio

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/iotest"
	"time"

	"github.com/faio-go/faio/modules/runtime"
)

// FileIO serves io.Copy, io.SectionReader, bufio and Seek, from a plain
// goroutine and from a task, with the same bytes as package os.
func TestFileIOWithStandardLibrary(t *testing.T) {
	rt := newRuntime(t, runtime.Config{Workers: 2})
	name, data := writeRandomFile(t, 300000, 11)
	check := func(ctx context.Context) error {
		f, err := Open(ctx, name)
		if err != nil {
			return err
		}
		x := f.IO()
		defer x.Close()
		var buf bytes.Buffer
		if _, err := io.Copy(&buf, x); err != nil || !bytes.Equal(buf.Bytes(), data) {
			return fmt.Errorf("io.Copy: %d bytes, %v", buf.Len(), err)
		}
		sec, err := io.ReadAll(io.NewSectionReader(x, 1000, 5000))
		if err != nil || !bytes.Equal(sec, data[1000:6000]) {
			return fmt.Errorf("SectionReader: %d bytes, %v", len(sec), err)
		}
		if _, err := x.Seek(4096, io.SeekStart); err != nil {
			return err
		}
		line := make([]byte, 100)
		if _, err := io.ReadFull(bufio.NewReader(x), line); err != nil || !bytes.Equal(line, data[4096:4196]) {
			return fmt.Errorf("bufio after Seek: %v", err)
		}
		return nil
	}
	fromGoroutineAndTask(t, rt, check)

	// Writes through the io interfaces land where os reads them.
	out := filepath.Join(t.TempDir(), "out")
	runTask(t, rt, func(ctx context.Context) error {
		f, err := Create(ctx, out)
		if err != nil {
			return err
		}
		x := f.IO()
		w := bufio.NewWriter(x)
		if _, err := w.Write(data); err != nil {
			return err
		}
		if err := w.Flush(); err != nil {
			return err
		}
		if _, err := x.WriteAt([]byte("HEAD"), 0); err != nil {
			return err
		}
		return x.Close()
	})
	got, err := os.ReadFile(out)
	want := append([]byte("HEAD"), data[4:]...)
	if err != nil || !bytes.Equal(got, want) {
		t.Fatalf("written file: %d bytes, %v", len(got), err)
	}
}

// NetPacketConn talks to a net.PacketConn, with a read deadline.
func TestNetPacketConn(t *testing.T) {
	rt := newRuntime(t, runtime.Config{Workers: 2})
	ctx := goroutineCtx(rt)
	u, err := ListenUDP(ctx, "udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	pc := u.NetPacketConn()
	defer pc.Close()
	peer, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()
	// A read deadline ends a ReadFrom that gets nothing.
	pc.SetReadDeadline(time.Now().Add(30 * time.Millisecond))
	if _, _, err := pc.ReadFrom(make([]byte, 8)); !isTimeout(err) {
		t.Fatalf("ReadFrom past its deadline = %v, want a timeout", err)
	}
	pc.SetReadDeadline(time.Time{})
	if _, err := pc.WriteTo([]byte("ping"), peer.LocalAddr()); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 16)
	n, from, err := peer.ReadFrom(buf)
	if err != nil || string(buf[:n]) != "ping" || from.String() != pc.LocalAddr().String() {
		t.Fatalf("peer got %q from %v, %v", buf[:n], from, err)
	}
	if _, err := peer.WriteTo([]byte("pong"), from); err != nil {
		t.Fatal(err)
	}
	n, from, err = pc.ReadFrom(buf)
	if err != nil || string(buf[:n]) != "pong" || from.String() != peer.LocalAddr().String() {
		t.Fatalf("faio got %q from %v, %v", buf[:n], from, err)
	}
	if _, err := pc.WriteTo([]byte("x"), nil); err == nil {
		t.Fatal("WriteTo a nil address succeeded")
	}
}

// net/http serves over a faio listener: a goroutine per connection through
// the adapter, keep-alive and a request body.
func TestHTTPServeOnNetListener(t *testing.T) {
	rt := newRuntime(t, runtime.Config{Workers: 2})
	ln, err := Listen(goroutineCtx(rt), "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(r.Body)
		fmt.Fprintf(w, "%s %s %d", r.Method, r.URL.Path, len(body))
	})}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		if err := srv.Serve(ln.NetListener()); !errors.Is(err, http.ErrServerClosed) {
			t.Errorf("Serve: %v", err)
		}
	}()
	client := &http.Client{Transport: &http.Transport{MaxIdleConnsPerHost: 1}}
	base := "http://" + ln.Addr().String()
	for i := range 20 {
		var resp *http.Response
		var err error
		if i%2 == 0 {
			resp, err = client.Get(base + "/get")
		} else {
			resp, err = client.Post(base+"/post", "text/plain", strings.NewReader(strings.Repeat("x", 100000)))
		}
		if err != nil {
			t.Fatal(err)
		}
		got, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		want := "GET /get 0"
		if i%2 == 1 {
			want = "POST /post 100000"
		}
		if string(got) != want {
			t.Fatalf("request %d: %q, want %q", i, got, want)
		}
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	client.CloseIdleConnections()
	wg.Wait()
}

// FileIO passes testing/iotest's reader conformance test (Read, ReadAt,
// Seek and their interplay, as io documents them), from a plain goroutine
// and from a task, on files of several sizes: empty, smaller than one read,
// and larger than a page.
func TestFileIOConformsToIotest(t *testing.T) {
	rt := newRuntime(t, runtime.Config{Workers: 2})
	for _, size := range []int{0, 1, 100, 4096, 70000} {
		name, data := writeRandomFile(t, size, uint64(size)+3)
		fromGoroutineAndTask(t, rt, func(ctx context.Context) error {
			f, err := Open(ctx, name)
			if err != nil {
				return err
			}
			defer f.Close(ctx)
			if err := iotest.TestReader(f.IO(), data); err != nil {
				return fmt.Errorf("%d bytes: %w", size, err)
			}
			return nil
		})
	}
}

// writeRandomFile writes n pseudo-random bytes (randomBytes with seed) to a
// new file and returns its name and the bytes.
func writeRandomFile(t *testing.T, n int, seed uint64) (string, []byte) {
	t.Helper()
	name := filepath.Join(t.TempDir(), "data")
	data := randomBytes(n, seed)
	if err := os.WriteFile(name, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return name, data
}

// fromGoroutineAndTask runs check from a plain goroutine, then in a task.
func fromGoroutineAndTask(t *testing.T, rt *runtime.Runtime, check func(context.Context) error) {
	t.Helper()
	if err := check(goroutineCtx(rt)); err != nil {
		t.Fatal("from a goroutine:", err)
	}
	runTask(t, rt, check)
}
