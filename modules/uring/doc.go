// Package uring is a pure-Go binding to Linux io_uring.
package uring
