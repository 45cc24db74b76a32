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

// watchedWorkers shows the runtime's workers to its watchdog.
type watchedWorkers Runtime

func (r *watchedWorkers) NumWorkers() int { return len(r.workers) }

func (r *watchedWorkers) Sample(i int) watchdog.Sample {
	w := r.workers[i]
	s := watchdog.Sample{Heartbeat: w.heartbeat.Load(), Parked: w.parked.Load()}
	if c := w.current.Load(); c != nil {
		s.Running = c
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
	}
	return s
}

// Stalled reports the stall and wakes a sleeper directly to steal the
// waiting tasks: WorkerToNotify would decline while someone searches, but
// the searchers may all be stuck behind this worker.
func (r *watchedWorkers) Stalled(i int, running any, d time.Duration, waiting int) {
	if f := r.cfg.OnStall; f != nil {
		f(StallInfo{Worker: i, TaskID: running.(*coro).taskID.Load(), Running: d, Waiting: waiting})
	}
	// Thieves may now take the tasks not yet started from a pinned
	// worker (see worker.stuck).
	r.workers[i].stalledOn.Store(running.(*coro))
	for _, v := range r.workers {
		if v.id != i && v.parked.Load() {
			v.unpark()
			return
		}
	}
}
