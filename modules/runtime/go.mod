module github.com/faio-go/faio/modules/runtime

go 1.26.0

require (
	github.com/faio-go/faio/modules/driver v0.0.0
	github.com/faio-go/faio/modules/ringq v0.0.0
	github.com/faio-go/faio/modules/statemachine v0.0.0
	github.com/faio-go/faio/modules/timerwheel v0.0.0
	github.com/faio-go/faio/modules/uring v0.0.0
	github.com/faio-go/faio/modules/watchdog v0.0.0
	golang.org/x/sys v0.49.0
)

require (
	go.uber.org/goleak v1.3.0
	pgregory.net/rapid v1.3.0
)

replace (
	github.com/faio-go/faio/modules/driver => ../driver
	github.com/faio-go/faio/modules/ringq => ../ringq
	github.com/faio-go/faio/modules/statemachine => ../statemachine
	github.com/faio-go/faio/modules/timerwheel => ../timerwheel
	github.com/faio-go/faio/modules/uring => ../uring
	github.com/faio-go/faio/modules/watchdog => ../watchdog
)
