// Package timerwheel is a hierarchical hashed timer wheel.
package timerwheel
