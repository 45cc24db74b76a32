module github.com/faio-go/faio/modules/runtime

go 1.25.0
