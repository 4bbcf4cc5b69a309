package httpserve

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"testing"
	"time"
)

// TestSlowBodyIsCut sends a request whose body trickles in slower than
// the read timeout allows: the handler's read fails and the server closes
// the connection, rather than waiting for the body as long as the client
// likes.
func TestSlowBodyIsCut(t *testing.T) {
	readTimeout = 300 * time.Millisecond
	t.Cleanup(func() { readTimeout = ReadTimeout })
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	readErr := make(chan error, 1)
	done := make(chan error, 1)
	t.Cleanup(func() {
		if err := <-done; err != nil {
			t.Error(err)
		}
	})
	go func() {
		done <- Serve(t.Context(), ln, http.HandlerFunc(func(_ http.ResponseWriter, r *http.Request) {
			_, err := io.ReadAll(r.Body)
			readErr <- err
		}))
	}()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, "POST / HTTP/1.1\r\nHost: x\r\nContent-Length: 1000\r\n\r\n"); err != nil {
		t.Fatal(err)
	}
	// A byte every 50 ms: 1,000 bytes would take 50 s.
	for range 30 {
		if _, err := conn.Write([]byte("x")); err != nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	select {
	case err := <-readErr:
		if err == nil {
			t.Fatal("the handler read the whole trickled body")
		}
	case <-time.After(10 * time.Second):
		t.Fatal("the handler was still reading the trickled body after 10 s")
	}
	if err := conn.SetReadDeadline(time.Now().Add(5 * time.Second)); err != nil {
		t.Fatal(err)
	}
	if _, err := bufio.NewReader(conn).ReadString('\n'); err == nil {
		// An answer (the handler wrote none, so an empty 200) may come
		// before the close; what matters is that the read was cut.
		t.Log("the server answered before closing")
	}
}
