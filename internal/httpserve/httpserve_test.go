package httpserve_test

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
	"time"

	"github.com/argosyproj/argosy/internal/httpserve"
)

// TestServe serves a handler, answers a request, and returns nil once its
// context ends; an address in use is an error at once.
func TestServe(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	if err := httpserve.Run(t.Context(), ln.Addr().String(), http.NotFoundHandler()); err == nil {
		t.Error("Run on an address in use: no error")
	}
	addr := ln.Addr().String()
	ln.Close()

	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan error, 1)
	go func() {
		done <- httpserve.Run(ctx, addr, http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
			fmt.Fprint(w, "ok")
		}))
	}()
	var body []byte
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		resp, err := http.Get("http://" + addr + "/")
		if err != nil {
			continue
		}
		body, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		break
	}
	if string(body) != "ok" {
		t.Errorf("body %q, want ok", body)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run after its context ended: %v", err)
		}
	case <-time.After(15 * time.Second):
		t.Fatal("Run did not return after its context ended")
	}
}

// TestStopping: a request that waits on Stopping ends when the server
// begins to shut down, so Run returns without error; a request under way
// keeps its context.
func TestStopping(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(t.Context())
	streaming := make(chan struct{})
	reqErr := make(chan error, 1)
	done := make(chan error, 1)
	go func() {
		done <- httpserve.Serve(ctx, ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusOK)
			http.NewResponseController(w).Flush() // the client reads the header
			close(streaming)
			select {
			case <-httpserve.Stopping(r.Context()):
				reqErr <- r.Context().Err()
			case <-time.After(time.Minute):
				reqErr <- fmt.Errorf("never told the server was stopping")
			}
		}))
	}()
	go func() {
		if resp, err := http.Get("http://" + ln.Addr().String() + "/"); err == nil {
			io.Copy(io.Discard, resp.Body) //nolint:errcheck // the body ends with the request
			resp.Body.Close()
		}
	}()
	<-streaming
	cancel()
	if err := <-reqErr; err != nil {
		t.Errorf("the request, told the server was stopping: %v", err)
	}
	if err := <-done; err != nil {
		t.Errorf("Serve with a stream open: %v", err)
	}
	if httpserve.Stopping(context.Background()) != nil {
		t.Error("Stopping of a context of no server is not nil")
	}
}
