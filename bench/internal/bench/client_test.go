package bench

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"sync"
	"testing"
	"time"
)

// serveEcho runs an echo server on loopback whose echo passes through
// mangle, until the test ends.
func serveEcho(t *testing.T, mangle func(b []byte)) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	t.Cleanup(func() { l.Close(); wg.Wait() })
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			wg.Go(func() {
				defer c.Close()
				buf := make([]byte, 64)
				for {
					if _, err := io.ReadFull(c, buf); err != nil {
						return
					}
					mangle(buf)
					if _, err := c.Write(buf); err != nil {
						return
					}
				}
			})
		}
	})
	return l.Addr().String()
}

func TestRunClient(t *testing.T) {
	s := tinySizes()
	addr := serveEcho(t, func([]byte) {})
	r, err := RunClient(context.Background(), addr, s, nil, nil)
	if err != nil {
		t.Fatal(err)
	}
	if r.Conns != s.Conns || r.Trips != s.Trips || r.RoundTrips != int64(s.Conns*s.Trips) || r.Nanos <= 0 ||
		r.P50Nanos <= 0 || r.P50Nanos > r.P99Nanos || r.P99Nanos > r.MaxNanos {
		t.Errorf("report %+v", r)
	}
}

// ready is called before the first timed round trip and done after the
// last; an error from ready ends the client before the timed part.
func TestRunClientReadyDone(t *testing.T) {
	s := tinySizes()
	var trips sync.Mutex
	echoed := 0
	addr := serveEcho(t, func([]byte) { trips.Lock(); echoed++; trips.Unlock() })
	var atReady, atDone int
	count := func() int { trips.Lock(); defer trips.Unlock(); return echoed }
	r, err := RunClient(context.Background(), addr, s,
		func() error { atReady = count(); return nil },
		func() error { atDone = count(); return nil })
	if err != nil {
		t.Fatal(err)
	}
	if atReady != s.Conns || atDone != s.Conns+int(r.RoundTrips) {
		t.Errorf("echoes at ready %d, at done %d; want %d and %d", atReady, atDone, s.Conns, s.Conns+int(r.RoundTrips))
	}
	stop := errors.New("no go")
	if _, err := RunClient(context.Background(), addr, s, func() error { return stop }, nil); !errors.Is(err, stop) {
		t.Errorf("ready failing: %v", err)
	}
	if _, err := RunClient(context.Background(), addr, s, nil, func() error { return stop }); !errors.Is(err, stop) {
		t.Errorf("done failing: %v", err)
	}
}

// A server that changes one byte fails the client's check.
func TestRunClientCatchesBadEcho(t *testing.T) {
	var n sync.Mutex
	count := 0
	addr := serveEcho(t, func(b []byte) {
		n.Lock()
		defer n.Unlock()
		if count++; count == 37 {
			b[40] ^= 1
		}
	})
	if _, err := RunClient(context.Background(), addr, tinySizes(), nil, nil); !errors.Is(err, ErrValidation) {
		t.Errorf("error %v, want ErrValidation", err)
	}
}

func TestRunClientRefusesOtherHosts(t *testing.T) {
	for _, addr := range []string{"192.0.2.1:7", "example.com:7", "[2001:db8::1]:7"} {
		if _, err := RunClient(context.Background(), addr, tinySizes(), nil, nil); !errors.Is(err, ErrNotLoopback) {
			t.Errorf("%s: %v, want ErrNotLoopback", addr, err)
		}
	}
	if _, err := RunClient(context.Background(), "no port", tinySizes(), nil, nil); err == nil {
		t.Error("address without a port accepted")
	}
}

// A cancelled context ends a client whose server never answers.
func TestRunClientCancel(t *testing.T) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, err := RunClient(ctx, l.Addr().String(), tinySizes(), nil, nil); err == nil {
		t.Error("client against a mute server succeeded")
	}
}

func TestMainClientFailure(t *testing.T) {
	var out, errOut strings.Builder
	code := Main([]string{"-client", "192.0.2.1:7", "-sizes", sizesArg(t, tinySizes())}, &out, &errOut)
	if code != 1 || out.Len() != 0 || !strings.Contains(errOut.String(), "loopback") {
		t.Errorf("code %d, stdout %q, stderr %q", code, out.String(), errOut.String())
	}
}

func TestParseChildResult(t *testing.T) {
	good := `{"workload":"W6d-file-read-direct","impl":"faio","workers":2,"ops":10,"ns_per_op":1,"secs":0.00001,"threads":5,"gomaxprocs":2}`
	if r, err := parseChildResult([]byte(good+"\n"), Faio); err != nil || r.Threads != 5 || r.Ops != 10 {
		t.Errorf("good line: %+v, %v", r, err)
	}
	for name, out := range map[string]string{
		"nothing":    "",
		"two lines":  good + "\n" + good + "\n",
		"not JSON":   "oops\n",
		"other impl": good,
	} {
		impl := Faio
		if name == "other impl" {
			impl = Goroutines
		}
		if _, err := parseChildResult([]byte(out), impl); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}
