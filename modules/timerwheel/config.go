package timerwheel

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// DefaultResolution is the tick length used when Config.Resolution is zero.
const DefaultResolution = time.Millisecond

// ErrResolution is returned by New for a Config whose Resolution is
// negative.
var ErrResolution = errors.New("faio/timerwheel: resolution must be positive, or zero for the default")

// Config configures a Wheel. The zero value is valid and means a 1 ms
// resolution.
type Config struct {
	// Resolution is the length of one tick: deadlines are rounded up to a
	// whole number of ticks, so an entry fires at most one Resolution
	// after its deadline. The wheel spans 2^36 ticks before it has to
	// park entries and re-place them (about 2.2 years at 1 ms, 19 hours
	// at 1 µs). Zero means DefaultResolution.
	Resolution time.Duration
}

// resolution validates c and applies the default.
func (c Config) resolution() (time.Duration, error) {
	switch {
	case c.Resolution == 0:
		return DefaultResolution, nil
	case c.Resolution < 0:
		return 0, fmt.Errorf("%w: got %v", ErrResolution, c.Resolution)
	}
	return c.Resolution, nil
}

// ceilTicks is the tick at which a deadline d > 0 becomes due: rounding up
// is what keeps an entry from ever firing before its deadline.
func ceilTicks(d, res time.Duration) uint64 {
	q := d / res
	if d%res != 0 {
		q++
	}
	return uint64(q)
}

// floorTicks is the last tick that has fully begun at time now >= 0.
//
// math.MaxInt64 is the end of representable time, and the ticks of the
// latest deadlines can begin past it (ceilTicks rounds up); counting it as
// that last tick lets Advance(math.MaxInt64) fire everything, which is
// never early since no deadline exceeds it.
func floorTicks(now, res time.Duration) uint64 {
	if now == math.MaxInt64 {
		return ceilTicks(now, res)
	}
	return uint64(now / res)
}

// instant is the time at which tick t begins, saturated at math.MaxInt64
// to match floorTicks.
func instant(t uint64, res time.Duration) time.Duration {
	if t > uint64(math.MaxInt64/res) {
		return math.MaxInt64
	}
	return time.Duration(t) * res
}
