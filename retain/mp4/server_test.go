package mp4_test

import (
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
)

type countingServer struct{ url, port string }

// newCountingServer serves on loopback and reports every request path.
func newCountingServer(t *testing.T, hits chan<- string) countingServer {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case hits <- r.URL.Path:
		default:
		}
	}))
	t.Cleanup(srv.Close)
	_, port, _ := net.SplitHostPort(srv.Listener.Addr().String())
	return countingServer{url: srv.URL, port: port}
}
