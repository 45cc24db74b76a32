package runtime

import (
	"sync"
	"sync/atomic"
)

// inbox is a worker's FIFO of woken tasks: those its own timers and ring
// completed, and those other goroutines woke (a Wake from anywhere lands in
// the inbox of the worker the task suspended on, since only that worker's
// goroutine may touch its local queue). The worker serves it alternately
// with its local queue, so a woken task runs promptly even behind a burst of
// new spawns, which is what keeps sleep lateness low. A mutex (not a
// lock-free list) keeps it drainable by anyone: a worker that steals from a
// busy or stalled one takes from its inbox too.
type inbox struct {
	n     atomic.Int32 // tasks queued, readable without the lock
	mu    sync.Mutex
	items []*Task // items[head:] are queued
	head  int
}

func (b *inbox) push(t *Task) {
	b.mu.Lock()
	if b.head > 0 && b.head == len(b.items) {
		b.items, b.head = b.items[:0], 0
	}
	b.items = append(b.items, t)
	b.n.Store(int32(len(b.items) - b.head))
	b.mu.Unlock()
}

// pop removes the oldest task.
func (b *inbox) pop() *Task {
	if b.n.Load() == 0 {
		return nil
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.head == len(b.items) {
		return nil
	}
	t := b.items[b.head]
	b.items[b.head] = nil
	b.head++
	if b.head == len(b.items) {
		b.items, b.head = b.items[:0], 0
	} else if b.head >= 1024 && b.head*2 >= len(b.items) {
		// Keep the backing array from growing without bound under a
		// steady flow: move the live part to the front.
		n := copy(b.items, b.items[b.head:])
		clear(b.items[n:])
		b.items, b.head = b.items[:n], 0
	}
	b.n.Store(int32(len(b.items) - b.head))
	return t
}

// takeInto moves up to max of the oldest tasks to dst.
func (b *inbox) takeInto(dst []*Task, max int) []*Task {
	if b.n.Load() == 0 {
		return dst
	}
	b.mu.Lock()
	end := min(len(b.items), b.head+max)
	dst = append(dst, b.items[b.head:end]...)
	clear(b.items[b.head:end])
	b.head = end
	if b.head == len(b.items) {
		b.items, b.head = b.items[:0], 0
	}
	b.n.Store(int32(len(b.items) - b.head))
	b.mu.Unlock()
	return dst
}

func (b *inbox) len() int { return int(b.n.Load()) }
