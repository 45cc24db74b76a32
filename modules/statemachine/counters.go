package statemachine

// counters is a snapshot of the packed counter word:
//
//	bits 63..32  working    workers not listed as sleepers (a notified
//	                        worker counts from the moment it is popped)
//	bits 31..0   searching  working workers currently looking for work
//
// Packing both counts in one word is what lets WorkerToNotify decide with a
// single load, and lets a notified sleeper become working and searching in
// one compare-and-swap, so no reader ever sees it as one without the other.
// Each half has 32 bits, far more than MaxWorkers needs, so a legal
// transition can never carry into the other half; transitions that would go
// below zero are refused before the word is written.
type counters uint64

const (
	workingShift = 32

	oneSearching counters = 1
	oneWorking   counters = 1 << workingShift

	searchingMask = oneWorking - 1
)

func (c counters) working() int   { return int(c >> workingShift) }
func (c counters) searching() int { return int(c & searchingMask) }

// allWorking is the word with every worker working and none searching.
func allWorking(workers int) counters { return counters(workers) << workingShift }

// shouldNotify reports whether a spawner must wake a sleeper: nobody is
// searching (a searcher would find the new work, or hand the duty on when it
// stops) and somebody sleeps. With searching == 0 the word is just
// working<<32, so both tests fold into one mask and one comparison against
// allWorking.
func (c counters) shouldNotify(all counters) bool {
	return c&searchingMask == 0 && c < all
}

// maySearch is TrySearch's admission test: at most half of the workers,
// rounded up, search at once, so the others keep running tasks instead of
// contending on the same victim queues.
func (c counters) maySearch(workers int) bool {
	return 2*c.searching() < workers
}
