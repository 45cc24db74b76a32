package runtime

import (
	"fmt"
	"testing"

	"github.com/faio-go/faio/modules/ringq"
)

// nextTask's order between the inbox (woken tasks), the local queue (new
// and yielded tasks) and, on a pinned worker, mine (started tasks that
// yielded), on a worker that runs no loop: while they all hold tasks, the
// others are served only on their turns, one tick in localTurn each, and
// the inbox on every other tick, so that a woken task is not held back by
// a burst of spawns; the local queue, and mine, at least once every
// localTurn ticks, so that nothing waits for ever behind a stream of
// wake-ups; each queue keeps its FIFO order; and once some run empty, the
// others serve every tick.
func TestNextTaskServesInboxFirstAndEveryQueueEachTurn(t *testing.T) {
	for _, pinned := range []bool{false, true} {
		t.Run(fmt.Sprintf("pinned=%v", pinned), func(t *testing.T) {
			rt := &Runtime{cfg: Config{GlobalQueueInterval: DefaultGlobalQueueInterval}, global: ringq.NewGlobalQueue[*Task]()}
			local, err := ringq.NewLocalQueue[*Task](256)
			if err != nil {
				t.Fatal(err)
			}
			w := &worker{rt: rt, local: local, inbox: ringq.NewGlobalQueue[*Task](), pinned: pinned}
			if pinned {
				w.placed = ringq.NewGlobalQueue[*Task]()
			}
			type queue struct {
				name      string
				tasks     []*Task
				next      int
				lastTurn  uint32
				maxPeriod uint32 // the longest it may go unserved while all are non-empty
			}
			qs := []*queue{
				{name: "inbox", tasks: make([]*Task, 5*localTurn), maxPeriod: 2},
				{name: "local", tasks: make([]*Task, 200), maxPeriod: localTurn},
			}
			if pinned {
				qs = append(qs, &queue{name: "mine", tasks: make([]*Task, 200), maxPeriod: localTurn})
			}
			id := uint64(0)
			for _, q := range qs {
				for i := range q.tasks {
					id++
					q.tasks[i] = &Task{}
					q.tasks[i].coro.Store(&coro{})
					switch q.name {
					case "inbox":
						if err := w.inbox.Push(q.tasks[i]); err != nil {
							t.Fatal(err)
						}
					case "local":
						w.pushLocal(q.tasks[i])
					case "mine":
						w.mine.push(q.tasks[i])
					}
				}
			}
			allLeft := func() bool {
				for _, q := range qs {
					if q.next == len(q.tasks) {
						return false
					}
				}
				return true
			}
			left := func() bool {
				for _, q := range qs {
					if q.next < len(q.tasks) {
						return true
					}
				}
				return false
			}
			for tick := uint32(1); left(); tick++ {
				w.tick = tick
				all := allLeft()
				got := w.nextTask()
				var served *queue
				for _, q := range qs {
					if q.next < len(q.tasks) && got == q.tasks[q.next] {
						served = q
					}
				}
				if served == nil {
					t.Fatalf("tick %d: nextTask = %v, not the next task of any queue", tick, got)
				}
				served.next++
				served.lastTurn = tick
				if !all {
					continue
				}
				if turn := tick % localTurn; served.name != "inbox" && turn != 0 && !(pinned && turn == localTurn/2) {
					t.Fatalf("tick %d: %s served before the woken tasks, off its turn", tick, served.name)
				}
				for _, q := range qs {
					if tick-q.lastTurn >= q.maxPeriod {
						t.Fatalf("tick %d: %s last served at tick %d, want at least once every %d ticks", tick, q.name, q.lastTurn, q.maxPeriod)
					}
				}
			}
			if got := w.nextTask(); got != nil {
				t.Fatalf("every queue empty: nextTask = %v", got)
			}
		})
	}
}
