package statemachine

// SetSleeping lists worker id as a sleeper: it is no longer counted working,
// and no longer searching if wasSearching. It reports whether the worker was
// the last searcher (wasSearching and nobody else searches now).
//
// After SetSleeping the caller must check every queue once more before it
// blocks, and call CancelSleeping if it finds work; a spawner that published
// just before SetSleeping saw this worker as working and woke nobody.
// Before calling SetSleeping again, the worker must call CancelSleeping.
//
// An id outside [0, Workers()) is never listed: the worker stays counted
// working, and SetSleeping only does what TransitionFromSearching would if
// wasSearching, so the searching count cannot leak. It panics, leaving the
// state unchanged, if id is already listed or was notified and has not
// called CancelSleeping since, or if wasSearching and no worker is counted
// searching.
func (s *StateMachine) SetSleeping(id int, wasSearching bool) (wasLastSearcher bool) {
	if !s.valid(id) {
		if wasSearching {
			return s.TransitionFromSearching()
		}
		return false
	}
	dec := oneWorking
	if wasSearching {
		dec += oneSearching
	}

	s.mu.Lock()
	defer s.mu.Unlock()
	switch s.phase[id].Load() {
	case phaseListed:
		panic("faio/statemachine: SetSleeping for a worker that is already sleeping")
	case phaseNotified:
		panic("faio/statemachine: SetSleeping for a notified worker that has not called CancelSleeping")
	}
	for {
		// id is not listed, so working >= 1 and the decrement cannot
		// borrow; only the caller's wasSearching can be wrong.
		old := s.load()
		if wasSearching && old.searching() == 0 {
			panic("faio/statemachine: SetSleeping(id, true) with no searching worker")
		}
		// Decrement and listing happen in one critical section, so a
		// WorkerToNotify that saw the decrement finds the id listed once it
		// gets the mutex.
		if s.state.CompareAndSwap(uint64(old), uint64(old-dec)) {
			wasLastSearcher = wasSearching && old.searching() == 1
			break
		}
	}
	s.sleepers.push(int32(id))
	s.phase[id].Store(phaseListed)
	return wasLastSearcher
}

// CancelSleeping is called by worker id whenever it stops sleeping: it woke
// up (eventfd, timer, completion) or its re-check after SetSleeping found
// work.
//
// If id is still listed, it is removed and counted working again, not
// searching, and CancelSleeping returns false. If WorkerToNotify has already
// taken id off the list, the worker is already counted working and
// searching, and CancelSleeping returns true: the caller must behave as a
// searcher and call TransitionFromSearching (or SetSleeping(id, true)) when
// it stops searching. For a worker that is neither listed nor notified,
// including a second call and an id outside [0, Workers()), it changes
// nothing and returns false.
func (s *StateMachine) CancelSleeping(id int) (notified bool) {
	if !s.valid(id) {
		return false
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	switch s.phase[id].Load() {
	case phaseListed:
		s.sleepers.remove(int32(id))
		// An add is safe without a compare-and-swap: id was listed, so
		// working < Workers() and the increment cannot reach the next half.
		s.state.Add(uint64(oneWorking))
		s.phase[id].Store(phaseAwake)
		return false
	case phaseNotified:
		s.phase[id].Store(phaseAwake)
		return true
	}
	return false
}

// WorkerToNotify picks the sleeper a spawner should wake after publishing
// work, if any: only when nobody is searching and somebody sleeps. The
// sleeper returned (the most recent one to sleep) is taken off the list and
// counted working and searching at once, so concurrent spawners do not wake
// a second worker for the same shortage; the caller must then wake it
// (eventfd write). id is meaningful only if ok.
//
// When nobody sleeps or somebody searches, which is the common case under
// load, WorkerToNotify costs one atomic load and takes no lock.
func (s *StateMachine) WorkerToNotify() (id int, ok bool) {
	if !s.load().shouldNotify(allWorking(s.workers)) {
		return 0, false
	}
	return s.notifySlow()
}

func (s *StateMachine) notifySlow() (int, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for {
		// Re-test under the mutex: another spawner may have woken the last
		// sleeper, or a worker may have started searching, since the load.
		old := s.load()
		if !old.shouldNotify(allWorking(s.workers)) || s.sleepers.head == none {
			return 0, false
		}
		// Only TrySearch and TransitionFromSearching can change the word
		// without the mutex; losing the race to them just means testing
		// again.
		if s.state.CompareAndSwap(uint64(old), uint64(old+oneWorking+oneSearching)) {
			break
		}
	}
	id := s.sleepers.pop()
	s.phase[id].Store(phaseNotified)
	return int(id), true
}
