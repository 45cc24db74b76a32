module github.com/faio-go/faio/modules/watchdog

go 1.26.0

require go.uber.org/goleak v1.3.0
