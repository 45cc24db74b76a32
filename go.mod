module github.com/faio-go/faio

go 1.26.0

require github.com/magefile/mage v1.17.2
