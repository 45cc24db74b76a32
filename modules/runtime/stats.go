package runtime

// Stats are counters of a runtime's activity since New. They are cheap
// enough to keep on: each is written by one worker and summed on demand.
type Stats struct {
	Backend Backend // BackendIOUring or BackendPortable
	Workers int
	// Live is Spawned minus Completed: the tasks spawned and not
	// finished, as the workers last published their counts. It lags (see
	// Stats): right after BlockOn returns it may still count tasks that
	// have finished, so a leak check built on it fails now and then.
	// There is no exact live count while the runtime runs; rely on what
	// waits instead: BlockOn returns only once everything spawned under
	// its root has finished, Join and Done tell of one task, and once
	// Close has returned the counts are final (Live is 0).
	Live          int64
	Spawned       uint64 // tasks spawned (from tasks and from outside)
	Completed     uint64 // tasks finished
	Polls         uint64 // task resumptions
	Steals        uint64 // successful steals
	StealAttempts uint64 // steals tried on a victim with work
	Stolen        uint64 // tasks moved by steals
	GlobalPops    uint64 // tasks taken from the global queue
	Parks         uint64 // times a worker went to sleep
	Wakes         uint64 // times a sleeping worker was woken by another
	IOSubmitted   uint64 // SQEs submitted
	IOCompleted   uint64 // CQEs reaped
	IOErrors      uint64 // passing io_uring_enter errors, retried (a broken ring stops the process: driver.RingError)
	Stalls        uint64 // stalls seen by the watchdog
	Coroutines    uint64 // coroutines created (the rest were reused)
	PeerTimers    uint64 // timers fired by a worker for an overdue peer
	PeerReaps     uint64 // reaps of a stuck worker's ring by another worker
	PerWorker     []WorkerStats
}

// WorkerStats are one worker's counters.
type WorkerStats struct {
	Polls, Steals, Stolen, Parks, Wakes uint64
}

// Stats returns the runtime's counters. They are not a snapshot of one
// instant, and the busiest ones (Spawned, Completed, Polls, so Live) are
// published by each worker every 16 ticks of its loop and whenever it goes
// to sleep: right after a burst of work they may lag until the workers
// settle. A nil or zero Runtime (not made by New) has the zero Stats.
func (rt *Runtime) Stats() Stats {
	if !rt.usable() {
		return Stats{}
	}
	s := Stats{
		Backend:   rt.backend,
		Workers:   len(rt.workers),
		Completed: rt.completedOutside.Load(),
		IOErrors:  rt.ioErrors.Load(),
		PerWorker: make([]WorkerStats, len(rt.workers)),
	}
	// Completed first, spawned after: a task counted as completed was
	// spawned before, so Live never reads negative.
	for _, w := range rt.workers {
		s.Completed += w.stats.completed.Load()
	}
	s.Spawned = rt.spawnedOutside.Load()
	if rt.watchdog != nil {
		s.Stalls = rt.watchdog.Stalls()
	}
	for i, w := range rt.workers {
		ws := &w.stats
		s.Spawned += ws.spawned.Load()
		s.Polls += ws.polls.Load()
		s.Steals += ws.steals.Load()
		s.StealAttempts += ws.stealAttempts.Load()
		s.Stolen += ws.stolen.Load()
		s.GlobalPops += ws.globalPops.Load()
		s.Parks += ws.parks.Load()
		s.Wakes += ws.wakes.Load()
		sub, done := w.io.Counts()
		s.IOSubmitted += sub
		s.IOCompleted += done
		s.Coroutines += ws.corosCreated.Load()
		s.PeerTimers += ws.peerTimers.Load()
		s.PeerReaps += ws.peerReaps.Load()
		s.PerWorker[i] = WorkerStats{
			Polls:  ws.polls.Load(),
			Steals: ws.steals.Load(),
			Stolen: ws.stolen.Load(),
			Parks:  ws.parks.Load(),
			Wakes:  ws.wakes.Load(),
		}
	}
	s.Live = int64(s.Spawned) - int64(s.Completed)
	return s
}
