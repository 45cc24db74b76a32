package runtime

import (
	"testing"

	"github.com/faio-go/faio/modules/ringq"
)

// nextTask's order between the inbox (woken tasks) and the local queue
// (new and yielded tasks), on a worker that runs no loop: while both hold
// tasks, the local queue is served once every localTurn ticks, never less
// (nothing there waits for ever behind a stream of wake-ups), and the inbox
// on every other tick (a woken task is not held back by a burst of
// spawns); each queue keeps its FIFO order; and once one queue is empty the
// other is served on every tick.
func TestNextTaskServesInboxFirstAndLocalEveryTurn(t *testing.T) {
	rt := &Runtime{cfg: Config{GlobalQueueInterval: DefaultGlobalQueueInterval}, global: ringq.NewGlobalQueue[*Task]()}
	local, err := ringq.NewLocalQueue[*Task](256)
	if err != nil {
		t.Fatal(err)
	}
	w := &worker{rt: rt, local: local, inbox: ringq.NewGlobalQueue[*Task]()}
	const nInbox, nLocal = 5 * localTurn, 200
	inbox := make([]*Task, nInbox)
	for i := range inbox {
		inbox[i] = &Task{id: uint64(i)}
		if err := w.inbox.Push(inbox[i]); err != nil {
			t.Fatal(err)
		}
	}
	locals := make([]*Task, nLocal)
	for i := range locals {
		locals[i] = &Task{id: uint64(1000 + i)}
		w.pushLocal(locals[i])
	}
	nextIn, nextLocal, lastLocal := 0, 0, uint32(0)
	for tick := uint32(1); nextIn < nInbox || nextLocal < nLocal; tick++ {
		w.tick = tick
		got := w.nextTask()
		both := nextIn < nInbox && nextLocal < nLocal
		switch {
		case nextIn < nInbox && got == inbox[nextIn]:
			nextIn++
			if both && tick-lastLocal >= localTurn {
				t.Fatalf("tick %d: the local queue was last served at tick %d, want once every %d ticks", tick, lastLocal, localTurn)
			}
		case nextLocal < nLocal && got == locals[nextLocal]:
			nextLocal++
			if both && tick%localTurn != 0 {
				t.Fatalf("tick %d: a local task went before the %d woken ones", tick, nInbox-nextIn)
			}
			lastLocal = tick
		default:
			t.Fatalf("tick %d: nextTask = %v, want inbox task %d or local task %d in order", tick, got, nextIn, nextLocal)
		}
	}
	if got := w.nextTask(); got != nil {
		t.Fatalf("both queues empty: nextTask = %v", got)
	}
}
