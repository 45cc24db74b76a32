package runtime

import (
	"time"

	"github.com/faio-go/faio/modules/timerwheel"
	"github.com/faio-go/faio/modules/watchdog"
)

// MinStallThreshold is the smallest Config.StallThreshold New accepts (see
// package watchdog, which samples every half threshold while any worker is
// awake and sleeps while all are parked).
const MinStallThreshold = watchdog.MinThreshold

// runSample is what a worker runs, for the watchdog: a task on a coroutine.
type runSample struct {
	c    *coro
	task *Task // c.watched when sampled
}

// watchedWorkers shows the runtime's workers to its watchdog.
type watchedWorkers Runtime

func (r *watchedWorkers) NumWorkers() int { return len(r.workers) }

func (r *watchedWorkers) Sample(i int) watchdog.Sample {
	w := r.workers[i]
	s := watchdog.Sample{Heartbeat: w.heartbeat.Load(), Parked: w.parked.Load()}
	if c := w.current.Load(); c != nil {
		// The task as well as its coroutine: a worker runs task after
		// task on one pooled coroutine, inline (runInline) or not, and
		// the heartbeat moves only every heartbeatTicks ticks, so the
		// coroutine alone made a stall of the next task there pass for
		// the previous one's, reported already, and the tasks queued
		// behind it waited for the stall to end (found when a faiohttp
		// handler blocking in a plain select held up the watch for its
		// client, spawned to its worker's LIFO slot).
		s.Running = runSample{c, c.watched.Load()}
		s.Waiting = w.local.Len() + w.inbox.Len()
		if w.pinned {
			s.Waiting += int(w.mineLen.Load()) + w.placed.Len()
		}
		if w.lifo.Load() != nil {
			// A task woken by the blocked one waits in its LIFO slot.
			s.Waiting++
		}
		if due := w.wheel.Next(); due != timerwheel.NoDeadline && (*Runtime)(r).now() >= w.aTickAfter(due) {
			// So do its overdue timers: the sleeper woken below fires
			// them (firePeerTimers).
			s.Waiting++
		}
		// And so does its ring's work: I/O completions it has not
		// reaped, and operations it prepared and has not submitted yet
		// (a socket's, which wait for the worker to run out of tasks).
		// The sleeper woken below takes them (reapStuckPeers; on a
		// pinned worker they wait for it, but are reported), so the
		// stall is reported even when no task is queued: a task whose
		// Accept waited on the ring of a worker held by a plain Go call
		// saw its connection 3 s late, with no report.
		// Stranded reads the ring's shared memory, which Close unmaps:
		// Close stops the watchdog (Stop waits for this goroutine)
		// before it closes the rings, and New closes a ring only
		// before the watchdog starts.
		s.Waiting += w.io.Stranded()
	}
	return s
}

// Stalled reports the stall and wakes a sleeper directly to steal the
// waiting tasks: WorkerToNotify would decline while someone searches, but
// the searchers may all be stuck behind this worker.
func (r *watchedWorkers) Stalled(i int, what any, d time.Duration, waiting int) {
	run := what.(runSample)
	// Marked before OnStall runs, which may take a while.
	r.markStuck(i, run)
	if f := r.cfg.OnStall; f != nil {
		f(StallInfo{Worker: i, TaskID: run.task.ID(), Running: d, Waiting: waiting})
	}
	r.wakePeer(i)
}

// markStuck records that worker i is stuck on run (see worker.stuck):
// thieves may now take the tasks not yet started from a pinned worker, and
// peers reap the ring of one that is not pinned. Not if the worker has
// moved on since the sample: the mark ends at its next resumption, and
// one made after that would name a run that is not stuck.
func (r *watchedWorkers) markStuck(i int, run runSample) {
	w := r.workers[i]
	w.stalledOn.Store(run.c)
	if w.current.Load() != run.c || run.c.watched.Load() != run.task {
		// Moved on meanwhile, to another coroutine or to another task
		// on the same one (runInline names the task before it clears
		// the mark; a resumption may have cleared it before this
		// store): undo it, unless it is a new one's.
		w.stalledOn.CompareAndSwap(run.c, nil)
	}
}

// Rescue wakes a parked peer of worker i, which is still held by the run
// of a stall already reported with work waiting behind it: the peer woken
// by the report may have taken what waited then and gone back to sleep,
// and tasks woken onto the held worker since (into its inbox, where a
// Wake from anywhere puts a task that suspended there) would otherwise
// wait for as long as the stall lasts. It is called on every sample of
// the watchdog (StallThreshold/2) while that lasts; a peer that is awake
// searches the held worker's queues by itself.
func (r *watchedWorkers) Rescue(i int, what any, waiting int) {
	// A stall reported once is the same stall to the watchdog after the
	// task resumed and blocked again within a sample's time (the worker's
	// heartbeat moves only every heartbeatTicks ticks), and the mark
	// ended with that resumption: set it again, or peers would not reap
	// the worker's ring for the whole second block.
	r.markStuck(i, what.(runSample))
	r.wakePeer(i)
}

// wakePeer wakes a parked peer of worker i.
func (r *watchedWorkers) wakePeer(i int) {
	for _, v := range r.workers {
		if v.id != i && v.parked.Load() {
			v.unpark()
			return
		}
	}
}
