package channel

import (
	"errors"
	"testing"
)

// FuzzOpsMatchModel decodes bytes into a sequence of TrySend, TryRecv,
// Clone and Close on random ends and checks each result against chanModel:
// the first byte picks the capacity, each further byte an operation (low
// three bits) and the end it goes through (the rest).
func FuzzOpsMatchModel(f *testing.F) {
	f.Add([]byte{2, 0, 0, 0, 1, 1, 1, 1})
	f.Add([]byte{0, 0, 1, 2, 8, 9, 4, 1, 5})
	f.Add([]byte{3, 0, 3, 5, 0, 13, 1, 9, 4, 12, 1})
	f.Fuzz(func(t *testing.T, ops []byte) {
		if len(ops) == 0 {
			return
		}
		capacity := int(ops[0] % 5)
		tx, rx := New[int](capacity)
		txs, rxs := []*Sender[int]{tx}, []*Receiver[int]{rx}
		m := &chanModel{capacity: capacity, senders: []bool{true}, receivers: []bool{true}}
		for step, b := range ops[1:] {
			arg := int(b >> 3)
			ks, kr := arg%len(txs), arg%len(rxs)
			switch b & 7 {
			case 0, 6:
				v := step + 1
				err, want := txs[ks].TrySend(v), m.send(ks, v)
				if !errors.Is(err, want) || (want == nil) != (err == nil) {
					t.Fatalf("step %d: TrySend = %v, want %v", step, err, want)
				}
			case 1, 7:
				v, err := rxs[kr].TryRecv()
				wantV, want := m.recv(kr)
				if !errors.Is(err, want) || (want == nil) != (err == nil) || (err == nil && v != wantV) {
					t.Fatalf("step %d: TryRecv = %d, %v; want %d, %v", step, v, err, wantV, want)
				}
			case 2:
				txs = append(txs, txs[ks].Clone())
				m.senders = append(m.senders, m.senders[ks])
			case 3:
				rxs = append(rxs, rxs[kr].Clone())
				m.receivers = append(m.receivers, m.receivers[kr])
			case 4:
				if err := txs[ks].Close(); (err == nil) != m.senders[ks] {
					t.Fatalf("step %d: Close of sender %d (open %v) = %v", step, ks, m.senders[ks], err)
				}
				m.senders[ks] = false
			case 5:
				if err := rxs[kr].Close(); (err == nil) != m.receivers[kr] {
					t.Fatalf("step %d: Close of receiver %d (open %v) = %v", step, kr, m.receivers[kr], err)
				}
				m.receivers[kr] = false
				if m.open(m.receivers) == 0 {
					m.buf = nil
				}
			}
			if n := tx.Len(); n != len(m.buf) {
				t.Fatalf("step %d: Len = %d, model has %d", step, n, len(m.buf))
			}
		}
	})
}
