package aio

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"net/netip"
	"os"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/faio-go/faio/modules/runtime"
	"golang.org/x/sys/unix"
)

// A zero File, Conn, Listener or UDPConn, a nil pointer to one, and the
// standard-interface adapters around them (or zero or nil themselves) are
// no descriptor: every method fails at once with an error wrapping
// os.ErrInvalid, Close too, and none touches descriptor 0, the number a
// zero value holds. They used to work on descriptor 0 (stdin), and Close
// waited for ever.
//
// The checks run in a child process of the test binary whose descriptor 0
// is one end of a socket pair: descriptor 0 could otherwise be the
// terminal of whoever runs the tests, and a read of it would wait for
// them. The parent puts zeroMarker in the child's receive queue first; the
// child checks at the end that its descriptor 0 is still the same open
// socket, still holds the whole marker (nothing read it) and still sends
// (nothing shut it down), takes the marker and sends zeroEnd; the parent checks that zeroEnd
// is all it got (nothing else was written).

const (
	zeroChildEnv = "FAIO_AIO_ZERO_VALUE_CHILD"
	zeroMarker   = "descriptor 0 belongs to the test\n"
	zeroEnd      = "end\n"
)

func TestZeroValuesAreInvalid(t *testing.T) {
	if os.Getenv(zeroChildEnv) == "1" {
		zeroValueChild(t)
		return
	}
	fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := unix.SetNonblock(fds[0], true); err != nil {
		t.Fatal(err)
	}
	ours := os.NewFile(uintptr(fds[0]), "test's end")
	defer ours.Close()
	theirs := os.NewFile(uintptr(fds[1]), "child's descriptor 0")
	if _, err := ours.Write([]byte(zeroMarker)); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, os.Args[0], "-test.run=^TestZeroValuesAreInvalid$", "-test.count=1", "-test.v",
		"-test.timeout=2m")
	cmd.Env = append(os.Environ(), zeroChildEnv+"=1")
	cmd.Stdin = theirs
	out, err := cmd.CombinedOutput()
	theirs.Close()
	if err != nil {
		t.Fatalf("child: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "--- PASS: TestZeroValuesAreInvalid") {
		t.Fatalf("child did not run the test:\n%s", out)
	}
	if err := ours.SetReadDeadline(time.Now().Add(30 * time.Second)); err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(ours)
	if err != nil || string(got) != zeroEnd {
		t.Fatalf("the child's descriptor 0 sent %q, %v; want only %q", got, err, zeroEnd)
	}
}

// zeroValueChild is the test proper, in the child.
func zeroValueChild(t *testing.T) {
	var st0 unix.Stat_t
	if err := unix.Fstat(0, &st0); err != nil || st0.Mode&unix.S_IFMT != unix.S_IFSOCK {
		t.Fatalf("descriptor 0 is not the test's socket: %v", err)
	}
	defer checkDescriptor0(t, st0)
	for _, backend := range backends {
		t.Run(backend.String(), func(t *testing.T) {
			rt := newRuntime(t, runtime.Config{Workers: 1, IOBackend: backend})
			t.Logf("backend %v", rt.Backend())
			real := openRealPeers(t, rt)
			sets := []struct {
				name  string
				calls []invalidCall
			}{
				{"zero", ownerCalls(&File{}, &Conn{}, &Listener{}, &UDPConn{}, real)},
				{"nil", ownerCalls(nil, nil, nil, nil, real)},
				{"adapters/of-zero", adapterCalls((&File{}).IO(), (&Conn{}).NetConn(), (&Listener{}).NetListener(),
					(&UDPConn{}).NetPacketConn(), real)},
				{"adapters/of-nil", adapterCalls((*File)(nil).IO(), (*Conn)(nil).NetConn(), (*Listener)(nil).NetListener(),
					(*UDPConn)(nil).NetPacketConn(), real)},
				{"adapters/zero", adapterCalls(&FileIO{}, &NetConn{}, &NetListener{}, &NetPacketConn{}, real)},
				{"adapters/nil", adapterCalls(nil, nil, nil, nil, real)},
				{"real-with-invalid-argument", argumentCalls(real)},
			}
			for _, set := range sets {
				for _, caller := range []string{"goroutine", "goroutine-without-runtime", "task"} {
					t.Run(set.name+"/"+caller, func(t *testing.T) {
						for _, c := range set.calls {
							runInvalidCall(t, rt, caller, c)
						}
					})
				}
			}
			real.check(t, rt)
		})
	}
}

// checkDescriptor0 fails the test unless descriptor 0 is still the open
// socket st0 describes, with the whole marker unread and its sending side
// working; it then sends zeroEnd to the parent.
func checkDescriptor0(t *testing.T, st0 unix.Stat_t) {
	var st unix.Stat_t
	if err := unix.Fstat(0, &st); err != nil || st.Dev != st0.Dev || st.Ino != st0.Ino {
		t.Fatalf("descriptor 0 was closed or replaced: %v", err)
	}
	buf := make([]byte, 2*len(zeroMarker))
	n, _, err := unix.Recvfrom(0, buf, unix.MSG_PEEK|unix.MSG_DONTWAIT)
	if err != nil || string(buf[:n]) != zeroMarker {
		t.Fatalf("descriptor 0 holds %q, %v; want the marker %q unread", buf[:n], err, zeroMarker)
	}
	// Taken now, so that the parent does not see the socket reset for
	// data left unread at exit.
	if _, _, err := unix.Recvfrom(0, buf[:len(zeroMarker)], unix.MSG_DONTWAIT); err != nil {
		t.Fatal(err)
	}
	if err := unix.Sendto(0, []byte(zeroEnd), unix.MSG_DONTWAIT|unix.MSG_NOSIGNAL, nil); err != nil {
		t.Fatalf("descriptor 0 no longer sends: %v", err)
	}
}

// errKind is the error type a method reports in, after its type's
// conventions.
type errKind int

const (
	pathErr errKind = iota // *fs.PathError
	opErr                  // *net.OpError
	bareErr                // os.ErrInvalid itself
	anyErr                 // whatever wraps os.ErrInvalid
	noErr                  // the method returns no error (an accessor): it must not panic
)

// invalidCall is one method call on an invalid value: it returns the
// method's count, position or descriptor-like result (which must be 0,
// nil or empty, else nonZero names it) and its error.
type invalidCall struct {
	name string
	kind errKind
	call func(ctx context.Context) (nonZero string, err error)
}

// count is a call returning a byte count or a position.
func count[N int | int64](n N, err error) (string, error) {
	if n != 0 {
		return fmt.Sprintf("count %d", n), err
	}
	return "", err
}

// errOnly is a call returning only an error.
func errOnly(err error) (string, error) { return "", err }

// isNil is an accessor returning v, which must be nil (or, for a string,
// empty).
func isNil(v any) (string, error) {
	switch x := v.(type) {
	case nil:
		return "", nil
	case string:
		if x == "" {
			return "", nil
		}
	case net.Addr:
		if isNilPointer(x) {
			return "", nil
		}
	}
	return fmt.Sprintf("%#v", v), nil
}

func isNilPointer(a net.Addr) bool {
	switch p := a.(type) {
	case *net.TCPAddr:
		return p == nil
	case *net.UDPAddr:
		return p == nil
	case *net.UnixAddr:
		return p == nil
	}
	return false
}

// ownerCalls are the calls of every exported method of f, c, l and u, a
// zero value or a nil pointer each.
func ownerCalls(f *File, c *Conn, l *Listener, u *UDPConn, real *realPeers) []invalidCall {
	b := []byte("x\n")
	bufs := [][]byte{[]byte("x"), []byte("y\n")}
	udpTo := netip.MustParseAddrPort("127.0.0.1:9")
	return []invalidCall{
		{"File.Name", noErr, func(context.Context) (string, error) { return isNil(f.Name()) }},
		{"File.Read", pathErr, func(ctx context.Context) (string, error) { return count(f.Read(ctx, make([]byte, 8))) }},
		{"File.Read(empty)", pathErr, func(ctx context.Context) (string, error) { return count(f.Read(ctx, nil)) }},
		{"File.Write", pathErr, func(ctx context.Context) (string, error) { return count(f.Write(ctx, b)) }},
		{"File.Write(empty)", pathErr, func(ctx context.Context) (string, error) { return count(f.Write(ctx, nil)) }},
		{"File.ReadAt", pathErr, func(ctx context.Context) (string, error) { return count(f.ReadAt(ctx, make([]byte, 8), 0)) }},
		{"File.ReadAt(-1)", pathErr, func(ctx context.Context) (string, error) { return count(f.ReadAt(ctx, make([]byte, 8), -1)) }},
		{"File.WriteAt", pathErr, func(ctx context.Context) (string, error) { return count(f.WriteAt(ctx, b, 0)) }},
		{"File.Readv", pathErr, func(ctx context.Context) (string, error) { return count(f.Readv(ctx, [][]byte{make([]byte, 8)})) }},
		{"File.Readv(empty)", pathErr, func(ctx context.Context) (string, error) { return count(f.Readv(ctx, nil)) }},
		{"File.Writev", pathErr, func(ctx context.Context) (string, error) { return count(f.Writev(ctx, bufs)) }},
		{"File.Writev(empty)", pathErr, func(ctx context.Context) (string, error) { return count(f.Writev(ctx, nil)) }},
		{"File.Seek", pathErr, func(ctx context.Context) (string, error) { return count(f.Seek(ctx, 0, io.SeekEnd)) }},
		{"File.Sync", pathErr, func(ctx context.Context) (string, error) { return errOnly(f.Sync(ctx)) }},
		{"File.Truncate", pathErr, func(ctx context.Context) (string, error) { return errOnly(f.Truncate(ctx, 0)) }},
		{"File.Stat", pathErr, func(ctx context.Context) (string, error) {
			fi, err := f.Stat(ctx)
			if fi != nil {
				return fmt.Sprintf("FileInfo %v", fi), err
			}
			return "", err
		}},
		{"File.Close", pathErr, func(ctx context.Context) (string, error) { return errOnly(f.Close(ctx)) }},
		{"File.Close(again)", pathErr, func(ctx context.Context) (string, error) { return errOnly(f.Close(ctx)) }},
		{"File.IO", noErr, func(context.Context) (string, error) {
			if f.IO() == nil || f.IO().File() != f {
				return "IO() does not wrap the File", nil
			}
			return "", nil
		}},

		{"Conn.Read", opErr, func(ctx context.Context) (string, error) { return count(c.Read(ctx, make([]byte, 8))) }},
		{"Conn.Read(empty)", opErr, func(ctx context.Context) (string, error) { return count(c.Read(ctx, nil)) }},
		{"Conn.Peek", opErr, func(ctx context.Context) (string, error) { return count(c.Peek(ctx, make([]byte, 8))) }},
		{"Conn.Peek(empty)", opErr, func(ctx context.Context) (string, error) { return count(c.Peek(ctx, nil)) }},
		{"Conn.ReadFull", opErr, func(ctx context.Context) (string, error) { return count(c.ReadFull(ctx, make([]byte, 8))) }},
		{"Conn.ReadFull(empty)", opErr, func(ctx context.Context) (string, error) { return count(c.ReadFull(ctx, nil)) }},
		{"Conn.Readv", opErr, func(ctx context.Context) (string, error) { return count(c.Readv(ctx, [][]byte{make([]byte, 8)})) }},
		{"Conn.Readv(empty)", opErr, func(ctx context.Context) (string, error) { return count(c.Readv(ctx, nil)) }},
		{"Conn.Write", opErr, func(ctx context.Context) (string, error) { return count(c.Write(ctx, b)) }},
		{"Conn.Write(empty)", opErr, func(ctx context.Context) (string, error) { return count(c.Write(ctx, nil)) }},
		{"Conn.WriteZC", opErr, func(ctx context.Context) (string, error) { return count(c.WriteZC(ctx, b)) }},
		{"Conn.WriteZC(empty)", opErr, func(ctx context.Context) (string, error) { return count(c.WriteZC(ctx, nil)) }},
		{"Conn.Writev", opErr, func(ctx context.Context) (string, error) { return count(c.Writev(ctx, bufs)) }},
		{"Conn.Writev(empty)", opErr, func(ctx context.Context) (string, error) { return count(c.Writev(ctx, nil)) }},
		{"Conn.SendFile", opErr, func(ctx context.Context) (string, error) { return count(c.SendFile(ctx, real.file, 0, -1)) }},
		{"Conn.SendFile(invalid File)", opErr, func(ctx context.Context) (string, error) { return count(c.SendFile(ctx, f, 0, -1)) }},
		{"Conn.CloseWrite", opErr, func(ctx context.Context) (string, error) { return errOnly(c.CloseWrite(ctx)) }},
		{"Conn.CloseRead", opErr, func(ctx context.Context) (string, error) { return errOnly(c.CloseRead(ctx)) }},
		{"Conn.SetNoDelay", opErr, func(context.Context) (string, error) { return errOnly(c.SetNoDelay(false)) }},
		{"Conn.SetLinger", opErr, func(context.Context) (string, error) { return errOnly(c.SetLinger(0)) }},
		{"Conn.SetKeepAlive", opErr, func(context.Context) (string, error) { return errOnly(c.SetKeepAlive(true)) }},
		{"Conn.SetKeepAlivePeriod", opErr, func(context.Context) (string, error) { return errOnly(c.SetKeepAlivePeriod(time.Second)) }},
		{"Conn.SetKeepAlivePeriod(0)", opErr, func(context.Context) (string, error) { return errOnly(c.SetKeepAlivePeriod(0)) }},
		{"Conn.SetKeepAlivePeriod(-1)", opErr, func(context.Context) (string, error) { return errOnly(c.SetKeepAlivePeriod(-1)) }},
		{"Conn.LocalAddr", noErr, func(context.Context) (string, error) { return isNil(c.LocalAddr()) }},
		{"Conn.RemoteAddr", noErr, func(context.Context) (string, error) { return isNil(c.RemoteAddr()) }},
		{"Conn.Close", opErr, func(ctx context.Context) (string, error) { return errOnly(c.Close(ctx)) }},
		{"Conn.Close(again)", opErr, func(ctx context.Context) (string, error) { return errOnly(c.Close(ctx)) }},
		{"Conn.NetConn", noErr, func(context.Context) (string, error) {
			if c.NetConn() == nil || c.NetConn().Conn() != c {
				return "NetConn() does not wrap the Conn", nil
			}
			return "", nil
		}},

		{"Listener.Addr", noErr, func(context.Context) (string, error) { return isNil(l.Addr()) }},
		{"Listener.Accept", opErr, func(ctx context.Context) (string, error) {
			nc, err := l.Accept(ctx)
			if nc != nil {
				return "a Conn", err
			}
			return "", err
		}},
		{"Listener.SetUnlinkOnClose", noErr, func(context.Context) (string, error) {
			l.SetUnlinkOnClose(false)
			return "", nil
		}},
		{"Listener.Close", opErr, func(ctx context.Context) (string, error) { return errOnly(l.Close(ctx)) }},
		{"Listener.Close(again)", opErr, func(ctx context.Context) (string, error) { return errOnly(l.Close(ctx)) }},
		{"Listener.NetListener", noErr, func(context.Context) (string, error) {
			if l.NetListener() == nil {
				return "no NetListener", nil
			}
			return "", nil
		}},

		{"UDPConn.Read", opErr, func(ctx context.Context) (string, error) { return count(u.Read(ctx, make([]byte, 8))) }},
		{"UDPConn.Read(empty)", opErr, func(ctx context.Context) (string, error) { return count(u.Read(ctx, nil)) }},
		{"UDPConn.Write", opErr, func(ctx context.Context) (string, error) { return count(u.Write(ctx, b)) }},
		{"UDPConn.Write(empty)", opErr, func(ctx context.Context) (string, error) { return count(u.Write(ctx, nil)) }},
		{"UDPConn.ReadFrom", opErr, func(ctx context.Context) (string, error) {
			n, from, err := u.ReadFrom(ctx, make([]byte, 8))
			if from.IsValid() {
				return "sender " + from.String(), err
			}
			return count(n, err)
		}},
		{"UDPConn.WriteTo", opErr, func(ctx context.Context) (string, error) { return count(u.WriteTo(ctx, b, udpTo)) }},
		{"UDPConn.LocalAddr", noErr, func(context.Context) (string, error) { return isNil(u.LocalAddr()) }},
		{"UDPConn.RemoteAddr", noErr, func(context.Context) (string, error) { return isNil(u.RemoteAddr()) }},
		{"UDPConn.Close", opErr, func(ctx context.Context) (string, error) { return errOnly(u.Close(ctx)) }},
		{"UDPConn.Close(again)", opErr, func(ctx context.Context) (string, error) { return errOnly(u.Close(ctx)) }},
		{"UDPConn.NetPacketConn", noErr, func(context.Context) (string, error) {
			if u.NetPacketConn() == nil {
				return "no NetPacketConn", nil
			}
			return "", nil
		}},
	}
}

// adapterCalls are the calls of every exported method of the adapters,
// which take no context.
func adapterCalls(x *FileIO, nc *NetConn, nl *NetListener, pc *NetPacketConn, real *realPeers) []invalidCall {
	b := []byte("x\n")
	to := &net.UDPAddr{IP: net.IPv4(127, 0, 0, 1), Port: 9}
	return []invalidCall{
		{"FileIO.Read", pathErr, func(context.Context) (string, error) { return count(x.Read(make([]byte, 8))) }},
		{"FileIO.Write", pathErr, func(context.Context) (string, error) { return count(x.Write(b)) }},
		{"FileIO.ReadAt", pathErr, func(context.Context) (string, error) { return count(x.ReadAt(make([]byte, 8), 0)) }},
		{"FileIO.WriteAt", pathErr, func(context.Context) (string, error) { return count(x.WriteAt(b, 0)) }},
		{"FileIO.Seek", pathErr, func(context.Context) (string, error) { return count(x.Seek(0, io.SeekEnd)) }},
		{"FileIO.Truncate", pathErr, func(context.Context) (string, error) { return errOnly(x.Truncate(0)) }},
		{"FileIO.Close", pathErr, func(context.Context) (string, error) { return errOnly(x.Close()) }},
		{"FileIO.File", noErr, func(context.Context) (string, error) {
			if f := x.File(); f != nil && f.guard.state.Load() != 0 {
				return "a valid File", nil
			}
			return "", nil
		}},
		{"io.ReadAll(FileIO)", pathErr, func(context.Context) (string, error) {
			data, err := io.ReadAll(x)
			return count(len(data), err)
		}},

		{"NetConn.Read", opErr, func(context.Context) (string, error) { return count(nc.Read(make([]byte, 8))) }},
		{"NetConn.Write", opErr, func(context.Context) (string, error) { return count(nc.Write(b)) }},
		{"NetConn.Write(empty)", opErr, func(context.Context) (string, error) { return count(nc.Write(nil)) }},
		{"NetConn.Writev", opErr, func(context.Context) (string, error) { return count(nc.Writev([][]byte{b})) }},
		{"NetConn.Writev(empty)", opErr, func(context.Context) (string, error) { return count(nc.Writev(nil)) }},
		{"NetConn.ReadFrom", opErr, func(context.Context) (string, error) { return count(nc.ReadFrom(bytes.NewReader(b))) }},
		{"NetConn.ReadFrom(File)", opErr, func(context.Context) (string, error) { return count(nc.ReadFrom(real.file.IO())) }},
		{"io.Copy(NetConn)", opErr, func(context.Context) (string, error) { return count(io.Copy(nc, bytes.NewReader(b))) }},
		{"NetConn.SetDeadline", opErr, func(context.Context) (string, error) {
			return errOnly(nc.SetDeadline(time.Now().Add(time.Hour)))
		}},
		{"NetConn.SetReadDeadline", opErr, func(context.Context) (string, error) {
			return errOnly(nc.SetReadDeadline(time.Now().Add(time.Hour)))
		}},
		{"NetConn.SetWriteDeadline", opErr, func(context.Context) (string, error) {
			return errOnly(nc.SetWriteDeadline(time.Now().Add(time.Hour)))
		}},
		{"NetConn.CloseWrite", opErr, func(context.Context) (string, error) { return errOnly(nc.CloseWrite()) }},
		{"NetConn.CloseRead", opErr, func(context.Context) (string, error) { return errOnly(nc.CloseRead()) }},
		{"NetConn.LocalAddr", noErr, func(context.Context) (string, error) { return isNil(nc.LocalAddr()) }},
		{"NetConn.RemoteAddr", noErr, func(context.Context) (string, error) { return isNil(nc.RemoteAddr()) }},
		{"NetConn.Conn", noErr, func(context.Context) (string, error) {
			if c := nc.Conn(); c != nil && c.guard.state.Load() != 0 {
				return "a valid Conn", nil
			}
			return "", nil
		}},
		{"NetConn.Close", opErr, func(context.Context) (string, error) { return errOnly(nc.Close()) }},
		{"NetConn.Close(again)", opErr, func(context.Context) (string, error) { return errOnly(nc.Close()) }},

		{"NetListener.Accept", opErr, func(context.Context) (string, error) {
			c, err := nl.Accept()
			if c != nil {
				return "a net.Conn", err
			}
			return "", err
		}},
		{"NetListener.SetDeadline", bareErr, func(context.Context) (string, error) {
			return errOnly(nl.SetDeadline(time.Now().Add(time.Hour)))
		}},
		{"NetListener.Addr", noErr, func(context.Context) (string, error) { return isNil(nl.Addr()) }},
		{"NetListener.Close", opErr, func(context.Context) (string, error) { return errOnly(nl.Close()) }},

		{"NetPacketConn.ReadFrom", opErr, func(context.Context) (string, error) {
			n, from, err := pc.ReadFrom(make([]byte, 8))
			if from != nil {
				return fmt.Sprintf("sender %v", from), err
			}
			return count(n, err)
		}},
		{"NetPacketConn.WriteTo", opErr, func(context.Context) (string, error) { return count(pc.WriteTo(b, to)) }},
		{"NetPacketConn.WriteTo(nil)", opErr, func(context.Context) (string, error) { return count(pc.WriteTo(b, nil)) }},
		{"NetPacketConn.SetDeadline", opErr, func(context.Context) (string, error) {
			return errOnly(pc.SetDeadline(time.Now().Add(time.Hour)))
		}},
		{"NetPacketConn.SetReadDeadline", opErr, func(context.Context) (string, error) {
			return errOnly(pc.SetReadDeadline(time.Now().Add(time.Hour)))
		}},
		{"NetPacketConn.SetWriteDeadline", opErr, func(context.Context) (string, error) {
			return errOnly(pc.SetWriteDeadline(time.Now().Add(time.Hour)))
		}},
		{"NetPacketConn.LocalAddr", noErr, func(context.Context) (string, error) { return isNil(pc.LocalAddr()) }},
		{"NetPacketConn.Close", opErr, func(context.Context) (string, error) { return errOnly(pc.Close()) }},
	}
}

// argumentCalls are the calls of methods of open values given an invalid
// File.
func argumentCalls(real *realPeers) []invalidCall {
	var calls []invalidCall
	for _, f := range []*File{{}, nil} {
		name := "zero"
		if f == nil {
			name = "nil"
		}
		calls = append(calls,
			invalidCall{"Conn.SendFile(" + name + " File)", opErr, func(ctx context.Context) (string, error) {
				return count(real.conn.SendFile(ctx, f, 0, -1))
			}},
			invalidCall{"NetConn.ReadFrom(" + name + " File)", pathErr, func(context.Context) (string, error) {
				return count(real.conn.NetConn().ReadFrom(f.IO()))
			}},
		)
	}
	return calls
}

// realPeers are open values the calls use as arguments: a regular file
// and one end of a connection, whose other end checks that nothing was
// sent.
type realPeers struct {
	file       *File
	conn, peer *Conn
}

func openRealPeers(t *testing.T, rt *runtime.Runtime) *realPeers {
	name, _ := writeRandomFile(t, 1000, 3)
	var p realPeers
	runTask(t, rt, func(ctx context.Context) error {
		var err error
		if p.file, err = Open(ctx, name); err != nil {
			return err
		}
		p.conn, p.peer, err = connPair(ctx, "tcp", "127.0.0.1:0")
		return err
	})
	t.Cleanup(func() {
		runTask(t, rt, func(ctx context.Context) error {
			p.conn.Close(ctx)
			p.peer.Close(ctx)
			return p.file.Close(ctx)
		})
	})
	return &p
}

// check fails the test if the calls moved the file's position or sent
// anything over the connection.
func (p *realPeers) check(t *testing.T, rt *runtime.Runtime) {
	runTask(t, rt, func(ctx context.Context) error {
		if pos, err := p.file.Seek(ctx, 0, io.SeekCurrent); err != nil || pos != 0 {
			return fmt.Errorf("the real file's position moved to %d (%v)", pos, err)
		}
		if _, err := p.conn.Write(ctx, []byte("!")); err != nil {
			return err
		}
		got := make([]byte, 64)
		n, err := p.peer.Read(ctx, got)
		if err != nil || string(got[:n]) != "!" {
			return fmt.Errorf("the real connection carried %q (%v) besides the test's own byte", got[:n], err)
		}
		return nil
	})
}

// runInvalidCall runs c from caller ("goroutine": a plain goroutine whose
// ctx names rt; "goroutine-without-runtime": one whose ctx names none;
// "task": a task of rt) and checks that it fails at once with an error of
// its kind wrapping os.ErrInvalid. A call that does not return is reported,
// not waited for; it gets a ctx that ends in 10 s, for the case where it
// would wait for that.
func runInvalidCall(t *testing.T, rt *runtime.Runtime, caller string, c invalidCall) {
	t.Helper()
	type outcome struct {
		nonZero string
		err     error
		panic   any
		took    time.Duration
	}
	done := make(chan outcome, 1)
	body := func(ctx context.Context) {
		ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		defer cancel()
		var o outcome
		defer func() {
			o.panic = recover()
			done <- o
		}()
		start := time.Now()
		o.nonZero, o.err = c.call(ctx)
		o.took = time.Since(start)
	}
	go func() {
		switch caller {
		case "goroutine":
			body(goroutineCtx(rt))
		case "goroutine-without-runtime":
			body(context.Background())
		case "task":
			_, _ = runtime.BlockOn(rt, func(ctx context.Context) (struct{}, error) {
				body(ctx)
				return struct{}{}, nil
			})
		}
	}()
	var o outcome
	select {
	case o = <-done:
	case <-time.After(20 * time.Second):
		t.Fatalf("%s did not return", c.name)
	}
	if o.panic != nil {
		t.Errorf("%s panicked: %v", c.name, o.panic)
		return
	}
	if o.nonZero != "" {
		t.Errorf("%s returned %s", c.name, o.nonZero)
	}
	if o.took > 2*time.Second {
		t.Errorf("%s took %v", c.name, o.took)
	}
	if c.kind == noErr {
		return
	}
	if !errors.Is(o.err, os.ErrInvalid) || !errors.Is(o.err, fs.ErrInvalid) {
		t.Errorf("%s = %v, want an error wrapping os.ErrInvalid", c.name, o.err)
		return
	}
	var pe *fs.PathError
	var oe *net.OpError
	switch {
	case c.kind == pathErr && !errors.As(o.err, &pe):
		t.Errorf("%s = %#v, want a *fs.PathError", c.name, o.err)
	case c.kind == opErr && !errors.As(o.err, &oe):
		t.Errorf("%s = %#v, want a *net.OpError", c.name, o.err)
	case c.kind == bareErr && o.err != os.ErrInvalid:
		t.Errorf("%s = %#v, want os.ErrInvalid itself", c.name, o.err)
	}
}
