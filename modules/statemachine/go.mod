module github.com/faio-go/faio/modules/statemachine

go 1.26.0

require (
	go.uber.org/goleak v1.3.0
	pgregory.net/rapid v1.3.0
)
