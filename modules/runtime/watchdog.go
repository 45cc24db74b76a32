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
//
// A runtime whose workers are all asleep cannot stall, so the watchdog
// sleeps too: when a sample finds every worker parked it stops its ticker
// and waits until a worker leaves park (wakeUp). Without that, an idle
// runtime paid for 200 samples a second at the default threshold (28 ms of
// CPU per second measured on the project's 2-vCPU machine, against 0.2 ms/s
// with the watchdog off); asleep it costs nothing measurable
// (BenchmarkIdleCPU: about 0.9 cpu-ms/s in the test binary, watchdog on or
// off).
type watchdog struct {
	rt     *Runtime
	stalls atomic.Uint64
	quit   chan struct{}
	done   chan struct{}
	// asleep is set while the watchdog waits on wake for a worker to
	// leave park. The worker stores its parked=false and then loads
	// asleep; the watchdog stores asleep and then loads every parked: with
	// sequentially consistent atomics one of the two sees the other, so a
	// worker never runs unwatched while the watchdog sleeps.
	asleep atomic.Bool
	wake   chan struct{} // capacity 1
}

// MinStallThreshold is the smallest Config.StallThreshold New accepts. The
// watchdog samples every half threshold while any worker is awake, so a
// shorter one would spend more CPU watching than the stalls it could find
// are worth.
const MinStallThreshold = time.Millisecond

func startWatchdog(rt *Runtime) *watchdog {
	d := &watchdog{rt: rt, quit: make(chan struct{}), done: make(chan struct{}), wake: make(chan struct{}, 1)}
	go d.run()
	return d
}

// wakeUp is called by a worker that leaves park: if the watchdog sleeps,
// it starts sampling again. One atomic load when it does not.
func (d *watchdog) wakeUp() {
	if d.asleep.Load() && d.asleep.CompareAndSwap(true, false) {
		select {
		case d.wake <- struct{}{}:
		default:
		}
	}
}

// allParked reports whether every worker is asleep (or about to be).
func (d *watchdog) allParked() bool {
	for _, w := range d.rt.workers {
		if !w.parked.Load() {
			return false
		}
	}
	return true
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
			if d.allParked() {
				if d.sleep(ticker) {
					return
				}
				// What was sampled before the sleep says nothing about
				// now: a task on the same pooled coroutine with the
				// same heartbeat would pass for a stall already
				// reported.
				clear(samples)
				continue
			}
			for i, w := range d.rt.workers {
				d.check(w, &samples[i], now, threshold)
			}
		}
	}
}

// sleep waits, with the ticker stopped, until a worker leaves park or the
// watchdog is stopped (then it returns true).
func (d *watchdog) sleep(ticker *time.Ticker) (quit bool) {
	d.asleep.Store(true)
	if !d.allParked() {
		// A worker woke between the two looks: keep sampling.
		d.asleep.Store(false)
		return false
	}
	ticker.Stop()
	select {
	case <-d.quit:
		return true
	case <-d.wake:
	}
	// A wake sent for an earlier sleep may have been pending; at worst
	// this costs one extra sample.
	ticker.Reset(d.rt.cfg.StallThreshold / 2)
	return false
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
