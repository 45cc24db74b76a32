package aio

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/faio-go/faio/modules/runtime"
	"golang.org/x/net/nettest"
)

// backends are the I/O backends a socket test runs on: io_uring where the
// kernel has it (BackendAuto) and the portable one. FAIO_BACKEND, when
// set, overrides both.
var backends = []runtime.Backend{runtime.BackendAuto, runtime.BackendPortable}

// unixEchoRoundTrips dials l's address on network and makes a few round
// trips of growing size through the echo server, checking the bytes and
// the addresses at both ends.
func unixEchoRoundTrips(ctx context.Context, network string, l *Listener) error {
	c, err := Dial(ctx, network, l.Addr().String())
	if err != nil {
		return err
	}
	defer c.Close(ctx)
	want := &net.UnixAddr{Name: l.Addr().String(), Net: network}
	if ra, ok := c.RemoteAddr().(*net.UnixAddr); !ok || *ra != *want {
		return fmt.Errorf("RemoteAddr = %#v, want %#v", c.RemoteAddr(), want)
	}
	if la, ok := c.LocalAddr().(*net.UnixAddr); !ok || la.Name != "@" || la.Net != network {
		return fmt.Errorf("LocalAddr = %#v, want the unnamed @", c.LocalAddr())
	}
	if err := c.SetNoDelay(true); !errors.Is(err, syscall.EOPNOTSUPP) {
		return fmt.Errorf("SetNoDelay on a Unix connection = %v, want EOPNOTSUPP", err)
	}
	pattern := randomBytes(32<<10, 3)
	got := make([]byte, len(pattern))
	for _, n := range []int{1, 100, 4 << 10, 32 << 10} {
		if _, err := c.Write(ctx, pattern[:n]); err != nil {
			return err
		}
		if k, err := c.ReadFull(ctx, got[:n]); err != nil || !bytes.Equal(got[:n], pattern[:n]) {
			return fmt.Errorf("%d bytes: ReadFull = %d, %v, equal %v", n, k, err, bytes.Equal(got[:k], pattern[:k]))
		}
	}
	if err := c.CloseWrite(ctx); err != nil {
		return err
	}
	if n, err := c.Read(ctx, got); n != 0 || err != io.EOF {
		return fmt.Errorf("Read after CloseWrite = %d, %v; want io.EOF", n, err)
	}
	return nil
}

// Echo over Unix stream sockets, from a task and from a plain goroutine,
// on both backends: a path in the file system and an abstract address,
// "unix" and "unixpacket". The accepted connection reports the listener's
// address as its own and the unnamed "@" as its peer's, as package net
// does; nothing leaks, and Close removes the socket file.
func TestUnixEcho(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend.String(), func(t *testing.T) {
			rt := newRuntime(t, runtime.Config{Workers: 2, IOBackend: backend})
			before := fdTargets(t)
			dir := t.TempDir()
			abstract := fmt.Sprintf("@faio-test-%d-%s", os.Getpid(), backend)
			cases := []struct{ network, address string }{
				{"unix", filepath.Join(dir, "s.sock")},
				{"unix", abstract},
				{"unixpacket", filepath.Join(dir, "p.sock")},
				{"unix", ""}, // an abstract name the kernel picks
			}
			for _, c := range cases {
				l, err := Listen(goroutineCtx(rt), c.network, c.address)
				if err != nil {
					t.Fatal(err)
				}
				la, ok := l.Addr().(*net.UnixAddr)
				if !ok || la.Net != c.network || (c.address != "" && la.Name != c.address) || la.Name == "" {
					t.Fatalf("Listen(%s, %q).Addr() = %#v", c.network, c.address, l.Addr())
				}
				server := runtime.SpawnOn(rt, func(ctx context.Context) (int, error) {
					c, err := l.Accept(ctx)
					if err != nil {
						return 0, err
					}
					defer c.Close(ctx)
					if c.LocalAddr().String() != la.Name || c.RemoteAddr().String() != "@" {
						return 0, fmt.Errorf("accepted %v -> %v", c.LocalAddr(), c.RemoteAddr())
					}
					// The first connection is a task's, the second a
					// goroutine's; the echo serves both in turn.
					if err := echoOne(ctx, c); err != nil {
						return 0, err
					}
					c2, err := l.Accept(ctx)
					if err != nil {
						return 0, err
					}
					defer c2.Close(ctx)
					return 0, echoOne(ctx, c2)
				})
				runTask(t, rt, func(ctx context.Context) error { return unixEchoRoundTrips(ctx, c.network, l) })
				within(t, 10*time.Second, "goroutine echo", func() {
					if err := unixEchoRoundTrips(goroutineCtx(rt), c.network, l); err != nil {
						t.Error(err)
					}
				})
				if _, err := server.Join(context.Background()); err != nil {
					t.Fatalf("%s %q: server: %v", c.network, c.address, err)
				}
				if err := l.Close(goroutineCtx(rt)); err != nil {
					t.Fatal(err)
				}
				if !strings.HasPrefix(la.Name, "@") {
					if _, err := os.Stat(la.Name); !errors.Is(err, fs.ErrNotExist) {
						t.Fatalf("after Close, the socket file: %v", err)
					}
				}
			}
			checkNoFDLeak(t, before)
		})
	}
}

// echoOne sends back what c receives until c's peer closes its side.
func echoOne(ctx context.Context, c *Conn) error {
	buf := make([]byte, 64<<10)
	for {
		n, err := c.Read(ctx, buf)
		if err == io.EOF {
			return c.CloseWrite(ctx)
		}
		if err != nil {
			return err
		}
		if _, err := c.Write(ctx, buf[:n]); err != nil {
			return err
		}
	}
}

// Bad Unix addresses fail with *net.OpError values that say what is wrong
// and match the errno, from a task and from a goroutine.
func TestUnixAddressErrors(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend.String(), func(t *testing.T) {
			rt := newRuntime(t, runtime.Config{Workers: 1, IOBackend: backend})
			dir := t.TempDir()
			check := func(ctx context.Context) error {
				long := filepath.Join(dir, strings.Repeat("x", 120))
				stale := filepath.Join(dir, "stale.sock")
				l, err := Listen(ctx, "unix", stale)
				if err != nil {
					return err
				}
				l.SetUnlinkOnClose(false)
				if err := l.Close(ctx); err != nil {
					return err
				}
				defer os.Remove(stale)
				regular := filepath.Join(dir, "regular")
				if err := os.WriteFile(regular, nil, 0o600); err != nil {
					return err
				}
				for _, c := range []struct {
					what, op, network, address string
					want                       error
					text                       string
				}{
					{"dial a path too long", "dial", "unix", long, syscall.EINVAL, "longer than a sockaddr_un holds"},
					{"listen on a path too long", "listen", "unix", long, syscall.EINVAL, "longer than a sockaddr_un holds"},
					{"dial a path with a NUL", "dial", "unix", dir + "/a\x00b", syscall.EINVAL, "NUL"},
					{"dial a missing path", "dial", "unix", filepath.Join(dir, "missing"), fs.ErrNotExist, "connect"},
					{"dial a socket nobody listens on", "dial", "unix", stale, syscall.ECONNREFUSED, "connect"},
					{"dial a regular file", "dial", "unix", regular, syscall.ECONNREFUSED, "connect"},
					{"dial an abstract name nobody listens on", "dial", "unix", "@faio-nobody-listens-here", syscall.ECONNREFUSED, "connect"},
					{"listen on an existing file", "listen", "unix", regular, syscall.EADDRINUSE, "bind"},
					{"listen in a missing directory", "listen", "unix", filepath.Join(dir, "no", "s"), fs.ErrNotExist, "bind"},
					{"dial nothing", "dial", "unix", "", errMissingAddress, "missing address"},
					{"dial unixgram", "dial", "unixgram", "@x", nil, "unknown network"},
				} {
					var err error
					if c.op == "dial" {
						var conn *Conn
						if conn, err = Dial(ctx, c.network, c.address); err == nil {
							conn.Close(ctx)
						}
					} else {
						var l *Listener
						if l, err = Listen(ctx, c.network, c.address); err == nil {
							l.Close(ctx)
						}
					}
					var oe *net.OpError
					if !errors.As(err, &oe) || oe.Op != c.op || (c.want != nil && !errors.Is(err, c.want)) || !strings.Contains(err.Error(), c.text) {
						return fmt.Errorf("%s: %v; want a %s *net.OpError matching %v and saying %q", c.what, err, c.op, c.want, c.text)
					}
				}
				return nil
			}
			runTask(t, rt, check)
			if err := check(goroutineCtx(rt)); err != nil {
				t.Fatal("from a goroutine: ", err)
			}
		})
	}
}

// Close removes the socket file Listen created, once, and not when
// SetUnlinkOnClose(false) said so; a later Close fails with net.ErrClosed.
func TestUnixListenerCloseUnlinks(t *testing.T) {
	rt := newRuntime(t, runtime.Config{Workers: 1})
	ctx := goroutineCtx(rt)
	name := filepath.Join(t.TempDir(), "s.sock")
	for _, unlink := range []bool{true, false} {
		l, err := Listen(ctx, "unix", name)
		if err != nil {
			t.Fatal(err)
		}
		if fi, err := os.Stat(name); err != nil || fi.Mode().Type() != fs.ModeSocket {
			t.Fatalf("after Listen: %v, %v", fi, err)
		}
		if !unlink {
			l.SetUnlinkOnClose(false)
		}
		if err := l.Close(ctx); err != nil {
			t.Fatal(err)
		}
		_, err = os.Stat(name)
		if unlink && !errors.Is(err, fs.ErrNotExist) || !unlink && err != nil {
			t.Fatalf("unlink %v: after Close, Stat = %v", unlink, err)
		}
		if !unlink {
			// Listening again on a stale file fails, as in package net.
			if _, err := Listen(ctx, "unix", name); !errors.Is(err, syscall.EADDRINUSE) {
				t.Fatalf("Listen on the stale file = %v", err)
			}
		}
		// A file made meanwhile by someone else at the name is not the
		// second Close's to remove.
		if unlink {
			if err := os.WriteFile(name, nil, 0o600); err != nil {
				t.Fatal(err)
			}
		}
		if err := l.Close(ctx); !errors.Is(err, net.ErrClosed) {
			t.Fatalf("second Close = %v", err)
		}
		if _, err := os.Stat(name); err != nil {
			t.Fatalf("after the second Close: %v", err)
		}
		os.Remove(name)
	}
}

// The x/net conformance suite, over Unix stream sockets.
func TestUnixNetConnConformance(t *testing.T) {
	rt := newRuntime(t, runtime.Config{Workers: 2})
	nettest.TestConn(t, func() (net.Conn, net.Conn, func(), error) {
		return netPipeOn(goroutineCtx(rt), "unix", "")
	})
}

// A Unix listener whose backlog is full makes a non-blocking connect(2)
// say EAGAIN with nothing in progress and the socket writable: a dial
// fails with EAGAIN at once, as package net's does, instead of retrying
// without end, from a goroutine and from a task on either backend (a task
// on io_uring used to wait for room until its ctx ended, found by a
// differential test of the backends).
func TestUnixDialFullBacklog(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend.String(), func(t *testing.T) {
			rt := newRuntime(t, runtime.Config{Workers: 1, IOBackend: backend})
			path := filepath.Join(t.TempDir(), "full.sock")
			l, err := ListenConfig{Backlog: 1}.Listen(goroutineCtx(rt), "unix", path)
			if err != nil {
				t.Fatal(err)
			}
			defer l.Close(context.Background())
			dial := func(ctx context.Context) (bool, error) {
				var conns []*Conn
				defer func() {
					for _, c := range conns {
						c.Close(context.Background())
					}
				}()
				for i := 0; i < 32; i++ {
					dctx, cancel := context.WithTimeout(ctx, 500*time.Millisecond)
					start := time.Now()
					c, err := Dial(dctx, "unix", path)
					cancel()
					if d := time.Since(start); d > 3*time.Second {
						return false, fmt.Errorf("Dial %d took %v", i, d)
					}
					switch {
					case err == nil:
						conns = append(conns, c)
					case errors.Is(err, syscall.EAGAIN):
						return true, nil
					case errors.Is(err, context.DeadlineExceeded):
						return false, nil // waited for room until ctx ended
					default:
						return false, fmt.Errorf("Dial %d: %v", i, err)
					}
				}
				return false, errors.New("32 connections into a listener of backlog 1 that accepts none")
			}
			again, err := dial(goroutineCtx(rt))
			if err != nil || !again {
				t.Fatalf("from a goroutine: EAGAIN %v, err %v; want EAGAIN", again, err)
			}
			again, err = runtime.BlockOn(rt, dial)
			if err != nil || !again {
				t.Fatalf("from a task: EAGAIN %v, err %v; want EAGAIN", again, err)
			}
		})
	}
}

// A Backlog beyond listen(2)'s int is capped, not wrapped: 1<<32 would
// otherwise become 0, leaving room for a single pending connection.
func TestHugeBacklogIsCapped(t *testing.T) {
	rt := newRuntime(t, runtime.Config{Workers: 1})
	ctx := goroutineCtx(rt)
	l, err := ListenConfig{Backlog: 1 << 32}.Listen(ctx, "unix", filepath.Join(t.TempDir(), "big.sock"))
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close(ctx)
	for i := range 8 {
		c, err := Dial(ctx, "unix", l.Addr().String())
		if err != nil {
			t.Fatalf("Dial %d into a listener of Backlog 1<<32 accepting none: %v", i, err)
		}
		defer c.Close(ctx)
	}
}

// An empty Write on a "unixpacket" connection sends an empty message, as
// package net's does: the peer's Read returns 0 and io.EOF for it, and the
// next message after it. It used to send nothing (found by a differential
// test against package net). On a "unix" stream an empty Write sends
// nothing, as net's.
func TestUnixpacketEmptyWriteIsAnEmptyMessage(t *testing.T) {
	for _, backend := range backends {
		t.Run(backend.String(), func(t *testing.T) {
			rt := newRuntime(t, runtime.Config{Workers: 2, IOBackend: backend})
			check := func(ctx context.Context) error {
				for _, network := range []string{"unixpacket", "unix"} {
					l, err := Listen(ctx, network, "")
					if err != nil {
						return err
					}
					accepted := runtime.SpawnOn(rt, func(ctx context.Context) (*Conn, error) { return l.Accept(ctx) })
					c, err := Dial(ctx, network, l.Addr().String())
					if err != nil {
						return err
					}
					p, err := accepted.Join(ctx)
					if err != nil {
						return err
					}
					var got []string
					for _, m := range [][]byte{nil, {}, []byte("x")} {
						if n, err := c.Write(ctx, m); n != 0 && len(m) == 0 || err != nil {
							return fmt.Errorf("%s: Write(%q) = %d, %v", network, m, n, err)
						}
					}
					buf := make([]byte, 8)
					for len(got) == 0 || got[len(got)-1] != "x" {
						rctx, cancel := context.WithTimeout(ctx, 5*time.Second)
						n, err := p.Read(rctx, buf)
						cancel()
						if err != nil && err != io.EOF {
							return fmt.Errorf("%s: Read after %q: %v", network, got, err)
						}
						got = append(got, fmt.Sprintf("%d %v", n, err))
						if n > 0 {
							got[len(got)-1] = string(buf[:n])
						}
					}
					want := "[x]"
					if network == "unixpacket" {
						want = "[0 EOF 0 EOF x]"
					}
					if fmt.Sprint(got) != want {
						return fmt.Errorf("%s: the peer read %q, want %s (as package net)", network, got, want)
					}
					c.Close(ctx)
					p.Close(ctx)
					l.Close(ctx)
				}
				return nil
			}
			runTask(t, rt, check)
			if err := check(goroutineCtx(rt)); err != nil {
				t.Error("from a goroutine:", err)
			}
		})
	}
}
