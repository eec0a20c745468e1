package httpadapter

import (
	"context"
	"crypto/tls"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"testing"
)

func TestClientIP(t *testing.T) {
	trusted := TrustedProxies{Networks: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}}
	for _, tc := range []struct {
		name, remote string
		xff          []string
		want         string
	}{
		{"peer", "192.0.2.1:1234", nil, "192.0.2.1"},
		{"untrusted peer's header ignored", "192.0.2.1:1234", []string{"203.0.113.9"}, "192.0.2.1"},
		{"trusted proxy", "10.0.0.1:80", []string{"203.0.113.9"}, "203.0.113.9"},
		{"rightmost untrusted", "10.0.0.1:80", []string{"198.51.100.1, 203.0.113.9, 10.0.0.2"}, "203.0.113.9"},
		{"spoofed left part ignored", "10.0.0.1:80", []string{"1.1.1.1", "203.0.113.9"}, "203.0.113.9"},
		{"all trusted", "10.0.0.1:80", []string{"10.0.0.3, 10.0.0.2"}, "10.0.0.3"},
		{"garbage stops at the last trusted hop", "10.0.0.1:80", []string{"203.0.113.9, garbage, 10.0.0.2"}, "10.0.0.2"},
		{"IPv6 peer", "[2001:db8::1]:443", []string{"203.0.113.9"}, "2001:db8::1"},
		{"IPv6 trusted proxy", "[fd00::1]:443", []string{"2001:db8::7"}, "2001:db8::7"},
		{"mapped IPv4", "[::ffff:192.0.2.5]:1", nil, "192.0.2.5"},
		{"port in header", "10.0.0.1:80", []string{"203.0.113.9:5555"}, "203.0.113.9"},
	} {
		r := httptest.NewRequest("POST", "/opt-out", nil)
		r.RemoteAddr = tc.remote
		for _, v := range tc.xff {
			r.Header.Add("X-Forwarded-For", v)
		}
		if got := trusted.ClientIP(r).String(); got != tc.want {
			t.Errorf("%s: ClientIP = %s, want %s", tc.name, got, tc.want)
		}
	}
}

func TestHTTPS(t *testing.T) {
	trusted := TrustedProxies{Networks: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8")}}
	unix := context.WithValue(context.Background(), http.LocalAddrContextKey, &net.UnixAddr{Name: "/run/app.sock", Net: "unix"})
	for _, tc := range []struct {
		name, remote string
		tls          bool
		unix         bool
		proxies      TrustedProxies
		proto        []string
		want         bool
	}{
		{"plain", "192.0.2.1:1234", false, false, trusted, nil, false},
		{"TLS", "192.0.2.1:1234", true, false, trusted, nil, true},
		{"trusted proxy says https", "10.0.0.1:80", false, false, trusted, []string{"https"}, true},
		{"trusted proxy says HTTPS", "10.0.0.1:80", false, false, trusted, []string{"HTTPS"}, true},
		{"trusted proxy says http", "10.0.0.1:80", false, false, trusted, []string{"http"}, false},
		{"the outermost proxy's first", "10.0.0.1:80", false, false, trusted, []string{"https, http"}, true},
		{"the outermost proxy's first: http", "10.0.0.1:80", false, false, trusted, []string{"http,https"}, false},
		{"trusted proxy says nothing", "10.0.0.1:80", false, false, trusted, nil, false},
		{"untrusted peer's header ignored", "192.0.2.1:1234", false, false, trusted, []string{"https"}, false},
		{"trusted Unix socket", "@", false, true, TrustedProxies{UnixSocket: true}, []string{"https"}, true},
		{"untrusted Unix socket", "@", false, true, trusted, []string{"https"}, false},
	} {
		r := httptest.NewRequest("GET", "/", nil)
		r.RemoteAddr = tc.remote
		if tc.tls {
			r.TLS = &tls.ConnectionState{}
		}
		if tc.unix {
			r = r.WithContext(unix)
		}
		for _, v := range tc.proto {
			r.Header.Add("X-Forwarded-Proto", v)
		}
		if got := tc.proxies.HTTPS(r); got != tc.want {
			t.Errorf("%s: HTTPS = %v, want %v", tc.name, got, tc.want)
		}
	}
}
