package timerwheel

import (
	"encoding/binary"
	"testing"
)

// byteChooser turns fuzzer input into the harness's decisions. Once the
// input runs out every decision is 0, which ends callbacks' work, and the
// sequence stops.
type byteChooser struct{ data []byte }

func (c *byteChooser) intn(_ string, n int) int {
	if len(c.data) == 0 {
		return 0
	}
	b := c.data[0]
	c.data = c.data[1:]
	return int(b) % n
}

func (c *byteChooser) int64In(_ string, lo, hi int64) int64 {
	var buf [8]byte
	k := copy(buf[:], c.data)
	c.data = c.data[k:]
	span := uint64(hi - lo)
	if span == ^uint64(0) {
		return lo + int64(binary.LittleEndian.Uint64(buf[:]))
	}
	return lo + int64(binary.LittleEndian.Uint64(buf[:])%(span+1))
}

// FuzzWheel decodes its input as a sequence of Insert, Cancel and Advance
// calls (callbacks included) and checks each against the reference model,
// exactly as TestWheelMatchesModel does with rapid.
func FuzzWheel(f *testing.F) {
	f.Add([]byte{})
	f.Add([]byte{0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 7, 0, 0, 0, 0, 0, 0, 0, 0})
	// Insert at a level boundary, then Advance a level's span.
	f.Add([]byte{0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 2, 1, 3, 1, 2, 0, 0, 0, 0, 0, 0, 0, 6, 3, 3, 2, 0, 0, 0, 0, 0, 0, 0, 0, 1})
	// Far deadlines at 1 ns, then a big jump.
	f.Add([]byte{2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 255, 255, 255, 255, 255, 0, 0, 0, 9, 4, 255, 255, 255, 255, 255, 255, 0, 0, 2})
	// Inserts and cancels from callbacks.
	f.Add([]byte{0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0, 0, 0, 0, 0, 6, 0, 40, 0, 0, 0, 0, 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 1, 1, 1})
	f.Fuzz(func(t *testing.T, data []byte) {
		c := &byteChooser{data: data}
		h := newHarness(t, c)
		for len(c.data) > 0 {
			h.step()
		}
		h.check()
	})
}
