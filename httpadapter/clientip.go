package httpadapter

import (
	"context"
	"net"
	"net/http"
	"net/netip"
	"strings"

	"github.com/consentkit/consentkit"
)

// TrustedProxies names the peers whose X-Forwarded-For header is believed
// (D20). The zero value trusts nobody: the client is the connection's peer.
type TrustedProxies struct {
	// Networks holds the addresses of trusted proxies. Peer and forwarded
	// addresses are compared as IPv4 when they are IPv4-mapped IPv6
	// (::ffff:a.b.c.d, as a dual-stack listener reports an IPv4 peer), and
	// so are these prefixes: ::ffff:10.0.0.0/104 trusts 10.0.0.0/8. An
	// IPv4-mapped prefix shorter than 96 bits is not an IPv4 network and is
	// compared as written, so it trusts no IPv4 peer: write such networks
	// as IPv4 prefixes.
	Networks []netip.Prefix
	// UnixSocket trusts a peer connected over a Unix socket: a proxy on the
	// same machine. Such a peer has no IP address, so without this (or
	// without the proxy's X-Forwarded-For) the client's address is unknown.
	UnixSocket bool
}

// ClientIP returns the address of the client that sent r. It is the
// connection's peer, unless the peer is a trusted proxy: then
// X-Forwarded-For is read from the right, skipping trusted proxies, and the
// first address that is not one is the client. An entry that does not parse
// ends the walk at the last trusted hop, since nothing before it can be
// believed. X-Forwarded-For from an untrusted peer is ignored.
//
// The result is invalid (IsValid false) when the client has no known IP
// address: a peer on a Unix socket that is not trusted, or that forwarded
// no address.
func (p TrustedProxies) ClientIP(r *http.Request) netip.Addr {
	peer := parseAddr(r.RemoteAddr)
	unix := overUnixSocket(r)
	switch {
	case unix && !p.UnixSocket:
		return netip.Addr{}
	case !unix && (!peer.IsValid() || !p.trusts(peer)):
		return peer
	}
	client := netip.Addr{} // a Unix socket peer has no address of its own
	if !unix {
		client = peer
	}
	values := r.Header.Values("X-Forwarded-For")
	for i := len(values) - 1; i >= 0; i-- {
		hops := strings.Split(values[i], ",")
		for j := len(hops) - 1; j >= 0; j-- {
			a := parseAddr(strings.TrimSpace(hops[j]))
			if !a.IsValid() {
				return client
			}
			client = a
			if !p.trusts(a) {
				return a
			}
		}
	}
	return client
}

// HTTPS reports whether the client reached the service over HTTPS: r came
// over TLS, or from a trusted proxy (a peer in Networks, or over a Unix
// socket when UnixSocket is set) whose X-Forwarded-Proto says https. The
// first protocol listed is the client's, the one the outermost proxy saw.
// X-Forwarded-Proto from an untrusted peer is ignored.
func (p TrustedProxies) HTTPS(r *http.Request) bool {
	if r.TLS != nil {
		return true
	}
	if overUnixSocket(r) {
		if !p.UnixSocket {
			return false
		}
	} else if peer := parseAddr(r.RemoteAddr); !peer.IsValid() || !p.trusts(peer) {
		return false
	}
	proto, _, _ := strings.Cut(r.Header.Get("X-Forwarded-Proto"), ",")
	return strings.EqualFold(strings.TrimSpace(proto), "https")
}

// overUnixSocket reports whether r came over a Unix socket listener. The
// listener's address is the reliable sign: the peer's address of a Unix
// socket connection is "@" or empty, depending on the platform.
func overUnixSocket(r *http.Request) bool {
	local, ok := r.Context().Value(http.LocalAddrContextKey).(net.Addr)
	return ok && (local.Network() == "unix" || local.Network() == "unixpacket")
}

// parseAddr reads "ip", "ip:port", "[ipv6]:port" or "[ipv6]", unmapping
// IPv4-in-IPv6. Proxies write an IPv6 X-Forwarded-For entry either bare or
// in brackets, with or without a port.
func parseAddr(s string) netip.Addr {
	if host, _, err := net.SplitHostPort(s); err == nil {
		s = host
	} else if len(s) > 2 && s[0] == '[' && s[len(s)-1] == ']' {
		s = s[1 : len(s)-1]
	}
	a, err := netip.ParseAddr(s)
	if err != nil {
		return netip.Addr{}
	}
	return a.Unmap().WithZone("")
}

// trusts reports whether a, as parseAddr returns it (unmapped), is in one
// of the trusted networks, each of them unmapped as well (unmapPrefix).
func (p TrustedProxies) trusts(a netip.Addr) bool {
	for _, n := range p.Networks {
		if unmapPrefix(n).Contains(a) {
			return true
		}
	}
	return false
}

// unmapPrefix returns an IPv4-mapped IPv6 prefix of 96 bits or more as the
// IPv4 prefix it covers (::ffff:10.0.0.0/104 is 10.0.0.0/8), to compare
// with the unmapped addresses of parseAddr. Any other prefix is returned
// as it is: one shorter than 96 bits reaches beyond ::ffff:0:0/96, so it
// is no IPv4 network.
func unmapPrefix(n netip.Prefix) netip.Prefix {
	if a := n.Addr(); a.Is4In6() && n.Bits() >= 96 {
		return netip.PrefixFrom(a.Unmap(), n.Bits()-96)
	}
	return n
}

// knownClient refuses a request whose client address is unknown
// (TrustedProxies.ClientIP is invalid) on a route that needs the address,
// as a limit by client address does (clientKey): 500, since the set-up is
// at fault, and a log line, with attrs, saying how to fix it. The opt-out
// needs the address whether or not its limit is on: its revocation records
// it (D19) and its Idempotency-Key is the client's (D40), so an unknown
// address would be recorded as "invalid IP" and shared by every client
// whose address is unknown.
func (h *Handler) knownClient(ctx context.Context, c Caller, attrs ...any) error {
	if c.ClientIP.IsValid() {
		return nil
	}
	h.log.ErrorContext(ctx, "consentkit: the client's address is unknown, so the request cannot be served; "+
		"behind a proxy on a Unix socket set Config.TrustedProxies.UnixSocket and have the proxy send X-Forwarded-For",
		append(attrs, "request_id", consentkit.RequestIDFrom(ctx))...)
	return &httpError{status: http.StatusInternalServerError, msg: "the client's address cannot be determined"}
}
