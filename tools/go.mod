module github.com/faio-go/faio/tools

go 1.26.0

require (
	github.com/magefile/mage v1.17.2
	golang.org/x/mod v0.41.0
	golang.org/x/sys v0.49.0
)
