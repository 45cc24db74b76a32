module github.com/faio-go/faio/capi

go 1.25.0
