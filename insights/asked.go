package insights

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/signed"
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
	// when asked — the facts (attestation_mismatch, high_velocity, and for
	// a statement made before it was judged, consent_after_revocation) and
	// the signed signals judged again by the asking company's rules now —
	// and never milder than the statement's. nil while the statement is
	// not made.
	Bot *Judgement
	// AskedReasons are the reasons of Bot that the statement does not
	// hold, in Bot's order; empty, never nil.
	AskedReasons []Reason
}

// Ask computes, within tx at now, the asked facts of cert, whose insights
// are in, for the company judge (the one asking; cert.CompanyID for its
// own view). The signed signals are judged again by judge's rules now
// (D50) — a buyer verifying a seller's certificate is not bound by
// thresholds the seller loosened — with the facts known now, and the
// verdict is never milder than the signed one. The insights count only as
// svc.CheckInsights holds them: insights that do not hold (a row changed
// in the store) are its *consentkit.StatementIntegrityError. The
// attestation's status counts only as svc.CheckAttestation holds it; one
// that does not hold is not known.
func Ask(ctx context.Context, svc *consentkit.Service, tx consent.Tx, cert *consent.Certificate, in *consent.Insights, now time.Time, judge string) (*Asked, error) {
	if err := svc.CheckInsights(ctx, tx, cert, in); err != nil {
		return nil, err
	}
	v, err := tx.Velocity(ctx, cert)
	if err != nil {
		return nil, err
	}
	a := &Asked{At: now, LeadAgeSeconds: cert.LeadAgeSeconds(now), Velocity: v, AskedReasons: []Reason{}}
	p, err := in.Proof()
	if err != nil || p == nil {
		return a, err
	}
	co, err := tx.Company(ctx, judge)
	if err != nil {
		return nil, err
	}
	f := Facts{RevokedBefore: !cert.RevokedBefore.IsZero(), Velocity: &v}
	switch at, err := tx.Attestation(ctx, cert.ID); {
	case err == nil:
		var broken *consentkit.StatementIntegrityError
		switch err := svc.CheckAttestation(ctx, tx, cert, at); {
		case err == nil:
			f.Attestation = at.Status
		case !errors.As(err, &broken):
			return nil, err
		}
	case consent.ErrorCode(err) != consent.NotFound:
		return nil, err
	}
	stated := Judgement{Verdict: Verdict(p.Statement.Bot.Verdict), Reasons: []Reason{}}
	for _, r := range p.Statement.Bot.Reasons {
		stated.Reasons = append(stated.Reasons, Reason(r))
	}
	rules := Rules(co.InsightsRules)
	bot, added := rules.Add(stated, rules.Judge(signalsOf(&p.Statement.Signals), f).Reasons)
	a.Bot = &bot
	a.AskedReasons = append(a.AskedReasons, added...)
	return a, nil
}

// signalsOf returns the signals that a statement states (statedSignals
// undone): all that Judge reads.
func signalsOf(st *signed.InsightsSignals) *Signals {
	number := func(s string) float64 {
		f, _ := strconv.ParseFloat(s, 64) // signed.Number wrote it; a changed one is refused before
		return f
	}
	s := &Signals{
		Events: st.Events, Snapshot: st.Snapshot, SecondsOnPage: number(st.SecondsOnPage), SecondsToSubmit: number(st.SecondsToSubmit),
		Inputs: map[string]Input{}, Keystrokes: st.Keystrokes, KeysPerMinute: number(st.KeysPerMinute),
		Pointer: Pointer{Moves: st.Pointer.Moves, Clicks: st.Pointer.Clicks, Touches: st.Pointer.Touches, Scrolls: st.Pointer.Scrolls},
		Client: Client{Browser: st.Client.Browser, BrowserVersion: st.Client.BrowserVersion, OS: st.Client.OS, OSVersion: st.Client.OSVersion,
			Device: st.Client.Device, Headless: st.Client.Headless, NotABrowser: st.Client.NotABrowser},
	}
	for _, in := range st.Inputs {
		s.Inputs[in.Name] = Input{Method: Method(in.Method), Keystrokes: in.Keystrokes, Pastes: in.Pastes}
	}
	if r := st.Reported; r != nil {
		s.Reported = &Reported{Webdriver: r.Webdriver, Viewport: Viewport{Width: r.Viewport.Width, Height: r.Viewport.Height},
			TimeZone: r.TimeZone, Language: r.Language, IsFramed: r.IsFramed, ParentOrigin: r.ParentOrigin}
	}
	return s
}
