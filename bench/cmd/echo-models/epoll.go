package main

import (
	"fmt"
	"sync/atomic"

	"golang.org/x/sys/unix"
)

// epollConfig is what sets the epoll variants apart (see variants.go).
type epollConfig struct {
	threads   int  // threads, each with its own epoll instance: 1 or 2
	stopShort bool // stop reading at a short read rather than at EAGAIN
}

// connEvents are the events of a connection: edge-triggered.
const connEvents = unix.EPOLLIN | unix.EPOLLRDHUP | unix.EPOLLET

// An epollThread is one thread of an epoll server. Thread 0's listener
// and pipes are level-triggered.
type epollThread struct {
	cfg  *epollConfig
	t    *trial
	id   int
	epfd int

	lfd      int    // thread 0: the listener (-1 on thread 1)
	handOff  int    // thread 0: write end of the hand-off pipe (-1 if none); thread 1: read end
	handAcc  []byte // thread 1: a partial descriptor from the hand-off pipe
	in       int    // the pipe thread 0 reads the client's stdout from, or thread 1 the hand-off pipe
	accepted int64  // thread 0: connections accepted
	inEOF    bool   // no more connections: the pipe in has ended

	conns   map[int]bool // open connections
	buf     []byte       // connections' read(2) buffer
	pipeBuf []byte
	events  []unix.EpollEvent

	enters atomic.Int64
	echoed int64
}

// epollThreads returns the newThreadFunc of epoll variant cfg.
func epollThreads(cfg *epollConfig) newThreadFunc {
	return func(t *trial, id, lfd, handOff int) (thread, error) {
		epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
		if err != nil {
			return nil, fmt.Errorf("thread %d: epoll_create1: %w", id, err)
		}
		th := &epollThread{
			cfg: cfg, t: t, id: id, epfd: epfd, lfd: lfd, handOff: handOff, in: -1,
			conns: map[int]bool{}, buf: make([]byte, bufSize), pipeBuf: make([]byte, pipeBufSize),
			events: make([]unix.EpollEvent, batchSize),
		}
		err = th.add(t.abort, unix.EPOLLIN)
		if err == nil && id == 0 {
			err = th.add(lfd, unix.EPOLLIN)
		}
		if err == nil && id == 1 {
			th.in = handOff
			err = th.add(handOff, unix.EPOLLIN)
		}
		if err != nil {
			unix.Close(epfd)
			return nil, fmt.Errorf("thread %d: %w", id, err)
		}
		return th, nil
	}
}

func (th *epollThread) add(fd int, events uint32) error {
	ev := unix.EpollEvent{Events: events, Fd: int32(fd)}
	if err := unix.EpollCtl(th.epfd, unix.EPOLL_CTL_ADD, fd, &ev); err != nil {
		return fmt.Errorf("epoll_ctl add %d: %w", fd, err)
	}
	return nil
}

func (th *epollThread) readClient() error {
	th.in = th.t.stdout
	return th.add(th.in, unix.EPOLLIN)
}

func (th *epollThread) counts() (int64, int64) { return th.accepted, th.echoed }

func (th *epollThread) enterCounter() *atomic.Int64 { return &th.enters }

func (th *epollThread) loop() error {
	for !th.inEOF || len(th.conns) > 0 {
		n, err := unix.EpollWait(th.epfd, th.events, -1)
		if err == unix.EINTR {
			continue
		}
		if err != nil {
			return fmt.Errorf("epoll_wait: %w", err)
		}
		th.enters.Add(1)
		for _, ev := range th.events[:n] {
			if err := th.handle(int(ev.Fd)); err != nil {
				return err
			}
		}
	}
	return nil
}

func (th *epollThread) handle(fd int) error {
	switch fd {
	case th.t.abort:
		return th.t.aborted()
	case th.lfd:
		return th.acceptAll()
	case th.in:
		return th.readIn()
	}
	n, eof, err := echoReady(fd, th.buf, th.cfg.stopShort)
	th.echoed += n
	if err != nil {
		return fmt.Errorf("connection fd %d: %w", fd, err)
	}
	if eof {
		unix.Close(fd) // which takes it out of the epoll set
		delete(th.conns, fd)
	}
	return nil
}

// readIn reads the client's stdout (thread 0) or the hand-off pipe
// (thread 1).
func (th *epollThread) readIn() error {
	n, err := unix.Read(th.in, th.pipeBuf)
	switch {
	case err == unix.EINTR || err == unix.EAGAIN:
		return nil
	case err != nil:
		return fmt.Errorf("pipe read: %w", err)
	case n == 0:
		th.inEOF = true
		if err := unix.EpollCtl(th.epfd, unix.EPOLL_CTL_DEL, th.in, nil); err != nil {
			return fmt.Errorf("epoll_ctl del %d: %w", th.in, err)
		}
		return nil
	case th.id == 0:
		return th.t.clientLines(th.pipeBuf[:n])
	}
	for _, fd := range takeFds(&th.handAcc, th.pipeBuf[:n]) {
		if err := th.addConn(fd); err != nil {
			return err
		}
	}
	return nil
}

// acceptAll accepts the connections waiting: thread 0 keeps the odd ones
// and, with two threads, hands the even ones to thread 1.
func (th *epollThread) acceptAll() error {
	for {
		fd, _, err := unix.Accept4(th.lfd, unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC)
		switch err {
		case nil:
		case unix.EAGAIN:
			return nil
		case unix.EINTR, unix.ECONNABORTED:
			continue
		default:
			return fmt.Errorf("accept4: %w", err)
		}
		if err := setNoDelay(fd); err != nil {
			unix.Close(fd)
			return err
		}
		th.accepted++
		if th.handOff >= 0 && th.accepted%2 == 0 {
			err = handOff(th.handOff, fd)
		} else {
			err = th.addConn(fd)
		}
		if err != nil {
			return err
		}
	}
}

func (th *epollThread) addConn(fd int) error {
	th.conns[fd] = true
	return th.add(fd, connEvents)
}

func (th *epollThread) shutdown() error {
	for fd := range th.conns {
		unix.Close(fd)
	}
	if err := unix.Close(th.epfd); err != nil {
		return fmt.Errorf("closing the epoll instance: %w", err)
	}
	return nil
}
