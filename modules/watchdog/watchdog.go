// Package watchdog notices a scheduler worker held by one task (a plain Go
// blocking call, a long computation) while other tasks wait in its queues,
// and tells the scheduler, which reports the stall and wakes a sleeping
// worker to steal them: the hazard of tokio-rs/tokio#4730, where one
// blocking task stalls every task queued behind it.
//
// It samples each worker (what it is resuming, and a heartbeat its loop
// bumps every few ticks) every half threshold: both unchanged, with a task
// running, means one resumption has held the worker since the last sample.
// The workers pay nothing beyond the stores they make anyway.
//
// A scheduler whose workers are all asleep cannot stall, so the watchdog
// sleeps too: when a sample finds every worker parked it stops its ticker
// and waits until a worker leaves park (WakeUp). Without that, an idle
// runtime paid for 200 samples a second at the default threshold (28 ms of
// CPU per second measured on the project's 2-vCPU machine, against 0.2 ms/s
// with the watchdog off); asleep it costs nothing measurable.
package watchdog

import (
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// MinThreshold is the smallest threshold Start accepts. The watchdog
// samples every half threshold while any worker is awake, so a shorter one
// would spend more CPU watching than the stalls it could find are worth.
const MinThreshold = time.Millisecond

// Sample is what the watchdog sees of one worker at one instant.
type Sample struct {
	// Running identifies what the worker is resuming (the scheduler's
	// coroutine, say), nil between tasks. Equal values in two samples with
	// the same Heartbeat mean one resumption spans both. The watchdog
	// compares values with ==, so Running must hold a comparable type (a
	// pointer or a struct of them, not a slice, map or func: comparing
	// those panics on the watchdog's goroutine).
	Running any
	// Heartbeat is bumped by the worker's loop every few ticks.
	Heartbeat uint64
	// Waiting is the number of tasks queued behind the running one.
	Waiting int
	// Parked reports that the worker is asleep, or about to be. It must
	// be a sequentially consistent atomic load: see WakeUp.
	Parked bool
}

// Workers is the scheduler as the watchdog sees it. Its methods are called
// from the watchdog's goroutine.
type Workers interface {
	NumWorkers() int
	Sample(i int) Sample
	// Stalled is called once per stall of worker i: running (Sample's
	// Running) has held it for d while waiting tasks were queued behind.
	Stalled(i int, running any, d time.Duration, waiting int)
}

// Rescuer is implemented by Workers that act on a stall for as long as it
// lasts, not only when it is reported: Rescue is called on every later
// sample that finds worker i still held by the same run with work waiting
// behind it (work that arrived after the report, say, which a peer woken
// by the report has not seen), with that run (Sample.Running). Stalled is
// still called once per stall.
type Rescuer interface {
	Rescue(i int, running any, waiting int)
}

// Watchdog watches a scheduler's workers from a goroutine of its own.
type Watchdog struct {
	ws        Workers
	threshold time.Duration
	stalls    atomic.Uint64
	stop      sync.Once
	quit      chan struct{}
	done      chan struct{}
	// asleep is set while the watchdog waits on wake for a worker to
	// leave park. The worker stores its parked=false and then loads
	// asleep (WakeUp); the watchdog stores asleep and then loads every
	// Parked: with sequentially consistent atomics one of the two sees the
	// other, so a worker never runs unwatched while the watchdog sleeps.
	asleep atomic.Bool
	wake   chan struct{} // capacity 1
	// gid is the id of the watchdog's goroutine, set when it starts, so
	// that Stop called from a Workers method (on that goroutine) does not
	// wait for itself.
	gid atomic.Uint64
}

// Start starts watching ws with the given threshold (at least
// MinThreshold; Start panics on less, the scheduler's configuration
// validates it first). It panics on a nil ws too, here rather than later
// on the watchdog's own goroutine, where nobody could recover it.
func Start(ws Workers, threshold time.Duration) *Watchdog {
	if ws == nil {
		panic("faio/watchdog: nil Workers")
	}
	if threshold < MinThreshold {
		panic("faio/watchdog: threshold below MinThreshold")
	}
	d := &Watchdog{ws: ws, threshold: threshold, quit: make(chan struct{}), done: make(chan struct{}), wake: make(chan struct{}, 1)}
	go d.run()
	return d
}

// WakeUp is called by a worker that leaves park, after it stored its
// Parked false: if the watchdog sleeps, it starts sampling again. One
// atomic load when it does not.
func (d *Watchdog) WakeUp() {
	if d.asleep.Load() && d.asleep.CompareAndSwap(true, false) {
		select {
		case d.wake <- struct{}{}:
		default:
		}
	}
}

// Asleep reports whether the watchdog sleeps because every worker does.
func (d *Watchdog) Asleep() bool { return d.asleep.Load() }

// Stalls returns the number of stalls seen.
func (d *Watchdog) Stalls() uint64 { return d.stalls.Load() }

// Stop stops the watchdog and waits for its goroutine to end. Calling it
// again, or from several goroutines at once, only waits. Called from a
// Workers method, which runs on that very goroutine, Stop cannot wait for
// it: it returns at once, and the watchdog ends as soon as that method
// returns, calling no Stalled or Rescue after it.
func (d *Watchdog) Stop() {
	d.stop.Do(func() { close(d.quit) })
	if g := d.gid.Load(); g != 0 && g == goid() {
		return
	}
	<-d.done
}

// quitting reports whether Stop has been called.
func (d *Watchdog) quitting() bool {
	select {
	case <-d.quit:
		return true
	default:
		return false
	}
}

// goid returns the calling goroutine's id, parsed from the header of its
// stack trace ("goroutine 18 [running]:"). Only Stop and the watchdog's
// start call it, once each.
func goid() uint64 {
	var buf [64]byte
	b := buf[:runtime.Stack(buf[:], false)]
	const prefix = "goroutine "
	if len(b) < len(prefix) || string(b[:len(prefix)]) != prefix {
		return 0
	}
	var id uint64
	for _, c := range b[len(prefix):] {
		if c < '0' || c > '9' {
			break
		}
		id = id*10 + uint64(c-'0')
	}
	return id
}

// allParked reports whether every worker is asleep (or about to be).
func (d *Watchdog) allParked() bool {
	for i := range d.ws.NumWorkers() {
		if !d.ws.Sample(i).Parked {
			return false
		}
	}
	return true
}

type workerSample struct {
	running   any
	heartbeat uint64
	since     time.Time
	reported  bool
}

func (d *Watchdog) run() {
	defer close(d.done)
	d.gid.Store(goid())
	ticker := time.NewTicker(d.threshold / 2)
	defer ticker.Stop()
	samples := make([]workerSample, d.ws.NumWorkers())
	for {
		select {
		case <-d.quit:
			return
		case now := <-ticker.C:
			if d.allParked() {
				// What was sampled before the sleep says nothing about
				// now: a task on the same pooled coroutine with the
				// same heartbeat would pass for a stall already
				// reported. Cleared before the sleep, not after: a
				// sample may hold what the workers ran (a task), which
				// must not stay reachable for as long as they idle.
				clear(samples)
				if d.sleep(ticker) {
					return
				}
				continue
			}
			for i := range samples {
				if d.quitting() {
					return // stopped from a Workers method
				}
				d.check(i, &samples[i], now)
			}
		}
	}
}

// sleep waits, with the ticker stopped, until a worker leaves park or the
// watchdog is stopped (then it returns true).
func (d *Watchdog) sleep(ticker *time.Ticker) (quit bool) {
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
	// A wake sent for an earlier sleep may have been pending, and then no
	// WakeUp has cleared asleep for this one: clear it here, or Asleep
	// would report a sampling watchdog asleep. At worst a stale wake costs
	// one extra sample.
	d.asleep.Store(false)
	ticker.Reset(d.threshold / 2)
	return false
}

func (d *Watchdog) check(i int, s *workerSample, now time.Time) {
	cur := d.ws.Sample(i)
	if cur.Running == nil || cur.Running != s.running || cur.Heartbeat != s.heartbeat {
		*s = workerSample{running: cur.Running, heartbeat: cur.Heartbeat, since: now}
		return
	}
	running := now.Sub(s.since)
	if running < d.threshold || cur.Waiting == 0 {
		return
	}
	if s.reported {
		if r, ok := d.ws.(Rescuer); ok {
			r.Rescue(i, cur.Running, cur.Waiting)
		}
		return
	}
	s.reported = true
	d.stalls.Add(1)
	d.ws.Stalled(i, cur.Running, running, cur.Waiting)
}
