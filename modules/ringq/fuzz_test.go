package ringq

import (
	"math"
	"testing"
)

// FuzzLocalQueueOps reads an operation sequence from the fuzzer's bytes and
// runs it through the same model harness as TestLocalQueueMatchesModel:
// each byte picks an operation, the next byte its argument.
func FuzzLocalQueueOps(f *testing.F) {
	f.Add(uint8(1), uint8(1), uint32(0), []byte{0, 0, 0, 0, 0, 0, 6, 0, 4, 0})
	f.Add(uint8(2), uint8(3), uint32(math.MaxUint32-5), []byte{2, 12, 0, 1, 0, 2, 0, 3, 7, 0, 6, 0})
	f.Add(uint8(3), uint8(1), uint32(7), []byte{2, 8, 0, 2, 0, 3, 3, 0, 4, 0, 5, 0, 8, 0})
	f.Fuzz(func(t *testing.T, qexp, dexp uint8, start uint32, ops []byte) {
		h := newHarness(t, 2<<(qexp%5), 2<<(dexp%5), start)
		for i := 0; i+1 < len(ops); i += 2 {
			arg := int(ops[i+1])
			switch ops[i] % 9 {
			case 0:
				h.pushQ(arg % numSinkModes)
			case 1:
				h.pushQNil()
			case 2:
				h.pushBatchQ(arg % 24)
			case 3:
				h.pushD()
			case 4:
				h.popQ()
			case 5:
				h.popD()
			case 6:
				h.stealQD()
			case 7:
				h.stealDQ()
			case 8:
				for range arg % 8 {
					h.pushQ(sinkAccepts)
				}
			}
			h.check()
		}
	})
}
