package runtime

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// A worker held by a plain Go call is rescued for as long as the stall
// lasts, not once: a task woken onto it after the first report (into its
// inbox, where a Wake from anywhere puts a task that suspended there) must
// be taken by a peer too. The watchdog reports a stall once, and its one
// wake-up of a parked peer was spent on the task that made the stall
// worth reporting: the peer took that one and went back to sleep, and a
// task woken later waited in the held worker's inbox for as long as the
// plain call lasted (for ever, when that call waited for the task).
func TestStalledWorkerIsRescuedForAsLongAsTheStallLasts(t *testing.T) {
	var stalls atomic.Int32
	rt := newRuntime(t, Config{Workers: 2, StallThreshold: 20 * time.Millisecond,
		OnStall: func(StallInfo) { stalls.Add(1) }})
	for attempt := 0; ; attempt++ {
		if attempt == 100 {
			t.Skip("the waiting tasks never both suspended on the root's worker")
		}
		ok, err := BlockOn(rt, func(ctx context.Context) (bool, error) {
			root := Current(ctx).running()
			// Two tasks suspended on the root's worker, each with its
			// Waker and a channel it sends on (plain sends: room for one)
			// once it runs again.
			var wakers [2]Waker
			var handles [2]*JoinHandle[struct{}]
			var ran [2]chan struct{}
			for i := range 2 {
				got := make(chan Waker, 1)
				ran[i] = make(chan struct{}, 1)
				r := ran[i]
				handles[i] = Spawn(ctx, func(ctx context.Context) (struct{}, error) {
					err := Suspend(ctx, func(w Waker) bool { got <- w; return true })
					r <- struct{}{}
					return struct{}{}, err
				})
				for wakers[i].to == nil {
					select {
					case wakers[i] = <-got:
					default:
						if err := Yield(ctx); err != nil {
							return false, err
						}
					}
				}
				for handles[i].task.wstate.Load()&stMask != stWaiting {
					if err := Yield(ctx); err != nil {
						return false, err
					}
				}
			}
			if handles[0].task.worker != root.worker || handles[1].task.worker != root.worker {
				for i := range 2 {
					wakers[i].Wake()
					if _, err := handles[i].Join(ctx); err != nil {
						return false, err
					}
				}
				return false, nil // not both on this worker: try again
			}
			before := stalls.Load()
			reported := make(chan bool, 1)
			go func() {
				// The first wake makes the held worker's stall worth
				// reporting: the report wakes the parked peer, which
				// takes that task and goes back to sleep. (A peer that
				// is awake may take it before any report: then this
				// attempt shows nothing, and another is made.)
				wakers[0].Wake()
				<-ran[0]
				if stalls.Load() == before {
					reported <- false
					return
				}
				reported <- true
				for _, w := range rt.workers {
					for w != root.worker && !w.parked.Load() {
						time.Sleep(time.Millisecond)
					}
				}
				// The second lands in the held worker's inbox after the
				// report.
				wakers[1].Wake()
			}()
			// The plain Go call that holds the worker: it waits for the
			// second task, which only a peer can run now.
			if !<-reported {
				wakers[1].Wake()
				for i := range 2 {
					if _, err := handles[i].Join(ctx); err != nil {
						return false, err
					}
				}
				return false, nil
			}
			select {
			case <-ran[1]:
			case <-time.After(5 * time.Second):
				t.Error("a task woken onto a held worker after its stall was reported did not run within 5 s")
				return true, nil // the runtime's Close resumes and ends it
			}
			for i := range 2 {
				if _, err := handles[i].Join(ctx); err != nil {
					return false, err
				}
			}
			return true, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			return
		}
	}
}

// The completions on the ring of a worker held by a plain Go call are
// reaped by a peer once the watchdog finds the worker stuck, as Go hands
// a P blocked in a system call to another thread. Before, a task whose
// operation had gone to that ring waited for the call to return, however
// long: here the call waits for that task, and waited for ever.
func TestStuckWorkersRingIsReapedByAPeer(t *testing.T) {
	skipIfPinned(t, "a pinned worker's ring belongs to its thread: nobody else reaps it")
	rt := newRingRuntime(t, Config{Workers: 2, StallThreshold: 20 * time.Millisecond})
	var p [2]int
	if err := unix.Pipe2(p[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	defer unix.Close(p[0])
	defer unix.Close(p[1])
	for attempt := 0; ; attempt++ {
		if attempt == 100 {
			t.Skip("the reader never suspended on the root's worker")
		}
		ok, err := BlockOn(rt, func(ctx context.Context) (bool, error) {
			root := Current(ctx).running()
			read := make(chan struct{})
			where := make(chan *worker, 1)
			h := Spawn(ctx, func(ctx context.Context) (byte, error) {
				defer close(read)
				// Where its operation goes: it suspends before it can move.
				where <- Current(ctx).running().worker
				op := &readOp{fd: p[0], buf: make([]byte, 1)}
				res, err := Submit(ctx, op)
				if err == nil && res.Res != 1 {
					err = res.Err()
				}
				return op.buf[0], err
			})
			var w *worker
			for w == nil || h.task.wstate.Load()&stMask != stWaiting {
				select {
				case w = <-where:
				default:
				}
				if err := Yield(ctx); err != nil {
					return false, err
				}
			}
			if w != root.worker {
				if _, err := unix.Write(p[1], []byte{0}); err != nil {
					return false, err
				}
				_, err := h.Join(ctx)
				return false, err // not on this worker's ring: try again
			}
			go func() {
				time.Sleep(50 * time.Millisecond) // the root blocks meanwhile
				_, _ = unix.Write(p[1], []byte{'x'})
			}()
			// The plain Go call that holds the worker: it waits for the
			// reader, whose completion is on this worker's ring.
			select {
			case <-read:
			case <-time.After(5 * time.Second):
				t.Error("a read completed on the ring of a worker held by a plain Go call was not reaped within 5 s")
				return true, nil // Close ends it
			}
			b, err := h.Join(ctx)
			if err == nil && b != 'x' {
				t.Errorf("the reader read %q, want 'x'", b)
			}
			return true, err
		})
		if err != nil {
			t.Fatal(err)
		}
		if ok {
			if rt.Stats().PeerReaps == 0 {
				t.Error("Stats.PeerReaps = 0 after a peer reaped the held worker's ring")
			}
			return
		}
	}
}

// A stall ends when its worker resumes a task: stuck is false afterwards.
// stalledOn stayed set on workers that are not pinned, and since the
// coroutine it names is pooled and reused, a worker long past its stall
// passed for stuck whenever it ran that coroutine again: its peers reaped
// its ring all the time (11,890 times in half a second).
func TestStallEndsAtTheNextResumption(t *testing.T) {
	rt := newRuntime(t, Config{Workers: 2})
	stuck, err := BlockOn(rt, func(ctx context.Context) (int, error) {
		me := Current(ctx).running()
		// What the watchdog's report of a stall does (Stalled).
		me.worker.stalledOn.Store(me.coro.Load())
		if !me.worker.stuck() {
			return 0, errors.New("stuck() is false right after a reported stall")
		}
		n := 0
		for range 100 {
			if err := Yield(ctx); err != nil {
				return 0, err
			}
			if Current(ctx).running().worker.stuck() {
				n++
			}
		}
		return n, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if stuck > 0 {
		t.Errorf("a worker passed for stuck in %d of 100 runs after its stall had ended", stuck)
	}
}

// A peer that reaps a stuck worker's ring cannot take the completion of an
// operation whose wait is not published yet: the worker's loop holds the
// ring from the operation's start until then. A completion reaped in that
// window failed its claim and was dropped, and the task waited for ever
// (after 6,691 and 10,316 operations in a loop; every time with the
// window widened, as here).
func TestPeerReapsLoseNoCompletion(t *testing.T) {
	skipIfPinned(t, "a pinned worker's ring belongs to its thread: nobody else reaps it")
	var stalls atomic.Int32
	rt := newRingRuntime(t, Config{Workers: 2, SubmitBatch: 1, StallThreshold: 10 * time.Millisecond,
		OnStall: func(StallInfo) { stalls.Add(1) }})
	var widen atomic.Bool
	testHookStartedIO = func() {
		if widen.Load() {
			// The watchdog finds the worker stuck with the completion
			// unreaped, and wakes a peer that reaps the ring.
			time.Sleep(40 * time.Millisecond)
		}
	}
	defer func() { testHookStartedIO = nil }()
	done := make(chan error, 1)
	go func() {
		_, err := BlockOn(rt, func(ctx context.Context) (struct{}, error) {
			for range 5 {
				me := Current(ctx).running()
				me.worker.stalledOn.Store(me.coro.Load()) // as the watchdog's report
				widen.Store(true)
				// A nop completes as it is submitted (SubmitBatch 1).
				_, err := Submit(ctx, nopOp{})
				widen.Store(false)
				if err != nil {
					return struct{}{}, err
				}
			}
			return struct{}{}, nil
		})
		done <- err
	}()
	select {
	case err := <-done:
		if err != nil {
			t.Fatal(err)
		}
		if stalls.Load() == 0 {
			// No stall reported inside the windows: no peer was woken
			// to reap, and the test tried nothing.
			t.Skip("the watchdog reported no stall within 40 ms windows (a loaded machine)")
		}
	case <-time.After(10 * time.Second):
		// The task waits for a completion that is gone, and the
		// runtime's Close, which the test's cleanup runs even after a
		// panic here, would wait for it for ever: end the process.
		msg := fmt.Sprintf("a Submit never returned: its completion was lost (%d peer reaps)", rt.Stats().PeerReaps)
		go panic(msg)
		select {}
	}
}

// A task that blocks in plain Go, is reported, resumes for a moment and
// blocks again is the same stall to the watchdog (same coroutine, task
// and heartbeat), which then only calls Rescue: Rescue marks the worker
// stuck again, since the resumption ended the first mark. Before, no peer
// reaped the ring during the second block (5 of 5 tries).
func TestStuckWorkersRingIsReapedAgainAfterABriefResumption(t *testing.T) {
	skipIfPinned(t, "a pinned worker's ring belongs to its thread: nobody else reaps it")
	rt := newRingRuntime(t, Config{Workers: 2, StallThreshold: 20 * time.Millisecond})
	var pa, pb [2]int
	if err := unix.Pipe2(pa[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	if err := unix.Pipe2(pb[:], unix.O_CLOEXEC); err != nil {
		t.Fatal(err)
	}
	for _, fd := range []int{pa[0], pa[1], pb[0], pb[1]} {
		defer unix.Close(fd)
	}
	fails, tries := 0, 0
	for attempt := 0; attempt < 40 && tries < 5; attempt++ {
		res, err := BlockOn(rt, func(ctx context.Context) (int, error) {
			root := Current(ctx).running()
			spawn := func(fd int) (chan struct{}, *JoinHandle[struct{}], chan *worker) {
				read := make(chan struct{})
				where := make(chan *worker, 1)
				h := Spawn(ctx, func(ctx context.Context) (struct{}, error) {
					defer close(read)
					where <- Current(ctx).running().worker
					_, err := Submit(ctx, &readOp{fd: fd, buf: make([]byte, 1)})
					return struct{}{}, err
				})
				return read, h, where
			}
			ra, ha, wa := spawn(pa[0])
			rb, hb, wb := spawn(pb[0])
			var a, b *worker
			for a == nil || b == nil || ha.task.wstate.Load()&stMask != stWaiting || hb.task.wstate.Load()&stMask != stWaiting {
				select {
				case a = <-wa:
				default:
				}
				select {
				case b = <-wb:
				default:
				}
				if err := Yield(ctx); err != nil {
					return 0, err
				}
			}
			if a != root.worker || b != root.worker {
				unix.Write(pa[1], []byte{0})
				unix.Write(pb[1], []byte{0})
				ha.Join(ctx)
				hb.Join(ctx)
				return -1, nil
			}
			go func() { time.Sleep(50 * time.Millisecond); unix.Write(pa[1], []byte{1}) }()
			select { // stall 1
			case <-ra:
			case <-time.After(3 * time.Second):
				return 2, nil
			}
			if err := Yield(ctx); err != nil { // brief resumption
				return 0, err
			}
			if Current(ctx).running().worker != root.worker {
				unix.Write(pb[1], []byte{0})
				hb.Join(ctx)
				return -1, nil
			}
			go func() { time.Sleep(50 * time.Millisecond); unix.Write(pb[1], []byte{1}) }()
			r := 0
			select { // stall 2
			case <-rb:
			case <-time.After(2 * time.Second):
				r = 1
			}
			ha.Join(ctx)
			hb.Join(ctx)
			return r, nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if res < 0 {
			continue
		}
		tries++
		if res > 0 {
			fails++
		}
	}
	if tries == 0 {
		t.Skip("the readers never both suspended on the root's worker")
	}
	if fails > 0 {
		t.Errorf("second stall not rescued in %d of %d tries", fails, tries)
	}
}
