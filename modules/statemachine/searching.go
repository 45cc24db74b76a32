package statemachine

// TrySearch moves the calling worker from working to searching if fewer
// than half of the workers (2*searching < Workers()) are searching, and
// reports whether it did. A worker that gets false should not steal; it goes
// on to drive I/O or to sleep. The caller must be working and not already
// searching; that is not checked.
func (s *StateMachine) TrySearch() bool {
	for {
		old := s.load()
		if !old.maySearch(s.workers) {
			return false
		}
		// A compare-and-swap, not load-then-add: two workers racing on the
		// last free search slot must not both get it.
		if s.state.CompareAndSwap(uint64(old), uint64(old+oneSearching)) {
			return true
		}
	}
}

// TransitionFromSearching moves the calling worker from searching back to
// plain working and reports whether it was the last searcher. If it was,
// the caller must not leave the duty of searching unattended: if it found
// work, it calls WorkerToNotify and wakes the worker returned; if it found
// none, it re-checks every queue before sleeping (see the package comment).
//
// It panics, leaving the state unchanged, if no worker is counted as
// searching: the caller called it without a successful TrySearch or a true
// CancelSleeping, or called it twice.
func (s *StateMachine) TransitionFromSearching() (wasLast bool) {
	for {
		old := s.load()
		if old.searching() == 0 {
			panic("faio/statemachine: TransitionFromSearching with no searching worker")
		}
		if s.state.CompareAndSwap(uint64(old), uint64(old-oneSearching)) {
			return old.searching() == 1
		}
	}
}
