package insights

import (
	"context"
	"time"

	"github.com/consentkit/consentkit/consent"
)

// Asked are what a certificate's insights say only when asked (D50):
// computed at that moment from what the store holds then, and never
// signed. The signed statement keeps the verdict at issue.
type Asked struct {
	// At is when they were computed.
	At time.Time
	// LeadAgeSeconds is the time from the consent (the certificate's
	// issue) to At, in whole seconds.
	LeadAgeSeconds int64
	// Velocity counts the company's certificates in the hour and the day
	// before this one, from its address, email and mobile
	// (consent.Tx.Velocity; each count at most consent.MaxVelocity).
	Velocity consent.Velocity
	// Bot is the verdict at At: the statement's, with the reasons found
	// when asked (attestation_mismatch, high_velocity, and for a statement
	// made before it was judged, consent_after_revocation), judged by the
	// company's rules now and never milder than the statement's. nil while
	// the statement is not made.
	Bot *Judgement
	// AskedReasons are the reasons of Bot that the statement does not
	// hold, in Bot's order; empty, never nil.
	AskedReasons []Reason
}

// Ask computes, within tx at now, the asked facts of cert, whose insights
// are in.
func Ask(ctx context.Context, tx consent.Tx, cert *consent.Certificate, in *consent.Insights, now time.Time) (*Asked, error) {
	v, err := tx.Velocity(ctx, cert)
	if err != nil {
		return nil, err
	}
	a := &Asked{At: now, LeadAgeSeconds: cert.LeadAgeSeconds(now), Velocity: v, AskedReasons: []Reason{}}
	p, err := in.Proof()
	if err != nil || p == nil {
		return a, err
	}
	co, err := tx.Company(ctx, cert.CompanyID)
	if err != nil {
		return nil, err
	}
	f := Facts{RevokedBefore: !cert.RevokedBefore.IsZero(), Velocity: &v}
	switch at, err := tx.Attestation(ctx, cert.ID); {
	case err == nil:
		f.Attestation = at.Status
	case consent.ErrorCode(err) != consent.NotFound:
		return nil, err
	}
	stated := Judgement{Verdict: Verdict(p.Statement.Bot.Verdict), Reasons: []Reason{}}
	for _, r := range p.Statement.Bot.Reasons {
		stated.Reasons = append(stated.Reasons, Reason(r))
	}
	bot, added := Rules(co.InsightsRules).Add(stated, f)
	a.Bot = &bot
	a.AskedReasons = append(a.AskedReasons, added...)
	return a, nil
}
