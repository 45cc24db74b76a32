module github.com/faio-go/faio/modules/uring

go 1.25.0
