module github.com/faio-go/faio/modules/statemachine

go 1.25.0
