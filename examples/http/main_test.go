package main

import (
	"context"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"testing"

	"github.com/faio-go/faio"
	"github.com/faio-go/faio/modules/faiohttp"
)

func TestSelftestPlainAndTLS(t *testing.T) {
	for _, useTLS := range []bool{false, true} {
		if err := run("127.0.0.1:0", "..", useTLS, true); err != nil {
			t.Fatalf("tls=%v: %v", useTLS, err)
		}
	}
}

// Ranges, 404, paths that try to leave the root, and dot names.
func TestFileServer(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "a.txt"), []byte("0123456789"), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, ".env"), []byte("SECRET=1"), 0o600); err != nil {
		t.Fatal(err)
	}
	rt, err := faio.New(faio.Config{Workers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer rt.Close()
	ctx := faio.WithRuntime(context.Background(), rt)
	ln, err := faio.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &faiohttp.Server{Handler: FileServer(filepath.Join(dir))}
	go srv.Serve(ctx, ln)
	defer srv.Close()
	base := "http://" + ln.Addr().String()
	for _, tc := range []struct {
		path, rng string
		status    int
		body      string
	}{
		{"/a.txt", "", 200, "0123456789"},
		{"/a.txt", "bytes=2-4", 206, "234"},
		{"/missing", "", 404, "404 page not found\n"},
		{"/../../etc/passwd", "", 404, "404 page not found\n"},
		{"/.env", "", 404, "404 page not found\n"},
		{"/x/../.env", "", 404, "404 page not found\n"},
		{"/", "", 200, "/a.txt\n"}, // the listing leaves .env out
	} {
		req, _ := http.NewRequest("GET", base+tc.path, nil)
		req.URL.Opaque = tc.path // keep the dots: the server must clean them
		if tc.rng != "" {
			req.Header.Set("Range", tc.rng)
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.status || string(b) != tc.body {
			t.Errorf("%s %s: %d %q, want %d %q", tc.path, tc.rng, resp.StatusCode, b, tc.status, tc.body)
		}
	}
}
