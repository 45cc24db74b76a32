package runtime

import (
	"fmt"
	goruntime "runtime"
	"sync/atomic"
	"time"

	"github.com/faio-go/faio/modules/ringq"
	"github.com/faio-go/faio/modules/timerwheel"
)

// worker runs tasks on one goroutine: its loop takes the next task from its
// local queue (the global queue every GlobalQueueInterval ticks), steals
// half of the busiest worker's queue when its own is empty, drives its ring
// and timer wheel, and sleeps on its driver (the netpoller, for a ring) when
// there is nothing to do.
type worker struct {
	// Set when the runtime starts, then only read, by every worker.
	id    int
	rt    *Runtime
	local *ringq.LocalQueue[*Task]
	inbox *ringq.GlobalQueue[*Task] // woken tasks: see pushWoken
	io    engine
	// The timer wheel is this worker's, but not only its own to fire: a
	// worker that Go has descheduled, or that runs a long task, must not
	// hold up its timers, so a peer fires them once they are a tick
	// overdue (Go's scheduler runs the timers of any P the same way).
	wheel *timerwheel.Shared[Waker]
	// Config.PinnedWorkers: this worker's goroutine is locked to its
	// thread, which alone may resume the coroutines it created (coro.owner).
	pinned bool
	// placed holds the fresh tasks Spawn placed on this pinned worker from
	// other workers (see spreadTarget); nil on other workers.
	placed  *ringq.GlobalQueue[*Task]
	fireFn  func(Waker)
	stopped chan struct{} // made again when onExit restarts the loop

	// Peers write these, or read them while the owner writes some at every
	// spawn or resumption: they sit on cache lines of their own, apart
	// from the read-only fields above and the owner's below, which would
	// otherwise miss in cache whenever a thief, a waker or the watchdog
	// looks (W1 spent 15% of newTask loading a field from the line that
	// held parked and isSearch).
	_ cacheLinePad
	// lifo holds the task this worker's running task spawned last: it
	// runs next, while its spawner's data is still in cache, and without
	// waking another worker (a spawn-then-join costs no wake-up at all).
	// Thieves may take it too (Swap), so a blocked worker strands nothing.
	lifo     atomic.Pointer[Task]
	isSearch atomic.Bool // searching, for thieves choosing a victim
	parked   atomic.Bool // asleep (or about to be) in its driver's Wait
	// loopG and current identify the worker's own goroutine and the
	// coroutine it resumed last: a Wake called on either is local, so the
	// woken task can run here next without waking anybody. current is the
	// one atomic store per resumption; it is cleared only when the loop
	// turns to work that may take long (drive, park), which is what the
	// watchdog needs, and before its coroutine's goroutine ends.
	loopG     atomic.Uintptr
	current   atomic.Pointer[coro]
	heartbeat atomic.Uint64 // bumped every heartbeatTicks ticks, for the watchdog
	// load counts the live tasks placed on a pinned worker or started by
	// it (see spreadTarget).
	load    atomic.Int64
	mineLen atomic.Int32 // len(mine), for the watchdog
	// stalledOn is the coroutine the watchdog last saw this worker stuck
	// on (Config.StallThreshold), cleared at the next resumption: while
	// it is set, thieves may take tasks not yet started from this pinned
	// worker (its LIFO slot, local queue and placed), Spawn places
	// nothing here, and peers reap this worker's ring if it is not
	// pinned (reapStuckPeers).
	stalledOn atomic.Pointer[coro]
	stats     workerStats
	_         cacheLinePad

	// The owner's: its loop and the tasks it resumes.
	// hazard is the object the running task announces it uses (see
	// Hazard); destroyers read it, rarely.
	hazard   Hazard
	lifoRuns int // consecutive LIFO runs this tick, bounded by maxLIFORuns
	// nested is set while a task runs on another task's goroutine
	// (RunNext); nestedRuns counts such runs since the loop last chose a
	// task, bounded by maxNestedRuns.
	nested     bool
	nestedRuns int
	// oweTo is the parent of tasks that finished here and left the tree,
	// and owed how many of them its kids still counts (see owe).
	oweTo *Task
	owed  int64

	tick      uint32
	searching bool // counted as searching in rt.sm (isSearch tells peers)

	runningTask *Task // the task being resumed
	yieldOwed   bool  // a goroutine this worker woke waits for its P (see callerWorker)
	handoff     *Task // runInline's pick, or a pausing spawner, for the loop to resume next

	coros []*coro // idle coroutines
	// retired holds the coroutines of tasks that called runtime.Goexit on
	// a pinned worker (see coro.retire), stopped last at shutdown.
	retired []*coro
	// mine is a pinned worker's queue of tasks that have started and are
	// runnable (a Yield, a LIFO task pushed back): only this worker may
	// run them, so they need neither the local queue, whose tasks may be
	// stolen, nor the locked inbox.
	mine taskFIFO
	// behind is a pinned worker's task spawning in a loop (chargeSpawn),
	// which runs again once behindWait more tasks of the local queue have
	// (those queued when it yielded: its children), or the queue is
	// empty. mine would bring it back after two of them, and the local
	// queue, stealable and overflowing into the global queue, is no place
	// for a task that has started.
	behind     *Task
	behindWait int
	// spreadFrom is where spreadTarget looks next among the other
	// workers.
	spreadFrom int
	batch      []*Task // scratch for global-queue refills and inbox drains
	pollBuf    pollBuf // scratch for the readiness poller's events (see RegisterFD)
	counts     localCounts
	// lastLook is when timersDueAt last looked on a timerCheckTicks tick;
	// slowTicks, whether the ticks before it were long (see timersDueAt).
	lastLook  time.Duration
	slowTicks bool
	_         cacheLinePad // apart from whatever the allocator puts next
}

// cacheLinePad keeps the fields after it off the cache lines of those
// before it (64-byte lines, which amd64 prefetches in pairs).
type cacheLinePad [128]byte

// heartbeatTicks: every this many ticks the worker proves to the watchdog
// that its loop moves, and publishes its counters.
const heartbeatTicks = 16

// maxLIFORuns bounds consecutive runs from the LIFO slot: two tasks that
// keep spawning each other must not starve the queues (tokio uses 3).
const maxLIFORuns = 3

// localTurn: a worker serves its inbox (woken tasks: ring completions,
// timers, wake-ups from other workers) before its local queue (new tasks,
// tasks that yielded, tasks woken by its own tasks once the LIFO slot is
// taken), except on every localTurn-th tick, when the local queue goes
// first. A woken task has waited already, for its timer or its I/O, and
// usually runs briefly; a new task costs a coroutine. With the two taking
// turns one for one, a burst of spawns held the wake-ups back: W5 (100,000
// tasks that sleep 1-100 ms, spawned at once) fired timers faster than one
// turn in two could serve them, and sleep lateness reached a p99 of 19-30
// ms (4 runs); woken first, 4.4-5.7 ms (4 runs; one turn in 16 for the local
// queue: 9.5-24 ms), with the same wall time. The local queue still gets a
// turn in every localTurn while wake-ups stream in, and thieves take from it
// first, so nothing there waits for ever.
const localTurn = 64

// maxIdleCoros bounds each worker's pool of idle coroutines; beyond it they
// are stopped (about 8 KiB of stack each).
const maxIdleCoros = 256

func (w *worker) loop() {
	defer close(w.stopped)
	defer w.onExit()
	rt := w.rt
	w.loopG.Store(getg())
	if w.pinned {
		// For good: the thread ends with the goroutine, at shutdown.
		goruntime.LockOSThread()
		defer w.unpinAtShutdown()
	}
	for !rt.shutdown.Load() {
		if w.yieldOwed {
			// A goroutine this worker woke waits for its P (see
			// callerWorker).
			w.yieldOwed = false
			goruntime.Gosched()
		}
		w.tick++
		if w.tick%heartbeatTicks == 0 {
			w.heartbeat.Add(1)
			w.counts.publish(&w.stats)
		}
		if w.tick%uint32(rt.cfg.IOInterval) == 0 {
			w.drive()
		} else if w.timersDueAt(w.tick) {
			w.fireTimers()
		}
		t := w.nextTask()
		if t == nil {
			t = w.steal()
		}
		w.settle(t)
		if t != nil {
			if w.searching {
				w.stopSearching(true)
			}
			w.nestedRuns = 0
			w.runTask(t)
			continue
		}
		if w.searching {
			w.stopSearching(false)
		}
		if w.drive() > 0 {
			continue
		}
		w.park()
	}
	w.pay()
	// park publishes only when it sleeps, and a worker that finds the
	// runtime shut down does not: without this, Stats after Close could
	// miss the last tasks it completed for good.
	w.counts.publish(&w.stats)
}

// unpinAtShutdown ends a pinned worker, on its thread, which alone may
// switch to its coroutines: it stops its idle coroutines, and last the
// coroutines of tasks that called runtime.Goexit. Stopping one of
// those lets its Goexit finish, which iter.Pull passes on to this
// goroutine: each is therefore stopped from a deferred call of the stop
// before it (stopRetired), and the goroutine ends as Goexit ends it.
func (w *worker) unpinAtShutdown() {
	if !w.rt.shutdown.Load() {
		return // onExit reports it
	}
	w.current.Store(nil)
	for _, c := range w.coros {
		c.stop()
	}
	w.coros = nil
	retired := w.retired
	w.retired = nil
	stopRetired(retired)
}

// stopRetired stops cs in order, each from a deferred call of the stop
// before it (see unpinAtShutdown).
func stopRetired(cs []*coro) {
	if len(cs) == 0 {
		return
	}
	defer stopRetired(cs[1:])
	cs[0].stop()
}

// onExit turns a runtime.Goexit called by a task (t.FailNow in a test, say)
// into that task's failure and restarts the worker loop, so one bad task
// cannot take a worker away. Panics pass through untouched.
func (w *worker) onExit() {
	// This goroutine is ending, and Go may give its identity to a new one:
	// from now on it must not pass for the worker's loop (localWorker).
	w.loopG.Store(0)
	if w.rt.shutdown.Load() {
		return
	}
	if r := recover(); r != nil {
		panic(r)
	}
	if w.pinned {
		// A task's Goexit never gets here (coro.retire); this one came
		// from code the loop itself ran, and the thread it ends owned
		// the worker's suspended tasks and ring.
		panic(fmt.Sprintf("faio/runtime: runtime.Goexit on pinned worker %d outside a task (Config.PinnedWorkers): its thread, and the tasks suspended on it, are gone", w.id))
	}
	if t := w.runningTask; t != nil {
		w.runningTask = nil
		if c := t.coro.Load(); c != nil {
			c.goid.Store(0) // its goroutine is gone; the g may be reused
		}
		t.bind(nil)
		t.body.fail(ErrGoexit)
		// Completed while current still names the coroutine, which still
		// watches t: completing may take a while (it stops the AfterFunc
		// on the task's spawn context, which runs that context's code),
		// and the watchdog names the task that holds the worker from
		// what the current coroutine runs (see Sample), as runTask
		// completes a finished task before pooling its coroutine. Its
		// goid is 0 already, so no goroutine passes for it meanwhile.
		w.rt.finish(t, w)
	}
	// The coroutine that called Goexit is gone.
	w.current.Store(nil)
	w.stopped = make(chan struct{})
	w.rt.workerWG.Add(1)
	go func() {
		defer w.rt.workerWG.Done()
		w.loop()
	}()
}

// runTask resumes t on this worker until it finishes or switches away.
func (w *worker) runTask(t *Task) {
	c := t.coro.Load()
	if w.pinned {
		if c != nil && c.owner != w {
			// A started task taken from a pinned worker (a peer's
			// overdue timer, a steal): only its owner may resume it.
			w.rt.wakeOn(c.owner, t)
			return
		}
		if c == nil {
			w.adopt(t)
		}
	}
	t.worker = w
	if c == nil {
		if n := len(w.coros); n > 0 {
			c = w.coros[n-1]
			w.coros = w.coros[:n-1]
			c.task = t
			c.watched.Store(t)
			t.bind(c)
		} else {
			c = newCoro(w, t)
			w.stats.corosCreated.Add(1)
		}
	}
	c.budget = 0
	w.runningTask = t
	// A stall, if one was reported, ends as the worker resumes a task
	// (the coroutine it named is pooled and reused).
	if w.stalledOn.Load() != nil {
		w.stalledOn.Store(nil)
	}
	if w.current.Load() != c {
		// Mostly it is c already: the pool hands out the coroutine
		// it took back last.
		w.current.Store(c)
	}
	c.next()
	t = c.task // runInline may have run others after t (nil: finished)
	w.runningTask = nil
	w.counts.polls++
	switch c.yieldReason {
	case reasonDone:
		c.task = nil // no longer t's coroutine, for isRunning
		// Completed before its coroutine is pooled, which unnames the
		// task: completing may take a while (it stops the AfterFunc
		// on the task's spawn context, which runs that context's code)
		// and the watchdog names the task that holds the worker from
		// what the current coroutine runs (see Sample), as runInline
		// completes a task on its coroutine.
		w.finish(t)
		w.poolCoro(c)
	case reasonFinished:
		w.poolCoro(c)
	case reasonYield:
		w.pushRunnable(t)
	case reasonBehind:
		if w.behind == nil {
			w.behind, w.behindWait = t, w.local.Len()
		} else {
			w.pushRunnable(t) // a spawner under a spawner: mine, as any yield
		}
	case reasonPause:
		if w.nested {
			// Run by RunNext, whose caller goes on first: handoff is
			// for the loop's next choice, which may come after the
			// caller or another nested task paused in turn.
			w.pushRunnable(t)
			break
		}
		// The loop's periodic work, for a spawner that does not leave:
		// with each pause a single tick, the IOInterval ticks that reap
		// the ring would otherwise come only every IOInterval pauses.
		w.drive()
		w.handoff = t
	case reasonSuspend:
		w.completeSuspend(t)
	case reasonRetired:
		// The task called runtime.Goexit on this pinned worker (or in a
		// nested run) and has failed with ErrGoexit; its coroutine waits
		// for shutdown. Completed before the coroutine stops naming
		// it, for the watchdog, as reasonDone.
		t.bind(nil)
		w.finish(t)
		w.current.Store(nil)
		c.task = nil
		c.watched.Store(nil)
		w.retired = append(w.retired, c)
	}
}

// owe notes that a child of p finished on this worker and left the tree,
// and takes it off p's count later, with its siblings.
//
// Children of one parent tend to finish on a worker one after the other
// (runInline), and each taking itself off p.kids at once passed the
// counter's cache line between the cores that finish them, and the core
// that spawns them, at every task. The worker owes the count only while
// what it runs next is another child of p (settle): that one is alive, so
// p could not have been found childless anyway. At the worker's next
// choice of task, if that is anything else or nothing, the debt is paid
// and p leaves the tree if it is due to: owing delays what waits on the
// tree by the few microseconds of that choice (the loop's ring and timer
// checks) at most, and never past a task of another parent or a park.
func (w *worker) owe(p *Task) {
	if w.oweTo == p {
		w.owed++
		return
	}
	w.pay()
	w.oweTo, w.owed = p, 1
}

// settle pays the worker's debt unless next, the task it is about to run,
// is a child of the parent it owes to (see owe).
func (w *worker) settle(next *Task) {
	if w.oweTo != nil && (next == nil || next.treeParent != w.oweTo) {
		w.pay()
	}
}

// pay takes the owed children off their parent's count.
func (w *worker) pay() {
	p, n := w.oweTo, w.owed
	if p == nil {
		return
	}
	w.oweTo, w.owed = nil, 0
	if q := p.release(n); q != nil {
		q.leave(nil)
	}
}

// finish completes t, which ran on this worker.
func (w *worker) finish(t *Task) {
	if w.pinned {
		w.load.Add(-1)
	}
	w.rt.finish(t, w)
}

// adopt counts t, a fresh task about to start on this pinned worker, in its
// load instead of the load of the worker it was placed on (or stolen from).
func (w *worker) adopt(t *Task) {
	if t.worker == w {
		return
	}
	if v := t.worker; v != nil {
		v.load.Add(-1)
	}
	w.load.Add(1)
}

// pinnedSpread is the lead in live tasks from which Spawn, on pinned
// workers, starts a task on the least loaded worker instead of its own:
// two, so that a spawner and the first task it spawns (a pair that talks)
// stay together, while a server's connections alternate.
const pinnedSpread = 2

// spreadTarget returns the worker a task spawned on this pinned worker
// should start on, if not here: the least loaded of up to four others
// (a rotating four) that is not stuck, when this worker has at least
// pinnedSpread more live tasks. A task stays on the worker it starts on,
// so this is the only point at which a server's connections can spread.
func (w *worker) spreadTarget() *worker {
	ws := w.rt.workers
	if len(ws) < 2 {
		return nil
	}
	mine := w.load.Load()
	var best *worker
	least := mine - pinnedSpread + 1
	others := len(ws) - 1
	n := min(others, 4)
	for i := range n {
		v := ws[(w.id+1+(w.spreadFrom+i)%others)%len(ws)]
		if l := v.load.Load(); l < least && !v.stuck() {
			best, least = v, l
		}
	}
	w.spreadFrom = (w.spreadFrom + n) % others
	return best
}

// poolCoro keeps the coroutine of a finished task for the next one.
func (w *worker) poolCoro(c *coro) {
	// Neither keeps the task: a dropped handle's failure is reported
	// when the collector frees it (see reportIfDropped).
	c.task = nil
	c.watched.Store(nil)
	if len(w.coros) < maxIdleCoros {
		w.coros = append(w.coros, c)
	} else {
		// Once stopped, the coroutine's goroutine (and so its g) may
		// be reused: neither this worker's current nor a stale one
		// elsewhere may match it any more.
		w.current.Store(nil)
		c.goid.Store(0)
		c.stop()
	}
}

// runInline runs on coroutine c, on behalf of this worker (whose loop waits
// in c.next), once c's task has finished: it completes that task and, if
// the worker's next task is a fresh one, starts it right here. Two
// coroutine switches per task are saved for as long as fresh tasks follow
// each other. It leaves the loop's periodic work (heartbeat, ring, timers)
// to the loop, and a task that has a coroutine of its own to the loop too,
// through handoff.
func (w *worker) runInline(c *coro) bool {
	rt, next := w.rt, w.tick+1
	if w.nested {
		return false // a nested run is one task's (RunNext)
	}
	if next%heartbeatTicks == 0 || next%uint32(rt.cfg.IOInterval) == 0 || next%uint32(rt.cfg.GlobalQueueInterval) == 0 || rt.shutdown.Load() || w.yieldOwed {
		return false
	}
	if w.timersDueAt(next) {
		return false
	}
	t := c.task
	c.task = nil // no longer t's coroutine, for isRunning (see bind)
	c.yieldReason = reasonFinished
	w.finish(t)
	w.tick = next
	if t = w.nextTask(); t == nil {
		return false
	} else if t.coro.Load() != nil {
		w.handoff = t
		return false
	}
	w.settle(t)
	w.counts.polls++
	if w.pinned {
		w.adopt(t)
	}
	// Named before the mark is cleared: a markStuck for the previous
	// task that this clear misses sees the new name (see markStuck).
	c.watched.Store(t)
	if w.stalledOn.Load() != nil {
		w.stalledOn.Store(nil)
	}
	t.worker = w
	t.bind(c)
	c.task, c.budget = t, 0
	w.runningTask = t
	return true
}

// pushRunnable queues t, runnable, on this worker: in the local queue, or
// on pinned workers in mine if t has started, since no other worker may run
// it. It reports whether a thief may take t now (from the local queue of a
// worker that is not pinned), for the caller to wake one.
func (w *worker) pushRunnable(t *Task) bool {
	if w.pinned && t.coro.Load() != nil {
		w.mine.push(t)
		w.mineLen.Store(int32(w.mine.len()))
		return false
	}
	w.pushLocal(t)
	return !w.pinned
}

// popMine takes the next task from mine, if any.
func (w *worker) popMine() *Task {
	t := w.mine.pop()
	if t != nil {
		w.mineLen.Store(int32(w.mine.len()))
	}
	return t
}

// taskFIFO is a growable FIFO of tasks for one goroutine.
type taskFIFO struct {
	buf  []*Task
	head int
}

func (q *taskFIFO) len() int { return len(q.buf) - q.head }

func (q *taskFIFO) push(t *Task) {
	if q.head > 0 && len(q.buf) == cap(q.buf) && q.head >= len(q.buf)/2 {
		// Reuse the consumed front rather than grow.
		n := copy(q.buf, q.buf[q.head:])
		clear(q.buf[n:])
		q.buf, q.head = q.buf[:n], 0
	}
	q.buf = append(q.buf, t)
}

func (q *taskFIFO) pop() *Task {
	if q.head == len(q.buf) {
		return nil
	}
	t := q.buf[q.head]
	q.buf[q.head] = nil
	q.head++
	if q.head == len(q.buf) {
		q.buf, q.head = q.buf[:0], 0
	}
	return t
}

// pushLocal queues t on this worker; a full queue spills half to the global
// queue.
func (w *worker) pushLocal(t *Task) {
	if err := w.local.Push(t, w.rt.global); err != nil {
		// The global queue refuses only after Close has drained every
		// task, so nothing should be queued here any more; keep t
		// runnable on this worker anyway rather than lose it.
		_ = w.inbox.Push(t)
	}
}

// pushWoken queues a task this worker's ring woke, or a timer this worker
// fired (on its own wheel, or on an overdue peer's: see firePeerTimers).
//
// The inbox is a worker's FIFO of woken tasks: those its ring completed and
// the timers it fired, and those other goroutines woke (a Wake from anywhere
// lands in the inbox of the worker the task suspended on, since only that
// worker's goroutine may touch its local queue). The worker serves it
// before its local queue (see localTurn), so a woken task runs promptly
// even behind a burst of new spawns, which is what keeps sleep lateness
// low. A
// locked queue (ringq.GlobalQueue, never closed) keeps it drainable by
// anyone: a worker that steals from a busy or stalled one takes from its
// inbox too.
func (w *worker) pushWoken(t *Task) {
	if w.pinned {
		if o := t.coro.Load().owner; o != w {
			w.rt.wakeOn(o, t) // a peer's timer, fired here
			return
		}
	}
	_ = w.inbox.Push(t)
}

// nextTask returns the next task from the local queue, or from the global
// queue every GlobalQueueInterval ticks and whenever the local queue is
// empty, refilling the local queue with a batch.
func (w *worker) nextTask() *Task {
	rt := w.rt
	if t := w.handoff; t != nil {
		w.handoff = nil
		return t
	}
	if w.lifo.Load() != nil {
		if w.lifoRuns < maxLIFORuns {
			if t := w.lifo.Swap(nil); t != nil {
				w.lifoRuns++
				return t
			}
		} else if t := w.lifo.Swap(nil); t != nil {
			// Over the bound: the LIFO task goes behind the others.
			w.pushRunnable(t)
		}
	}
	w.lifoRuns = 0
	if w.tick%uint32(rt.cfg.GlobalQueueInterval) == 0 {
		if t, ok := rt.global.Pop(); ok {
			w.stats.globalPops.Add(1)
			return t
		}
	}
	// Woken tasks come first, and the local queue first once every
	// localTurn ticks (see localTurn). On pinned workers, tasks that
	// yielded (mine) take turns with the local queue, and go first once
	// every localTurn ticks too, half a turn from the local queue's, so
	// that a stream of wake-ups starves neither.
	turn := w.tick % localTurn
	if turn != 0 && (!w.pinned || turn != localTurn/2) {
		if t, ok := w.inbox.Pop(); ok {
			return t
		}
	}
	if w.pinned && turn != 0 && w.tick&2 == 0 {
		if t := w.popMine(); t != nil {
			return t
		}
	}
	if t := w.behind; t != nil && (w.behindWait <= 0 || w.local.Len() == 0) {
		w.behind = nil
		return t
	}
	if t, ok := w.local.Pop(); ok {
		if w.behind != nil {
			w.behindWait--
		}
		return t
	}
	if w.pinned {
		if t, ok := w.placed.Pop(); ok {
			return t
		}
		if t := w.popMine(); t != nil {
			return t
		}
	}
	if t, ok := w.inbox.Pop(); ok {
		return t
	}
	if rt.global.Len() == 0 {
		return nil
	}
	n := min(w.local.RemainingCap(), w.local.Cap()/2)
	w.batch = rt.global.PopBatch(w.batch[:0], n)
	if len(w.batch) == 0 {
		return nil
	}
	w.stats.globalPops.Add(uint64(len(w.batch)))
	t := w.batch[len(w.batch)-1]
	w.local.PushBatch(w.batch[:len(w.batch)-1])
	clear(w.batch)
	return t
}

// steal looks for work elsewhere: half of the busiest non-searching
// worker's queue (or its inbox), else one task from the global queue. At
// most half of the workers search at once.
func (w *worker) steal() *Task {
	rt := w.rt
	if !w.searching {
		if !rt.sm.TrySearch() {
			return nil
		}
		w.searching = true
		w.isSearch.Store(true)
	}
	var victim *worker
	most := 0
	for _, v := range rt.workers {
		if v == w || v.isSearch.Load() || v.pinned && !v.stuck() {
			continue
		}
		n := v.local.Len()
		if v.pinned {
			n += v.placed.Len()
		} else {
			n += v.inbox.Len()
		}
		if n > most {
			victim, most = v, n
		}
	}
	if victim == nil {
		// Nobody has a queue; a busy worker may still hold a LIFO task.
		for _, v := range rt.workers {
			if v != w && !v.isSearch.Load() && v.lifo.Load() != nil && v.current.Load() != nil {
				if v.pinned {
					// Only from a stuck worker (see stuck), and only a
					// task not yet started: one with no coroutine (a
					// task started since the check is sent back by
					// runTask).
					if !v.stuck() {
						continue
					}
					if t := v.lifo.Load(); t != nil && t.coro.Load() == nil && v.lifo.CompareAndSwap(t, nil) {
						w.stats.steals.Add(1)
						w.stats.stolen.Add(1)
						return t
					}
					continue
				}
				if t := v.lifo.Swap(nil); t != nil {
					w.stats.steals.Add(1)
					w.stats.stolen.Add(1)
					return t
				}
			}
		}
	}
	if victim != nil {
		w.stats.stealAttempts.Add(1)
		if t, ok := victim.local.StealInto(w.local); ok {
			w.stats.steals.Add(1)
			w.stats.stolen.Add(uint64(1 + w.local.Len()))
			return t
		}
		// The victim is busy (or stalled) with woken tasks waiting: take
		// half of them. A pinned worker's inbox holds tasks that have
		// started, which no other worker may run; the tasks Spawn placed
		// on it have not.
		from := victim.inbox
		if victim.pinned {
			from = victim.placed
		}
		if from.Len() > 0 {
			w.batch = from.PopBatch(w.batch[:0], (from.Len()+1)/2)
			if n := len(w.batch); n > 0 {
				w.stats.steals.Add(1)
				w.stats.stolen.Add(uint64(n))
				t := w.batch[n-1]
				for _, u := range w.batch[:n-1] {
					w.pushLocal(u)
				}
				clear(w.batch)
				return t
			}
		}
	}
	if t, ok := rt.global.Pop(); ok {
		w.stats.globalPops.Add(1)
		return t
	}
	return nil
}

// stuck reports whether this worker still runs the coroutine the watchdog
// found it stuck on (or is in its loop right after it: a peer reaping the
// ring then is harmless, see startIO); peers reap its ring only then
// (reapStuckPeers). Other workers take tasks from a pinned worker only
// then, and only tasks not yet started (its local queue and LIFO slot):
// Spawn placed those where they are, spreading them by load (see
// spreadTarget), and a thief taking them while their worker is merely
// busy for a moment would undo that (a spawner that never suspends would
// see every task it spawns taken by an idle peer) and part pairs that
// talk.
func (w *worker) stuck() bool {
	c := w.current.Load()
	return c != nil && w.stalledOn.Load() == c
}

// stopSearching leaves the searching state. A searcher that found work and
// was the last one wakes another worker, so the pool ramps up while there
// is work (the Go scheduler's rule for its last spinning M).
func (w *worker) stopSearching(foundWork bool) {
	w.searching = false
	w.isSearch.Store(false)
	if w.rt.sm.TransitionFromSearching() && foundWork {
		w.rt.notifyOne()
	}
}

// hasWork reports whether any queue this worker could take from holds a
// task: checked after announcing sleep, it closes the lost-wake-up window
// (see the statemachine package comment).
func (w *worker) hasWork() bool {
	rt := w.rt
	if w.inbox.Len() > 0 || rt.global.Len() > 0 || w.local.Len() > 0 || w.lifo.Load() != nil || w.pinned && (w.mine.len() > 0 || w.placed.Len() > 0 || w.behind != nil) {
		return true
	}
	// A cancellation request for an operation on our ring is work too:
	// requestCancel pushes it and then checks parked, we store parked and
	// then check here, so one of us sees the other.
	if w.io.CancelPending() {
		return true
	}
	for _, v := range rt.workers {
		// A pinned peer's queues are its own: the watchdog wakes a
		// sleeper if that peer gets stuck.
		if v != w && !w.pinned && (v.local.Len() > 1 || v.inbox.Len() > 0) {
			return true
		}
	}
	return false
}

// park sleeps until a wake-up (eventfd), an I/O completion or the next timer.
func (w *worker) park() {
	rt := w.rt
	w.yieldOwed = false // parking gives up the P
	w.parked.Store(true)
	rt.sm.SetSleeping(w.id, false)
	if !w.hasWork() && !rt.shutdown.Load() {
		timeout := time.Duration(-1)
		if d := w.timersDue(); d != timerwheel.NoDeadline {
			timeout = max(d-rt.now(), 0)
		}
		w.stats.parks.Add(1)
		w.counts.publish(&w.stats)
		w.io.Wait(timeout)
	}
	w.parked.Store(false)
	if d := rt.watchdog; d != nil {
		d.WakeUp()
	}
	if rt.sm.CancelSleeping(w.id) {
		// WorkerToNotify picked us: we count as searching.
		w.searching = true
		w.isSearch.Store(true)
	}
	w.drive()
}

// unpark wakes w if it is asleep. The CAS makes concurrent wakers write the
// eventfd once per sleep.
func (w *worker) unpark() {
	if w.parked.CompareAndSwap(true, false) {
		w.stats.wakes.Add(1)
		w.io.Wake()
	}
}

// drive reaps completions and fires due timers without blocking; it returns
// how many tasks that made runnable.
func (w *worker) drive() int {
	w.current.Store(nil)
	n := w.io.Reap()
	if p := w.rt.fdpReady.Load(); p != nil {
		n += p.collect(w.pollEvents(), false)
	}
	if w.wheel.Next() != timerwheel.NoDeadline {
		n += w.fireTimers()
	}
	n += w.firePeerTimers()
	n += w.reapStuckPeers()
	if n > 0 && !w.pinned && w.inbox.Len()+w.local.Len() > 1 {
		// Tasks are queued behind the one this worker runs next: tell a
		// sleeping worker, unless somebody already searches, so that a
		// server's connections spread over the workers instead of all
		// staying on the ring that woke them (tokio's rule for work
		// queued while no worker searches).
		w.rt.notifyOne()
	}
	return n
}

// timerCheckTicks: a busy worker compares its wheel's next deadline with
// the clock every this many ticks, so that a worker busy with long tasks
// still fires its timers on time. Not every tick: a clock read costs
// 50-110 ns on a virtual machine (kvm-clock), as much as a task switch,
// and was 8% of the CPU of two tasks waking each other under contexts
// with deadlines. While ticks are long (slowTick), it looks every tick
// again: a task yielding every few milliseconds then delays a timer by
// one of its runs, not by this many (a Sleep amid 3 ms slices woke 7
// slices after its start instead of 4, and a 10 ms Delay interval lost
// half its ticks). Its worker's drive, every IOInterval ticks and before
// it sleeps, fires timers too.
const timerCheckTicks = 4

// timersDueAt reports whether tick is one that looks at the clock and the
// worker's earliest timer is due (only while any is armed).
func (w *worker) timersDueAt(tick uint32) bool {
	on := tick%timerCheckTicks == 0
	if !on && !w.slowTicks {
		return false
	}
	due := w.wheel.Next()
	if due == timerwheel.NoDeadline {
		return false
	}
	now := w.rt.now()
	if on {
		// Ticks of slowTick or more (tasks that run that long) make a
		// clock read cheap beside them: look every tick then, so a timer
		// is late by one task run, not timerCheckTicks of them.
		w.slowTicks = now-w.lastLook >= timerCheckTicks*slowTick
		w.lastLook = now
	}
	return now >= due
}

// slowTick: a tick this long costs a clock read per tick under 1%.
const slowTick = 10 * time.Microsecond

// fireTimers fires this worker's due timers.
func (w *worker) fireTimers() int {
	w.current.Store(nil)
	return w.wheel.Advance(w.rt.now(), w.fireFn)
}

// firePeerTimers fires, onto this worker, the timers of any peer that are a
// tick overdue: that peer is running a long task or waits for an OS thread.
// A peer busy firing them itself (its wheel locked) is left alone.
func (w *worker) firePeerTimers() int {
	n, now := 0, time.Duration(-1)
	for _, v := range w.rt.workers {
		due := v.wheel.Next()
		if v == w || due == timerwheel.NoDeadline {
			continue
		}
		if now < 0 {
			now = w.rt.now()
		}
		if now >= w.aTickAfter(due) {
			fired, _ := v.wheel.TryAdvance(now, w.fireFn)
			w.stats.peerTimers.Add(uint64(fired))
			n += fired
		}
	}
	return n
}

// reapStuckPeers reaps, for a peer the watchdog finds stuck on one task
// (a task blocked in plain Go: see stuck), the completions on that peer's
// ring, and submits what it prepared: the tasks those wake go to its
// inbox, where this worker steals them. Without it they waited for the
// blocked call to return, however long: another connection's receive,
// the accept of a loop whose task last ran there (Go hands a P blocked in
// a system call to another thread for the same reason). Pinned workers
// neither take nor give: their rings belong to their threads. A worker
// that is not stuck pays two loads per peer here.
func (w *worker) reapStuckPeers() int {
	if w.pinned {
		return 0
	}
	n := 0
	for _, v := range w.rt.workers {
		if v == w || v.pinned || !v.stuck() || v.io.Stranded() == 0 {
			continue
		}
		if m, ok := v.io.TryReap(); ok {
			w.stats.peerReaps.Add(1)
			n += m
			if m > 0 && v.parked.Load() {
				// The stall ended meanwhile and v went to sleep: the
				// tasks are in its inbox (pushWoken).
				v.unpark()
			}
		}
	}
	return n
}

// timersDue returns when this worker must next look at the timers: its own
// earliest deadline, or a tick after that of a peer that is not asleep (a
// sleeping peer wakes for its own). A peer overdue already has its wheel
// locked (drive just tried it): look again in a tick rather than spin.
func (w *worker) timersDue() time.Duration {
	due, now := w.wheel.Next(), w.rt.now()
	for _, v := range w.rt.workers {
		if d := v.wheel.Next(); v != w && d != timerwheel.NoDeadline && !v.parked.Load() {
			due = min(due, w.aTickAfter(max(d, now)))
		}
	}
	return due
}

// aTickAfter is d plus one timer tick, saturated at NoDeadline.
func (w *worker) aTickAfter(d time.Duration) time.Duration {
	if res := w.rt.cfg.TimerResolution; d <= timerwheel.NoDeadline-res {
		return d + res
	}
	return timerwheel.NoDeadline
}

// armTimer puts c's task on the wheel at wheel time at, on behalf of the
// suspension named in wk; the task cancels the entry if it resumes first.
// The caller holds the wheel's lock (see completeSuspend).
func (w *worker) armTimer(c *coro, at time.Duration, wk Waker) {
	c.timer = w.wheel.Insert(at, wk)
	c.timerWorker = w
}

// pushWakeLocal queues t, woken by code running on this worker (its loop or
// the task it is resuming), in the LIFO slot: it runs as soon as the waker
// suspends, on this worker, with no cross-thread wake-up. This is what makes
// a ping-pong between two tasks cost two coroutine switches. The task the
// slot held moves to the queue, where another worker may steal it (on a
// pinned worker: to mine if it has started, see pushRunnable).
func (w *worker) pushWakeLocal(t *Task) {
	t.worker = w
	if prev := w.lifo.Swap(t); prev != nil && w.pushRunnable(prev) {
		w.rt.notifyOne()
	}
}

// fireTimer wakes a sleeping task whose deadline has come.
func (w *worker) fireTimer(wk Waker) {
	t := wk.task()
	if t == nil {
		wk.Wake()
		return
	}
	gen := wk.gen & wakeGenMask
	if wk.gen&wakeDeadline != 0 {
		// The wait's context reached its deadline.
		t.cancelWait(gen)
		return
	}
	if won, _ := t.claim(gen, stWoken); won {
		// Won the wake: the task is not running, its fields are ours.
		t.coro.Load().timerWorker = nil
		w.pushWoken(t)
	}
}

// localCounts are counters of the hottest events, kept in plain fields by
// the worker (and the tasks it resumes, which run on its behalf) and
// published to workerStats every heartbeatTicks ticks and before parking:
// an atomic add per resumption would cost more than the rest of the
// bookkeeping together.
type localCounts struct {
	spawned, completed, polls uint64
}

func (l *localCounts) publish(s *workerStats) {
	s.spawned.Store(l.spawned)
	s.completed.Store(l.completed)
	s.polls.Store(l.polls)
}

// workerStats are the worker's counters, written by the worker and read
// by Stats.
type workerStats struct {
	spawned, completed, polls, steals, stolen, stealAttempts, parks, wakes, globalPops atomic.Uint64
	corosCreated, peerTimers, peerReaps                                                atomic.Uint64
}
