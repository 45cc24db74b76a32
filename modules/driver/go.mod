module github.com/faio-go/faio/modules/driver

go 1.26.0

require (
	github.com/faio-go/faio/modules/uring v0.0.0
	go.uber.org/goleak v1.3.0
	golang.org/x/sys v0.49.0
)

replace github.com/faio-go/faio/modules/uring => ../uring
