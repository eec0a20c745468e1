package httpadapter

import (
	"net/http/httptest"
	"net/netip"
	"testing"
)

// A trusted proxy may be configured by its IPv4-mapped IPv6 prefix, as a
// dual-stack listener reports an IPv4 peer: it trusts the IPv4 network it
// covers, whichever way the peer's address is written. A mapped prefix
// shorter than 96 bits is no IPv4 network and trusts no IPv4 peer.
func TestClientIPMappedTrustedPrefix(t *testing.T) {
	mapped := TrustedProxies{Networks: []netip.Prefix{netip.MustParsePrefix("::ffff:10.0.0.0/104")}}
	for _, tc := range []struct {
		name    string
		proxies TrustedProxies
		remote  string
		xff     string
		want    string
		trusted bool // the peer is a trusted proxy
	}{
		{"mapped peer", mapped, "[::ffff:10.0.0.1]:80", "203.0.113.9", "203.0.113.9", true},
		{"IPv4 peer", mapped, "10.0.0.1:80", "203.0.113.9", "203.0.113.9", true},
		{"mapped hop in the header", mapped, "10.0.0.1:80", "203.0.113.9, ::ffff:10.0.0.2", "203.0.113.9", true},
		{"peer outside the network", mapped, "[::ffff:11.0.0.1]:80", "203.0.113.9", "11.0.0.1", false},
		{"a single mapped address", TrustedProxies{Networks: []netip.Prefix{netip.MustParsePrefix("::ffff:10.0.0.1/128")}},
			"10.0.0.1:80", "203.0.113.9", "203.0.113.9", true},
		{"mapped prefix under 96 bits", TrustedProxies{Networks: []netip.Prefix{netip.MustParsePrefix("::ffff:0.0.0.0/95")}},
			"[::ffff:10.0.0.1]:80", "203.0.113.9", "10.0.0.1", false},
	} {
		r := httptest.NewRequest("POST", "/opt-out", nil)
		r.RemoteAddr = tc.remote
		r.Header.Set("X-Forwarded-For", tc.xff)
		r.Header.Set("X-Forwarded-Proto", "https")
		if got := tc.proxies.ClientIP(r).String(); got != tc.want {
			t.Errorf("%s: ClientIP = %s, want %s", tc.name, got, tc.want)
		}
		if got := tc.proxies.HTTPS(r); got != tc.trusted { // X-Forwarded-Proto is believed of a trusted peer only
			t.Errorf("%s: HTTPS = %v, want %v", tc.name, got, tc.trusted)
		}
	}
}

// An IPv6 X-Forwarded-For entry in brackets is read with or without a
// port, rather than ending the walk at the proxy.
func TestClientIPBracketedForwarded(t *testing.T) {
	trusted := TrustedProxies{Networks: []netip.Prefix{netip.MustParsePrefix("10.0.0.0/8"), netip.MustParsePrefix("fd00::/8")}}
	for _, tc := range []struct{ xff, want string }{
		{"[2001:db8::7]", "2001:db8::7"},
		{"[2001:db8::7]:443", "2001:db8::7"},
		{"2001:db8::7", "2001:db8::7"},
		{"[::ffff:203.0.113.9]", "203.0.113.9"},
		{"[2001:db8::7], [fd00::2]", "2001:db8::7"},
		{"[2001:db8::7", "10.0.0.1"},
		{"2001:db8::7]", "10.0.0.1"},
		{"[]", "10.0.0.1"},
		{"[garbage]", "10.0.0.1"},
	} {
		r := httptest.NewRequest("POST", "/opt-out", nil)
		r.RemoteAddr = "10.0.0.1:80"
		r.Header.Set("X-Forwarded-For", tc.xff)
		if got := trusted.ClientIP(r).String(); got != tc.want {
			t.Errorf("X-Forwarded-For %q: ClientIP = %s, want %s", tc.xff, got, tc.want)
		}
	}
}
