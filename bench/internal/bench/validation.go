package bench

import (
	"errors"
	"fmt"
)

// ErrValidation is wrapped by every error that reports a run whose outcome
// was wrong (a lost task, a wrong sum, a bad byte): its timing means
// nothing, and the program exits non-zero.
var ErrValidation = errors.New("validation failed")

// checkEqual reports a counter that does not have its expected value.
func checkEqual(what string, got, want int64) error {
	if got != want {
		return fmt.Errorf("%w: %s is %d, want %d", ErrValidation, what, got, want)
	}
	return nil
}
