module github.com/faio-go/faio/modules/ringq

go 1.26.0

require pgregory.net/rapid v1.3.0

require go.uber.org/goleak v1.3.0
