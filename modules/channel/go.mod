module github.com/faio-go/faio/modules/channel

go 1.25.0
