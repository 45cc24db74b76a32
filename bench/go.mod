module github.com/faio-go/faio/bench

go 1.26.0
