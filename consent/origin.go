package consent

import (
	"net"
	"net/netip"
	"net/url"
	"strings"
)

// NormalizeOrigin returns the origin s (scheme://host[:port], http or https)
// written as browsers write it in the Origin header: scheme and host in
// lower case, the default port left out, no path, query or fragment (D32).
// Invalid when s is not such an origin.
func NormalizeOrigin(s string) (string, error) {
	u, err := url.Parse(strings.TrimSpace(s))
	if err != nil || u.Opaque != "" || u.User != nil || (u.Path != "" && u.Path != "/") || u.RawQuery != "" || u.Fragment != "" {
		return "", Errorf(Invalid, "allowed origin %q must be scheme://host[:port]", s)
	}
	o, ok := originOf(u)
	if !ok {
		return "", Errorf(Invalid, "allowed origin %q must be scheme://host[:port] with scheme http or https", s)
	}
	return o, nil
}

// OriginOf returns the origin of an absolute http or https URL, as
// NormalizeOrigin writes it; false when rawURL is not one.
func OriginOf(rawURL string) (string, bool) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", false
	}
	return originOf(u)
}

func originOf(u *url.URL) (string, bool) {
	scheme := strings.ToLower(u.Scheme)
	host, port := strings.ToLower(u.Hostname()), u.Port()
	if (scheme != "http" && scheme != "https") || host == "" || u.Opaque != "" || strings.ContainsAny(host, "[]") {
		return "", false
	}
	if strings.Contains(host, ":") { // must be an IPv6 literal
		if a, err := netip.ParseAddr(host); err != nil || !a.Is6() {
			return "", false
		}
	}
	if port == "80" && scheme == "http" || port == "443" && scheme == "https" {
		port = ""
	}
	if strings.Contains(host, ":") { // IPv6 literal
		host = "[" + host + "]"
	}
	if port != "" {
		return scheme + "://" + net.JoinHostPort(strings.Trim(host, "[]"), port), true
	}
	return scheme + "://" + host, true
}
