package aio

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/faio-go/faio/modules/runtime"
)

// checkNilContext runs f, which gives a nil context to one function of the
// package, and checks that it returns an error matching
// runtime.ErrNilContext in the form of its kind (*fs.PathError for files,
// *net.OpError for sockets), without a panic or a hang. It used to panic
// with a nil dereference inside aio, or (Open) say ErrNoRuntime.
func checkNilContext(t *testing.T, name string, file bool, f func() error) {
	t.Helper()
	var err error
	var panicked any
	within(t, 10*time.Second, name, func() {
		defer func() { panicked = recover() }()
		err = f()
	})
	if panicked != nil {
		t.Errorf("%s with a nil ctx panicked: %v", name, panicked)
		return
	}
	if !errors.Is(err, runtime.ErrNilContext) {
		t.Errorf("%s with a nil ctx = %v, want runtime.ErrNilContext", name, err)
		return
	}
	var pe *fs.PathError
	var oe *net.OpError
	if file && !errors.As(err, &pe) || !file && !errors.As(err, &oe) {
		t.Errorf("%s with a nil ctx = %T %v, want a *fs.PathError (file) or *net.OpError (socket)", name, err, err)
	}
}

func TestNilContextIsRefused(t *testing.T) {
	rt := newRuntime(t, runtime.Config{Workers: 1})
	ctx := goroutineCtx(rt)
	var nilCtx context.Context
	name := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(name, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := Open(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close(ctx)
	b := make([]byte, 8)
	for _, c := range []struct {
		name string
		f    func() error
	}{
		{"Open", func() error { _, err := Open(nilCtx, name); return err }},
		{"Create", func() error { _, err := Create(nilCtx, name+"2"); return err }},
		{"OpenFile", func() error { _, err := OpenFile(nilCtx, name, os.O_RDONLY, 0); return err }},
		{"ReadFile", func() error { _, err := ReadFile(nilCtx, name); return err }},
		{"WriteFile", func() error { return WriteFile(nilCtx, name+"2", b, 0o600) }},
		{"File.Read", func() error { _, err := f.Read(nilCtx, b); return err }},
		{"File.Read of no bytes", func() error { _, err := f.Read(nilCtx, nil); return err }},
		{"File.ReadAt", func() error { _, err := f.ReadAt(nilCtx, b, 0); return err }},
		{"File.Write", func() error { _, err := f.Write(nilCtx, b); return err }},
		{"File.WriteAt", func() error { _, err := f.WriteAt(nilCtx, b, 0); return err }},
		{"File.Readv", func() error { _, err := f.Readv(nilCtx, [][]byte{b}); return err }},
		{"File.Writev", func() error { _, err := f.Writev(nilCtx, [][]byte{b}); return err }},
		{"File.Seek", func() error { _, err := f.Seek(nilCtx, 0, 0); return err }},
		{"File.Sync", func() error { return f.Sync(nilCtx) }},
		{"File.Truncate", func() error { return f.Truncate(nilCtx, 0) }},
		{"File.Stat", func() error { _, err := f.Stat(nilCtx); return err }},
		{"File.Close", func() error { return f.Close(nilCtx) }},
	} {
		checkNilContext(t, c.name, true, c.f)
	}
	if _, err := os.Stat(name + "2"); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Create or WriteFile with a nil ctx made the file: %v", err)
	}
	// Close(nil) did nothing: the file is open, and Close closes it.
	if n, err := f.ReadAt(ctx, b, 0); n != 5 || string(b[:n]) != "hello" {
		t.Fatalf("ReadAt after Close(nil) = %d, %v", n, err)
	}
	if err := f.Close(ctx); err != nil {
		t.Fatalf("Close after Close(nil) = %v", err)
	}

	l, err := Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Dial(ctx, "tcp", l.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	s, err := l.Accept(ctx)
	if err != nil {
		t.Fatal(err)
	}
	u, err := ListenUDP(ctx, "udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	uc, err := DialUDP(ctx, "udp", u.LocalAddr().String())
	if err != nil {
		t.Fatal(err)
	}
	g, err := Open(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close(ctx)
	dir := t.TempDir()
	uaddr := netip.MustParseAddrPort(u.LocalAddr().String())
	for _, x := range []struct {
		name string
		f    func() error
	}{
		{"Listen", func() error { _, err := Listen(nilCtx, "tcp", "127.0.0.1:0"); return err }},
		{"Listen unix", func() error { _, err := Listen(nilCtx, "unix", filepath.Join(dir, "s")); return err }},
		{"ListenConfig.Listen", func() error { _, err := ListenConfig{}.Listen(nilCtx, "tcp", "127.0.0.1:0"); return err }},
		{"ListenUDP", func() error { _, err := ListenUDP(nilCtx, "udp", "127.0.0.1:0"); return err }},
		{"ListenConfig.ListenUDP", func() error { _, err := ListenConfig{}.ListenUDP(nilCtx, "udp", "127.0.0.1:0"); return err }},
		{"Dial", func() error { _, err := Dial(nilCtx, "tcp", l.Addr().String()); return err }},
		{"Dial unix", func() error { _, err := Dial(nilCtx, "unix", filepath.Join(dir, "s")); return err }},
		{"DialUDP", func() error { _, err := DialUDP(nilCtx, "udp", u.LocalAddr().String()); return err }},
		{"Listener.Accept", func() error { _, err := l.Accept(nilCtx); return err }},
		{"Listener.Close", func() error { return l.Close(nilCtx) }},
		{"Conn.Read", func() error { _, err := c.Read(nilCtx, b); return err }},
		{"Conn.Read of no bytes", func() error { _, err := c.Read(nilCtx, nil); return err }},
		{"Conn.Peek", func() error { _, err := c.Peek(nilCtx, b); return err }},
		{"Conn.ReadFull", func() error { _, err := c.ReadFull(nilCtx, b); return err }},
		{"Conn.Write", func() error { _, err := c.Write(nilCtx, b); return err }},
		{"Conn.WriteZC", func() error { _, err := c.WriteZC(nilCtx, b); return err }},
		{"Conn.Writev", func() error { _, err := c.Writev(nilCtx, [][]byte{b}); return err }},
		{"Conn.Readv", func() error { _, err := c.Readv(nilCtx, [][]byte{b}); return err }},
		{"Conn.SendFile", func() error { _, err := c.SendFile(nilCtx, g, 0, -1); return err }},
		{"Conn.CloseWrite", func() error { return c.CloseWrite(nilCtx) }},
		{"Conn.CloseRead", func() error { return c.CloseRead(nilCtx) }},
		{"Conn.Close", func() error { return c.Close(nilCtx) }},
		{"UDPConn.ReadFrom", func() error { _, _, err := u.ReadFrom(nilCtx, b); return err }},
		{"UDPConn.WriteTo", func() error { _, err := u.WriteTo(nilCtx, b, uaddr); return err }},
		{"UDPConn.Read", func() error { _, err := uc.Read(nilCtx, b); return err }},
		{"UDPConn.Write", func() error { _, err := uc.Write(nilCtx, b); return err }},
		{"UDPConn.Close", func() error { return u.Close(nilCtx) }},
	} {
		checkNilContext(t, x.name, false, x.f)
	}
	if _, err := os.Stat(filepath.Join(dir, "s")); !errors.Is(err, fs.ErrNotExist) {
		t.Errorf("Listen unix with a nil ctx made the socket file: %v", err)
	}
	// The Close(nil) calls did nothing: everything still works, and Close
	// closes it.
	within(t, 10*time.Second, "use after Close(nil)", func() {
		if _, err := c.Write(ctx, []byte("hi")); err != nil {
			t.Errorf("Conn.Write after Close(nil) = %v", err)
		}
		if n, err := s.ReadFull(ctx, b[:2]); n != 2 || err != nil {
			t.Errorf("peer's ReadFull = %d, %v", n, err)
		}
		if _, err := uc.Write(ctx, []byte("hi")); err != nil {
			t.Errorf("UDPConn.Write = %v", err)
		}
		if n, _, err := u.ReadFrom(ctx, b); n != 2 || err != nil {
			t.Errorf("UDPConn.ReadFrom after Close(nil) = %d, %v", n, err)
		}
		for name, close := range map[string]func(context.Context) error{
			"Conn": c.Close, "accepted Conn": s.Close, "Listener": l.Close, "UDPConn": u.Close, "dialled UDPConn": uc.Close,
		} {
			if err := close(ctx); err != nil {
				t.Errorf("%s.Close after Close(nil) = %v", name, err)
			}
		}
	})
}

// A task's Read and ReadAt with a nil ctx fail too, and the task's deferred
// Close then returns: a Read that panicked inside the task used to keep
// the file's reference, and Close, BlockOn with it, waited for ever.
func TestNilContextInTask(t *testing.T) {
	rt := newRuntime(t, runtime.Config{Workers: 1})
	name := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(name, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	within(t, 20*time.Second, "BlockOn", func() {
		_, err := runtime.BlockOn(rt, func(ctx context.Context) (struct{}, error) {
			f, err := Open(ctx, name)
			if err != nil {
				return struct{}{}, err
			}
			defer f.Close(ctx)
			var nilCtx context.Context
			b := make([]byte, 8)
			if _, err := f.Read(nilCtx, b); !errors.Is(err, runtime.ErrNilContext) {
				t.Errorf("Read(nil) in a task = %v", err)
			}
			if _, err := f.ReadAt(nilCtx, b, 0); !errors.Is(err, runtime.ErrNilContext) {
				t.Errorf("ReadAt(nil) in a task = %v", err)
			}
			return struct{}{}, nil
		})
		if err != nil {
			t.Errorf("BlockOn: %v", err)
		}
	})
}

// brokenCtx is a context whose every method panics (its embedded Context
// is nil): it passes the nil check and panics inside the operation.
type brokenCtx struct{ context.Context }

// mustPanic runs f and reports whether it panicked.
func mustPanic(f func()) (panicked bool) {
	defer func() { panicked = recover() != nil }()
	f()
	return false
}

// An operation that panics after taking the descriptor's reference (here
// in a method of the caller's ctx) gives it back, and the operation lock
// too: later operations run and Close returns. They used to wait for ever.
func TestPanicInOperationReleasesDescriptor(t *testing.T) {
	rt := newRuntime(t, runtime.Config{Workers: 1})
	ctx := goroutineCtx(rt)
	name := filepath.Join(t.TempDir(), "f")
	if err := os.WriteFile(name, []byte("hello"), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := Open(ctx, name)
	if err != nil {
		t.Fatal(err)
	}
	c, s, err := connPair(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	bad := brokenCtx{}
	b := make([]byte, 8)
	for what, op := range map[string]func(){
		"File.ReadAt": func() { f.ReadAt(bad, b, 0) },
		"File.Read":   func() { f.Read(bad, b) },
		"Conn.Read":   func() { c.Read(bad, b) },
		"Conn.Write":  func() { c.Write(bad, b) },
	} {
		if !mustPanic(op) {
			t.Fatalf("%s with a broken ctx did not panic: the test no longer tests anything", what)
		}
	}
	within(t, 10*time.Second, "operations and Close after the panics", func() {
		if n, err := f.Read(ctx, b); n != 5 || err != nil {
			t.Errorf("File.Read = %d, %v", n, err)
		}
		if _, err := s.Write(ctx, []byte("x")); err != nil {
			t.Errorf("peer's Write = %v", err)
		}
		if n, err := c.Read(ctx, b); n != 1 || err != nil {
			t.Errorf("Conn.Read = %d, %v", n, err)
		}
		if _, err := c.Write(ctx, []byte("y")); err != nil {
			t.Errorf("Conn.Write = %v", err)
		}
		for what, close := range map[string]func(context.Context) error{
			"File": f.Close, "Conn": c.Close, "accepted Conn": s.Close,
		} {
			if err := close(ctx); err != nil {
				t.Errorf("%s.Close = %v", what, err)
			}
		}
	})
}
