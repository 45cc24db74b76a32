//go:build linux

package faio_test

import (
	"context"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/faio-go/faio"
)

// The facade names the standard-interface adapters, so a program that
// imports only faio can declare them, and they are what package net's
// interfaces expect.
var (
	_ net.Conn           = (*faio.NetConn)(nil)
	_ net.Listener       = (*faio.NetListener)(nil)
	_ net.PacketConn     = (*faio.NetPacketConn)(nil)
	_ io.ReadWriteSeeker = (*faio.FileIO)(nil)
)

// net/http through the facade alone: a server on a *faio.NetListener and
// a client whose DialContext returns a *faio.NetConn.
func TestFacadeHTTPOverAdapters(t *testing.T) {
	rt, err := faio.New(faio.Config{Workers: 2})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ctx := faio.WithRuntime(context.Background(), rt)
	l, err := faio.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var nl *faio.NetListener = l.NetListener()
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.WriteString(w, "over faio")
	})}
	done := make(chan error, 1)
	go func() { done <- srv.Serve(nl) }()
	tr := &http.Transport{DialContext: func(dctx context.Context, network, addr string) (net.Conn, error) {
		c, err := faio.Dial(faio.WithRuntime(dctx, rt), network, addr)
		if err != nil {
			return nil, err
		}
		var nc *faio.NetConn = c.NetConn()
		return nc, nil
	}}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 20 * time.Second}
	resp, err := client.Get("http://" + nl.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	b, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || string(b) != "over faio" {
		t.Errorf("response %q, %v", b, err)
	}
	if err := srv.Close(); err != nil {
		t.Error(err)
	}
	if err := <-done; err != http.ErrServerClosed {
		t.Errorf("Serve = %v, want http.ErrServerClosed", err)
	}
}
