package uring

import (
	"bytes"
	"errors"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// Accept, connect, send, recv and shutdown, all through the ring, over
// 127.0.0.1.
func TestTCP(t *testing.T) {
	needRing(t)
	r := newRing(t, 8, nil)
	lfd, addr := listenTCP(t)
	cfd := tcpSocket(t)

	var peer RawSockaddrAny
	peerLen := uint32(unix.SizeofSockaddrAny)
	s := getSQE(t, r)
	s.PrepAccept(lfd, &peer, &peerLen, unix.SOCK_CLOEXEC)
	s.SetUserData(1)
	var dst RawSockaddrAny
	dstLen, err := SockaddrFromAddrPort(addr, &dst)
	if err != nil {
		t.Fatal(err)
	}
	s = getSQE(t, r)
	s.PrepConnect(cfd, &dst, dstLen)
	s.SetUserData(2)
	submit(t, r)
	got := reapN(t, r, 2)
	if err := got[2].Err(); err != nil {
		t.Fatalf("connect: %v", err)
	}
	if got[1].Res < 0 {
		t.Fatalf("accept: %v", got[1].Err())
	}
	sfd := int(got[1].Res)
	t.Cleanup(func() { unix.Close(sfd) })
	from, err := AddrPortFromSockaddr(&peer, peerLen)
	if err != nil || from.Addr() != loopback || from.Port() == 0 {
		t.Errorf("accepted peer %v, %v", from, err)
	}
	local, _ := unix.Getsockname(cfd)
	if p := local.(*unix.SockaddrInet4).Port; int(from.Port()) != p {
		t.Errorf("peer port %d, client bound to %d", from.Port(), p)
	}

	msg := []byte("ping over io_uring")
	buf := make([]byte, 64)
	s = getSQE(t, r)
	s.PrepRecv(sfd, buf, 0)
	s.SetUserData(3)
	s = getSQE(t, r)
	s.PrepSend(cfd, msg, unix.MSG_NOSIGNAL)
	s.SetUserData(4)
	submit(t, r)
	got = reapN(t, r, 2)
	if int(got[4].Res) != len(msg) {
		t.Fatalf("send: res %d err %v", got[4].Res, got[4].Err())
	}
	if !bytes.Equal(buf[:got[3].Res], msg) {
		t.Fatalf("recv: res %d %q", got[3].Res, buf[:max(got[3].Res, 0)])
	}

	// After the client shuts down its write side the server reads EOF.
	s = getSQE(t, r)
	s.PrepShutdown(cfd, unix.SHUT_WR)
	s.SetUserData(5)
	s.SetFlags(SQELink) // the recv below starts only after the shutdown
	s = getSQE(t, r)
	s.PrepRecv(sfd, buf, 0)
	s.SetUserData(6)
	submit(t, r)
	got = reapN(t, r, 2)
	if got[5].Err() != nil || got[6].Res != 0 {
		t.Fatalf("shutdown: %v; recv after shutdown: res %d", got[5].Err(), got[6].Res)
	}

	// The server closes; sending to a reset connection eventually fails with
	// EPIPE or ECONNRESET, as a wrapped errno.
	unix.SetsockoptLinger(sfd, unix.SOL_SOCKET, unix.SO_LINGER, &unix.Linger{Onoff: 1, Linger: 0})
	unix.Close(sfd)
	var sendErr error
	for i := 0; i < 10 && sendErr == nil; i++ {
		getSQE(t, r).PrepSend(cfd, msg, unix.MSG_NOSIGNAL)
		sendErr = reapOne(t, r, 0).Err()
	}
	if !errors.Is(sendErr, syscall.ECONNRESET) && !errors.Is(sendErr, syscall.EPIPE) {
		t.Errorf("send after peer reset: %v, want ECONNRESET or EPIPE", sendErr)
	}
}

func TestConnectRefused(t *testing.T) {
	needRing(t)
	r := newRing(t, 4, nil)
	lfd, addr := listenTCP(t)
	unix.Close(lfd) // nothing listens on addr any more
	cfd := tcpSocket(t)
	var sa RawSockaddrAny
	n, _ := SockaddrFromAddrPort(addr, &sa)
	getSQE(t, r).PrepConnect(cfd, &sa, n)
	if err := reapOne(t, r, 0).Err(); !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("connect to a closed port: %v, want ECONNREFUSED", err)
	}
}

func TestAcceptMultishot(t *testing.T) {
	needRing(t)
	r := newRing(t, 8, nil)
	lfd, addr := listenTCP(t)
	s := getSQE(t, r)
	s.PrepAcceptMultishot(lfd, nil, nil, unix.SOCK_CLOEXEC)
	s.SetUserData(42)
	submit(t, r)

	const conns = 4
	var sa RawSockaddrAny
	n, _ := SockaddrFromAddrPort(addr, &sa)
	for i := range conns {
		s := getSQE(t, r)
		s.PrepConnect(tcpSocket(t), &sa, n)
		s.SetUserData(uint64(i))
	}
	submit(t, r)
	accepted, connected := map[int32]bool{}, 0
	for len(accepted) < conns || connected < conns {
		c := nextCQE(t, r)
		switch {
		case c.UserData == 42:
			if c.Res < 0 || !c.More() {
				t.Fatalf("multishot accept: res %d, more %v", c.Res, c.More())
			}
			if accepted[c.Res] {
				t.Fatalf("descriptor %d accepted twice", c.Res)
			}
			accepted[c.Res] = true
			unix.Close(int(c.Res))
		case c.Err() != nil:
			t.Fatalf("connect %d: %v", c.UserData, c.Err())
		default:
			connected++
		}
	}

	// Cancelling ends the multishot request with a final CQE without More.
	s = getSQE(t, r)
	s.PrepAsyncCancel(42, 0)
	s.SetUserData(43)
	got := reapN(t, r, 2)
	if got[43].Err() != nil || !errors.Is(got[42].Err(), syscall.ECANCELED) || got[42].More() {
		t.Errorf("cancel multishot accept: cancel %v, accept %+v", got[43].Err(), got[42])
	}
}

func TestRecvMultishotProvidedBuffers(t *testing.T) {
	needRing(t)
	r := newRing(t, 8, nil)
	client, server := tcpPair(t)
	const size, count, group = 16, 4, 7
	pool := make([]byte, size*count)
	s := getSQE(t, r)
	s.PrepProvideBuffers(pool, size, group, 0)
	if c := reapOne(t, r, 0); c.Err() != nil {
		t.Fatalf("provide buffers: %v", c.Err())
	}
	s = getSQE(t, r)
	s.PrepRecvMultishot(server, group, 0)
	s.SetUserData(9)
	submit(t, r)

	var received []byte
	used := map[uint16]bool{}
	for _, msg := range []string{"first", "second", "third"} {
		if _, err := unix.Write(client, []byte(msg)); err != nil {
			t.Fatal(err)
		}
		c := reapOne(t, r, 9)
		id, ok := c.BufferID()
		if c.Res <= 0 || !ok || !c.More() || id >= count || used[id] {
			t.Fatalf("multishot recv: res %d, buffer %d %v, more %v", c.Res, id, ok, c.More())
		}
		used[id] = true
		received = append(received, pool[int(id)*size:int(id)*size+int(c.Res)]...)
	}
	if string(received) != "firstsecondthird" {
		t.Errorf("received %q", received)
	}
	// The peer closing ends the request: a final CQE without More.
	unix.Shutdown(client, unix.SHUT_WR)
	if c := reapOne(t, r, 9); c.Res != 0 || c.More() {
		t.Errorf("recv at end of stream: res %d, more %v", c.Res, c.More())
	}
	getSQE(t, r).PrepRemoveBuffers(count, group)
	if c := reapOne(t, r, 0); c.Res != count-3 {
		t.Errorf("removed %d buffers, want %d unused", c.Res, count-3)
	}
}
