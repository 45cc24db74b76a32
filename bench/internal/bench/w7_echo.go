package bench

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/faio-go/faio"
)

// W7: an echo server on 127.0.0.1, one task (or goroutine) per connection
// writing back whatever it reads, measured by the client process (see
// RunClient). The server counts the connections it served and the bytes it
// echoed, which must match what the client sent; the client checks the
// bytes themselves. The server's CPU time during the client's timed part
// is measured too: the client is another process, so this process's CPU
// is the server's. W7c is the same with ManyConns connections.

// echoBuffer is the read size of the servers: a whole message, whatever
// the message size, arrives in one read when it is there.
const echoBuffer = 4096

// echoTotals is what a server served.
type echoTotals struct {
	conns int64
	bytes int64
}

func echoFaio(env *Env) (Measurement, error) { return echoServerFaio(env, env.Sizes) }

func echoGoroutines(env *Env) (Measurement, error) { return echoServerGoroutines(env, env.Sizes) }

// W7c: W7 with ManyConns connections doing ManyTrips round trips each.
func echoManyFaio(env *Env) (Measurement, error) { return echoServerFaio(env, env.Sizes.manyConns()) }

func echoManyGoroutines(env *Env) (Measurement, error) {
	return echoServerGoroutines(env, env.Sizes.manyConns())
}

// echoServerFaio runs the faio echo server against a client process with
// sizes s (Conns connections of Trips round trips).
func echoServerFaio(env *Env, s Sizes) (Measurement, error) {
	if err := checkFileLimit(s.Conns); err != nil {
		return Measurement{}, err
	}
	var report ClientReport
	var cpu time.Duration
	var totals echoTotals
	err := withRuntime(env, func(rt *faio.Runtime) error {
		bg := context.Background()
		l, err := faio.Listen(faio.WithRuntime(bg, rt), "tcp", "127.0.0.1:0")
		if err != nil {
			return err
		}
		server := faio.SpawnOn(rt, func(ctx context.Context) (echoTotals, error) {
			var hs []*faio.JoinHandle[int64]
			var acceptErr error
			for {
				c, err := l.Accept(ctx)
				if err != nil {
					if !errors.Is(err, net.ErrClosed) {
						acceptErr = err
					}
					break
				}
				hs = append(hs, faio.Spawn(ctx, func(ctx context.Context) (int64, error) {
					return echoConnFaio(ctx, c)
				}))
			}
			t := echoTotals{conns: int64(len(hs))}
			errs := []error{acceptErr}
			for _, h := range hs {
				n, err := h.Join(ctx)
				t.bytes += n
				errs = append(errs, err)
			}
			return t, errors.Join(errs...)
		})
		var cerr error
		report, cpu, cerr = runClient(env, s, l.Addr().String())
		lerr := l.Close(bg)
		var serr error
		totals, serr = server.Join(bg)
		return errors.Join(cerr, lerr, serr)
	})
	if err != nil {
		return Measurement{}, err
	}
	return echoResult(s, report, totals, cpu)
}

func echoConnFaio(ctx context.Context, c *faio.Conn) (int64, error) {
	defer c.Close(ctx)
	buf := make([]byte, echoBuffer)
	var total int64
	for {
		n, err := c.Read(ctx, buf)
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
		if _, err := c.Write(ctx, buf[:n]); err != nil {
			return total, err
		}
		total += int64(n)
	}
}

// echoServerGoroutines runs the net echo server against a client process
// with sizes s.
func echoServerGoroutines(env *Env, s Sizes) (Measurement, error) {
	if err := checkFileLimit(s.Conns); err != nil {
		return Measurement{}, err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return Measurement{}, err
	}
	var conns, echoed atomic.Int64
	var errs firstError
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := l.Accept()
			if err != nil {
				if !errors.Is(err, net.ErrClosed) {
					errs.set(err)
				}
				return
			}
			conns.Add(1)
			wg.Go(func() {
				n, err := EchoConn(c)
				echoed.Add(n)
				errs.set(err)
			})
		}
	})
	report, cpu, cerr := runClient(env, s, l.Addr().String())
	lerr := l.Close()
	wg.Wait()
	if err := errors.Join(cerr, lerr, errs.get()); err != nil {
		return Measurement{}, err
	}
	return echoResult(s, report, echoTotals{conns: conns.Load(), bytes: echoed.Load()}, cpu)
}

// EchoConn is the goroutine server's connection handler (and that of
// echo-models' Go servers): it writes back whatever c reads, in reads of up
// to 4096 bytes, until the peer shuts down (nil) or an error, and closes c.
// It returns the bytes echoed.
func EchoConn(c net.Conn) (int64, error) {
	defer c.Close()
	buf := make([]byte, echoBuffer)
	var total int64
	for {
		n, err := c.Read(buf)
		if err == io.EOF {
			return total, nil
		}
		if err != nil {
			return total, err
		}
		if _, err := c.Write(buf[:n]); err != nil {
			return total, err
		}
		total += int64(n)
	}
}

// runClient runs the W7 client process with sizes s against addr and
// returns its report and the CPU time this process used during the
// client's timed part.
func runClient(env *Env, s Sizes, addr string) (ClientReport, time.Duration, error) {
	r, cpu, err := clientProcess(env, s, "W7 client", "-client", addr)
	if err == nil && cpu < 0 {
		err = fmt.Errorf("bench: the W7 client did not say when its timed part ran")
	}
	return r, cpu, err
}

// The lines of the handshake by which a client process lets its parent
// measure the parent's CPU time during the client's timed part: the client
// prints ClientReady once its connections are open and warmed up and
// waits for ClientGo on its stdin (or for the end of stdin), and prints
// ClientDone when its last round trip is over, before its report. The
// server is idle at both moments, so when the parent reads the lines does
// not change the CPU time between them.
const (
	ClientReady = "ready"
	ClientGo    = "go"
	ClientDone  = "done"
)

// clientProcess runs a client process (what: "W7 client") with args and
// sizes s, and returns the report it prints and, if the client printed
// ClientReady and ClientDone, the CPU time this process used between the
// two (-1 if it did not).
func clientProcess(env *Env, s Sizes, what string, args ...string) (ClientReport, time.Duration, error) {
	sizes, err := json.Marshal(s)
	if err != nil {
		return ClientReport{}, -1, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), childTimeout)
	defer cancel()
	cmd, err := env.start(ctx, append(args, "-sizes", string(sizes))...)
	if err != nil {
		return ClientReport{}, -1, err
	}
	cmd.Stderr = env.Log
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return ClientReport{}, -1, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return ClientReport{}, -1, err
	}
	if err := cmd.Start(); err != nil {
		return ClientReport{}, -1, fmt.Errorf("bench: %s process: %w", what, err)
	}
	var out bytes.Buffer
	var start, stop time.Duration
	var cpuErr error
	ready, done := false, false
	lines := bufio.NewReader(stdout)
	for {
		line, rerr := lines.ReadString('\n')
		switch strings.TrimSuffix(line, "\n") {
		case ClientReady:
			start, cpuErr = ProcessCPU()
			ready = true
			// A client that is gone says so when it is waited for.
			io.WriteString(stdin, ClientGo+"\n")
		case ClientDone:
			if stop, err = ProcessCPU(); err != nil {
				cpuErr = err
			}
			done = ready
		default:
			out.WriteString(line)
		}
		if rerr != nil {
			break
		}
	}
	stdin.Close()
	if err := cmd.Wait(); err != nil {
		return ClientReport{}, -1, fmt.Errorf("bench: %s process: %w", what, err)
	}
	if cpuErr != nil {
		return ClientReport{}, -1, cpuErr
	}
	var r ClientReport
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		return ClientReport{}, -1, fmt.Errorf("bench: %s printed %q: %w", what, out.Bytes(), err)
	}
	if !done {
		return r, -1, nil
	}
	return r, stop - start, nil
}

// echoResult checks the client's report and the server's totals against
// the sizes: every connection served, every timed round trip done, every
// byte (the warm-up trips included) echoed once. cpu is the server's CPU
// time during the timed part.
func echoResult(s Sizes, r ClientReport, t echoTotals, cpu time.Duration) (Measurement, error) {
	trips := int64(s.Conns) * int64(s.Trips)
	err := errors.Join(
		checkEqual("client round trips", r.RoundTrips, trips),
		checkEqual("connections served", t.conns, int64(s.Conns)),
		checkEqual("bytes echoed", t.bytes, (trips+int64(s.Conns))*int64(s.MsgSize)),
	)
	if err != nil {
		return Measurement{}, err
	}
	m := r.measurement()
	m.HasCPU, m.ServerCPU = true, cpu
	return m, nil
}

// measurement is what a client process measured: its timed round trips,
// their wall time and latency.
func (r ClientReport) measurement() Measurement {
	return Measurement{
		Ops:        r.RoundTrips,
		Elapsed:    time.Duration(r.Nanos),
		HasLatency: true,
		P50:        time.Duration(r.P50Nanos),
		P99:        time.Duration(r.P99Nanos),
		Max:        time.Duration(r.MaxNanos),
	}
}
