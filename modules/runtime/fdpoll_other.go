//go:build !linux

package runtime

import (
	"context"
	"errors"
	"sync"
)

// FD is a descriptor registered with its runtime's readiness poller; see
// the Linux version. Outside Linux there is no poller: RegisterFD fails.
type FD struct{}

// ErrFDClosed is returned by FD.Wait once FD.Close has been called.
var ErrFDClosed = errors.New("faio/runtime: wait on a closed FD")

var errNoPoller = errors.New("faio/runtime: no readiness poller outside Linux")

// RegisterFD fails outside Linux.
func (rt *Runtime) RegisterFD(fd int) (*FD, error) { return nil, errNoPoller }

// Wait fails outside Linux.
func (f *FD) Wait(ctx context.Context, write bool, try func() bool) error { return errNoPoller }

// Close does nothing outside Linux.
func (f *FD) Close() {}

type pollBuf = []struct{}

type fdPoller struct{}

type fdPollerOnce struct {
	once sync.Once
	p    *fdPoller
	err  error
}

func (w *worker) pollEvents() pollBuf { return nil }

func (p *fdPoller) collect(pollBuf, bool) int { return 0 }

func (p *fdPoller) close() error { return nil }

func (rt *Runtime) fdPoller() (*fdPoller, error) { return nil, errNoPoller }
