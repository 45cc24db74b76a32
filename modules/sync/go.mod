module github.com/faio-go/faio/modules/sync

go 1.25.0
