module github.com/faio-go/faio/modules/ringq

go 1.25.0
