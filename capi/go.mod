module github.com/faio-go/faio/capi

go 1.26.0
