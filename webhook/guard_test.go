package webhook_test

import (
	"net/netip"
	"testing"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/webhook"
)

// refusedBlocks are the blocks a webhook must not reach by default (D44),
// copied here from the IANA IPv4 and IPv6 Special-Purpose Address
// Registries and the decision's additions rather than from the package's
// table; private marks the ones that allowPrivate lets through.
var refusedBlocks = []refusedPrefix{
	// iana-ipv4-special-registry
	{"0.0.0.0/8", false}, {"0.0.0.0/32", false}, {"10.0.0.0/8", true}, {"100.64.0.0/10", false},
	{"127.0.0.0/8", true}, {"169.254.0.0/16", false}, {"172.16.0.0/12", true},
	{"192.0.0.0/24", false}, {"192.0.0.0/29", false}, {"192.0.0.8/32", false}, {"192.0.0.9/32", false},
	{"192.0.0.10/32", false}, {"192.0.0.170/32", false}, {"192.0.0.171/32", false},
	{"192.0.2.0/24", false}, {"192.31.196.0/24", false}, {"192.52.193.0/24", false},
	{"192.88.99.0/24", false}, {"192.88.99.2/32", false}, {"192.168.0.0/16", true},
	{"192.175.48.0/24", false}, {"198.18.0.0/15", false}, {"198.51.100.0/24", false},
	{"203.0.113.0/24", false}, {"240.0.0.0/4", false}, {"255.255.255.255/32", false},
	// IPv4 multicast
	{"224.0.0.0/4", false},
	// iana-ipv6-special-registry (::ffff:0:0/96 is judged as IPv4: below)
	{"::1/128", true}, {"::/128", false}, {"64:ff9b::/96", false}, {"64:ff9b:1::/48", false},
	{"100::/64", false}, {"100:0:0:1::/64", false}, {"2001::/23", false}, {"2001::/32", false},
	{"2001:1::1/128", false}, {"2001:1::2/128", false}, {"2001:1::3/128", false},
	{"2001:2::/48", false}, {"2001:3::/32", false}, {"2001:4:112::/48", false},
	{"2001:10::/28", false}, {"2001:20::/28", false}, {"2001:30::/28", false},
	{"2001:db8::/32", false}, {"2002::/16", false}, {"2620:4f:8000::/48", false},
	{"3fff::/20", false}, {"5f00::/16", false}, {"fc00::/7", true}, {"fe80::/10", false},
	// AWS's IPv6 instance metadata, DNS and time servers (fd00:ec2::254,
	// ::253, ::123), inside the unique local space: refused even with
	// allowPrivate, as 169.254.169.254 is
	{"fd00:ec2::/32", false},
	// Google Cloud's and Oracle Cloud's IPv6 metadata servers, refused
	// alike
	{"fd20:ce::254/128", false}, {"fd00:c1::a9fe:a9fe/128", false},
	// IPv4-compatible (deprecated), IPv4-translated, site-local
	// (deprecated), multicast, and all IPv6 outside 2000::/3
	{"::/96", false}, {"::ffff:0:0:0/96", false}, {"fec0::/10", false}, {"ff00::/8", false},
	{"::/3", false}, {"4000::/2", false}, {"8000::/1", false},
}

// refusedPrefix is a block of refusedBlocks.
type refusedPrefix struct {
	prefix  string
	private bool
}

// refusedByDefault and allowedWithPrivate say what the guard must answer
// for a, from refusedBlocks: the most specific block that holds a decides
// whether allowPrivate lets it through (fd00:ec2::/32 lies inside the
// private fc00::/7).
func refusedByDefault(a netip.Addr) bool {
	_, in := refusedBlock(a)
	return in
}

func allowedWithPrivate(a netip.Addr) bool {
	b, in := refusedBlock(a)
	return !in || b.private
}

// refusedBlock returns the most specific block of refusedBlocks that holds
// a, unmapped and without its zone.
func refusedBlock(a netip.Addr) (found refusedPrefix, in bool) {
	a = a.Unmap().WithZone("")
	bits := -1
	for _, b := range refusedBlocks {
		if p := netip.MustParsePrefix(b.prefix); p.Contains(a) && p.Bits() > bits {
			found, bits = b, p.Bits()
		}
	}
	return found, bits >= 0
}

// lastAddr returns the last address of p.
func lastAddr(p netip.Prefix) netip.Addr {
	b := p.Masked().Addr().AsSlice()
	for i := p.Bits(); i < len(b)*8; i++ {
		b[i/8] |= 0x80 >> (i % 8)
	}
	a, _ := netip.AddrFromSlice(b)
	return a
}

// urlOf returns an http URL whose host is a.
func urlOf(a netip.Addr) string {
	if a.Is4() {
		return "http://" + a.String() + "/"
	}
	return "http://[" + a.String() + "]/"
}

// checkGuard checks every way of asking the guard about a against the
// wanted answers.
func checkGuard(t *testing.T, a netip.Addr, refused, allowedPrivate bool) {
	t.Helper()
	if got := webhook.PrivateAddr(a); got != refused {
		t.Errorf("PrivateAddr(%s) = %v; want %v", a, got, refused)
	}
	for _, allowPrivate := range []bool{false, true} {
		want := !refused || allowPrivate && allowedPrivate
		if err := webhook.CheckAddr(a, allowPrivate); (err == nil) != want || err != nil && consent.ErrorCode(err) != consent.Invalid {
			t.Errorf("CheckAddr(%s, %v) = %v; want allowed %v", a, allowPrivate, err, want)
		}
		if err := webhook.CheckURL(urlOf(a), allowPrivate); (err == nil) != want || err != nil && consent.ErrorCode(err) != consent.Invalid {
			t.Errorf("CheckURL(%s, %v) = %v; want allowed %v", urlOf(a), allowPrivate, err, want)
		}
	}
}

// TestWebhookAddressTable: every special-purpose block is refused, from its
// first address to its last, whether written as IPv4 or IPv4-mapped IPv6;
// the address just outside a block is allowed unless another block holds
// it; allowPrivate lets through loopback and private unicast and nothing
// else, link-local included.
func TestWebhookAddressTable(t *testing.T) {
	public := 0
	for _, b := range refusedBlocks {
		p := netip.MustParsePrefix(b.prefix)
		first, last := p.Masked().Addr(), lastAddr(p)
		inside := []netip.Addr{first, last}
		if first != last {
			inside = append(inside, first.Next(), last.Prev())
		}
		for _, a := range inside {
			checkGuard(t, a, true, allowedWithPrivate(a))
		}
		for _, a := range []netip.Addr{first.Prev(), last.Next()} {
			if !a.IsValid() {
				continue
			}
			if !refusedByDefault(a) {
				public++
			}
			checkGuard(t, a, refusedByDefault(a), allowedWithPrivate(a))
		}
		if p.Addr().Is4() {
			for _, a := range []netip.Addr{first, last, first.Prev(), last.Next()} {
				if a.IsValid() {
					mapped := netip.AddrFrom16(a.As16())
					checkGuard(t, mapped, refusedByDefault(a), allowedWithPrivate(a))
				}
			}
		}
	}
	// Neighbours that are public: 9.255.255.255, 11.0.0.0, 2001:200::, …
	if public < 40 {
		t.Errorf("only %d addresses next to a block are public; the test table is wrong", public)
	}
	for _, s := range []string{"1.1.1.1", "8.8.8.8", "93.184.215.14", "223.255.255.255", "::ffff:8.8.8.8",
		"2001:4860:4860::8888", "2606:4700::1111", "2001:200::1", "2001:db7:ffff:ffff:ffff:ffff:ffff:ffff",
		"2001:db9::", "3fff:1000::", "2a00:1450:4001::1", "3ffe:ffff::1"} {
		a := netip.MustParseAddr(s)
		if refusedByDefault(a) {
			t.Fatalf("test table refuses %s", a)
		}
		checkGuard(t, a, false, true)
	}
}

// TestWebhookAddressForms: IPv4 written in IPv6 (compatible, translated,
// NAT64, 6to4, Teredo) is refused whatever the IPv4 address; IPv4-mapped is
// judged as its IPv4 address; zones are ignored; addresses in the short or
// numeric IPv4 forms that resolvers accept are refused in both modes.
func TestWebhookAddressForms(t *testing.T) {
	const (
		refused = iota // in both modes
		private        // refused unless allowPrivate
		public         // allowed in both modes
	)
	for _, c := range []struct {
		url  string
		want int
	}{
		{"http://[::127.0.0.1]/", refused},
		{"http://[::ffff:0:127.0.0.1]/", refused},
		{"http://240.0.0.1/", refused},
		{"http://[::8.8.8.8]/", refused},
		{"http://[::ffff:0:8.8.8.8]/", refused},
		{"http://[::ffff:0:0:0]/", refused},
		{"http://[64:ff9b::8.8.8.8]/", refused},
		{"http://[64:ff9b::127.0.0.1]/", refused},
		{"http://[2002:808:808::1]/", refused},
		{"http://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/", refused},
		{"http://[::ffff:240.0.0.1]/", refused},
		{"http://[::ffff:0.0.0.0]/", refused},
		{"http://[::ffff:192.0.2.1]/", refused},
		{"http://[2001:db8::1%25eth0]/", refused},
		{"http://[ff02::1%25eth0]/", refused},
		{"http://0.0.0.0/", refused},
		{"http://[::]/", refused},
		{"http://255.255.255.255/", refused},
		{"http://224.0.0.1/", refused},
		{"http://100.64.0.1/", refused},
		{"http://192.0.2.1/", refused},
		{"http://[fec0::1]/", refused},
		{"http://0x7f.1/", refused},
		{"http://2130706433/", refused},
		{"http://4026531841/", refused}, // 240.0.0.1
		{"http://0360.0.0.1/", refused}, // 240.0.0.1 in octal
		{"http://127.1/", refused},
		{"http://127.0.0.1/", private},
		{"http://[::1]:8080/", private},
		{"http://10.1.2.3/", private},
		{"http://172.31.255.255/", private},
		{"http://192.168.1.1/", private},
		{"http://169.254.169.254/latest/meta-data/", refused}, // cloud metadata
		{"http://[fd00::1]/", private},
		{"http://[fd00:ec2::254]/latest/meta-data/", refused}, // AWS metadata over IPv6
		{"http://[fd00:ec2::253]/", refused},
		{"http://[fd20:ce::254]/computeMetadata/v1/", refused}, // Google Cloud metadata over IPv6
		{"http://[fd00:c1::a9fe:a9fe]/opc/v2/", refused},       // Oracle Cloud metadata over IPv6
		{"http://[::ffff:169.254.169.254]/", refused},
		{"http://[fe80::1%25eth0]/", refused},
		{"http://[::ffff:127.0.0.1]/", private},
		{"http://[::ffff:10.0.0.1]/", private},
		{"http://[::ffff:8.8.8.8]/", public},
		{"http://93.184.215.14:8080/x", public},
		{"https://[2606:4700::1111]/", public},
		{"https://hooks.example.com/", public},
		{"http://localhost:9/", public}, // a name: checked as each delivery connects
	} {
		for _, allowPrivate := range []bool{false, true} {
			want := c.want == public || c.want == private && allowPrivate
			err := webhook.CheckURL(c.url, allowPrivate)
			if (err == nil) != want || err != nil && consent.ErrorCode(err) != consent.Invalid {
				t.Errorf("CheckURL(%s, %v) = %v; want allowed %v", c.url, allowPrivate, err, want)
			}
		}
	}
	if !webhook.PrivateAddr(netip.Addr{}) || webhook.CheckAddr(netip.Addr{}, true) == nil {
		t.Errorf("the zero Addr is allowed")
	}
}
