package main

import (
	"encoding/binary"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// A thread is one OS thread of an io_uring or epoll server: a loop over its
// own ring or epoll instance. Thread 0 has the listener and the client's
// stdout; with two threads it hands every other connection it accepts to
// thread 1 through a pipe, which thread 1 watches in its loop.
type thread interface {
	// readClient makes thread 0 read the client's stdout (the handshake
	// and the report) from now on.
	readClient() error
	// loop serves until no more connections can come (the client's stdout
	// or the hand-off pipe is at its end) and every connection it had has
	// closed, or until the first error, or until the trial ends.
	loop() error
	// shutdown releases what the thread has, after the loop; the kernel
	// holds none of its memory afterwards.
	shutdown() error
	// counts returns the connections the thread accepted and the bytes it
	// echoed.
	counts() (accepted, echoed int64)
	// enterCounter counts the thread's io_uring_enter or epoll_wait calls.
	enterCounter() *atomic.Int64
}

// newThreadFunc creates thread id (0 or 1) of a server for trial t, on the
// calling OS thread. Thread 0 gets the listener lfd and the write end of
// the hand-off pipe (-1 with one thread), thread 1 the read end (and lfd
// -1). The caller keeps ownership of the descriptors.
type newThreadFunc func(t *trial, id, lfd, handOff int) (thread, error)

// serveThreads runs a server of threads (1 or 2) threads made by newThread,
// each a goroutine locked to its OS thread, thread 0 being the caller's.
func serveThreads(t *trial, threads int, nonblockListener bool, newThread newThreadFunc) (served, error) {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	lfd, port, err := listen4(nonblockListener)
	if err != nil {
		return served{}, err
	}
	defer unix.Close(lfd)
	handR, handW := -1, -1
	if threads > 1 {
		var p [2]int
		if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
			return served{}, fmt.Errorf("hand-off pipe: %w", err)
		}
		handR, handW = p[0], p[1]
		defer unix.Close(handR)
	}
	closeHandW := func() {
		if handW >= 0 {
			unix.Close(handW)
			handW = -1
		}
	}
	defer closeHandW()

	th0, err := newThread(t, 0, lfd, handW)
	if err != nil {
		return served{}, err
	}
	t.addEnters(th0.enterCounter())
	var th1 thread
	var th1Err error
	var wg sync.WaitGroup
	if threads > 1 {
		started := make(chan error, 1)
		wg.Go(func() {
			runtime.LockOSThread()
			defer runtime.UnlockOSThread()
			th, err := newThread(t, 1, -1, handR)
			if err != nil {
				started <- err
				return
			}
			th1 = th
			started <- nil
			err = th.loop()
			if err != nil {
				t.fail(err) // ends thread 0's loop and the client
			}
			th1Err = errors.Join(err, th.shutdown())
		})
		if err := <-started; err != nil {
			wg.Wait()
			return served{}, errors.Join(err, th0.shutdown())
		}
		t.addEnters(th1.enterCounter())
	}

	err = t.startClient(port)
	if err == nil {
		err = th0.readClient()
	}
	if err == nil {
		err = th0.loop()
	}
	if err != nil {
		t.fail(err) // ends thread 1's loop and the client
	}
	closeHandW() // thread 1 gets no more connections
	err = errors.Join(err, th0.shutdown())
	wg.Wait()
	err = errors.Join(err, th1Err)

	var s served
	s.conns, s.bytes = th0.counts()
	if th1 != nil {
		_, b := th1.counts()
		s.bytes += b
	}
	return s, err
}

// listen4 opens a TCP listener on 127.0.0.1, any port.
func listen4(nonblock bool) (fd, port int, err error) {
	ty := unix.SOCK_STREAM | unix.SOCK_CLOEXEC
	if nonblock {
		ty |= unix.SOCK_NONBLOCK
	}
	fd, err = unix.Socket(unix.AF_INET, ty, 0)
	if err != nil {
		return -1, 0, fmt.Errorf("socket: %w", err)
	}
	sa, err := bindListen(fd)
	if err != nil {
		unix.Close(fd)
		return -1, 0, err
	}
	return fd, sa.Port, nil
}

func bindListen(fd int) (*unix.SockaddrInet4, error) {
	if err := unix.Bind(fd, &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		return nil, fmt.Errorf("bind: %w", err)
	}
	if err := unix.Listen(fd, 1024); err != nil {
		return nil, fmt.Errorf("listen: %w", err)
	}
	sa, err := unix.Getsockname(fd)
	if err != nil {
		return nil, fmt.Errorf("getsockname: %w", err)
	}
	sa4, ok := sa.(*unix.SockaddrInet4)
	if !ok {
		return nil, fmt.Errorf("getsockname: %T, want an IPv4 address", sa)
	}
	return sa4, nil
}

// setNoDelay sets TCP_NODELAY on an accepted connection, as Go's net does.
func setNoDelay(fd int) error {
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1); err != nil {
		return fmt.Errorf("setsockopt TCP_NODELAY: %w", err)
	}
	return nil
}

// handOff gives connection fd to thread 1 through the hand-off pipe: a
// 4-byte write, atomic on a pipe. On failure fd is closed.
func handOff(w, fd int) error {
	var b [4]byte
	binary.LittleEndian.PutUint32(b[:], uint32(fd))
	if _, err := unix.Write(w, b[:]); err != nil {
		unix.Close(fd)
		return fmt.Errorf("hand-off pipe write: %w", err)
	}
	return nil
}

// takeFds appends b, read from the hand-off pipe, to *acc and returns the
// whole descriptors it now holds.
func takeFds(acc *[]byte, b []byte) []int {
	*acc = append(*acc, b...)
	var fds []int
	for len(*acc) >= 4 {
		fds = append(fds, int(binary.LittleEndian.Uint32(*acc)))
		*acc = (*acc)[4:]
	}
	return fds
}

// echoReady echoes what non-blocking socket fd has to read, with read(2)
// into buf and write(2) of what it read, until read says EAGAIN or, with
// stopShort, until a read returns less than buf holds (enough under edge
// triggering: data that arrives later raises a new event). eof says the
// peer has shut down.
func echoReady(fd int, buf []byte, stopShort bool) (echoed int64, eof bool, err error) {
	for {
		n, err := unix.Read(fd, buf)
		switch {
		case err == unix.EINTR:
			continue
		case err == unix.EAGAIN:
			return echoed, false, nil
		case err != nil:
			return echoed, false, fmt.Errorf("read: %w", err)
		case n == 0:
			return echoed, true, nil
		}
		for b := buf[:n]; len(b) > 0; {
			m, err := unix.Write(fd, b)
			switch {
			case err == unix.EINTR:
				continue
			case err == unix.EAGAIN:
				// The client has at most one message in flight per
				// connection: the socket buffer cannot be full.
				return echoed, false, errors.New("write: socket buffer full (EAGAIN)")
			case err != nil:
				return echoed, false, fmt.Errorf("write: %w", err)
			}
			b = b[m:]
		}
		echoed += int64(n)
		if stopShort && n < len(buf) {
			return echoed, false, nil
		}
	}
}
