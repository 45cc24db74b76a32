package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/faio-go/faio"
)

// W7: an echo server on 127.0.0.1, one task (or goroutine) per connection
// writing back whatever it reads, measured by the client process (see
// RunClient). The server counts the connections it served and the bytes it
// echoed, which must match what the client sent; the client checks the
// bytes themselves.

// echoBuffer is the read size of the servers: a whole message, whatever
// the message size, arrives in one read when it is there.
const echoBuffer = 4096

// echoTotals is what a server served.
type echoTotals struct {
	conns int64
	bytes int64
}

func echoFaio(env *Env) (Measurement, error) {
	var report ClientReport
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
		report, cerr = runClient(env, l.Addr().String())
		lerr := l.Close(bg)
		var serr error
		totals, serr = server.Join(bg)
		return errors.Join(cerr, lerr, serr)
	})
	if err != nil {
		return Measurement{}, err
	}
	return echoResult(env.Sizes, report, totals)
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

func echoGoroutines(env *Env) (Measurement, error) {
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
				n, err := echoConnGo(c)
				echoed.Add(n)
				errs.set(err)
			})
		}
	})
	report, cerr := runClient(env, l.Addr().String())
	lerr := l.Close()
	wg.Wait()
	if err := errors.Join(cerr, lerr, errs.get()); err != nil {
		return Measurement{}, err
	}
	return echoResult(env.Sizes, report, echoTotals{conns: conns.Load(), bytes: echoed.Load()})
}

func echoConnGo(c net.Conn) (int64, error) {
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

// runClient runs the W7 client process against addr and returns its
// report.
func runClient(env *Env, addr string) (ClientReport, error) {
	return clientProcess(env, "W7 client", "-client", addr)
}

// clientProcess runs a client process (what: "W7 client") with args and
// env's sizes, and returns the report it prints.
func clientProcess(env *Env, what string, args ...string) (ClientReport, error) {
	sizes, err := json.Marshal(env.Sizes)
	if err != nil {
		return ClientReport{}, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), childTimeout)
	defer cancel()
	cmd, err := env.start(ctx, append(args, "-sizes", string(sizes))...)
	if err != nil {
		return ClientReport{}, err
	}
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, env.Log
	if err := cmd.Run(); err != nil {
		return ClientReport{}, fmt.Errorf("bench: %s process: %w", what, err)
	}
	var r ClientReport
	if err := json.Unmarshal(out.Bytes(), &r); err != nil {
		return ClientReport{}, fmt.Errorf("bench: %s printed %q: %w", what, out.Bytes(), err)
	}
	return r, nil
}

// echoResult checks the client's report and the server's totals against
// the sizes: every connection served, every timed round trip done, every
// byte (the warm-up trips included) echoed once.
func echoResult(s Sizes, r ClientReport, t echoTotals) (Measurement, error) {
	trips := int64(s.Conns) * int64(s.Trips)
	err := errors.Join(
		checkEqual("client round trips", r.RoundTrips, trips),
		checkEqual("connections served", t.conns, int64(s.Conns)),
		checkEqual("bytes echoed", t.bytes, (trips+int64(s.Conns))*int64(s.MsgSize)),
	)
	if err != nil {
		return Measurement{}, err
	}
	return Measurement{
		Ops:        r.RoundTrips,
		Elapsed:    time.Duration(r.Nanos),
		HasLatency: true,
		P50:        time.Duration(r.P50Nanos),
		P99:        time.Duration(r.P99Nanos),
		Max:        time.Duration(r.MaxNanos),
	}, nil
}
