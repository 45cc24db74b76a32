package faiohttp_test

import (
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/faio-go/faio/modules/aio"
	"github.com/faio-go/faio/modules/faiohttp"
	"github.com/faio-go/faio/modules/runtime"
)

// A server whose connections are tasks: the handler is a plain
// http.Handler; its I/O runs on the workers' io_uring.
func ExampleServer() {
	rt, err := runtime.New(runtime.Config{})
	if err != nil {
		fmt.Println(err)
		return
	}
	defer rt.Close()
	ctx := runtime.WithRuntime(context.Background(), rt)
	ln, err := aio.Listen(ctx, "tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Println(err)
		return
	}
	srv := &faiohttp.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "hello from a task, %s", r.URL.Query().Get("name"))
	})}
	served := make(chan error, 1)
	go func() { served <- srv.Serve(ctx, ln) }()

	resp, err := http.Get("http://" + ln.Addr().String() + "/?name=gopher")
	if err != nil {
		fmt.Println(err)
		return
	}
	body, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(resp.Status, string(body))

	if err := srv.Shutdown(context.Background()); err != nil {
		fmt.Println(err)
	}
	fmt.Println(<-served)
	// Output:
	// 200 OK hello from a task, gopher
	// http: Server closed
}
