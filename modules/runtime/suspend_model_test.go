package runtime

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	goruntime "runtime"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/faio-go/faio/modules/driver"
	"github.com/faio-go/faio/modules/ringq"
	"github.com/faio-go/faio/modules/timerwheel"
	"github.com/faio-go/faio/modules/uring"
	"golang.org/x/sys/unix"
	"pgregory.net/rapid"
)

// The suspension state machine (see the comment on the state constants in
// suspend.go) is tested twice: as a model, one transition at a time in an
// order rapid chooses, on a Task wired to a worker the test drives by hand;
// and under real concurrency, many tasks of a running runtime against
// goroutines racing Wake, cancellation and I/O.

// TestSuspendModel drives one task through waits of three kinds (a
// register function, a sleep, an I/O) and applies, in an order rapid
// chooses, every event that may end them: Wake, cancellation of the wait's
// context (the task's own or another), the deadline entry, the sleep's
// entry, the I/O completion, the worker's processing of cancel requests,
// events of earlier suspensions, and events landing inside register. The
// functions are the real ones (completeSuspend, claim through Wake and
// fireTimer, cancelWait through Task.cancel and fireTimer, ioDone through
// the model's engine); only the two ends of suspend, which run on the task's
// coroutine, are mirrored here. After every step the word must be exactly
// what the model says, and the task queued exactly when the wait has ended
// and register no longer runs.
func TestSuspendModel(t *testing.T) {
	rapid.Check(t, func(t *rapid.T) {
		m := newSuspendModel(t)
		t.Repeat(map[string]func(*rapid.T){
			"":               m.check,
			"suspend":        m.suspend,
			"wake":           m.wake,
			"cancel":         m.cancel,
			"deadline":       m.deadline,
			"fire":           m.fire,
			"complete":       m.complete,
			"processCancels": m.processCancels,
			"stale":          m.stale,
			"resume":         m.resume,
		})
	})
}

// nopOp is the model's I/O; the model's engine never runs it.
type nopOp struct{}

func (nopOp) Prep(sqe *uring.SQE) { sqe.PrepNop() }

// modelEngine stands in for the worker's ring in the model: it records the
// operations started and the cancellations asked for, and the model
// delivers completions through it, as the ring's reap would (driver's own
// tests check the ring's side: ids, stale completions, ASYNC_CANCEL).
type modelEngine struct {
	nextID  driver.OpID
	ops     map[driver.OpID]*modelOp
	cancels []driver.OpID
	w       *worker
}

type modelOp struct {
	t         *Task
	gen       uint64
	cancelled bool // ASYNC_CANCEL "submitted"
}

func (e *modelEngine) StartHeld(_ Op, t *Task, gen uint64) driver.OpID {
	e.nextID++
	e.ops[e.nextID] = &modelOp{t: t, gen: gen}
	return e.nextID
}

func (e *modelEngine) Cancel(id driver.OpID) { e.cancels = append(e.cancels, id) }
func (e *modelEngine) CancelPending() bool   { return len(e.cancels) > 0 }

// complete delivers op id's completion and reports whether it made the
// task runnable; an id no longer in flight does nothing.
func (e *modelEngine) complete(id driver.OpID, res int32) bool {
	op := e.ops[id]
	if op == nil {
		return false
	}
	delete(e.ops, id)
	return e.w.ioDone(op.t, op.gen, Result{Res: res})
}

// processCancels is the ring's turn at the requests: an ASYNC_CANCEL for
// each operation still in flight.
func (e *modelEngine) processCancels() {
	for _, id := range e.cancels {
		if op := e.ops[id]; op != nil {
			op.cancelled = true
		}
	}
	e.cancels = e.cancels[:0]
}

func (e *modelEngine) Wait(time.Duration)                    {}
func (e *modelEngine) Wake()                                 {}
func (e *modelEngine) Reap() int                             { return 0 }
func (e *modelEngine) TryReap() (int, bool)                  { return 0, false }
func (e *modelEngine) Unhold()                               {}
func (e *modelEngine) Stranded() int                         { return 0 }
func (e *modelEngine) Counts() (submitted, completed uint64) { return 0, 0 }
func (e *modelEngine) Quiesce()                              {}
func (e *modelEngine) Close()                                {}

// byteRecvOp receives into buf from a socket.
type byteRecvOp struct {
	fd  int
	buf []byte
}

func (o byteRecvOp) Prep(sqe *uring.SQE) { sqe.PrepRecv(o.fd, o.buf, 0) }

// waitModel is the model of one suspension.
type waitModel struct {
	gen    uint64
	kind   uint8 // kindRegister, kindSleep or kindIO
	self   bool  // the wait's context is the task itself
	ctx    context.Context
	cancel context.CancelFunc // of a context other than the task

	early      bool  // the context was cancelled before the wait was published
	published  bool  // completeSuspend has returned
	inRegister bool  // completeSuspend is running register
	regFalse   bool  // register returned false
	waker      Waker // published by register, if hasWaker
	hasWaker   bool

	ended     uint64      // 0 while waiting, then stWoken or stCancelled
	ioCancel  bool        // stIOCancel is set
	requests  int         // cancel requests sent to the worker
	processed int         // of which processCancels has taken
	completed bool        // ioDone has run
	id        driver.OpID // of the I/O
}

// live reports whether the wait is published, so events reach it.
func (w *waitModel) live() bool { return w.published || w.inRegister }

type suspendModel struct {
	t    *rapid.T // of the running action, for register
	w    *worker
	eng  *modelEngine
	task *Task
	gen  uint64       // the number of the task's last suspension
	cur  *waitModel   // nil while the task runs
	old  []*waitModel // ended waits: their events are stale
}

// newSuspendModel wires a task to a worker that owns a real ring and
// timer wheel but runs no loop: the model is the loop.
func newSuspendModel(t *rapid.T) *suspendModel {
	rt := &Runtime{cfg: Config{SubmitBatch: 1 << 30}, start: time.Now()}
	w := &worker{rt: rt, inbox: ringq.NewGlobalQueue[*Task]()}
	var err error
	if w.wheel, err = timerwheel.NewShared[Waker](timerwheel.Config{Resolution: time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	eng := &modelEngine{ops: map[driver.OpID]*modelOp{}, w: w}
	w.io = eng
	rt.workers = []*worker{w}
	task := &Task{rt: rt, worker: w}
	task.coro.Store(&coro{task: task})
	task.flags.Store(flagExternal) // spawned with Background
	return &suspendModel{w: w, eng: eng, task: task}
}

func fmtWord(s uint64) string {
	st := [...]string{"Idle", "W", "Woken", "Cancelled"}[s&stMask]
	for _, f := range []struct {
		bit  uint64
		name string
	}{{stSelfCancel, "Self"}, {stIO, "IO"}, {stIOCancel, "IOCancel"}, {stRegistering, "R"}} {
		if s&f.bit != 0 {
			st += "|" + f.name
		}
	}
	return fmt.Sprintf("%d|%s", s>>genShift, st)
}

// check compares the word, the queue and the ring with the model.
func (m *suspendModel) check(t *rapid.T) {
	s := m.task.wstate.Load()
	queued := m.w.inbox.Len()
	w := m.cur
	if w == nil || !w.live() {
		gen := m.gen
		if w != nil {
			gen-- // switched away, not yet published: the word is the last wait's
		}
		if s != gen<<genShift|stIdle {
			t.Fatalf("word %s, want %d|Idle: only the worker's publication may leave Idle", fmtWord(s), gen)
		}
		if queued != 0 {
			t.Fatalf("task queued %d times while no wait of it is published", queued)
		}
		return
	}
	want := w.gen << genShift
	if w.ended != 0 {
		want |= w.ended // claim keeps no flag but R
	} else {
		want |= stWaiting
		if w.self {
			want |= stSelfCancel
		}
		if w.kind == kindIO {
			want |= stIO
		}
		if w.ioCancel {
			want |= stIOCancel
		}
	}
	if w.inRegister {
		want |= stRegistering
	}
	if s != want {
		t.Fatalf("word %s, want %s", fmtWord(s), fmtWord(want))
	}
	// Exactly one winner queues the task, and only once register is done.
	wantQueued := 0
	if w.ended != 0 && !w.inRegister {
		wantQueued = 1
	}
	if queued != wantQueued {
		t.Fatalf("task queued %d times, want %d (word %s)", queued, wantQueued, fmtWord(s))
	}
	if w.kind == kindIO {
		inFlight := 1
		if w.completed {
			inFlight = 0
		}
		if got := len(m.eng.ops); got != inFlight {
			t.Fatalf("%d operations in flight, want %d", got, inFlight)
		}
		n := w.processed
		for _, id := range m.eng.cancels {
			if id == w.id {
				n++
			}
		}
		if n != w.requests {
			t.Fatalf("%d cancel requests for gen %d, want %d", n, w.gen, w.requests)
		}
	}
}

// suspend is one wait: the task's side of Suspend, Sleep or Submit up to
// the switch, which numbers the wait and describes it to the worker; maybe
// a cancellation or a stale event while the task switches away; then the
// worker's side, runTask's completeSuspend.
func (m *suspendModel) suspend(t *rapid.T) {
	if m.cur != nil {
		t.Skip("the task is suspended")
	}
	w := &waitModel{
		kind: rapid.SampledFrom([]uint8{kindRegister, kindSleep, kindIO}).Draw(t, "kind"),
		self: rapid.Bool().Draw(t, "own context"),
	}
	task, c := m.task, m.task.coro.Load()
	if w.self {
		// Each wait gets a live context, so that every wait can race
		// the task's own cancellation (a model-only shortcut: a real task
		// stays cancelled).
		task.flags.And(^uint32(flagCancelled | flagDeadline))
		w.ctx = task
	} else {
		w.ctx, w.cancel = context.WithCancel(context.Background())
	}
	if g := task.nextGen(); g != m.gen+1 {
		t.Fatalf("the next suspension is numbered %d after %d", g, m.gen)
	}
	m.gen++
	w.gen = m.gen
	c.kind, c.suspendCtx = w.kind, w.ctx
	switch w.kind {
	case kindRegister:
		c.register = m.register
	case kindSleep:
		c.sleepUntil = time.Hour
	case kindIO:
		c.ioOp, c.ioDone = nopOp{}, false
	}
	m.cur = w

	switch rapid.IntRange(0, 5).Draw(t, "before publication") {
	case 0:
		m.cancelNow() // finds the last wait's gen: the worker must see it
	case 1:
		m.staleEvent(t)
	}
	m.check(t)

	m.t = t
	m.w.completeSuspend(task)
	w.published = true
	if w.early {
		// completeSuspend's own look at ctx.Err() after its Store.
		m.cancelled(w)
	}
	if w.regFalse {
		// forceWoken: over a cancellation that landed inside register.
		w.ended = stWoken
	}
	if w.kind == kindIO {
		w.id = driver.OpID(m.task.coro.Load().ioID.Load())
	}
}

// register is the wait's register function: events land while it runs.
func (m *suspendModel) register(wk Waker) bool {
	t, w := m.t, m.cur
	if w.early {
		t.Fatalf("register called although the context was cancelled before the wait was published")
	}
	if wk.task() != m.task || wk.gen != w.gen {
		t.Fatalf("register got the Waker of gen %d, want %d", wk.gen, w.gen)
	}
	w.inRegister = true
	m.check(t)
	for n := rapid.IntRange(0, 3).Draw(t, "events in register"); n > 0; n-- {
		switch rapid.IntRange(0, 2).Draw(t, "event in register") {
		case 0:
			m.wakeWith(t, wk)
		case 1:
			m.cancelNow()
		case 2:
			m.staleEvent(t)
		}
		m.check(t)
	}
	w.inRegister = false
	if rapid.Bool().Draw(t, "register publishes the Waker") {
		w.waker, w.hasWaker = wk, true
		return true
	}
	w.regFalse = true
	return false
}

// cancelled is the model of a cancellation reaching a published wait.
func (m *suspendModel) cancelled(w *waitModel) {
	switch {
	case w.kind == kindIO:
		// Only the completion ends an I/O wait; the cancellation becomes
		// a request for ASYNC_CANCEL, once.
		if !w.completed && !w.ioCancel {
			w.ioCancel = true
			w.requests++
		}
	case w.ended == 0:
		w.ended = stCancelled
	}
}

// cancelNow cancels the current wait's context: Task.cancel for the
// task's own, and for another the AfterFunc that suspend arms.
func (m *suspendModel) cancelNow() {
	w := m.cur
	if w.self {
		m.task.cancel(context.Canceled)
	} else {
		w.cancel()
		m.task.cancelWait(w.gen)
	}
	if !w.live() {
		w.early = true
		return
	}
	m.cancelled(w)
}

func (m *suspendModel) wakeWith(t *rapid.T, wk Waker) {
	w := m.cur
	want := w.live() && wk.gen == w.gen && w.ended == 0
	before := m.task.wstate.Load()
	if got := wk.Wake(); got != want {
		t.Fatalf("Wake of gen %d = %v, want %v (word was %s)", wk.gen, got, want, fmtWord(before))
	}
	if want {
		w.ended = stWoken
	} else if s := m.task.wstate.Load(); s != before {
		t.Fatalf("a losing Wake changed the word from %s to %s", fmtWord(before), fmtWord(s))
	}
}

func (m *suspendModel) wake(t *rapid.T) {
	if m.cur == nil || !m.cur.hasWaker {
		t.Skip("no Waker published")
	}
	m.wakeWith(t, m.cur.waker)
}

func (m *suspendModel) cancel(t *rapid.T) {
	if m.cur == nil {
		t.Skip("not suspended")
	}
	m.cancelNow()
}

// deadline fires the wheel entry enforcing the context's deadline.
func (m *suspendModel) deadline(t *rapid.T) {
	w := m.cur
	if w == nil || !w.published {
		t.Skip("no deadline armed")
	}
	m.w.fireTimer(taskWaker(m.task, w.gen|wakeDeadline))
	m.cancelled(w)
}

// fire fires a sleep's wheel entry (again, if it already fired).
func (m *suspendModel) fire(t *rapid.T) {
	w := m.cur
	if w == nil || !w.published || w.kind != kindSleep {
		t.Skip("no sleep")
	}
	before := m.task.wstate.Load()
	m.w.fireTimer(taskWaker(m.task, w.gen))
	if w.ended == 0 {
		w.ended = stWoken
	} else if s := m.task.wstate.Load(); s != before {
		t.Fatalf("a late timer changed the word from %s to %s", fmtWord(before), fmtWord(s))
	}
}

// complete delivers the I/O's completion, as the worker's reap would.
func (m *suspendModel) complete(t *rapid.T) {
	w := m.cur
	if w == nil || !w.published || w.kind != kindIO || w.completed {
		t.Skip("no I/O in flight")
	}
	res := rapid.SampledFrom([]int32{1, 0, -int32(unix.ECANCELED)}).Draw(t, "result")
	if !m.eng.complete(w.id, res) {
		t.Fatalf("the completion of the wait's own record did not end it")
	}
	w.completed = true
	w.ended = stWoken
	if w.ioCancel {
		w.ended = stCancelled
	}
	if c := m.task.coro.Load(); !c.ioDone || c.ioRes != res {
		t.Fatalf("completion not stored: done %v res %d, want %d", c.ioDone, c.ioRes, res)
	}
}

// processCancels is the worker's turn at the cancel requests.
func (m *suspendModel) processCancels(t *rapid.T) {
	w := m.cur
	if w != nil {
		for _, id := range m.eng.cancels {
			if id == w.id {
				w.processed++
			}
		}
	}
	m.eng.processCancels()
	if w != nil && w.kind == kindIO && w.published && !w.completed {
		if r := m.eng.ops[w.id]; r.cancelled != w.ioCancel {
			t.Fatalf("ASYNC_CANCEL submitted: %v, want %v", r.cancelled, w.ioCancel)
		}
	}
}

func (m *suspendModel) stale(t *rapid.T) {
	if len(m.old) == 0 {
		t.Skip("no earlier wait")
	}
	m.staleEvent(t)
}

// staleEvent is an event of an earlier suspension: it must change nothing.
func (m *suspendModel) staleEvent(t *rapid.T) {
	if len(m.old) == 0 {
		return
	}
	o := m.old[rapid.IntRange(0, len(m.old)-1).Draw(t, "earlier wait")]
	before, queued := m.task.wstate.Load(), m.w.inbox.Len()
	switch rapid.IntRange(0, 4).Draw(t, "stale event") {
	case 0:
		if taskWaker(m.task, o.gen).Wake() {
			t.Fatalf("a Waker of gen %d returned true at word %s", o.gen, fmtWord(before))
		}
	case 1:
		m.task.cancelWait(o.gen)
	case 2:
		m.w.fireTimer(taskWaker(m.task, o.gen|wakeDeadline))
	case 3:
		m.w.fireTimer(taskWaker(m.task, o.gen))
	case 4:
		if o.kind == kindIO && m.eng.complete(o.id, 1) {
			t.Fatalf("a completion of gen %d's record ended a wait at word %s", o.gen, fmtWord(before))
		}
	}
	if s := m.task.wstate.Load(); s != before || m.w.inbox.Len() != queued {
		t.Fatalf("an event of gen %d changed the word from %s to %s (queued %d -> %d)",
			o.gen, fmtWord(before), fmtWord(s), queued, m.w.inbox.Len())
	}
}

// resume runs the queued task: the rest of suspend, on its coroutine.
func (m *suspendModel) resume(t *rapid.T) {
	if m.w.inbox.Len() == 0 {
		t.Skip("nothing queued")
	}
	w := m.cur
	if got, _ := m.w.inbox.Pop(); got != m.task || w == nil {
		t.Fatalf("popped %v with wait %v", got, w)
	}
	c := m.task.coro.Load()
	c.suspendCtx, c.register = nil, nil
	if c.timerWorker != nil {
		m.w.wheel.Cancel(c.timer)
		c.timerWorker = nil
	}
	s := m.task.wstate.Load()
	m.task.wstate.Store(w.gen<<genShift | stIdle)
	if want := w.gen<<genShift | w.ended; s != want {
		t.Fatalf("resumed at word %s, want %s", fmtWord(s), fmtWord(want))
	}
	if w.kind == kindIO && !c.ioDone {
		t.Fatalf("an I/O wait ended without its completion")
	}
	if w.cancel != nil {
		w.cancel()
	}
	m.old = append(m.old, w)
	m.cur = nil
}

// TestSuspendStressOneOutcome runs tasks through waits against goroutines
// racing Wake, the cancellation of the wait's context and I/O completion:
// each wait ends exactly once, Suspend returns nil exactly when a Wake
// returned true (or register returned false), stale Wakers stay powerless,
// and no byte of a cancelled receive is lost.
func TestSuspendStressOneOutcome(t *testing.T) {
	// One worker leaves the second core to the racing goroutines, so they
	// act in parallel with the task's switch; two make wake-ups cross
	// workers.
	for _, workers := range []int{1, 2} {
		t.Run(fmt.Sprintf("workers=%d", workers), func(t *testing.T) { stressSuspend(t, workers) })
	}
}

func stressSuspend(t *testing.T, workers int) {
	tasks, waits := 256, 64
	if raceEnabled {
		tasks, waits = 96, 48
	}
	seed := uint64(time.Now().UnixNano())
	t.Logf("seed %d", seed)

	const (
		modeRegisterFalse = iota // register returns false, racing a cancellation
		modeWake                 // the Waker goes to a goroutine: Wake races cancel
		modeIO                   // Submit of a recv: a write races cancel
		modeSelfFalse            // modeRegisterFalse on the task's own context
		modeSelfWake             // modeWake on the task's own context
	)
	type waitRec struct {
		mode       int
		registered bool         // register ran
		wake       bool         // a Wake goroutine was started
		woke       atomic.Int32 // 1: its Wake returned true, 2: false
		ends       int          // times Suspend (Submit) returned
		err        error
		res        int32
	}
	type taskRec struct {
		a, b  int
		h     atomic.Pointer[JoinHandle[int]]
		at    atomic.Int64 // wait<<8 | mode of the wait in progress, -1 after the last
		waits []waitRec
	}
	recs := make([]*taskRec, tasks)
	for i := range recs {
		fds, err := unix.Socketpair(unix.AF_UNIX, unix.SOCK_STREAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { unix.Close(fds[0]); unix.Close(fds[1]) })
		recs[i] = &taskRec{a: fds[0], b: fds[1], waits: make([]waitRec, waits)}
	}
	var (
		wg                   sync.WaitGroup
		written, received    atomic.Int64
		staleTrue, twiceTrue atomic.Int64
	)
	spin := func(n int) {
		for range n {
			goruntime.Gosched()
		}
	}
	// goDo runs f on a new goroutine after delay yields.
	goDo := func(delay int, f func()) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			spin(delay)
			f()
		}()
	}
	// wakeAsync hands wk to a goroutine that first wakes the task's
	// previous Waker, which must lose although the task is suspended again,
	// then wk, twice: the second must lose.
	wakeAsync := func(r *waitRec, wk, stale Waker, delay int) {
		r.wake = true
		goDo(delay, func() {
			if stale.Wake() {
				staleTrue.Add(1)
			}
			if wk.Wake() {
				r.woke.Store(1)
			} else {
				r.woke.Store(2)
			}
			if wk.Wake() {
				twiceTrue.Add(1)
			}
		})
	}
	var ioOK bool // set once the runtime exists: Submit is possible
	body := func(tr *taskRec, rng *rand.Rand) func(context.Context) (int, error) {
		return func(ctx context.Context) (int, error) {
			// The self-cancelling waits cancel through tr.h, which the
			// spawner stores once Spawn returns. A spawner pausing inside
			// Spawn (chargeSpawn) lets this task run first, and a register
			// function spinning on the worker for that cancellation then
			// waited for a spawner that could not run: the test, not the
			// runtime, hung (one run in about 40 on the portable backend).
			for tr.h.Load() == nil {
				if err := Yield(ctx); err != nil {
					return 0, err
				}
			}
			var stale Waker
			buf := make([]byte, 1)
			for j := range tr.waits {
				r := &tr.waits[j]
				r.mode = rng.IntN(3)
				if r.mode == modeIO && !ioOK {
					r.mode = modeWake // no Submit on the portable backend
				}
				if j == len(tr.waits)-1 && rng.IntN(2) == 0 {
					// The task's own cancellation ends the task: last wait.
					r.mode = modeSelfFalse + rng.IntN(2)
				}
				tr.at.Store(int64(j)<<8 | int64(r.mode))
				cctx, cancel := context.WithCancel(ctx)
				wctx, doCancel := cctx, cancel
				if r.mode == modeSelfFalse || r.mode == modeSelfWake {
					wctx, doCancel = ctx, func() {
						for tr.h.Load() == nil {
							goruntime.Gosched()
						}
						tr.h.Load().Cancel()
					}
				}
				d1, d2 := rng.IntN(4), rng.IntN(4)
				// early: the cancellation starts before Suspend, so it may land
				// before it, while the task switches away, inside register or
				// after; otherwise register starts it.
				early := rng.IntN(3) == 0
				switch r.mode {
				case modeRegisterFalse, modeSelfFalse:
					race := !early && rng.IntN(2) == 0
					if early {
						goDo(d2, doCancel)
					}
					r.err = Suspend(wctx, func(Waker) bool {
						r.registered = true
						if race {
							// Cancel and wait for it: an AfterFunc may still
							// land inside register or after it.
							var done atomic.Bool
							goDo(0, func() { doCancel(); done.Store(true) })
							for !done.Load() {
								goruntime.Gosched()
							}
							spin(d1)
						}
						return false
					})
				case modeWake, modeSelfWake:
					what := rng.IntN(3) // 0: Wake only, 1: cancel only, 2: both
					if r.mode == modeSelfWake {
						what = 2
					}
					if what != 0 && early {
						goDo(d2, doCancel)
					}
					r.err = Suspend(wctx, func(wk Waker) bool {
						r.registered = true
						if what != 1 {
							wakeAsync(r, wk, stale, d1)
						}
						if what != 0 && !early {
							goDo(d2, doCancel)
						}
						stale = wk
						return true
					})
				case modeIO:
					// A write, a cancellation, or both in either order.
					write, cancelFirst := rng.IntN(3) != 0, rng.IntN(2) == 0
					cancelToo := !write || rng.IntN(2) == 0
					goDo(0, func() {
						if cancelToo && cancelFirst {
							spin(d1)
							cancel()
						}
						if write {
							spin(d2)
							unix.Write(tr.b, []byte{1})
							written.Add(1)
						}
						if cancelToo && !cancelFirst {
							spin(d1)
							cancel()
						}
					})
					res, err := Submit(cctx, byteRecvOp{fd: tr.a, buf: buf})
					r.err, r.res = err, res.Res
					if err == nil && res.Res == 1 {
						received.Add(1)
					}
				}
				r.ends++
				cancel()
			}
			tr.at.Store(-1)
			return 0, nil
		}
	}

	rt := newRuntime(t, Config{Workers: workers})
	ioOK = rt.Backend() == BackendIOUring
	// A lost wait cannot be cancelled any more (its cancellation is what
	// was lost), so neither BlockOn nor Close would return: report the
	// waits still in progress and stop the test binary.
	hang := time.AfterFunc(20*time.Second, func() {
		msg := "suspend stress: waits did not end within 20s:"
		for i, tr := range recs {
			if at := tr.at.Load(); at >= 0 {
				msg += fmt.Sprintf(" task %d wait %d (mode %d);", i, at>>8, at&0xff)
			}
		}
		panic(msg)
	})
	_, err := BlockOn(rt, func(ctx context.Context) (int, error) {
		hs := make([]*JoinHandle[int], len(recs))
		for i, tr := range recs {
			hs[i] = Spawn(ctx, body(tr, rand.New(rand.NewPCG(seed, uint64(i)))))
			tr.h.Store(hs[i])
		}
		for _, h := range hs {
			if _, err := h.Join(ctx); err != nil && !errors.Is(err, context.Canceled) {
				return 0, err
			}
		}
		return 0, nil
	})
	if err != nil {
		t.Error(err)
	}
	wg.Wait()
	hang.Stop()

	counts := map[string]int{}
	for i, tr := range recs {
		for j := range tr.waits {
			r := &tr.waits[j]
			fail := func(format string, args ...any) {
				t.Errorf("task %d wait %d (mode %d): %s", i, j, r.mode, fmt.Sprintf(format, args...))
			}
			if r.ends != 1 {
				fail("ended %d times", r.ends)
				continue
			}
			if r.err != nil && !errors.Is(r.err, context.Canceled) {
				fail("Suspend returned %v", r.err)
			}
			switch r.mode {
			case modeRegisterFalse, modeSelfFalse:
				if r.registered && r.err != nil {
					fail("register returned false but Suspend returned %v", r.err)
				}
				if !r.registered && r.err == nil {
					fail("register did not run, yet Suspend returned nil")
				}
				if r.registered {
					counts["register false"]++
				} else {
					counts["cancelled before register"]++
				}
			case modeWake, modeSelfWake:
				woke := r.woke.Load() == 1
				if woke != (r.err == nil) {
					fail("Wake returned %v but Suspend returned %v", woke, r.err)
				}
				if !r.wake && r.err == nil {
					fail("no Wake, yet Suspend returned nil")
				}
				if woke {
					counts["woken"]++
				} else {
					counts["cancelled"]++
				}
			case modeIO:
				if r.err == nil && r.res != 1 {
					fail("Submit returned res %d and no error", r.res)
				}
				if r.err == nil {
					counts["received"]++
				} else {
					counts["recv cancelled"]++
				}
			}
		}
	}
	if n := staleTrue.Load(); n != 0 {
		t.Errorf("a Waker of an ended wait returned true %d times", n)
	}
	if n := twiceTrue.Load(); n != 0 {
		t.Errorf("a second Wake of one wait returned true %d times", n)
	}
	left := 0
	for _, tr := range recs {
		unix.SetNonblock(tr.a, true)
		var p [256]byte
		for {
			k, err := unix.Read(tr.a, p[:])
			if k <= 0 || err != nil {
				break
			}
			left += k
		}
	}
	if w, r := written.Load(), received.Load(); r+int64(left) != w {
		t.Errorf("wrote %d bytes, received %d through Submit and %d left over", w, r, left)
	}
	t.Logf("outcomes: %v", counts)
}
