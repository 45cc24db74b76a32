//go:build linux

package faio_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math/rand/v2"
	"net"
	"net/http"
	"net/netip"
	"os"
	"path/filepath"
	goruntime "runtime"
	"runtime/pprof"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"testing"
	"time"
	"unsafe"

	"go.uber.org/goleak"

	"github.com/faio-go/faio"
	"github.com/faio-go/faio/modules/faiohttp"
)

// Chaos: in each round a runtime of two workers runs a random mix of
// everything at once (TCP echo, UDP, files, sleeps and timeouts, channels,
// locks, Spawn/Join trees with cancellation, plain goroutines using faio
// primitives and I/O), and is closed at a random moment, sometimes while
// trees are cancelled or goroutines spawn on it. After every round:
//
//   - Close returned (within chaosBound);
//   - every call made, in tasks and goroutines, returned (within
//     chaosBound once the goroutines' context is cancelled), and no
//     goroutine is left (goleak);
//   - nothing panicked, every error is one of the documented kinds
//     (chaosExpected) and the data came back intact;
//   - no descriptor is left open.
//
// FAIO_CHAOS_SEED replays a run (the mix and the delays, not the
// interleaving); FAIO_CHAOS_ROUNDS sets the rounds per mode (default 30,
// 6 with -short). The modes are the default backend, pinned workers
// (FAIO_PINNED=1) and the portable backend (FAIO_BACKEND=portable).
func TestChaosCloseAtAnyMoment(t *testing.T) {
	seed := uint64(time.Now().UnixNano())
	if s := os.Getenv("FAIO_CHAOS_SEED"); s != "" {
		var err error
		if seed, err = strconv.ParseUint(s, 10, 64); err != nil {
			t.Fatalf("FAIO_CHAOS_SEED: %v", err)
		}
	}
	rounds := 30
	if testing.Short() {
		rounds = 6
	}
	if s := os.Getenv("FAIO_CHAOS_ROUNDS"); s != "" {
		var err error
		if rounds, err = strconv.Atoi(s); err != nil {
			t.Fatalf("FAIO_CHAOS_ROUNDS: %v", err)
		}
	}
	t.Logf("FAIO_CHAOS_SEED=%d FAIO_CHAOS_ROUNDS=%d", seed, rounds)
	// Package net opens its poller's descriptors on first use: do that
	// before counting.
	if l, err := net.Listen("tcp", "127.0.0.1:0"); err == nil {
		l.Close()
	}
	modes := []struct{ name, env, value string }{
		{"default", "", ""},
		{"pinned", faio.EnvPinned, "1"},
		{"portable", "FAIO_BACKEND", "portable"},
	}
	for m, mode := range modes {
		t.Run(mode.name, func(t *testing.T) {
			if mode.env != "" {
				t.Setenv(mode.env, mode.value)
			}
			dir := t.TempDir()
			warmUp(t, dir)
			ignore := goleak.IgnoreCurrent()
			for r := range rounds {
				s := seed ^ uint64(m)<<56 ^ uint64(r)*0x9e3779b97f4a7c15
				where := fmt.Sprintf("seed %d, mode %s, round %d", seed, mode.name, r)
				chaosRound(t, where, s, dir, ignore)
				if t.Failed() {
					t.Fatalf("%s failed (replay: FAIO_CHAOS_SEED=%d)", where, seed)
				}
			}
		})
	}
}

// chaosBound is how long Close, and every call once its context is
// cancelled, may take: generous, for a loaded two-core machine under -race.
const chaosBound = 15 * time.Second

// chaosExpected are the errors an operation may return in a round: the
// runtime or the object is closed, the context ended, the peer went away.
var chaosExpected = []error{
	faio.ErrClosed, faio.ErrChannelClosed, context.Canceled, context.DeadlineExceeded,
	net.ErrClosed, fs.ErrClosed, io.EOF, io.ErrUnexpectedEOF,
	syscall.ECONNRESET, syscall.EPIPE, syscall.ECONNREFUSED,
}

// chaos is one round's state.
type chaos struct {
	rt   *faio.Runtime
	dir  string
	ctx  context.Context // the goroutines' context, cancelled after Close
	rctx context.Context // ctx naming rt, for their I/O
	wg   sync.WaitGroup  // every goroutine of the round

	mu     sync.Mutex
	bad    []string
	cancel []func() // Cancel of the trees' roots

	// Shared by tasks and goroutines, each with its invariant.
	lock    faio.Mutex
	inLock  atomic.Int32
	rw      faio.RWMutex
	readers atomic.Int32
	writers atomic.Int32
	sem     *faio.Semaphore
	inSem   atomic.Int32
	files   atomic.Int32
	ops     atomic.Int64 // calls that succeeded
}

const semPermits = 2

func chaosRound(t *testing.T, where string, seed uint64, dir string, ignore goleak.Option) {
	before := fds(t)
	rng := rand.New(rand.NewPCG(seed, 1))
	c := &chaos{dir: dir, sem: faio.NewSemaphore(semPermits)}
	rt, err := faio.New(faio.Config{
		Workers: 2,
		OnTaskFailure: func(f faio.TaskFailure) {
			// The panics actor joins its tasks, but its Join may come
			// after Close has reported the failure, as documented.
			var pe *faio.PanicError
			if errors.As(f.Err, &pe) && pe.Value == (chaosPanic{}) || errors.Is(f.Err, faio.ErrGoexit) {
				return
			}
			c.check("unjoined task", f.Err)
		},
	})
	if err != nil {
		t.Fatal(err)
	}
	c.rt = rt
	ctx, cancel := context.WithCancel(context.Background())
	c.ctx, c.rctx = ctx, faio.WithRuntime(ctx, rt)

	actors := []func(r *rand.Rand){
		c.tcp, c.udp, c.file, c.sleeper, c.channels, c.locks, c.tree, c.blockOn,
		c.crossover, c.readTimeouts, c.events, c.fileChurn,
		c.http, c.vectors, c.panics, c.escaped, c.onWorker,
		c.stream, c.blocker, c.direct,
	}
	for i := range 4 + rng.IntN(8) {
		a := actors[rng.IntN(len(actors))]
		r := rand.New(rand.NewPCG(seed, uint64(i)+2))
		c.goroutine(func() { a(r) })
	}

	// Close soon (the actors still starting) or later (all in flight).
	if rng.IntN(3) == 0 {
		time.Sleep(time.Duration(rng.IntN(2_000)) * time.Microsecond)
	} else {
		time.Sleep(time.Duration(rng.IntN(20_000)) * time.Microsecond)
	}
	closeDone := make(chan error, 1)
	switch rng.IntN(4) {
	case 0: // Close alone
		go func() { closeDone <- rt.Close() }()
	case 1: // Close while the trees are cancelled
		c.mu.Lock()
		cancels := c.cancel
		c.mu.Unlock()
		go func() { closeDone <- rt.Close() }()
		for _, f := range cancels {
			f()
		}
	case 2: // Close while goroutines spawn
		for range 2 {
			c.goroutine(func() {
				for i := 0; ctx.Err() == nil && i < 1000; i++ {
					h := faio.SpawnOn(rt, func(ctx context.Context) (int, error) {
						return i, faio.Yield(ctx)
					})
					if _, err := h.Join(ctx); err != nil {
						c.check("spawn during Close", err)
						return
					}
				}
			})
		}
		go func() { closeDone <- rt.Close() }()
	case 3: // Close twice at once, while Stats reads the workers
		go func() { closeDone <- rt.Close() }()
		c.goroutine(func() { c.check("second Close", rt.Close()) })
		c.goroutine(func() {
			for ctx.Err() == nil {
				_ = rt.Stats()
				time.Sleep(100 * time.Microsecond)
			}
		})
	}
	select {
	case err := <-closeDone:
		if err != nil {
			t.Errorf("%s: Close = %v", where, err)
		}
	case <-time.After(chaosBound):
		t.Fatalf("%s: Close did not return in %v\n%s", where, chaosBound, goroutines())
	}
	c.afterClose(t, where)
	cancel()
	wgDone := make(chan struct{})
	go func() { c.wg.Wait(); close(wgDone) }()
	select {
	case <-wgDone:
	case <-time.After(chaosBound):
		t.Fatalf("%s: calls still blocked %v after Close and cancel\n%s", where, chaosBound, goroutines())
	}
	t.Logf("%s: %d calls succeeded", where, c.ops.Load())
	// Every holder let go, and no cancelled waiter kept anything.
	if !c.lock.TryLock() {
		t.Errorf("%s: the Mutex is still locked after the round", where)
	}
	if !c.rw.TryLock() {
		t.Errorf("%s: the RWMutex is still held after the round", where)
	}
	if !c.sem.TryAcquire(semPermits) {
		t.Errorf("%s: the Semaphore lost permits in the round", where)
	}
	for _, b := range c.bad {
		t.Errorf("%s: %s", where, b)
	}
	goleak.VerifyNone(t, ignore)
	after := fds(t)
	for i := 0; len(after) != len(before) && i < 100; i++ {
		time.Sleep(10 * time.Millisecond)
		after = fds(t)
	}
	if len(after) != len(before) {
		t.Errorf("%s: %d descriptors before, %d after:\nbefore %v\nafter  %v", where, len(before), len(after), before, after)
	}
}

// goroutine runs f in a goroutine of the round, reporting a panic.
func (c *chaos) goroutine(f func()) {
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		defer func() {
			if p := recover(); p != nil {
				c.report(fmt.Sprintf("panic: %v\n%s", p, goroutines()))
			}
		}()
		f()
	}()
}

// spawn starts fn as a task on the runtime and has a goroutine join it.
func (c *chaos) spawn(what string, fn func(ctx context.Context) error) *faio.JoinHandle[struct{}] {
	h := faio.SpawnOn(c.rt, func(ctx context.Context) (struct{}, error) { return struct{}{}, fn(ctx) })
	c.goroutine(func() {
		_, err := h.Join(context.Background())
		c.check(what, err)
	})
	return h
}

// either runs fn in a task or in a plain goroutine (with the round's
// context naming the runtime), as r decides. The channel it returns is
// closed once fn has returned, or once the task's Join says it never will
// run.
func (c *chaos) either(r *rand.Rand, what string, fn func(ctx context.Context) error) <-chan struct{} {
	done := make(chan struct{})
	if r.IntN(2) == 0 {
		h := c.spawn(what+" (task)", fn)
		go func() {
			_, _ = h.Join(context.Background())
			close(done)
		}()
		return done
	}
	c.goroutine(func() {
		defer close(done)
		c.check(what+" (goroutine)", fn(c.rctx))
	})
	return done
}

func (c *chaos) report(s string) {
	c.mu.Lock()
	c.bad = append(c.bad, s)
	c.mu.Unlock()
}

// check records err unless it is nil or one of chaosExpected.
func (c *chaos) check(what string, err error) {
	if err == nil {
		c.ops.Add(1)
		return
	}
	for _, e := range chaosExpected {
		if errors.Is(err, e) {
			return
		}
	}
	c.report(fmt.Sprintf("%s: unexpected error %T: %v", what, err, err))
}

// tcp: an echo server task, whose connections are served by child tasks,
// and clients in tasks and goroutines that check what comes back.
func (c *chaos) tcp(r *rand.Rand) {
	l, err := faio.Listen(c.rctx, "tcp", "127.0.0.1:0")
	if err != nil {
		c.check("Listen", err)
		return
	}
	server := c.spawn("echo server", func(ctx context.Context) error {
		defer l.Close(ctx)
		// A handler that Close keeps from starting cannot close its
		// connection: the server closes them all as it ends.
		var conns []*faio.Conn
		defer func() {
			for _, conn := range conns {
				c.check("Conn.Close", conn.Close(ctx))
			}
		}()
		for {
			conn, err := l.Accept(ctx)
			if err != nil {
				return err
			}
			conns = append(conns, conn)
			faio.Spawn(ctx, func(ctx context.Context) (struct{}, error) {
				buf := make([]byte, 512)
				for {
					n, err := conn.Read(ctx, buf)
					if err != nil {
						return struct{}{}, err
					}
					if _, err := conn.Write(ctx, buf[:n]); err != nil {
						return struct{}{}, err
					}
				}
			})
		}
	})
	addr := l.Addr().String()
	for k := range 1 + r.IntN(3) {
		msgs, size := 1+r.IntN(20), 1+r.IntN(300)
		c.either(r, "echo client", func(ctx context.Context) error {
			conn, err := faio.Dial(ctx, "tcp", addr)
			if err != nil {
				return err
			}
			defer conn.Close(ctx)
			out := bytes.Repeat([]byte{byte(k)}, size)
			in := make([]byte, size)
			for range msgs {
				if _, err := conn.Write(ctx, out); err != nil {
					return err
				}
				if _, err := conn.ReadFull(ctx, in); err != nil {
					return err
				}
				if !bytes.Equal(in, out) {
					return fmt.Errorf("echo: got %v, want %v", in[:4], out[:4])
				}
			}
			return nil
		})
	}
	// The server may never run if Close comes first: its listener is
	// ours to close then.
	_, _ = server.Join(context.Background())
	c.check("Listener.Close", l.Close(context.Background()))
}

// udp: a task echoes datagrams; a task or goroutine sends and waits for
// each reply with a timeout (loopback may still drop).
func (c *chaos) udp(r *rand.Rand) {
	srv, err := faio.ListenUDP(c.rctx, "udp", "127.0.0.1:0")
	if err != nil {
		c.check("ListenUDP", err)
		return
	}
	server := c.spawn("udp echo", func(ctx context.Context) error {
		defer srv.Close(ctx)
		buf := make([]byte, 1500)
		for {
			n, from, err := srv.ReadFrom(ctx, buf)
			if err != nil {
				return err
			}
			if _, err := srv.WriteTo(ctx, buf[:n], from); err != nil {
				return err
			}
		}
	})
	addr := netip.MustParseAddrPort(srv.LocalAddr().String())
	msgs := 1 + r.IntN(20)
	c.either(r, "udp client", func(ctx context.Context) error {
		u, err := faio.DialUDP(ctx, "udp", addr.String())
		if err != nil {
			return err
		}
		defer u.Close(ctx)
		buf := make([]byte, 1500)
		for i := range msgs {
			if _, err := u.Write(ctx, []byte(strconv.Itoa(i))); err != nil {
				return err
			}
			n, err := faio.Timeout(ctx, 20*time.Millisecond, func(ctx context.Context) (int, error) {
				return u.Read(ctx, buf)
			})
			if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
				continue
			}
			if err != nil {
				return err
			}
			// A reply that came late is fine; garbage is not.
			if j, perr := strconv.Atoi(string(buf[:n])); perr != nil || j > i {
				return fmt.Errorf("udp: reply %q to datagram %d", buf[:n], i)
			}
		}
		return nil
	})
	_, _ = server.Join(context.Background())
	c.check("UDPConn.Close", srv.Close(context.Background()))
}

// file: writes and reads back a file of its own, and the whole-file calls.
func (c *chaos) file(r *rand.Rand) {
	name := filepath.Join(c.dir, fmt.Sprintf("f%d", c.files.Add(1)))
	blocks, size := 1+r.IntN(16), 1+r.IntN(8192)
	c.either(r, "file", func(ctx context.Context) error {
		f, err := faio.Create(ctx, name)
		if err != nil {
			return err
		}
		defer f.Close(ctx)
		out, in := make([]byte, size), make([]byte, size)
		for i := range blocks {
			for j := range out {
				out[j] = byte(i + j)
			}
			off := int64(i * size)
			if _, err := f.WriteAt(ctx, out, off); err != nil {
				return err
			}
			if _, err := f.ReadAt(ctx, in, off); err != nil {
				return err
			}
			if !bytes.Equal(in, out) {
				return fmt.Errorf("file: block %d read back differs", i)
			}
		}
		if err := f.Sync(ctx); err != nil {
			return err
		}
		if err := faio.WriteFile(ctx, name+".w", out, 0o644); err != nil {
			return err
		}
		got, err := faio.ReadFile(ctx, name+".w")
		if err != nil {
			return err
		}
		if !bytes.Equal(got, out) {
			return errors.New("file: ReadFile differs from WriteFile")
		}
		return nil
	})
}

// sleeper: sleeps, timeouts that fire, yields and an interval.
func (c *chaos) sleeper(r *rand.Rand) {
	n := 1 + r.IntN(30)
	c.either(r, "sleeper", func(ctx context.Context) error {
		iv, err := faio.NewInterval(time.Millisecond, faio.Skip)
		if err != nil {
			return err
		}
		for i := range n {
			switch i % 4 {
			case 0:
				err = faio.Sleep(ctx, time.Duration(i%3)*time.Millisecond)
			case 1:
				_, err = faio.Timeout(ctx, 100*time.Microsecond, func(ctx context.Context) (int, error) {
					return 0, faio.Sleep(ctx, time.Second)
				})
				if errors.Is(err, context.DeadlineExceeded) {
					err = ctx.Err()
				}
			case 2:
				err = faio.Yield(ctx)
			case 3:
				_, err = iv.Tick(ctx)
			}
			if err != nil {
				return err
			}
		}
		return nil
	})
}

// channels: producers and consumers, tasks and goroutines, on two
// channels, some through Select; each consumer sees every producer's
// values in order, and once all are done every value sent was received
// exactly once (by a consumer, or left in a buffer): a Send, Recv or
// Select that failed did nothing.
func (c *chaos) channels(r *rand.Rand) {
	var senders [2]*faio.Sender[int64]
	var receivers [2]*faio.Receiver[int64]
	for i := range senders {
		senders[i], receivers[i] = faio.NewChannel[int64](r.IntN(4))
	}
	var mu sync.Mutex
	sent, received := map[int64]bool{}, map[int64]int{}
	var done []<-chan struct{}
	producers, consumers := 1+r.IntN(3), 1+r.IntN(3)
	for p := range producers {
		var ss [2]*faio.Sender[int64]
		for i := range ss {
			ss[i] = senders[i].Clone()
		}
		n, useSelect := 1+r.IntN(50), r.IntN(2) == 0
		done = append(done, c.either(r, "producer", func(ctx context.Context) error {
			defer ss[0].Close()
			defer ss[1].Close()
			for seq := range int64(n) {
				v := int64(p)<<32 | seq
				var err error
				if useSelect {
					_, err = faio.Select(ctx, ss[0].SendCase(v), ss[1].SendCase(v))
				} else {
					err = ss[seq%2].Send(ctx, v)
				}
				if err != nil {
					return err
				}
				mu.Lock()
				sent[v] = true
				mu.Unlock()
			}
			return nil
		}))
	}
	senders[0].Close()
	senders[1].Close()
	for k := range consumers {
		var rs [2]*faio.Receiver[int64]
		for i := range rs {
			rs[i] = receivers[i].Clone()
		}
		useSelect := r.IntN(2) == 0
		done = append(done, c.either(r, "consumer", func(ctx context.Context) error {
			defer rs[0].Close()
			defer rs[1].Close()
			last := [2]map[int64]int64{{}, {}}
			for {
				var v int64
				var i int
				var err error
				if useSelect {
					var v0, v1 int64
					i, err = faio.Select(ctx, rs[0].RecvCase(&v0), rs[1].RecvCase(&v1))
					v = [2]int64{v0, v1}[max(i, 0)]
				} else {
					i = k % 2
					v, err = rs[i].Recv(ctx)
				}
				if errors.Is(err, faio.ErrChannelClosed) {
					return nil
				}
				if err != nil {
					return err
				}
				mu.Lock()
				received[v]++
				mu.Unlock()
				p, seq := v>>32, v&(1<<32-1)
				if prev, ok := last[i][p]; ok && seq <= prev {
					return fmt.Errorf("channel %d: producer %d's %d after %d", i, p, seq, prev)
				}
				last[i][p] = seq
			}
		}))
	}
	// Our receivers stay open until everyone is done, so that what is
	// left in the buffers can be counted.
	for _, d := range done {
		<-d
	}
	for i := range receivers {
		for {
			v, err := receivers[i].TryRecv()
			if err != nil {
				break
			}
			received[v]++
		}
		receivers[i].Close()
	}
	for v := range sent {
		if received[v] != 1 {
			c.report(fmt.Sprintf("channels: value %#x sent, received %d times", v, received[v]))
		}
	}
	for v, n := range received {
		if !sent[v] {
			c.report(fmt.Sprintf("channels: value %#x received %d times, never sent successfully", v, n))
		}
	}
}

// locks: tasks and goroutines take the shared Mutex, RWMutex and
// Semaphore, checking exclusion while they hold them, and meet on a
// WaitGroup.
func (c *chaos) locks(r *rand.Rand) {
	var wg faio.WaitGroup
	n := 1 + r.IntN(4)
	wg.Add(n)
	for range n {
		iters := 1 + r.IntN(60)
		c.either(r, "locker", func(ctx context.Context) error {
			defer wg.Done()
			for i := range iters {
				var err error
				switch i % 4 {
				case 0:
					err = c.holdMutex(ctx, i/4)
				case 1:
					err = c.holdRW(ctx, true, i/4)
				case 2:
					err = c.holdRW(ctx, false, i/4)
				case 3:
					err = c.holdSem(ctx, i/4)
				}
				if err != nil {
					return err
				}
			}
			return nil
		})
	}
	c.either(r, "WaitGroup.Wait", func(ctx context.Context) error { return wg.Wait(ctx) })
}

// queued acquires through acquire under a timeout of a few microseconds
// now and then, so that waiters leave the queue cancelled while holders
// release; a timeout is not an error of the caller's.
func queued(ctx context.Context, i int, acquire func(context.Context) error) (bool, error) {
	if i%3 != 0 {
		err := acquire(ctx)
		return err == nil, err
	}
	_, err := faio.Timeout(ctx, time.Duration(i%50)*time.Microsecond, func(ctx context.Context) (int, error) {
		return 0, acquire(ctx)
	})
	if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
		return false, nil
	}
	return err == nil, err
}

func (c *chaos) holdMutex(ctx context.Context, i int) error {
	if held, err := queued(ctx, i, c.lock.Lock); !held {
		return err
	}
	defer c.lock.Unlock()
	if c.inLock.Add(1) != 1 {
		return errors.New("Mutex: two holders")
	}
	defer c.inLock.Add(-1)
	return faio.Yield(ctx)
}

func (c *chaos) holdRW(ctx context.Context, write bool, i int) error {
	if write {
		if held, err := queued(ctx, i, c.rw.Lock); !held {
			return err
		}
		defer c.rw.Unlock()
		if c.writers.Add(1) != 1 || c.readers.Load() != 0 {
			return errors.New("RWMutex: writer not alone")
		}
		defer c.writers.Add(-1)
	} else {
		if held, err := queued(ctx, i, c.rw.RLock); !held {
			return err
		}
		defer c.rw.RUnlock()
		c.readers.Add(1)
		defer c.readers.Add(-1)
		if c.writers.Load() != 0 {
			return errors.New("RWMutex: reader with a writer")
		}
	}
	return faio.Sleep(ctx, 100*time.Microsecond)
}

func (c *chaos) holdSem(ctx context.Context, i int) error {
	acquire := func(ctx context.Context) error { return c.sem.Acquire(ctx, 1) }
	if held, err := queued(ctx, i, acquire); !held {
		return err
	}
	defer c.sem.Release(1)
	if c.inSem.Add(1) > semPermits {
		return errors.New("Semaphore: too many holders")
	}
	defer c.inSem.Add(-1)
	return faio.Yield(ctx)
}

// tree: a Spawn tree that joins some children and cancels others; its
// root may be cancelled at Close (see chaosRound).
func (c *chaos) tree(r *rand.Rand) {
	seed := r.Uint64()
	h := c.spawn("tree", func(ctx context.Context) error { return c.node(ctx, rand.New(rand.NewPCG(seed, 0)), 3) })
	c.mu.Lock()
	c.cancel = append(c.cancel, h.Cancel)
	c.mu.Unlock()
}

func (c *chaos) node(ctx context.Context, r *rand.Rand, depth int) error {
	if depth == 0 {
		return faio.Sleep(ctx, time.Duration(r.IntN(2000))*time.Microsecond)
	}
	var hs []*faio.JoinHandle[struct{}]
	for range 1 + r.IntN(3) {
		seed := r.Uint64()
		hs = append(hs, faio.Spawn(ctx, func(ctx context.Context) (struct{}, error) {
			return struct{}{}, c.node(ctx, rand.New(rand.NewPCG(seed, 0)), depth-1)
		}))
	}
	for _, h := range hs {
		switch r.IntN(3) {
		case 0:
			h.Cancel()
			fallthrough
		case 1:
			if _, err := h.Join(ctx); err != nil && !errors.Is(err, context.Canceled) {
				return err
			}
		case 2: // left unjoined: the BlockOn or Close waits for it
		}
	}
	return ctx.Err()
}

// blockOn: a goroutine runs a tree under BlockOn.
func (c *chaos) blockOn(r *rand.Rand) {
	seed := r.Uint64()
	_, err := faio.BlockOn(c.rt, func(ctx context.Context) (struct{}, error) {
		return struct{}{}, c.node(ctx, rand.New(rand.NewPCG(seed, 0)), 2)
	})
	c.check("BlockOn", err)
}

// crossover: a goroutine sets up a connection; a task reads one end while
// the goroutine writes the other and reads the echo, and both ends are
// closed from both sides at the end, across Close.
func (c *chaos) crossover(r *rand.Rand) {
	l, err := faio.Listen(c.rctx, "tcp", "127.0.0.1:0")
	if err != nil {
		c.check("Listen", err)
		return
	}
	defer func() { c.check("Listener.Close", l.Close(c.rctx)) }()
	dialed := make(chan *faio.Conn, 1)
	c.goroutine(func() {
		conn, err := faio.Dial(c.rctx, "tcp", l.Addr().String())
		c.check("Dial", err)
		dialed <- conn
	})
	a, err := l.Accept(c.rctx)
	b := <-dialed
	if err != nil || b == nil {
		c.check("Accept", err)
		if b != nil {
			c.check("Conn.Close", b.Close(c.rctx))
		}
		if a != nil {
			c.check("Conn.Close", a.Close(c.rctx))
		}
		return
	}
	h := c.spawn("crossover echo", func(ctx context.Context) error {
		defer a.Close(ctx)
		buf := make([]byte, 100)
		for {
			n, err := a.Read(ctx, buf)
			if err != nil {
				return err
			}
			if _, err := a.Write(ctx, buf[:n]); err != nil {
				return err
			}
		}
	})
	out, in := []byte("crossover"), make([]byte, 9)
	for i := 0; i < 1+r.IntN(100); i++ {
		if _, err := b.Write(c.rctx, out); err != nil {
			c.check("crossover Write", err)
			break
		}
		if _, err := b.ReadFull(c.rctx, in); err != nil {
			c.check("crossover ReadFull", err)
			break
		}
		if !bytes.Equal(in, out) {
			c.report(fmt.Sprintf("crossover: got %q", in))
			break
		}
		c.ops.Add(1)
	}
	c.check("Conn.Close", b.Close(c.rctx))
	_, _ = h.Join(context.Background())
	c.check("Conn.Close (goroutine)", a.Close(c.rctx))
}

// readTimeouts: reads that time out over and over on a silent connection,
// each cancelled in the kernel, until Close.
func (c *chaos) readTimeouts(r *rand.Rand) {
	l, err := faio.Listen(c.rctx, "tcp", "127.0.0.1:0")
	if err != nil {
		c.check("Listen", err)
		return
	}
	defer func() { c.check("Listener.Close", l.Close(c.rctx)) }()
	d := time.Duration(50+r.IntN(1000)) * time.Microsecond
	c.either(r, "read timeouts", func(ctx context.Context) error {
		conn, err := faio.Dial(ctx, "tcp", l.Addr().String())
		if err != nil {
			return err
		}
		defer conn.Close(ctx)
		buf := make([]byte, 10)
		for {
			_, err := faio.Timeout(ctx, d, func(ctx context.Context) (int, error) { return conn.Read(ctx, buf) })
			if !errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil {
				return err
			}
			c.ops.Add(1)
		}
	})
}

// events: tasks and goroutines wait on an Event, a Promise, a Latch, a
// Barrier and a Cond that others set, count down and signal.
func (c *chaos) events(r *rand.Rand) {
	var ev faio.Event
	var p faio.Promise[int]
	latch := faio.NewLatch(2)
	bar := faio.NewBarrier(2)
	var mu faio.Mutex
	var cond faio.Cond
	ready := false
	for i := range 6 {
		c.either(r, "events", func(ctx context.Context) error {
			switch i {
			case 0:
				return ev.Wait(ctx)
			case 1:
				v, err := p.Wait(ctx)
				if err == nil && v != 42 {
					return fmt.Errorf("Promise: got %d", v)
				}
				return err
			case 2:
				return latch.Wait(ctx)
			case 3, 4:
				_, err := bar.Wait(ctx)
				return err
			default:
				if err := mu.Lock(ctx); err != nil {
					return err
				}
				defer mu.Unlock()
				return cond.Wait(ctx, &mu, func() bool { return ready })
			}
		})
	}
	delay := time.Duration(r.IntN(5000)) * time.Microsecond
	c.either(r, "events setter", func(ctx context.Context) error {
		if err := faio.Sleep(ctx, delay); err != nil {
			return err
		}
		ev.Set()
		if err := p.Set(42); err != nil {
			return err
		}
		latch.CountDown()
		latch.CountDown()
		if err := mu.Lock(ctx); err != nil {
			return err
		}
		ready = true
		mu.Unlock()
		cond.Broadcast()
		return nil
	})
}

// fileChurn: opens, writes, reads and closes files in a loop, until the
// round ends, and shares one File between a task and a goroutine.
func (c *chaos) fileChurn(r *rand.Rand) {
	name := filepath.Join(c.dir, fmt.Sprintf("churn%d", c.files.Add(1)))
	f, err := faio.OpenFile(c.rctx, name, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o644)
	if err != nil {
		c.check("OpenFile", err)
		return
	}
	use := func(ctx context.Context, k int) error {
		buf := make([]byte, 1000)
		for {
			off := int64(k * len(buf))
			if _, err := f.WriteAt(ctx, buf, off); err != nil {
				return err
			}
			if _, err := f.ReadAt(ctx, buf, off); err != nil {
				return err
			}
			g, err := faio.Open(ctx, name)
			if err != nil {
				return err
			}
			_, err = g.Read(ctx, buf)
			if cerr := g.Close(ctx); err == nil {
				err = cerr
			}
			if err != nil && err != io.EOF {
				return err
			}
			c.ops.Add(1)
		}
	}
	h := c.spawn("file churn (task)", func(ctx context.Context) error { return use(ctx, 0) })
	c.check("file churn (goroutine)", use(c.rctx, 1))
	_, _ = h.Join(context.Background())
	c.check("File.Close", f.Close(c.rctx))
}

// http: a faiohttp server, in a task or a goroutine, answers net/http
// clients; it may be shut down or closed while they run.
func (c *chaos) http(r *rand.Rand) {
	l, err := faio.Listen(c.rctx, "tcp", "127.0.0.1:0")
	if err != nil {
		c.check("Listen", err)
		return
	}
	srv := &faiohttp.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		if err := faio.Sleep(req.Context(), time.Duration(len(req.URL.Path))*100*time.Microsecond); err != nil {
			http.Error(w, err.Error(), http.StatusServiceUnavailable)
			return
		}
		_, _ = io.WriteString(w, req.URL.Path)
	})}
	served := c.either(r, "http Serve", func(ctx context.Context) error {
		err := srv.Serve(ctx, l)
		if errors.Is(err, faiohttp.ErrServerClosed) {
			return nil
		}
		return err
	})
	tr := &http.Transport{DisableKeepAlives: r.IntN(2) == 0}
	client := &http.Client{Transport: tr}
	var clients sync.WaitGroup
	for k := range 1 + r.IntN(3) {
		clients.Add(1)
		n := 1 + r.IntN(20)
		c.goroutine(func() {
			defer clients.Done()
			for i := range n {
				path := "/" + strings.Repeat("x", k+i%5)
				req, _ := http.NewRequestWithContext(c.ctx, "GET", "http://"+l.Addr().String()+path, nil)
				resp, err := client.Do(req)
				if err != nil {
					return // the server went away: net/http's errors
				}
				body, err := io.ReadAll(resp.Body)
				resp.Body.Close()
				if err == nil && resp.StatusCode == 200 && string(body) != path {
					c.report(fmt.Sprintf("http: got %q for %q", body, path))
				}
				c.ops.Add(1)
			}
		})
	}
	switch r.IntN(3) {
	case 0:
		c.goroutine(func() {
			time.Sleep(time.Duration(r.IntN(5000)) * time.Microsecond)
			c.check("http Shutdown", srv.Shutdown(c.ctx))
		})
	case 1:
		c.goroutine(func() {
			time.Sleep(time.Duration(r.IntN(5000)) * time.Microsecond)
			c.check("http Close", srv.Close())
		})
	}
	clients.Wait()
	tr.CloseIdleConnections()
	// Serve may not run at all (Close first): then the listener is ours.
	select {
	case <-served:
	case <-c.ctx.Done():
	}
	c.check("http Close", srv.Close())
	<-served
	tr.CloseIdleConnections()
	err = l.Close(c.rctx)
	if !errors.Is(err, net.ErrClosed) {
		c.check("Listener.Close", err)
	}
}

// vectors: the less common socket and file calls (Writev, Readv, Peek,
// WriteZC, SendFile), over a Unix socket and the standard-interface
// wrappers with deadlines.
func (c *chaos) vectors(r *rand.Rand) {
	name := filepath.Join(c.dir, fmt.Sprintf("v%d", c.files.Add(1)))
	unix := r.IntN(2) == 0
	msgs := 1 + r.IntN(30)
	c.either(r, "vectors", func(ctx context.Context) error {
		network, addr := "tcp", "127.0.0.1:0"
		if unix {
			network, addr = "unix", name+".sock"
		}
		l, err := faio.Listen(ctx, network, addr)
		if err != nil {
			return err
		}
		defer l.Close(ctx)
		a, err := faio.Dial(ctx, network, l.Addr().String())
		if err != nil {
			return err
		}
		defer a.Close(ctx)
		b, err := l.Accept(ctx)
		if err != nil {
			return err
		}
		defer b.Close(ctx)
		if err := faio.WriteFile(ctx, name, []byte("0123456789"), 0o644); err != nil {
			return err
		}
		f, err := faio.Open(ctx, name)
		if err != nil {
			return err
		}
		defer f.Close(ctx)
		nb := b.NetConn()
		in := make([]byte, 10)
		for i := range msgs {
			var err error
			switch i % 4 {
			case 0:
				_, err = a.Writev(ctx, [][]byte{[]byte("01234"), []byte("56789")})
			case 1:
				_, err = a.WriteZC(ctx, []byte("0123456789"))
			case 2:
				_, err = a.SendFile(ctx, f, 0, 10)
			case 3:
				_, err = a.NetConn().Write([]byte("0123456789"))
			}
			if err != nil {
				return err
			}
			if i%2 == 0 {
				if _, err := b.Peek(ctx, in[:1]); err != nil {
					return err
				}
				if _, err := b.ReadFull(ctx, in); err != nil {
					return err
				}
			} else {
				if err := nb.SetReadDeadline(time.Now().Add(time.Second)); err != nil {
					return err
				}
				if _, err := io.ReadFull(nb, in); err != nil {
					return err
				}
			}
			if string(in) != "0123456789" {
				return fmt.Errorf("vectors: got %q", in)
			}
		}
		return nil
	})
}

// chaosPanic is what the panics actor's tasks panic with.
type chaosPanic struct{}

// panics: tasks that panic or call runtime.Goexit, which Join reports.
func (c *chaos) panics(r *rand.Rand) {
	goexit := r.IntN(2) == 0
	h := faio.SpawnOn(c.rt, func(ctx context.Context) (int, error) {
		if err := faio.Yield(ctx); err != nil {
			return 0, err
		}
		if goexit {
			goruntime.Goexit()
		}
		panic(chaosPanic{})
	})
	_, err := h.Join(context.Background())
	var pe *faio.PanicError
	if errors.As(err, &pe) || errors.Is(err, faio.ErrGoexit) {
		err = nil
	}
	c.check("panicking task", err)
}

// afterClose makes calls on the closed runtime from plain goroutines,
// with a context that is still live: each must return by itself (with
// ErrClosed, or doing its work as a plain goroutine's call does).
func (c *chaos) afterClose(t *testing.T, where string) {
	var late sync.WaitGroup
	call := func(what string, f func() error) {
		late.Add(1)
		c.goroutine(func() {
			defer late.Done()
			c.check(what+" after Close", f())
		})
	}
	task := func(ctx context.Context) (int, error) { return 1, faio.Sleep(ctx, time.Millisecond) }
	call("SpawnOn", func() error { _, err := faio.SpawnOn(c.rt, task).Join(c.ctx); return err })
	call("BlockOn", func() error { _, err := faio.BlockOn(c.rt, task); return err })
	call("WaitAll", func() error { _, err := faio.WaitAll(c.rt, task, task); return err })
	call("Sleep", func() error { return faio.Sleep(c.rctx, time.Millisecond) })
	call("Timeout", func() error {
		_, err := faio.Timeout(c.rctx, time.Millisecond, func(ctx context.Context) (int, error) {
			return 0, faio.Sleep(ctx, time.Minute)
		})
		if errors.Is(err, context.DeadlineExceeded) {
			return nil
		}
		return fmt.Errorf("Timeout of a minute's Sleep: %v", err)
	})
	call("Close", c.rt.Close)
	call("Listen", func() error {
		l, err := faio.Listen(c.rctx, "tcp", "127.0.0.1:0")
		if err == nil {
			err = l.Close(c.rctx)
		}
		return err
	})
	call("WriteFile/ReadFile", func() error {
		name := filepath.Join(c.dir, fmt.Sprintf("late%d", c.files.Add(1)))
		if err := faio.WriteFile(c.rctx, name, []byte("late"), 0o644); err != nil {
			return err
		}
		_, err := faio.ReadFile(c.rctx, name)
		return err
	})
	done := make(chan struct{})
	go func() { late.Wait(); close(done) }()
	select {
	case <-done:
	case <-time.After(chaosBound):
		t.Fatalf("%s: calls on the closed runtime still blocked after %v\n%s", where, chaosBound, goroutines())
	}
}

// escaped: a task hands its context to a goroutine, which uses it for
// faio calls while the task runs, after it has finished, and across Close.
func (c *chaos) escaped(r *rand.Rand) {
	got := make(chan context.Context, 1)
	hold := time.Duration(r.IntN(3000)) * time.Microsecond
	c.spawn("escaping task", func(ctx context.Context) error {
		got <- ctx
		return faio.Sleep(ctx, hold)
	})
	var ctx context.Context
	select {
	case ctx = <-got:
	case <-c.ctx.Done(): // the task never ran
		return
	}
	var mu faio.Mutex
	s, rcv := faio.NewChannel[int](1)
	for i := 0; i < 1+r.IntN(30) && c.ctx.Err() == nil; i++ {
		var err error
		switch i % 5 {
		case 0:
			err = faio.Sleep(ctx, 200*time.Microsecond)
		case 1:
			h := faio.Spawn(ctx, func(ctx context.Context) (int, error) { return i, faio.Yield(ctx) })
			_, err = h.Join(ctx)
		case 2:
			if err = mu.Lock(ctx); err == nil {
				mu.Unlock()
			}
		case 3:
			if err = s.Send(ctx, i); err == nil {
				_, err = rcv.Recv(ctx)
			}
		case 4:
			_, err = faio.ReadFile(ctx, "/proc/self/stat")
		}
		if err != nil {
			c.check("escaped context", err)
			return
		}
		c.ops.Add(1)
	}
}

// onWorker: BlockOn and Close called from a task return ErrOnWorker.
func (c *chaos) onWorker(r *rand.Rand) {
	c.spawn("on worker", func(ctx context.Context) error {
		if err := c.rt.Close(); !errors.Is(err, faio.ErrOnWorker) {
			return fmt.Errorf("Close in a task: %v", err)
		}
		_, err := faio.BlockOn(c.rt, func(ctx context.Context) (int, error) { return 0, nil })
		if !errors.Is(err, faio.ErrOnWorker) {
			return fmt.Errorf("BlockOn in a task: %v", err)
		}
		return nil
	})
}

// stream: large writes and reads of one TCP stream, each under a short
// timeout: an operation that returns the context's error did nothing, and
// one that returns n moved n bytes, so the reader sees the writer's
// stream whole and in order however many were cancelled.
func (c *chaos) stream(r *rand.Rand) {
	l, err := faio.Listen(c.rctx, "tcp", "127.0.0.1:0")
	if err != nil {
		c.check("Listen", err)
		return
	}
	defer func() { c.check("Listener.Close", l.Close(c.rctx)) }()
	size := 1 + r.IntN(256<<10)
	wd := time.Duration(20+r.IntN(500)) * time.Microsecond
	rd := time.Duration(20+r.IntN(500)) * time.Microsecond
	pattern := func(pos int64) byte { return byte(pos % 251) }
	connected := make(chan *faio.Conn, 1)
	wdone := c.either(r, "stream writer", func(ctx context.Context) error {
		conn, err := faio.Dial(ctx, "tcp", l.Addr().String())
		if err != nil {
			close(connected)
			return err
		}
		connected <- conn
		defer conn.Close(ctx)
		buf := make([]byte, size)
		for pos := int64(0); ; {
			for i := range buf {
				buf[i] = pattern(pos + int64(i))
			}
			n, err := faio.Timeout(ctx, wd, func(ctx context.Context) (int, error) { return conn.Write(ctx, buf) })
			if n < 0 || n > len(buf) || (err == nil && n != len(buf)) {
				return fmt.Errorf("stream: Write = %d, %v of %d", n, err, len(buf))
			}
			pos += int64(n)
			if err != nil && (!errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil) {
				return err
			}
		}
	})
	conn, err := l.Accept(c.rctx)
	if err != nil {
		c.check("Accept", err)
		<-wdone
		closeDialed(c, connected)
		return
	}
	rdone := c.either(r, "stream reader", func(ctx context.Context) error {
		defer conn.Close(ctx)
		buf := make([]byte, 1+r.IntN(128<<10))
		for pos := int64(0); ; {
			n, err := faio.Timeout(ctx, rd, func(ctx context.Context) (int, error) { return conn.Read(ctx, buf) })
			if n < 0 || n > len(buf) || (err != nil && n != 0) {
				return fmt.Errorf("stream: Read = %d, %v", n, err)
			}
			for i, b := range buf[:n] {
				if b != pattern(pos+int64(i)) {
					return fmt.Errorf("stream: byte %d is %d, want %d", pos+int64(i), b, pattern(pos+int64(i)))
				}
			}
			pos += int64(n)
			if err != nil && (!errors.Is(err, context.DeadlineExceeded) || ctx.Err() != nil) {
				return err
			}
			if n > 0 {
				c.ops.Add(1)
			}
		}
	})
	<-rdone
	<-wdone
	c.check("Conn.Close", conn.Close(c.rctx))
	closeDialed(c, connected)
}

// closeDialed closes the connection the writer dialed, if it ran at all.
func closeDialed(c *chaos, connected <-chan *faio.Conn) {
	select {
	case conn, ok := <-connected:
		if ok {
			c.check("Conn.Close", conn.Close(c.rctx))
		}
	default:
	}
}

// blocker: a task that blocks its worker in plain Go now and then, so the
// watchdog moves the tasks queued behind it, Close included.
func (c *chaos) blocker(r *rand.Rand) {
	n := 1 + r.IntN(5)
	c.spawn("blocker", func(ctx context.Context) error {
		for range n {
			time.Sleep(time.Duration(1+r.IntN(15)) * time.Millisecond)
			if err := faio.Yield(ctx); err != nil {
				return err
			}
		}
		return nil
	})
}

// direct: reads and writes of an O_DIRECT file (Linux AIO on the
// portable backend) under short timeouts; the blocks read back are those
// written.
func (c *chaos) direct(r *rand.Rand) {
	name := filepath.Join(c.dir, fmt.Sprintf("d%d", c.files.Add(1)))
	blocks := 1 + r.IntN(16)
	d := time.Duration(20+r.IntN(2000)) * time.Microsecond
	c.either(r, "O_DIRECT", func(ctx context.Context) error {
		f, err := faio.OpenFile(ctx, name, os.O_RDWR|os.O_CREATE|syscall.O_DIRECT, 0o644)
		if errors.Is(err, syscall.EINVAL) {
			return nil // a file system without O_DIRECT
		}
		if err != nil {
			return err
		}
		defer f.Close(ctx)
		const block = 4096
		out, in := aligned(block), aligned(block)
		written := map[int64]byte{}
		for i := range 4 * blocks {
			off := int64(i%blocks) * block
			if i < blocks {
				for j := range out {
					out[j] = byte(i)
				}
				if _, err := f.WriteAt(ctx, out, off); err != nil {
					return err
				}
				written[off] = byte(i)
				continue
			}
			n, err := faio.Timeout(ctx, d, func(ctx context.Context) (int, error) { return f.ReadAt(ctx, in, off) })
			if errors.Is(err, context.DeadlineExceeded) && ctx.Err() == nil {
				continue
			}
			if err != nil {
				return err
			}
			if n != block || in[0] != written[off] || in[block-1] != written[off] {
				return fmt.Errorf("O_DIRECT: ReadAt(%d) = %d bytes of %d, want %d", off, n, in[0], written[off])
			}
		}
		return nil
	})
}

// warmUp makes the process-wide descriptors faio keeps once made (the
// portable backend's AIO eventfd) before the rounds count descriptors.
func warmUp(t *testing.T, dir string) {
	rt, err := faio.New(faio.Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	_, err = faio.BlockOn(rt, func(ctx context.Context) (int, error) {
		f, err := faio.OpenFile(ctx, filepath.Join(dir, "warm-up"), os.O_RDWR|os.O_CREATE|syscall.O_DIRECT, 0o644)
		if err != nil {
			return 0, err
		}
		defer f.Close(ctx)
		if _, err := f.WriteAt(ctx, aligned(4096), 0); err != nil {
			return 0, err
		}
		return f.ReadAt(ctx, aligned(4096), 0)
	})
	if err != nil && !errors.Is(err, syscall.EINVAL) {
		t.Fatal(err)
	}
}

// aligned returns n bytes aligned for O_DIRECT.
func aligned(n int) []byte {
	b := make([]byte, n+4096)
	skip := (4096 - int(uintptr(unsafe.Pointer(&b[0]))%4096)) % 4096
	return b[skip : skip+n : skip+n]
}

// fds lists the process's open descriptors with what they are.
func fds(t *testing.T) []string {
	entries, err := os.ReadDir("/proc/self/fd")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		target, err := os.Readlink(filepath.Join("/proc/self/fd", e.Name()))
		if err != nil {
			continue // the directory's own descriptor, closed by now
		}
		out = append(out, e.Name()+"->"+target+socketInfo(target))
	}
	return out
}

// socketInfo says what socket:[inode] is (protocol, addresses, TCP state),
// from /proc/net.
func socketInfo(target string) string {
	inode, ok := strings.CutPrefix(target, "socket:[")
	if !ok {
		return ""
	}
	inode = strings.TrimSuffix(inode, "]")
	for _, proto := range []string{"tcp", "udp", "tcp6", "udp6", "unix"} {
		data, err := os.ReadFile("/proc/net/" + proto)
		if err != nil {
			continue
		}
		for _, line := range strings.Split(string(data), "\n")[1:] {
			f := strings.Fields(line)
			if proto == "unix" {
				if len(f) > 6 && f[6] == inode {
					return "(unix)"
				}
				continue
			}
			if len(f) > 9 && f[9] == inode {
				return fmt.Sprintf("(%s %s %s st=%s)", proto, f[1], f[2], f[3])
			}
		}
	}
	return ""
}

// goroutines is a dump of every goroutine's stack.
func goroutines() string {
	var b strings.Builder
	_ = pprof.Lookup("goroutine").WriteTo(&b, 2)
	return b.String()
}
