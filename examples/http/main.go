// Command http is a static file server on faio: every connection is a task
// of faiohttp.Server, and every file is opened, stat'ed and read through
// the worker's io_uring (aio's File as an io.ReadSeeker under
// http.ServeContent, which handles Range and If-Modified-Since).
//
//	go run ./examples/http -root . -addr 127.0.0.1:8080 [-tls]
//
// With -tls it serves HTTPS with a certificate for localhost, self-signed
// at start (curl -k https://localhost:8080/). Names that begin with a dot
// (.git, .env) are not served, as most static servers refuse them.
// With -selftest it serves -root on a free loopback port, fetches every
// regular file below it (up to 200) over plain HTTP or TLS, checks the
// bytes against package os, prints a summary and exits: the demo runs it.
package main

import (
	"bytes"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log"
	"math/big"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"time"

	"github.com/faio-go/faio"
	"github.com/faio-go/faio/modules/faiohttp"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8080", "address to listen on")
	root := flag.String("root", ".", "directory to serve")
	useTLS := flag.Bool("tls", false, "serve HTTPS with a self-signed certificate")
	selftest := flag.Bool("selftest", false, "serve on a free port, fetch every file, check it and exit")
	flag.Parse()
	if *selftest {
		*addr = "127.0.0.1:0"
	}
	if err := run(*addr, *root, *useTLS, *selftest); err != nil {
		fmt.Fprintln(os.Stderr, "http:", err)
		os.Exit(1)
	}
}

func run(addr, root string, useTLS, selftest bool) error {
	if fi, err := os.Stat(root); err != nil || !fi.IsDir() {
		return fmt.Errorf("-root %s: not a directory", root)
	}
	rt, err := faio.New(faio.Config{})
	if err != nil {
		return err
	}
	defer rt.Close()
	ctx := faio.WithRuntime(context.Background(), rt)
	ln, err := faio.Listen(ctx, "tcp", addr)
	if err != nil {
		return err
	}
	srv := &faiohttp.Server{
		Handler:           FileServer(root),
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       60 * time.Second,
	}
	var pool *x509.CertPool
	if useTLS {
		cert, p, err := selfSigned()
		if err != nil {
			return err
		}
		srv.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}}
		pool = p
	}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()
	if !selftest {
		scheme := "http"
		if useTLS {
			scheme = "https"
		}
		hint := ""
		if useTLS {
			hint = " (certificate self-signed for localhost: curl -k)"
		}
		log.Printf("serving %s on %s://%s%s", root, scheme, ln.Addr(), hint)
		return <-served
	}
	msg, err := check(ln.Addr().String(), root, pool)
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if serr := srv.Shutdown(sctx); err == nil {
		err = serr
	}
	if serr := <-served; err == nil && !errors.Is(serr, faiohttp.ErrServerClosed) {
		err = serr
	}
	if err == nil {
		fmt.Println(msg)
	}
	return err
}

// FileServer serves the files below root. Paths are cleaned and must stay
// below root; names that begin with a dot are not served (404);
// directories list their other entries.
func FileServer(root string) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
			return
		}
		clean := path.Clean("/" + r.URL.Path)
		if strings.Contains(clean, "/.") {
			http.NotFound(w, r)
			return
		}
		name := filepath.Join(root, filepath.FromSlash(clean))
		ctx := r.Context() // the connection's task: the I/O below suspends it
		f, err := faio.Open(ctx, name)
		switch {
		case errors.Is(err, fs.ErrNotExist):
			http.NotFound(w, r)
			return
		case errors.Is(err, fs.ErrPermission):
			http.Error(w, "forbidden", http.StatusForbidden)
			return
		case err != nil:
			log.Printf("open %s: %v", name, err)
			http.Error(w, "cannot open", http.StatusInternalServerError)
			return
		}
		defer f.Close(ctx)
		fi, err := f.Stat(ctx)
		if err != nil {
			http.Error(w, err.Error(), http.StatusInternalServerError)
			return
		}
		if fi.IsDir() {
			listDir(w, name, r.URL.Path)
			return
		}
		http.ServeContent(w, r, fi.Name(), fi.ModTime(), f.IO())
	})
}

// listDir writes a plain list of the directory's entries. (Directory
// reads are not io_uring operations; os.ReadDir is brief.)
func listDir(w http.ResponseWriter, dir, urlPath string) {
	ents, err := os.ReadDir(dir)
	if err != nil {
		http.Error(w, err.Error(), http.StatusForbidden)
		return
	}
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		suffix := ""
		if e.IsDir() {
			suffix = "/"
		}
		fmt.Fprintf(w, "%s%s\n", path.Join(urlPath, e.Name()), suffix)
	}
}

// check fetches up to 200 regular files below root and compares them with
// what os reads.
func check(addr, root string, pool *x509.CertPool) (string, error) {
	scheme, tr := "http", &http.Transport{}
	if pool != nil {
		scheme = "https"
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, ServerName: "localhost"}
	}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr, Timeout: 10 * time.Second}
	var files, bytesRead int
	start := time.Now()
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || files >= 200 || !d.Type().IsRegular() {
			return err
		}
		rel, _ := filepath.Rel(root, p)
		if strings.HasPrefix(rel, ".") {
			return nil
		}
		want, err := os.ReadFile(p)
		if err != nil {
			return nil // unreadable here: skip
		}
		resp, err := client.Get(scheme + "://" + addr + "/" + filepath.ToSlash(rel))
		if err != nil {
			return err
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			return err
		}
		if resp.StatusCode != http.StatusOK || !bytes.Equal(got, want) {
			return fmt.Errorf("%s: status %s, %d bytes, want %d", rel, resp.Status, len(got), len(want))
		}
		files++
		bytesRead += len(got)
		return nil
	})
	if err != nil {
		return "", err
	}
	if files == 0 {
		return "", fmt.Errorf("no file below %s to fetch", root)
	}
	return fmt.Sprintf("%d files (%d KiB) served over %s by faiohttp in %v, every byte checked", files, bytesRead>>10, strings.ToUpper(scheme), time.Since(start).Round(time.Millisecond)), nil
}

// selfSigned makes a certificate for localhost and a pool that trusts it.
func selfSigned() (tls.Certificate, *x509.CertPool, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(time.Now().UnixNano()),
		Subject:      pkix.Name{CommonName: "localhost"},
		DNSNames:     []string{"localhost"},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		return tls.Certificate{}, nil, err
	}
	pool := x509.NewCertPool()
	pool.AddCert(leaf)
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key, Leaf: leaf}, pool, nil
}
