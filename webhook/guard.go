package webhook

import (
	"net/netip"
	"net/url"
	"strings"

	"github.com/consentkit/consentkit/consent"
)

// PrivateAddr reports whether a is an address a webhook must not reach by
// default (D44): one in a block of the IANA IPv4 or IPv6 Special-Purpose
// Address Registries (loopback, private, carrier-grade NAT, link-local,
// documentation, benchmarking, reserved, NAT64, 6to4, Teredo, …), the
// deprecated IPv4-compatible (::a.b.c.d), IPv4-translated
// (::ffff:0:a.b.c.d) or site-local ones, multicast, broadcast, IPv6
// outside 2000::/3, or no valid address at all. An IPv4-mapped address
// (::ffff:a.b.c.d) is judged as its IPv4 address; a zone is ignored.
func PrivateAddr(a netip.Addr) bool {
	_, in := blockOf(a)
	return in || !a.IsValid()
}

// CheckAddr reports whether a webhook may connect to a: nil for an
// address that is not a PrivateAddr and, when allowPrivate, for a
// loopback or private (RFC 1918, RFC 4193) one (127.0.0.0/8, ::1,
// 10.0.0.0/8, 172.16.0.0/12, 192.168.0.0/16, fc00::/7); Invalid, naming
// the block, for any other: allowPrivate never lets through link-local
// addresses (169.254.0.0/16, where cloud metadata services answer, and
// fe80::/10), the IPv6 metadata services inside the unique local space
// (AWS's fd00:ec2::/32, Google Cloud's fd20:ce::254, Oracle Cloud's
// fd00:c1::a9fe:a9fe), 0.0.0.0/8, 240.0.0.0/4, multicast, documentation,
// NAT64 or 6to4 addresses, nor IPv4 written in the deprecated IPv6 forms.
// Both CheckURL and the delivery's dialer decide by it.
func CheckAddr(a netip.Addr, allowPrivate bool) error {
	b, in := blockOf(a)
	switch {
	case !a.IsValid():
		return consent.Errorf(consent.Invalid, "not an IP address")
	case !in || allowPrivate && b.private:
		return nil
	}
	return consent.Errorf(consent.Invalid, "%s is a loopback, private, link-local or otherwise non-public address (%s: %s)", a, b.prefix, b.name)
}

// blockOf returns the most specific block of addrBlocks that holds a,
// unmapped and without its zone (netip.Prefix.Contains never matches a
// zoned address).
func blockOf(a netip.Addr) (addrBlock, bool) {
	a = a.Unmap().WithZone("")
	var found addrBlock
	for _, b := range addrBlocks {
		if b.prefix.Contains(a) && (found.name == "" || b.prefix.Bits() > found.prefix.Bits()) {
			found = b
		}
	}
	return found, found.name != ""
}

// addrBlock is a block of addresses refused to webhooks.
type addrBlock struct {
	prefix netip.Prefix
	name   string
	// private: allowed when private addresses are (loopback, RFC 1918
	// and RFC 4193 unicast).
	private bool
}

// addrBlocks is every block of addresses a webhook may not reach by
// default (D44), the one table of the guard. It holds every entry of
// the IANA IPv4 and IPv6 Special-Purpose Address Registries
// (https://www.iana.org/assignments/iana-ipv4-special-registry and
// https://www.iana.org/assignments/iana-ipv6-special-registry, RFC 6890),
// as updated to 2025, and besides them multicast, the deprecated IPv6
// forms that carry an IPv4 address (IPv4-compatible, IPv4-translated),
// deprecated site-local, and IPv6 outside 2000::/3, the only space IANA
// allocates for global unicast. Entries the registries mark "globally
// reachable" (anycast for PCP, TURN, DNS-SD, AS112 and AMT; the NAT64
// well-known prefix; ORCHIDv2 and DETs) are refused as well: they are
// infrastructure or translate to other addresses, and no webhook
// receiver lives there. The registries' ::ffff:0:0/96 (IPv4-mapped) is
// not listed: a mapped address is judged as the IPv4 address it maps,
// so ::ffff:93.184.215.14 is public and ::ffff:10.0.0.1 private. The most
// specific block that holds an address decides, so ::1 is loopback
// rather than IPv4-compatible, and fd00:ec2::/32 is refused inside the
// unique local space that allowPrivate lets through: AWS answers its
// instance metadata service (the instance's credentials) over IPv6 at
// fd00:ec2::254, and its DNS and time servers nearby, in the place of
// 169.254.169.254; Google Cloud at fd20:ce::254 and Oracle Cloud at
// fd00:c1::a9fe:a9fe (those addresses alone). No webhook receiver lives
// there.
var addrBlocks = []addrBlock{
	{mustPrefix("0.0.0.0/8"), "this network", false},
	{mustPrefix("0.0.0.0/32"), "this host", false},
	{mustPrefix("10.0.0.0/8"), "private", true},
	{mustPrefix("100.64.0.0/10"), "shared address space (carrier-grade NAT)", false},
	{mustPrefix("127.0.0.0/8"), "loopback", true},
	{mustPrefix("169.254.0.0/16"), "link-local", false},
	{mustPrefix("172.16.0.0/12"), "private", true},
	{mustPrefix("192.0.0.0/24"), "IETF protocol assignments", false},
	{mustPrefix("192.0.0.0/29"), "IPv4 service continuity (DS-Lite)", false},
	{mustPrefix("192.0.0.8/32"), "IPv4 dummy address", false},
	{mustPrefix("192.0.0.9/32"), "PCP anycast", false},
	{mustPrefix("192.0.0.10/32"), "TURN anycast", false},
	{mustPrefix("192.0.0.170/32"), "NAT64/DNS64 discovery", false},
	{mustPrefix("192.0.0.171/32"), "NAT64/DNS64 discovery", false},
	{mustPrefix("192.0.2.0/24"), "documentation (TEST-NET-1)", false},
	{mustPrefix("192.31.196.0/24"), "AS112", false},
	{mustPrefix("192.52.193.0/24"), "AMT", false},
	{mustPrefix("192.88.99.0/24"), "6to4 relay anycast (deprecated)", false},
	{mustPrefix("192.88.99.2/32"), "6a44 relay anycast", false},
	{mustPrefix("192.168.0.0/16"), "private", true},
	{mustPrefix("192.175.48.0/24"), "AS112 direct delegation", false},
	{mustPrefix("198.18.0.0/15"), "benchmarking", false},
	{mustPrefix("198.51.100.0/24"), "documentation (TEST-NET-2)", false},
	{mustPrefix("203.0.113.0/24"), "documentation (TEST-NET-3)", false},
	{mustPrefix("224.0.0.0/4"), "multicast", false},
	{mustPrefix("240.0.0.0/4"), "reserved", false},
	{mustPrefix("255.255.255.255/32"), "limited broadcast", false},

	{mustPrefix("::/128"), "unspecified", false},
	{mustPrefix("::1/128"), "loopback", true},
	{mustPrefix("::/96"), "IPv4-compatible (deprecated)", false},
	{mustPrefix("::ffff:0:0:0/96"), "IPv4-translated", false},
	{mustPrefix("64:ff9b::/96"), "NAT64", false}, // may translate to any IPv4 address
	{mustPrefix("64:ff9b:1::/48"), "local-use NAT64", false},
	{mustPrefix("100::/64"), "discard-only", false},
	{mustPrefix("100:0:0:1::/64"), "dummy prefix", false},
	{mustPrefix("2001::/23"), "IETF protocol assignments", false},
	{mustPrefix("2001::/32"), "Teredo", false}, // carries an IPv4 address
	{mustPrefix("2001:1::1/128"), "PCP anycast", false},
	{mustPrefix("2001:1::2/128"), "TURN anycast", false},
	{mustPrefix("2001:1::3/128"), "DNS-SD SRP anycast", false},
	{mustPrefix("2001:2::/48"), "benchmarking", false},
	{mustPrefix("2001:3::/32"), "AMT", false},
	{mustPrefix("2001:4:112::/48"), "AS112", false},
	{mustPrefix("2001:10::/28"), "ORCHID (deprecated)", false},
	{mustPrefix("2001:20::/28"), "ORCHIDv2", false},
	{mustPrefix("2001:30::/28"), "drone remote ID (DET)", false},
	{mustPrefix("2001:db8::/32"), "documentation", false},
	{mustPrefix("2002::/16"), "6to4", false}, // carries an IPv4 address
	{mustPrefix("2620:4f:8000::/48"), "AS112 direct delegation", false},
	{mustPrefix("3fff::/20"), "documentation", false},
	{mustPrefix("5f00::/16"), "SRv6 SIDs", false},
	{mustPrefix("fc00::/7"), "unique local (private)", true},
	{mustPrefix("fd00:ec2::/32"), "cloud metadata (AWS)", false},
	{mustPrefix("fd20:ce::254/128"), "cloud metadata (Google Cloud)", false},
	{mustPrefix("fd00:c1::a9fe:a9fe/128"), "cloud metadata (Oracle Cloud)", false},
	{mustPrefix("fe80::/10"), "link-local", false},
	{mustPrefix("fec0::/10"), "site-local (deprecated)", false},
	{mustPrefix("ff00::/8"), "multicast", false},
	{mustPrefix("::/3"), "not global unicast (outside 2000::/3)", false},
	{mustPrefix("4000::/2"), "not global unicast (outside 2000::/3)", false},
	{mustPrefix("8000::/1"), "not global unicast (outside 2000::/3)", false},
}

func mustPrefix(s string) netip.Prefix { return netip.MustParsePrefix(s) }

// maxURL bounds an endpoint's URL.
const maxURL = 2048

// CheckURL checks a webhook endpoint's URL: absolute http or https, a
// host, no user name or password, at most 2048 bytes. A host that is an
// IP address must pass CheckAddr (with allowPrivate), and one that is
// neither a name nor an address in a form net/netip reads — "1.2.3",
// "0x7f.1", "2130706433", which resolvers read as IPv4 — is refused.
// Names are checked when each delivery connects, since what they resolve
// to can change.
func CheckURL(raw string, allowPrivate bool) error {
	if len(raw) > maxURL {
		return consent.Errorf(consent.Invalid, "url must be at most %d bytes", maxURL)
	}
	if err := consent.CheckText("url", raw); err != nil {
		return err
	}
	u, err := url.Parse(raw)
	switch {
	case err != nil:
		return consent.Errorf(consent.Invalid, "url is not a URL")
	case u.Scheme != "http" && u.Scheme != "https":
		return consent.Errorf(consent.Invalid, "url must be http or https")
	case u.Host == "" || u.Hostname() == "" || u.Opaque != "":
		return consent.Errorf(consent.Invalid, "url must have a host")
	case u.User != nil:
		return consent.Errorf(consent.Invalid, "url must not hold a user name or password")
	}
	host := u.Hostname()
	if a, err := netip.ParseAddr(host); err == nil {
		if err := CheckAddr(a, allowPrivate); err != nil {
			// Who runs the service may allow loopback and private
			// addresses (for tests, or a network of its own): say where,
			// but only where that setting would let this address through.
			if b, _ := blockOf(a); b.private && !allowPrivate {
				return consent.Errorf(consent.Invalid, "url: %v (a service that must reach loopback and private addresses sets consentkit.Config.WebhookAllowPrivate: the -webhook-allow-private flag of examples/server, and of consentkit -dsn)", err)
			}
			return consent.Errorf(consent.Invalid, "url: %v (never allowed: D44)", err)
		}
		return nil
	}
	if strings.Contains(host, ":") || looksNumeric(host) {
		return consent.Errorf(consent.Invalid, "url: %s is not a host name or an IP address in standard form", host)
	}
	return nil
}

// looksNumeric reports whether every label of host starts with a digit, as
// in the short and hexadecimal IPv4 forms.
func looksNumeric(host string) bool {
	for _, l := range strings.Split(strings.TrimSuffix(host, "."), ".") {
		if l == "" || l[0] < '0' || l[0] > '9' {
			return false
		}
	}
	return true
}
