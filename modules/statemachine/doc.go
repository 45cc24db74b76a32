// Package statemachine keeps the idle/searching accounting of faio-go's workers.
package statemachine
