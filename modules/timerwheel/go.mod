module github.com/faio-go/faio/modules/timerwheel

go 1.25.0
