package channel

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/faio-go/faio/modules/runtime"
	"pgregory.net/rapid"
)

// waitModel extends chanModel with the operations that wait: each waiting
// Send, Recv or Select is an op, queued in FIFO order on the model's
// queues; a Select that sends and receives on the channel sits in both.
type waitModel struct {
	chanModel
	sendq, recvq []*modelOp
}

// modelOp is one operation that waited, run by a goroutine or a task of
// the test, and what the model says it must come to.
type modelOp struct {
	name     string
	end      int // the Sender (send, or a Select's SendCase) or Receiver end
	recvEnd  int // a Select's RecvCase end
	v        int // the value sent
	sel      bool
	finished bool
	want     string // the expected outcome, once finished
	cancel   context.CancelFunc
	got      chan string
}

// live drops the finished ops (a Select that fired elsewhere) off the head
// of q and returns the oldest live one, or nil.
func live(q *[]*modelOp) *modelOp {
	for len(*q) > 0 {
		o := (*q)[0]
		*q = (*q)[1:]
		if !o.finished {
			return o
		}
	}
	return nil
}

func count(q []*modelOp) int {
	n := 0
	for _, o := range q {
		if !o.finished {
			n++
		}
	}
	return n
}

func (o *modelOp) finish(want string) {
	o.finished, o.want = true, want
}

// sendReady applies a send through end k of v that does not wait: it
// returns the outcome, or "" when the send must wait.
func (m *waitModel) sendReady(k, v int) string {
	if !m.senders[k] || m.open(m.receivers) == 0 {
		return "closed"
	}
	if r := live(&m.recvq); r != nil {
		if r.sel {
			r.finish(fmt.Sprintf("case 0: %d", v))
		} else {
			r.finish(fmt.Sprintf("%d", v))
		}
		return "ok"
	}
	if len(m.buf) < m.capacity {
		m.buf = append(m.buf, v)
		return "ok"
	}
	return ""
}

func (m *waitModel) sendDone(s *modelOp) {
	if s.sel {
		s.finish("case 1: ok")
	} else {
		s.finish("ok")
	}
}

// recvReady is sendReady for a receive through end k: the outcome is the
// value received, "closed", or "" when the receive must wait.
func (m *waitModel) recvReady(k int) string {
	if !m.receivers[k] {
		return "closed"
	}
	if len(m.buf) > 0 {
		v := m.buf[0]
		m.buf = m.buf[1:]
		if s := live(&m.sendq); s != nil {
			m.buf = append(m.buf, s.v)
			m.sendDone(s)
		}
		return fmt.Sprint(v)
	}
	if s := live(&m.sendq); s != nil {
		m.sendDone(s)
		return fmt.Sprint(s.v)
	}
	if m.open(m.senders) == 0 {
		return "closed"
	}
	return ""
}

// sendWaits reports whether a send through end k would wait.
func (m *waitModel) sendWaits(k int) bool {
	return m.senders[k] && m.open(m.receivers) > 0 && count(m.recvq) == 0 && len(m.buf) == m.capacity
}

// recvWaits reports whether a receive through end k would wait.
func (m *waitModel) recvWaits(k int) bool {
	return m.receivers[k] && len(m.buf) == 0 && count(m.sendq) == 0 && m.open(m.senders) > 0
}

// fail ends the live ops of q that f selects with the closed outcome.
func fail(q []*modelOp, recv bool, f func(*modelOp) bool) []*modelOp {
	var rest []*modelOp
	for _, o := range q {
		switch {
		case o.finished:
		case f(o) && o.sel && recv:
			o.finish("case 0: closed")
		case f(o) && o.sel:
			o.finish("case 1: closed")
		case f(o):
			o.finish("closed")
		default:
			rest = append(rest, o)
		}
	}
	return rest
}

// Waiting operations against the model: Send, Recv and a Select that both
// sends and receives on the channel, each waiting on a goroutine or a task
// of a runtime (with a context of its own), met by TrySend, TryRecv, more
// waiters, Clone, Close of either end and cancellation of one waiter. After
// every step each op the model finished must report exactly the model's
// outcome (which receiver got which value, which waiting sender moved into
// a freed slot, who saw a Close), and the channel must hold exactly the
// waiters the model still has.
func TestPropertyWaitersMatchModel(t *testing.T) {
	rt := newRuntime(t, 2)
	rapid.Check(t, func(t *rapid.T) {
		capacity := rapid.IntRange(0, 2).Draw(t, "capacity")
		tx, rx := New[int](capacity)
		txs, rxs := []*Sender[int]{tx}, []*Receiver[int]{rx}
		m := &waitModel{chanModel: chanModel{capacity: capacity, senders: []bool{true}, receivers: []bool{true}}}
		var ops []*modelOp
		next := 0

		// start runs op on a goroutine or a task; it must wait.
		start := func(o *modelOp, run func(ctx context.Context) string) {
			ctx, cancel := context.WithCancel(context.Background())
			o.cancel, o.got = cancel, make(chan string, 1)
			ops = append(ops, o)
			if rapid.Bool().Draw(t, "onTask") {
				runtime.SpawnOn(rt, func(context.Context) (int, error) {
					o.got <- run(ctx)
					return 0, nil
				})
			} else {
				go func() { o.got <- run(ctx) }()
			}
		}
		sendOutcome := func(err error, v int) string {
			var se *SendError[int]
			switch {
			case err == nil:
				return "ok"
			case errors.As(err, &se) && se.Value == v:
				return "closed"
			}
			return err.Error()
		}
		recvOutcome := func(v int, err error) string {
			if err != nil {
				if errors.Is(err, ErrClosed) {
					return "closed"
				}
				return err.Error()
			}
			return fmt.Sprint(v)
		}
		// settle collects the outcomes of the ops the model finished and
		// waits until the channel's queues hold the live ones.
		settle := func() {
			for _, o := range ops {
				if !o.finished || o.got == nil {
					continue
				}
				select {
				case got := <-o.got:
					if got != o.want {
						t.Fatalf("%s = %q, want %q", o.name, got, o.want)
					}
				case <-time.After(30 * time.Second):
					t.Fatalf("%s did not return (want %q)", o.name, o.want)
				}
				o.got = nil
			}
			ops = slices.DeleteFunc(ops, func(o *modelOp) bool { return o.got == nil })
			s, r := count(m.sendq), count(m.recvq)
			deadline := time.Now().Add(30 * time.Second)
			for {
				gs, gr := queued(tx.ch)
				if gs == s && gr == r {
					break
				}
				if time.Now().After(deadline) {
					t.Fatalf("queued senders/receivers = %d/%d, model has %d/%d", gs, gr, s, r)
				}
				time.Sleep(50 * time.Microsecond)
			}
		}
		check := func(op, got, want string) {
			if got != want {
				t.Fatalf("%s = %q, want %q", op, got, want)
			}
		}

		t.Repeat(map[string]func(*rapid.T){
			"TrySend": func(t *rapid.T) {
				k := rapid.IntRange(0, len(txs)-1).Draw(t, "sender")
				next++
				want := m.sendReady(k, next)
				if want == "" {
					want = "faio/channel: full"
				}
				err := txs[k].TrySend(next)
				if errors.Is(err, ErrFull) {
					check("TrySend", err.Error(), want)
				} else {
					check("TrySend", sendOutcome(err, next), want)
				}
				settle()
			},
			"TryRecv": func(t *rapid.T) {
				k := rapid.IntRange(0, len(rxs)-1).Draw(t, "receiver")
				want := m.recvReady(k)
				if want == "" {
					want = "faio/channel: empty"
				}
				v, err := rxs[k].TryRecv()
				if errors.Is(err, ErrEmpty) {
					check("TryRecv", err.Error(), want)
				} else {
					check("TryRecv", recvOutcome(v, err), want)
				}
				settle()
			},
			"Send": func(t *rapid.T) {
				k := rapid.IntRange(0, len(txs)-1).Draw(t, "sender")
				next++
				v, s := next, txs[k]
				o := &modelOp{name: fmt.Sprintf("Send(%d) via sender %d", v, k), end: k, v: v}
				if want := m.sendReady(k, v); want != "" {
					check(o.name, sendOutcome(s.Send(context.Background(), v), v), want)
				} else {
					m.sendq = append(m.sendq, o)
					start(o, func(ctx context.Context) string { return sendOutcome(s.Send(ctx, v), v) })
				}
				settle()
			},
			"Recv": func(t *rapid.T) {
				k := rapid.IntRange(0, len(rxs)-1).Draw(t, "receiver")
				r := rxs[k]
				o := &modelOp{name: fmt.Sprintf("Recv via receiver %d", k), end: k}
				if want := m.recvReady(k); want != "" {
					v, err := r.Recv(context.Background())
					check(o.name, recvOutcome(v, err), want)
				} else {
					m.recvq = append(m.recvq, o)
					start(o, func(ctx context.Context) string { return recvOutcome(r.Recv(ctx)) })
				}
				settle()
			},
			"Select": func(t *rapid.T) {
				kr := rapid.IntRange(0, len(rxs)-1).Draw(t, "receiver")
				ks := rapid.IntRange(0, len(txs)-1).Draw(t, "sender")
				// Only a Select that must wait: among ready cases it
				// picks at random.
				if !m.recvWaits(kr) || !m.sendWaits(ks) {
					t.Skip("a case is ready")
				}
				next++
				v, s, r := next, txs[ks], rxs[kr]
				o := &modelOp{name: fmt.Sprintf("Select(recv via %d, send %d via %d)", kr, v, ks), end: ks, recvEnd: kr, v: v, sel: true}
				m.sendq = append(m.sendq, o)
				m.recvq = append(m.recvq, o)
				start(o, func(ctx context.Context) string {
					var got int
					i, err := Select(ctx, r.RecvCase(&got), s.SendCase(v))
					switch {
					case i == 0 && err == nil:
						return fmt.Sprintf("case 0: %d", got)
					case i == 0:
						return "case 0: " + recvOutcome(got, err)
					case i == 1:
						return "case 1: " + sendOutcome(err, v)
					}
					return fmt.Sprintf("case %d: %v", i, err)
				})
				settle()
			},
			"Cancel": func(t *rapid.T) {
				var waiting []*modelOp
				for _, o := range ops {
					if !o.finished {
						waiting = append(waiting, o)
					}
				}
				if len(waiting) == 0 {
					t.Skip("nobody waits")
				}
				o := rapid.SampledFrom(waiting).Draw(t, "op")
				o.cancel()
				if o.sel {
					o.finish("case -1: context canceled")
				} else {
					o.finish("context canceled")
				}
				settle()
			},
			"CloneSender": func(t *rapid.T) {
				k := rapid.IntRange(0, len(txs)-1).Draw(t, "sender")
				txs = append(txs, txs[k].Clone())
				m.senders = append(m.senders, m.senders[k])
			},
			"CloneReceiver": func(t *rapid.T) {
				k := rapid.IntRange(0, len(rxs)-1).Draw(t, "receiver")
				rxs = append(rxs, rxs[k].Clone())
				m.receivers = append(m.receivers, m.receivers[k])
			},
			"CloseSender": func(t *rapid.T) {
				k := rapid.IntRange(0, len(txs)-1).Draw(t, "sender")
				err := txs[k].Close()
				if m.senders[k] != (err == nil) || (err != nil && !errors.Is(err, ErrClosed)) {
					t.Fatalf("Close of sender %d (open %v) = %v", k, m.senders[k], err)
				}
				if m.senders[k] {
					m.senders[k] = false
					if m.open(m.senders) == 0 {
						m.recvq = fail(m.recvq, true, func(*modelOp) bool { return true })
						m.sendq = fail(m.sendq, false, func(*modelOp) bool { return true })
					} else {
						m.sendq = fail(m.sendq, false, func(o *modelOp) bool { return o.end == k })
					}
				}
				settle()
			},
			"CloseReceiver": func(t *rapid.T) {
				k := rapid.IntRange(0, len(rxs)-1).Draw(t, "receiver")
				err := rxs[k].Close()
				if m.receivers[k] != (err == nil) || (err != nil && !errors.Is(err, ErrClosed)) {
					t.Fatalf("Close of receiver %d (open %v) = %v", k, m.receivers[k], err)
				}
				if m.receivers[k] {
					m.receivers[k] = false
					if m.open(m.receivers) == 0 {
						m.sendq = fail(m.sendq, false, func(*modelOp) bool { return true })
						m.recvq = fail(m.recvq, true, func(*modelOp) bool { return true })
						m.buf = nil
					} else {
						m.recvq = fail(m.recvq, true, func(o *modelOp) bool {
							if o.sel {
								return o.recvEnd == k
							}
							return o.end == k
						})
					}
				}
				settle()
			},
			"": func(t *rapid.T) {
				if n := tx.Len(); n != len(m.buf) {
					t.Fatalf("Len = %d, model has %d", n, len(m.buf))
				}
			},
		})
		// Whoever still waits is cancelled and must say so.
		for _, o := range ops {
			if !o.finished {
				o.cancel()
				if o.sel {
					o.finish("case -1: context canceled")
				} else {
					o.finish("context canceled")
				}
			}
		}
		settle()
	})
}
