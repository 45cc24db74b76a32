package uring

import (
	"bytes"
	"errors"
	"syscall"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A zero-copy send posts its byte count with More set and then, once the
// kernel has let go of the buffer, a notification with the same user data;
// the peer receives the bytes. A failed one posts its error, and a
// notification after it when that CQE says More.
func TestSendZC(t *testing.T) {
	needRing(t)
	r := newRing(t, 8, nil)
	if p, err := r.Probe(); err != nil || !p.Supported(OpSendZC) {
		t.Skipf("IORING_OP_SEND_ZC unsupported (%v)", err)
	}
	client, server := tcpPair(t)
	msg := bytes.Repeat([]byte("zero-copy "), 10000)
	s := getSQE(t, r)
	s.PrepSendZC(client, msg, unix.MSG_NOSIGNAL, SendZCReportUsage)
	s.SetUserData(7)
	submit(t, r)
	var first, notif *CQE
	for deadline := time.Now().Add(5 * time.Second); notif == nil; {
		c, err := r.WaitCQE(time.Until(deadline))
		if err != nil {
			t.Fatalf("WaitCQE: %v (first %+v)", err, first)
		}
		cc := *c
		r.CQESeen(c)
		if cc.UserData != 7 {
			t.Fatalf("CQE %+v", cc)
		}
		if first == nil {
			first = &cc
			if first.Res != int32(len(msg)) || !first.More() || first.Flags&CQEFNotif != 0 {
				t.Fatalf("first CQE %+v, want Res %d with More", cc, len(msg))
			}
			continue
		}
		notif = &cc
	}
	if notif.Flags&CQEFNotif == 0 || notif.More() || (notif.Res != 0 && notif.Res != NotifUsageZCCopied) {
		t.Fatalf("notification %+v", *notif)
	}
	got := make([]byte, len(msg))
	for n := 0; n < len(got); {
		k, err := unix.Read(server, got[n:])
		if err != nil {
			t.Fatal(err)
		}
		n += k
	}
	if !bytes.Equal(got, msg) {
		t.Fatal("peer received other bytes")
	}

	// A send on a socket that is not connected fails, with a notification
	// after it if its CQE says More.
	fd, err := unix.Socket(unix.AF_INET, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	defer unix.Close(fd)
	s = getSQE(t, r)
	s.PrepSendZC(fd, msg[:10], unix.MSG_NOSIGNAL, 0)
	s.SetUserData(8)
	submit(t, r)
	c, err := r.WaitCQE(5 * time.Second)
	if err != nil {
		t.Fatal(err)
	}
	cc := *c
	r.CQESeen(c)
	if cc.UserData != 8 || !errors.Is(cc.Err(), syscall.EPIPE) && !errors.Is(cc.Err(), syscall.ENOTCONN) {
		t.Fatalf("send on an unconnected socket: %+v (%v)", cc, cc.Err())
	}
	if cc.More() {
		// The kernel may still announce a notification: it must come.
		c, err := r.WaitCQE(5 * time.Second)
		if err != nil {
			t.Fatalf("no notification after a failed send with More: %v", err)
		}
		if c.UserData != 8 || c.Flags&CQEFNotif == 0 || c.More() {
			t.Fatalf("notification %+v", *c)
		}
		r.CQESeen(c)
	}
}
