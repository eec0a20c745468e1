package webhook

import (
	"errors"
	"testing"
)

// TestAddressGuard: the dialer refuses, after name resolution, every
// special-purpose address (CheckAddr, whose table guard_test.go checks
// block by block); AllowPrivate lets through loopback and private
// unicast, and nothing else: not link-local, where cloud metadata answers.
func TestAddressGuard(t *testing.T) {
	const (
		refused = iota // in both modes
		private        // refused unless AllowPrivate
		public         // allowed in both modes
	)
	for _, c := range []struct {
		address string
		want    int
	}{
		{"[::127.0.0.1]:443", refused},        // IPv4-compatible
		{"[::ffff:0:127.0.0.1]:443", refused}, // IPv4-translated
		{"240.0.0.1:443", refused},
		{"255.255.255.254:443", refused},
		{"0.0.0.0:80", refused}, // Linux connects it to the host itself
		{"0.1.2.3:80", refused},
		{"[::]:80", refused},
		{"255.255.255.255:80", refused},
		{"224.0.0.1:80", refused},
		{"[ff02::1%eth0]:80", refused},
		{"100.64.0.1:80", refused},
		{"192.0.0.9:80", refused},
		{"192.0.2.1:80", refused},
		{"192.31.196.1:80", refused},
		{"192.88.99.1:80", refused},
		{"198.18.0.1:80", refused},
		{"[64:ff9b::10.0.0.1]:80", refused},
		{"[64:ff9b:1::1]:80", refused},
		{"[2002:a00:1::1]:80", refused},
		{"[2001::1]:80", refused},
		{"[2001:1::1]:80", refused},
		{"[2001:db8::1]:80", refused},
		{"[2620:4f:8000::1]:80", refused},
		{"[3fff::1]:80", refused},
		{"[5f00::1]:80", refused},
		{"[fec0::1]:80", refused},
		{"[100::1]:80", refused},
		{"[::ffff:240.0.0.1]:80", refused},
		{"[::ffff:100.64.0.1]:80", refused},
		{"no address", refused},
		{"127.0.0.1:80", private},
		{"127.255.255.255:80", private},
		{"[::1]:80", private},
		{"10.0.0.1:80", private},
		{"172.16.0.1:80", private},
		{"192.168.0.1:80", private},
		{"169.254.169.254:80", refused}, // cloud metadata
		{"[fd00::1]:80", private},
		{"[fd00:ec2::254]:80", refused}, // AWS metadata over IPv6
		{"[fe80::1%eth0]:80", refused},
		{"[::ffff:127.0.0.1]:80", private},
		{"93.184.215.14:443", public},
		{"[2606:4700::1111]:443", public},
		{"[::ffff:8.8.8.8]:443", public},
	} {
		for _, allowPrivate := range []bool{false, true} {
			want := c.want == public || c.want == private && allowPrivate
			err := addressGuard(allowPrivate)("tcp", c.address, nil)
			if (err == nil) != want || err != nil && !errors.Is(err, ErrPrivateAddress) {
				t.Errorf("AllowPrivate %v, dialling %s: %v; want allowed %v", allowPrivate, c.address, err, want)
			}
		}
	}
}
