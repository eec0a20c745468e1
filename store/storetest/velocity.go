package storetest

import (
	"fmt"
	"testing"
	"time"

	"github.com/consentkit/consentkit/consent"
)

// testVelocity: Tx.Velocity counts the company's other certificates in
// the hour and the day up to c.CreatedAt, both ends included, that share
// c's address, email digest or mobile digest; a value c lacks counts none;
// revoked ones count; another company's never (D50).
func testVelocity(t *testing.T, s consent.Store) {
	fixture(t, s)
	email, mobile := consent.DigestOf("jane@example.com"), consent.DigestOf("+15550102000")
	at := t0.Add(48 * time.Hour)
	mk := func(id, company, ip string, e, m consent.Digest, created time.Time) *consent.Certificate {
		c := certificate(id, company, company+"-web", map[string]string{"acme": "s1", "other": "s2"}[company])
		c.ClientIP, c.EmailDigest, c.MobileDigest, c.CreatedAt, c.ExpiresAt = ip, e, m, created, created
		return c
	}
	const ip = "203.0.113.9"
	certs := []*consent.Certificate{
		mk("v-hour-edge", "acme", ip, email, consent.Digest{}, at.Add(-time.Hour)),                // hour and day
		mk("v-hour", "acme", ip, consent.Digest{}, mobile, at.Add(-time.Minute)),                  // hour and day
		mk("v-same-instant", "acme", "198.51.100.1", email, consent.Digest{}, at),                 // hour and day, email
		mk("v-day", "acme", ip, email, mobile, at.Add(-time.Hour-time.Microsecond)),               // day only
		mk("v-day-edge", "acme", "198.51.100.1", consent.Digest{}, mobile, at.Add(-24*time.Hour)), // day, mobile
		mk("v-too-old", "acme", ip, email, mobile, at.Add(-24*time.Hour-time.Microsecond)),        // neither
		mk("v-after", "acme", ip, email, mobile, at.Add(time.Microsecond)),                        // after: neither
		mk("v-other", "other", ip, email, mobile, at.Add(-time.Minute)),                           // another company's
		mk("v-no-ip", "acme", "", consent.Digest{}, consent.Digest{}, at.Add(-time.Minute)),       // shares nothing
	}
	update(t, s, func(tx consent.Tx) error {
		for _, c := range certs {
			if err := tx.CreateCertificate(ctx, c); err != nil {
				return err
			}
		}
		return tx.RevokeCertificate(ctx, "v-hour", at)
	})
	this := mk("v-this", "acme", ip, email, mobile, at)
	velocity := func(c *consent.Certificate) consent.Velocity {
		t.Helper()
		var v consent.Velocity
		view(t, s, func(tx consent.Tx) error {
			var err error
			v, err = tx.Velocity(ctx, c)
			return err
		})
		return v
	}
	want := consent.Velocity{
		Hour: consent.VelocityCounts{ClientIP: 2, Email: 2, Mobile: 1},
		Day:  consent.VelocityCounts{ClientIP: 3, Email: 3, Mobile: 3},
	}
	if got := velocity(this); got != want {
		t.Errorf("Velocity of a certificate not stored = %+v, want %+v", got, want)
	}
	update(t, s, func(tx consent.Tx) error { return tx.CreateCertificate(ctx, this) })
	if got := velocity(this); got != want {
		t.Errorf("Velocity of a stored certificate = %+v, want %+v (itself not counted)", got, want)
	}
	bare := mk("v-bare", "acme", "", consent.Digest{}, consent.Digest{}, at)
	if got := velocity(bare); got != (consent.Velocity{}) {
		t.Errorf("Velocity with no address and no digests = %+v, want none", got)
	}
	if got := velocity(mk("v-none", "nobody", ip, email, mobile, at)); got != (consent.Velocity{}) {
		t.Errorf("Velocity of an unknown company = %+v, want none", got)
	}
}

// testVelocityStops: each count stops at consent.MaxVelocity.
func testVelocityStops(t *testing.T, s consent.Store) {
	fixture(t, s)
	const ip = "203.0.113.9"
	update(t, s, func(tx consent.Tx) error {
		for i := range consent.MaxVelocity + 1 {
			c := certificate(fmt.Sprintf("v%04d", i), "acme", "acme-web", "s1")
			c.ClientIP, c.CreatedAt = ip, t0.Add(-time.Duration(i)*time.Millisecond)
			if err := tx.CreateCertificate(ctx, c); err != nil {
				return err
			}
		}
		return nil
	})
	c := certificate("v-this", "acme", "acme-web", "s1")
	c.ClientIP = ip
	view(t, s, func(tx consent.Tx) error {
		v, err := tx.Velocity(ctx, c)
		if err == nil && (v.Hour.ClientIP != consent.MaxVelocity || v.Day.ClientIP != consent.MaxVelocity) {
			t.Errorf("Velocity over %d certificates = %+v, want each address count at %d", consent.MaxVelocity+1, v, consent.MaxVelocity)
		}
		return err
	})
}
