package retain

import (
	"cmp"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/jobs"
	"github.com/consentkit/consentkit/retain/mp4"
	"github.com/consentkit/consentkit/signed"
)

// Attester replays a recording to the consent moment and measures the
// consent elements there (D49): mp4.Converter, whose warm browsers it
// shares with conversion (a waiting conversion is served first).
type Attester interface {
	Attest(ctx context.Context, events json.RawMessage, at int64, nodes []int) (*mp4.Attestation, error)
}

// JobDeleteScreenshot removes an attestation's screenshot from the video
// store once its certificate is purged; its key is the certificate id,
// its payload the screenshot's Path. It waits, due again at the
// certificate's retention date, while the certificate lives.
const JobDeleteScreenshot = "screenshot.delete"

// Tolerances of the comparison of measured and claimed visibility (D49):
// the consumer's browser and the replay's lay text out with other fonts
// and screens, so sizes and contrasts that differ by less are the same.
const (
	fontSizeTolerance = 0.5 // CSS pixels
	contrastTolerance = 0.1 // of the WCAG ratio, 1 to 21
	colorTolerance    = 1   // of a colour's channel, 0 to 255
)

// AttestationHandler returns the handler of consent.JobAttest jobs, which
// consentkit.Service.AskAttestation enqueues (D49): it reads the
// certificate and its session's recording, checks that the recording is
// the one the certificate was issued with, replays it whole (a session
// closes at consent, so its last event is the consent moment) in
// cfg.Converter, which must be an Attester, compares what it measured of
// each consent's element with what the browser claimed, keeps the
// screenshot in cfg.Videos, and records the signed statement — attested,
// mismatch or unavailable — in the transaction that ends the job. A
// recording that cannot be replayed is unavailable at once; other
// failures are tried again with backoff, and the last one is recorded as
// unavailable. Runs one attestation at a time by default.
func AttestationHandler(cfg WorkerConfig) (jobs.Handler, error) {
	if cfg.Service == nil || cfg.Converter == nil || cfg.Videos == nil {
		return jobs.Handler{}, errors.New("retain: WorkerConfig needs Service, Converter and Videos")
	}
	at, ok := cfg.Converter.(Attester)
	if !ok {
		return jobs.Handler{}, errors.New("retain: the Converter cannot attest (it has no Attest method)")
	}
	if cfg.Lease < 0 || cfg.MaxAttempts < 0 || cfg.Backoff < 0 || cfg.MaxBackoff < 0 || cfg.MaxAttested < 0 {
		return jobs.Handler{}, errors.New("retain: WorkerConfig values must not be negative (zero means the default)")
	}
	a := &attestor{svc: cfg.Service, attester: at, videos: cfg.Videos, log: cmp.Or(cfg.Logger, slog.Default()),
		max: cmp.Or(cfg.MaxAttested, DefaultMaxAttested)}
	return jobs.Handler{
		Kind:        consent.JobAttest,
		Do:          a.do,
		Failed:      a.failed,
		Concurrency: 1,
		Lease:       cmp.Or(cfg.Lease, 2*time.Minute),
		MaxAttempts: cfg.MaxAttempts,
		Backoff:     cfg.Backoff,
		MaxBackoff:  cfg.MaxBackoff,
	}, nil
}

type attestor struct {
	svc      *consentkit.Service
	attester Attester
	videos   VideoStore
	log      *slog.Logger
	max      int64 // WorkerConfig.MaxAttested
}

// DefaultMaxAttested is WorkerConfig.MaxAttested's default: 32 MiB of
// events, half a recording's default bound, whose replay takes a few
// hundred MiB to prepare; a form's recording is a few hundred KiB.
const DefaultMaxAttested = 32 << 20

// subject is what an attestation reads from the store.
type subject struct {
	cert      *consent.Certificate
	recording json.RawMessage
	// reason, when set, says why there is nothing to replay.
	reason string
}

// read reads the pending attestation's certificate and recording; nil when
// there is nothing left to do (the certificate purged, the attestation
// done).
func (a *attestor) read(ctx context.Context, certificateID string) (*subject, error) {
	var s *subject
	err := a.svc.Store().View(ctx, func(tx consent.Tx) error {
		s = nil
		att, err := tx.Attestation(ctx, certificateID)
		if consent.ErrorCode(err) == consent.NotFound {
			return nil
		}
		if err != nil || att.Status != consent.AttestationPending {
			return err
		}
		cert, err := tx.Certificate(ctx, certificateID)
		if consent.ErrorCode(err) == consent.NotFound {
			return nil
		}
		if err != nil {
			return err
		}
		s = &subject{cert: cert}
		if ses, err := tx.Session(ctx, cert.SessionID); err == nil && ses.EventBytes > a.max {
			s.reason = fmt.Sprintf("the recording holds %d bytes of events, more than an attestation replays (%d)", ses.EventBytes, a.max)
			return nil
		}
		rec, err := consent.ReadRecording(ctx, tx, cert.SessionID)
		switch {
		case consent.ErrorCode(err) == consent.NotFound || err == nil && len(rec) <= len("[]"):
			s.reason = "the certificate's recording is not kept any more"
			return nil
		case err != nil:
			return err
		}
		s.recording = rec
		if !cert.RecordingSHA256.IsZero() && consent.Digest(sha256.Sum256(s.recording)) != cert.RecordingSHA256 {
			s.recording, s.reason = nil, "the recording no longer has the SHA-256 the certificate was issued with"
		}
		return nil
	})
	return s, err
}

func (a *attestor) do(ctx context.Context, j *consent.Job) (jobs.Result, error) {
	s, err := a.read(ctx, j.Key)
	if err != nil || s == nil {
		return jobs.Result{}, err
	}
	if s.reason != "" {
		return a.record(ctx, s.cert, nil, s.reason)
	}
	var nodes []int
	for _, r := range s.cert.Records {
		if r.NodeID > 0 {
			nodes = append(nodes, r.NodeID)
		}
	}
	if len(nodes) == 0 {
		return a.record(ctx, s.cert, nil, "no consent of the certificate names its element in the recording (node_id)")
	}
	m, err := a.attester.Attest(ctx, s.recording, math.MaxInt64, nodes)
	var bad *mp4.RecordingError
	if errors.As(err, &bad) {
		return a.record(ctx, s.cert, nil, "the recording cannot be replayed: "+bad.Error())
	}
	if err != nil {
		return jobs.Result{}, err
	}
	return a.record(ctx, s.cert, m, "")
}

// failed records the last failed attempt as unavailable.
func (a *attestor) failed(ctx context.Context, tx consent.Tx, j *consent.Job, cause error, final bool) error {
	if !final {
		return nil
	}
	cert, err := tx.Certificate(ctx, j.Key)
	if consent.ErrorCode(err) == consent.NotFound {
		return nil
	}
	if err != nil {
		return err
	}
	st, sig, err := a.statement(cert, nil, "the replay failed: "+jobs.ErrorText(cause))
	if err != nil {
		return err
	}
	_, err = a.update(ctx, tx, cert, st, sig, consent.Video{})
	return err
}

// record keeps m's screenshot and returns the job's result: the statement
// of m (nil with a reason: unavailable), recorded when the job ends.
func (a *attestor) record(ctx context.Context, cert *consent.Certificate, m *mp4.Attestation, reason string) (jobs.Result, error) {
	st, sig, err := a.statement(cert, m, reason)
	if err != nil {
		return jobs.Result{}, err
	}
	var shot consent.Video
	if m != nil && len(m.Screenshot) > 0 {
		// Written, unlocked, before the commit that names it, which asks
		// for its lock; the removal of every screenshot of the certificate
		// is asked first, so that one a crash between the two leaves, which
		// no row names, goes with its certificate too (D49).
		if err := a.svc.Store().Update(ctx, func(tx consent.Tx) error { return askScreenshotRemoval(ctx, tx, cert, "", a.svc.Now()) }); err != nil {
			return jobs.Result{}, fmt.Errorf("ask for the screenshot's removal: %w", err)
		}
		if shot, err = a.videos.PutScreenshot(ctx, cert.ID, m.Screenshot); err != nil {
			return jobs.Result{}, fmt.Errorf("store the screenshot: %w", err)
		}
	}
	var recorded bool
	res := jobs.Result{Commit: func(ctx context.Context, tx consent.Tx) error {
		var err error
		recorded, err = a.update(ctx, tx, cert, st, sig, shot)
		return err
	}}
	if shot.Path != "" {
		res.After = func(ctx context.Context, committed bool) {
			if committed && recorded {
				return
			}
			// Not recorded: the certificate purged or attested meanwhile,
			// the lease lost, the store failing. Remove the screenshot if
			// no row names it.
			discard(ctx, a.videos, a.log.With("certificate", cert.ID), shot.Path, func(ctx context.Context) (named, purged bool, err error) {
				err = a.svc.Store().View(ctx, func(tx consent.Tx) error {
					att, err := tx.Attestation(ctx, cert.ID)
					if consent.ErrorCode(err) == consent.NotFound {
						purged = true
						return nil
					}
					named = err == nil && att.Screenshot == shot.Path
					return err
				})
				return named, purged, err
			})
		}
	}
	return res, nil
}

// update records the statement in tx, and with a screenshot the job that
// locks it until the certificate's retention date and the one that removes
// it once the certificate is purged. It reports whether it recorded the
// statement: not when the certificate was purged or its attestation done
// meanwhile.
func (a *attestor) update(ctx context.Context, tx consent.Tx, cert *consent.Certificate, st *signed.Statement, sig []byte, shot consent.Video) (bool, error) {
	att, err := tx.Attestation(ctx, cert.ID)
	if consent.ErrorCode(err) == consent.NotFound {
		return false, nil // purged meanwhile
	}
	if err != nil || att.Status != consent.AttestationPending {
		return false, err
	}
	body, err := signed.Marshal(st)
	if err != nil {
		return false, err
	}
	if err := a.svc.CheckSigningKey(ctx, tx); err != nil {
		return false, err // every instance would refuse the statement
	}
	att.Status, att.Statement, att.Signature, att.KeyID = st.Status, body, sig, st.KeyID
	att.Screenshot, att.UpdatedAt = shot.Path, a.svc.Now()
	if err := tx.UpdateAttestation(ctx, att); err != nil {
		return false, err
	}
	if shot.Path == "" {
		return true, nil
	}
	now := a.svc.Now()
	if err := enqueueLock(ctx, tx, JobLockScreenshot, cert.ID, now); err != nil {
		return false, err
	}
	return true, askScreenshotRemoval(ctx, tx, cert, shot.Path, now)
}

// askScreenshotRemoval enqueues in tx, unless one is queued, the job that
// removes the certificate's screenshots once it is purged: of path, or
// with no path of every screenshot the store keeps of the certificate
// (VideoSweeper).
func askScreenshotRemoval(ctx context.Context, tx consent.Tx, cert *consent.Certificate, path string, now time.Time) error {
	_, err := tx.Job(ctx, JobDeleteScreenshot, cert.ID)
	if consent.ErrorCode(err) != consent.NotFound {
		return err // queued already, or the store failing
	}
	return tx.EnqueueJob(ctx, &consent.Job{Kind: JobDeleteScreenshot, Key: cert.ID, Payload: []byte(path),
		RunAfter: later(cert.ExpiresAt, now), CreatedAt: now, CompanyID: cert.CompanyID})
}

func later(a, b time.Time) time.Time {
	if a.After(b) {
		return a
	}
	return b
}

// statement builds and signs the statement of cert: of m, or unavailable
// for reason when m is nil.
func (a *attestor) statement(cert *consent.Certificate, m *mp4.Attestation, reason string) (*signed.Statement, []byte, error) {
	content := consent.Signed(cert)
	st, err := signed.NewStatement(&content, a.svc.Now())
	if err != nil {
		return nil, nil, err
	}
	if m == nil {
		st.Status, st.Reason = signed.Unavailable, reason
		for _, r := range cert.Records {
			st.Consents = append(st.Consents, signed.StatedConsent{NodeID: r.NodeID, Text: ""})
		}
	} else {
		st.Unreproducible = m.Unreproducible
		if len(m.Screenshot) > 0 {
			sum := sha256.Sum256(m.Screenshot)
			st.ScreenshotSHA256 = hex.EncodeToString(sum[:])
		}
		compare(&st, cert.Records, cert.Visibility, m)
	}
	sig, err := a.svc.SignStatement(&st)
	if err != nil {
		return nil, nil, err
	}
	return &st, sig, nil
}

// compare sets st's consents, differences, status and reason from what the
// replay measured, m, of the certificate's records (D49):
//   - a consent whose element the recording does not hold at the consent
//     moment (the browser named a node the replay cannot find) is a
//     mismatch: the recording does not show what the certificate claims;
//   - a consent that names no element (node_id 0) cannot be attested:
//     unavailable, unless another consent is a mismatch;
//   - text is compared with runs of white space as one space; visibility
//     field by field, font size within half a pixel and contrast within
//     0.1: each consent's own, and for consent 0 the certificate's
//     (certVisibility, which bodies of snippets cached before each consent
//     had its own send alone, and newer ones beside consent 0's);
//   - a consent found with no visibility claimed, its own or the
//     certificate's, is never attested: unavailable, unless another
//     consent is a mismatch;
//   - differences are a mismatch, unless the replay could not reproduce
//     something (m.Unreproducible: a stylesheet, a font…) that may explain
//     them: then the status is unavailable, the reason names both, and the
//     differences are listed all the same, so that what the replay
//     measured is never hidden by what it could not load.
//
// Attested means every consent was found and measured as claimed.
func compare(st *signed.Statement, records []consent.Record, certVisibility *consent.Visibility, m *mp4.Attestation) {
	byNode := map[int]mp4.Measured{}
	for _, c := range m.Consents {
		byNode[c.NodeID] = c
	}
	var missing, diffs []signed.Difference
	unnamed, unclaimed := 0, 0
	for i, r := range records {
		c, ok := byNode[r.NodeID]
		if r.NodeID <= 0 || !ok {
			unnamed++
			st.Consents = append(st.Consents, signed.StatedConsent{NodeID: r.NodeID})
			continue
		}
		sc := signed.StatedConsent{NodeID: r.NodeID, Found: c.Found, Text: c.Text}
		if !c.Found {
			missing = append(missing, signed.Difference{Consent: i, Field: "found", Claimed: "true", Measured: "false"})
			st.Consents = append(st.Consents, sc)
			continue
		}
		mv := &consent.Visibility{InViewport: c.InViewport, Visible: c.Visible, FontSizePx: c.FontSizePx,
			TextColor: c.TextColor, BackgroundColor: c.BackgroundColor, ContrastRatio: c.ContrastRatio, HiddenText: c.HiddenText}
		sc.Visibility = signed.StatedVisibility(&signed.Visibility{InViewport: mv.InViewport, Visible: mv.Visible,
			FontSizePx: mv.FontSizePx, TextColor: mv.TextColor, BackgroundColor: mv.BackgroundColor,
			ContrastRatio: mv.ContrastRatio, HiddenText: mv.HiddenText})
		st.Consents = append(st.Consents, sc)
		diffs = append(diffs, textDifference(i, r.Text, c.Text)...)
		claims := 0
		if r.Visibility != nil {
			claims++
			diffs = append(diffs, visibilityDifferences(i, "visibility.", r.Visibility, mv)...)
		}
		if i == 0 && certVisibility != nil {
			claims++
			switch {
			case r.Visibility == nil:
				diffs = append(diffs, visibilityDifferences(i, "visibility.", certVisibility, mv)...)
			case !sameVisibility(r.Visibility, certVisibility):
				diffs = append(diffs, visibilityDifferences(i, "certificate.visibility.", certVisibility, mv)...)
			}
		}
		if claims == 0 {
			unclaimed++
		}
	}
	switch {
	case len(missing) > 0:
		st.Status, st.Differences = signed.Mismatch, slices.Concat(missing, diffs)
	case len(diffs) > 0 && len(m.Unreproducible) == 0:
		st.Status, st.Differences = signed.Mismatch, diffs
	case len(diffs) > 0:
		fields := make([]string, len(diffs))
		for i, d := range diffs {
			fields[i] = fmt.Sprintf("consent %d %s", d.Consent, d.Field)
		}
		st.Status, st.Differences = signed.Unavailable, diffs
		st.Reason = fmt.Sprintf("the replay could not reproduce %s, which may explain what it measured otherwise than the browser claimed (%s)",
			strings.Join(m.Unreproducible, ", "), strings.Join(fields, ", "))
	case unnamed > 0:
		st.Status = signed.Unavailable
		st.Reason = fmt.Sprintf("%d of the certificate's %d consents name no element of the recording (node_id)", unnamed, len(records))
	case unclaimed > 0:
		st.Status = signed.Unavailable
		st.Reason = fmt.Sprintf("%d of the certificate's %d consents claim no visibility to compare with the replay's", unclaimed, len(records))
	default:
		st.Status = signed.Attested
	}
}

// textDifference lists consent i's text when the browser claimed it,
// claimed, otherwise than the replay measured it, measured.
func textDifference(i int, claimed, measured string) []signed.Difference {
	if a, b := strings.Join(strings.Fields(claimed), " "), strings.Join(strings.Fields(measured), " "); a != b {
		return []signed.Difference{{Consent: i, Field: "text", Claimed: claimed, Measured: measured}}
	}
	return nil
}

// visibilityDifferences lists the facts of v, a visibility the browser
// claimed of consent i, otherwise than the replay measured them, m; each
// field named with prefix.
func visibilityDifferences(i int, prefix string, v, m *consent.Visibility) []signed.Difference {
	var out []signed.Difference
	add := func(field, claimed, measured string) {
		out = append(out, signed.Difference{Consent: i, Field: prefix + field, Claimed: claimed, Measured: measured})
	}
	flag := func(field string, a, b bool) {
		if a != b {
			add(field, fmt.Sprint(a), fmt.Sprint(b))
		}
	}
	flag("in_viewport", v.InViewport, m.InViewport)
	flag("visible", v.Visible, m.Visible)
	if math.Abs(v.FontSizePx-m.FontSizePx) > fontSizeTolerance {
		add("font_size_px", number(v.FontSizePx), number(m.FontSizePx))
	}
	if math.Abs(v.ContrastRatio-m.ContrastRatio) > contrastTolerance {
		add("contrast_ratio", number(v.ContrastRatio), number(m.ContrastRatio))
	}
	// A colour the browser could not tell ("") claims nothing.
	if v.TextColor != "" && !sameColor(v.TextColor, m.TextColor) {
		add("text_color", v.TextColor, m.TextColor)
	}
	if v.BackgroundColor != "" && !sameColor(v.BackgroundColor, m.BackgroundColor) {
		add("background_color", v.BackgroundColor, m.BackgroundColor)
	}
	if a, b := strings.Join(v.HiddenText, "\n"), strings.Join(m.HiddenText, "\n"); a != b {
		add("hidden_text", fmt.Sprintf("%q", v.HiddenText), fmt.Sprintf("%q", m.HiddenText))
	}
	return out
}

// sameColor reports whether two CSS colours, as browsers give a computed
// colour, are the same: rgb() or rgba(), with commas or spaces, each
// channel within colorTolerance and alpha within 0.01 (browsers round
// them differently); colours in other notations are the same only
// written the same, case and spaces aside.
func sameColor(a, b string) bool {
	ca, okA := parseRGB(a)
	cb, okB := parseRGB(b)
	if !okA || !okB {
		norm := func(s string) string { return strings.ToLower(strings.Join(strings.Fields(s), "")) }
		return norm(a) == norm(b)
	}
	for i := range 3 {
		if math.Abs(ca[i]-cb[i]) > colorTolerance {
			return false
		}
	}
	return math.Abs(ca[3]-cb[3]) <= 0.01
}

// parseRGB reads "rgb(r, g, b)", "rgba(r, g, b, a)" or their forms with
// spaces and "/ a": red, green, blue (0–255) and alpha (0–1, 1 when not
// given).
func parseRGB(s string) ([4]float64, bool) {
	s = strings.ToLower(strings.TrimSpace(s))
	inner, ok := strings.CutPrefix(s, "rgba(")
	if !ok {
		inner, ok = strings.CutPrefix(s, "rgb(")
	}
	inner, closed := strings.CutSuffix(inner, ")")
	if !ok || !closed {
		return [4]float64{}, false
	}
	fields := strings.FieldsFunc(inner, func(r rune) bool { return r == ',' || r == '/' || r == ' ' })
	if len(fields) != 3 && len(fields) != 4 {
		return [4]float64{}, false
	}
	c := [4]float64{0, 0, 0, 1}
	for i, f := range fields {
		v, err := strconv.ParseFloat(f, 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			return [4]float64{}, false
		}
		c[i] = v
	}
	return c, true
}

// sameVisibility reports whether a and b claim the same facts.
func sameVisibility(a, b *consent.Visibility) bool {
	return a.InViewport == b.InViewport && a.Visible == b.Visible && a.FontSizePx == b.FontSizePx &&
		a.TextColor == b.TextColor && a.BackgroundColor == b.BackgroundColor && a.ContrastRatio == b.ContrastRatio &&
		slices.Equal(a.HiddenText, b.HiddenText)
}

func number(f float64) string { return fmt.Sprintf("%g", f) }
