package statemachine

// none marks the end of the sleeper list.
const none int32 = -1

// sleeperList is an intrusive doubly linked list over worker ids: next and
// prev are indexed by id, so pushing, popping the newest sleeper and
// removing any given sleeper are all O(1), and nothing is allocated after
// newSleeperList. Membership is tracked by the caller (StateMachine.phase);
// the list trusts it. Guarded by StateMachine.mu.
type sleeperList struct {
	head int32   // newest sleeper, or none
	next []int32 // toward older sleepers
	prev []int32 // toward newer sleepers
}

func newSleeperList(workers int) sleeperList {
	return sleeperList{
		head: none,
		next: make([]int32, workers),
		prev: make([]int32, workers),
	}
}

// push makes id the newest sleeper. Newest first is the order WorkerToNotify
// wakes in: the worker that slept last has the warmest cache and is the
// least likely to have gone deep into an idle state.
func (l *sleeperList) push(id int32) {
	l.next[id] = l.head
	l.prev[id] = none
	if l.head != none {
		l.prev[l.head] = id
	}
	l.head = id
}

// pop removes and returns the newest sleeper, or none if the list is empty.
func (l *sleeperList) pop() int32 {
	id := l.head
	if id != none {
		l.remove(id)
	}
	return id
}

// remove unlinks id, which must be in the list.
func (l *sleeperList) remove(id int32) {
	next, prev := l.next[id], l.prev[id]
	if prev == none {
		l.head = next
	} else {
		l.next[prev] = next
	}
	if next != none {
		l.prev[next] = prev
	}
}
