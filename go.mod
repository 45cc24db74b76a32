module github.com/faio-go/faio

go 1.26.0

require (
	github.com/faio-go/faio/modules/aio v0.0.0
	github.com/faio-go/faio/modules/channel v0.0.0
	github.com/faio-go/faio/modules/faiohttp v0.0.0
	github.com/faio-go/faio/modules/runtime v0.0.0
	github.com/faio-go/faio/modules/sync v0.0.0
	github.com/faio-go/faio/modules/uring v0.0.0
	go.uber.org/goleak v1.3.0
)

require (
	github.com/faio-go/faio/modules/driver v0.0.0 // indirect
	github.com/faio-go/faio/modules/ringq v0.0.0 // indirect
	github.com/faio-go/faio/modules/statemachine v0.0.0 // indirect
	github.com/faio-go/faio/modules/timerwheel v0.0.0 // indirect
	github.com/faio-go/faio/modules/watchdog v0.0.0 // indirect
	golang.org/x/sys v0.49.0 // indirect
)

replace (
	github.com/faio-go/faio/modules/aio => ./modules/aio
	github.com/faio-go/faio/modules/channel => ./modules/channel
	github.com/faio-go/faio/modules/driver => ./modules/driver
	github.com/faio-go/faio/modules/faiohttp => ./modules/faiohttp
	github.com/faio-go/faio/modules/ringq => ./modules/ringq
	github.com/faio-go/faio/modules/runtime => ./modules/runtime
	github.com/faio-go/faio/modules/statemachine => ./modules/statemachine
	github.com/faio-go/faio/modules/sync => ./modules/sync
	github.com/faio-go/faio/modules/timerwheel => ./modules/timerwheel
	github.com/faio-go/faio/modules/uring => ./modules/uring
	github.com/faio-go/faio/modules/watchdog => ./modules/watchdog
)
