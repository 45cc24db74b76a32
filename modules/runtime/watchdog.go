package runtime

import (
	"sync/atomic"
	"time"
)

// watchdog notices a worker held by one task (a plain Go blocking call, a
// long computation) while other tasks wait in its queues, and wakes a
// sleeping worker to steal them: the hazard of tokio-rs/tokio#4730, where
// one blocking task stalls every task queued behind it.
//
// It samples each worker's current coroutine and heartbeat (bumped every
// heartbeatTicks ticks of its loop) every half threshold: both unchanged,
// with a coroutine running, means one resumption has held the worker since
// the last sample. The hot path pays nothing beyond the current-coroutine
// stores it makes anyway.
type watchdog struct {
	rt     *Runtime
	stalls atomic.Uint64
	quit   chan struct{}
	done   chan struct{}
}

func startWatchdog(rt *Runtime) *watchdog {
	d := &watchdog{rt: rt, quit: make(chan struct{}), done: make(chan struct{})}
	go d.run()
	return d
}

func (d *watchdog) stop() {
	close(d.quit)
	<-d.done
}

type workerSample struct {
	coro      *coro
	heartbeat uint64
	since     time.Time
	reported  bool
}

func (d *watchdog) run() {
	defer close(d.done)
	threshold := d.rt.cfg.StallThreshold
	ticker := time.NewTicker(threshold / 2)
	defer ticker.Stop()
	samples := make([]workerSample, len(d.rt.workers))
	for {
		select {
		case <-d.quit:
			return
		case now := <-ticker.C:
			for i, w := range d.rt.workers {
				d.check(w, &samples[i], now, threshold)
			}
		}
	}
}

func (d *watchdog) check(w *worker, s *workerSample, now time.Time, threshold time.Duration) {
	c, hb := w.current.Load(), w.heartbeat.Load()
	if c == nil || c != s.coro || hb != s.heartbeat {
		*s = workerSample{coro: c, heartbeat: hb, since: now}
		return
	}
	running := now.Sub(s.since)
	waiting := w.local.Len() + w.inbox.len()
	if w.lifo.Load() != nil {
		// A task woken by the blocked one waits in its LIFO slot.
		waiting++
	}
	if s.reported || running < threshold || waiting == 0 {
		return
	}
	s.reported = true
	d.stalls.Add(1)
	if f := d.rt.cfg.OnStall; f != nil {
		f(StallInfo{Worker: w.id, TaskID: c.taskID.Load(), Running: running, Waiting: waiting})
	}
	// Wake a sleeper directly: WorkerToNotify would decline while someone
	// searches, but the searchers may all be stuck behind this worker.
	for _, v := range d.rt.workers {
		if v != w && v.parked.Load() {
			v.unpark()
			return
		}
	}
}
