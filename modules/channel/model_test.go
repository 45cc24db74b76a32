package channel

import (
	"context"
	"errors"
	"slices"
	"testing"

	"pgregory.net/rapid"
)

// chanModel is the sequential specification of a channel when nobody
// waits: a bounded FIFO plus which ends are open.
type chanModel struct {
	capacity  int
	buf       []int
	senders   []bool // open flags, one per Sender made
	receivers []bool
}

func (m *chanModel) open(ends []bool) int {
	n := 0
	for _, o := range ends {
		if o {
			n++
		}
	}
	return n
}

// send returns the error a send through end k of v must give, and applies
// it.
func (m *chanModel) send(k, v int) error {
	if !m.senders[k] || m.open(m.receivers) == 0 {
		return ErrClosed
	}
	if len(m.buf) == m.capacity {
		return ErrFull
	}
	m.buf = append(m.buf, v)
	return nil
}

func (m *chanModel) recv(k int) (int, error) {
	if !m.receivers[k] {
		return 0, ErrClosed
	}
	if len(m.buf) > 0 {
		v := m.buf[0]
		m.buf = m.buf[1:]
		return v, nil
	}
	if m.open(m.senders) == 0 {
		return 0, ErrClosed
	}
	return 0, ErrEmpty
}

// The channel against the model, on random sequences of TrySend, TryRecv,
// Send and Recv (when the model says they cannot wait, or with a done
// context), Clone and Close of either end.
func TestPropertyMatchesModel(t *testing.T) {
	done, cancel := context.WithCancel(context.Background())
	cancel()
	rapid.Check(t, func(t *rapid.T) {
		capacity := rapid.IntRange(0, 4).Draw(t, "capacity")
		tx, rx := New[int](capacity)
		txs, rxs := []*Sender[int]{tx}, []*Receiver[int]{rx}
		m := &chanModel{capacity: capacity, senders: []bool{true}, receivers: []bool{true}}
		next := 0

		checkSend := func(op string, err, want error, v int) {
			if want == nil && err != nil || !errors.Is(err, want) {
				t.Fatalf("%s = %v, want %v", op, err, want)
			}
			var se *SendError[int]
			if errors.Is(want, ErrClosed) && (!errors.As(err, &se) || se.Value != v) {
				t.Fatalf("%s = %v, want a SendError carrying %d", op, err, v)
			}
		}
		checkRecv := func(op string, v int, err error, wantV int, want error) {
			if want == nil && err != nil || !errors.Is(err, want) || (want == nil && v != wantV) {
				t.Fatalf("%s = %d, %v; want %d, %v", op, v, err, wantV, want)
			}
		}

		t.Repeat(map[string]func(*rapid.T){
			"TrySend": func(t *rapid.T) {
				k := rapid.IntRange(0, len(txs)-1).Draw(t, "sender")
				next++
				checkSend("TrySend", txs[k].TrySend(next), m.send(k, next), next)
			},
			"TryRecv": func(t *rapid.T) {
				k := rapid.IntRange(0, len(rxs)-1).Draw(t, "receiver")
				v, err := rxs[k].TryRecv()
				wantV, want := m.recv(k)
				checkRecv("TryRecv", v, err, wantV, want)
			},
			"Send": func(t *rapid.T) {
				k := rapid.IntRange(0, len(txs)-1).Draw(t, "sender")
				next++
				probe := *m
				probe.buf = slices.Clone(m.buf)
				if errors.Is(probe.send(k, next), ErrFull) {
					t.Skip("would wait")
				}
				checkSend("Send", txs[k].Send(context.Background(), next), m.send(k, next), next)
			},
			"Recv": func(t *rapid.T) {
				k := rapid.IntRange(0, len(rxs)-1).Draw(t, "receiver")
				probe := *m
				probe.buf = slices.Clone(m.buf)
				if _, err := probe.recv(k); errors.Is(err, ErrEmpty) {
					t.Skip("would wait")
				}
				v, err := rxs[k].Recv(context.Background())
				wantV, want := m.recv(k)
				checkRecv("Recv", v, err, wantV, want)
			},
			"SendRecvDoneContext": func(t *rapid.T) {
				if err := txs[0].Send(done, -1); !errors.Is(err, context.Canceled) {
					t.Fatalf("Send with a done ctx = %v", err)
				}
				if _, err := rxs[0].Recv(done); !errors.Is(err, context.Canceled) {
					t.Fatalf("Recv with a done ctx = %v", err)
				}
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
				m.senders[k] = false
			},
			"CloseReceiver": func(t *rapid.T) {
				k := rapid.IntRange(0, len(rxs)-1).Draw(t, "receiver")
				err := rxs[k].Close()
				if m.receivers[k] != (err == nil) || (err != nil && !errors.Is(err, ErrClosed)) {
					t.Fatalf("Close of receiver %d (open %v) = %v", k, m.receivers[k], err)
				}
				m.receivers[k] = false
				if m.open(m.receivers) == 0 {
					m.buf = nil
				}
			},
			"": func(t *rapid.T) {
				if n := tx.Len(); n != len(m.buf) {
					t.Fatalf("Len = %d, model has %d", n, len(m.buf))
				}
				if c := rx.Cap(); c != capacity {
					t.Fatalf("Cap = %d, want %d", c, capacity)
				}
			},
		})
	})
}
