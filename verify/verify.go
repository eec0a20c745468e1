package verify

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"hash/maphash"
	"log/slog"
	"slices"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/contact"
	"github.com/consentkit/consentkit/insights"
	"github.com/consentkit/consentkit/internal/textsearch"
	"github.com/consentkit/consentkit/profile"
	"github.com/consentkit/consentkit/signed"
	"github.com/consentkit/consentkit/wallet"
)

// Service answers verification requests with the store, clock and prices
// of a consentkit.Service. It is safe for concurrent use.
type Service struct {
	svc      *consentkit.Service
	recorded recordedSet
}

// New returns a Service built from svc.
func New(svc *consentkit.Service) *Service { return &Service{svc: svc} }

// Verification types: Result.VerificationType (D12).
const (
	FirstParty = "first_party"
	ThirdParty = "third_party"
)

// MatchRequest is the body of /verify/match. PropertyID is optional; when
// given it must name a property of CompanyID.
type MatchRequest struct {
	CertificateID string // required
	CompanyID     string // required: the caller's company
	Consent       string // required: the consent text to compare
	// OriginatorCompanyID is optional: the company that issued the
	// certificate, when it lets the caller verify its certificates (D9).
	OriginatorCompanyID string
	PropertyID          string // optional
	Lead                       // optional
	// Attest, optional, asks for the certificate's attestation (D49): the
	// answer's Attestation is pending until the replay has run. It adds
	// nothing to the price.
	Attest bool
	// Insights, optional, asks for the certificate's bot verdict (D50):
	// the answer's Insights is pending until the insights job has run. It
	// adds nothing to the price.
	Insights bool
	// Profile, optional, names the caller's audit profile to grade the
	// certificate by (D51): the answer's Audit. NotFound, uncharged, when
	// the caller has no profile of that name; in a third-party
	// verification it is still the caller's. It adds nothing to the price.
	Profile string
}

// Lead is the optional contact of a lead to match against the certificate
// (D38): each given one is normalized as opt-out normalizes it (D17) and
// compared by digest.
type Lead struct {
	Email  string
	Mobile string
}

// PartialMatchRequest is the body of /verify/partial-match.
type PartialMatchRequest struct {
	CertificateID       string // required
	CompanyID           string // required: the caller's company
	Term                string // required: not empty once trimmed
	OriginatorCompanyID string // optional, as in MatchRequest
	PropertyID          string // optional
	Lead                       // optional
	Attest              bool   // optional, as in MatchRequest
	Insights            bool   // optional, as in MatchRequest
	Profile             string // optional, as in MatchRequest
}

// Result is the answer to a match or partial match (D12).
type Result struct {
	Valid bool
	// ConsentOptIn is the opt-in time of the matched record, or of the
	// earliest record when nothing matched; zero when the certificate has
	// no records.
	ConsentOptIn     time.Time
	Origin           string
	ConsentTypes     []string // sorted, de-duplicated, never nil
	VerificationType string
	// EmailMatched and MobileMatched say whether the lead's email and
	// mobile are the certificate's (D38); nil when not given.
	EmailMatched, MobileMatched *bool
	// RevokedBefore is when the company last revoked the consumer's
	// consent before the certificate was issued; zero when it had not
	// (consent.Certificate.RevokedBefore).
	RevokedBefore time.Time
	// Attestation is where the certificate's attestation stands (D49);
	// nil when none was asked for.
	Attestation *Attestation
	// Insights is the certificate's bot verdict (D50); nil when not asked
	// for, or when the certificate has no insights (issued before they
	// were computed).
	Insights *Insights
	// Audit is the certificate's grade by the profile the request named
	// (D51); nil when it named none.
	Audit   *profile.Graded
	Charged wallet.Amount
	Balance wallet.Amount // after the charge
}

// Insights is a certificate's bot verdict in a verification's answer
// (D50).
type Insights struct {
	Status string // consent.InsightsPending, …Done or …Failed
	// Verdict and Reasons are the verdict at the verification
	// (insights.Asked.Bot): "" and empty while pending.
	Verdict string
	Reasons []string // the reasons' codes; empty, never nil
	// AskedReasons are those of Reasons found at the verification, not in
	// the signed statement; empty, never nil.
	AskedReasons []string
}

// insightsOf reads the bot verdict of cert inside tx, judged by the rules
// of caller, the company asking.
func (s *Service) insightsOf(ctx context.Context, tx consent.Tx, cert *consent.Certificate, caller string) (*Insights, error) {
	in, asked, err := s.insights(ctx, tx, cert, caller)
	if err != nil {
		return nil, err
	}
	return InsightsOf(in, asked), nil
}

// InsightsOf returns a certificate's insights in and the verdict asked
// now (insights.Ask, by the verifying company's rules; nil: none) as a
// verification's answer holds them; nil when in is nil (the certificate
// has none).
func InsightsOf(in *consent.Insights, asked *insights.Asked) *Insights {
	if in == nil {
		return nil
	}
	out := &Insights{Status: in.Status, Reasons: []string{}, AskedReasons: []string{}}
	if asked != nil && asked.Bot != nil {
		out.Verdict, out.Reasons, out.AskedReasons = string(asked.Bot.Verdict), insights.Codes(asked.Bot.Reasons), insights.Codes(asked.AskedReasons)
	}
	return out
}

// insights returns cert's insights and what they say when caller asks now
// (D50); nil, nil, nil when cert has none.
func (s *Service) insights(ctx context.Context, tx consent.Tx, cert *consent.Certificate, caller string) (*consent.Insights, *insights.Asked, error) {
	in, err := tx.Insights(ctx, cert.ID)
	if consent.ErrorCode(err) == consent.NotFound {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, err
	}
	asked, err := insights.Ask(ctx, s.svc, tx, cert, in, s.svc.Now(), caller)
	if err != nil {
		return nil, nil, err
	}
	return in, asked, nil
}

// Facts returns what a verification at now grades cert by (D51): its
// records and the lead's age, its attestation a as the answer holds it
// (AttestationOf; nil: none) and its insights in with the verdict asked
// by the verifying company (InsightsOf; nil: none). Whoever shows a grade
// as a verification would make it builds its facts here.
func Facts(cert *consent.Certificate, now time.Time, a *Attestation, in *Insights) profile.Facts {
	f := profile.Facts{Records: cert.Records, LeadAgeSeconds: cert.LeadAgeSeconds(now)}
	if a != nil {
		f.Attestation, f.AttestationReason, f.AttestationUnrecorded = a.Status, a.Reason, a.Unrecorded
	}
	if in != nil {
		f.Insights, f.Verdict, f.Reasons = in.Status, in.Verdict, in.Reasons
	}
	return f
}

// Attestation is the state of a certificate's attestation in a
// verification's answer (D49).
type Attestation struct {
	Status string // consent.AttestationPending, …Attested, …Mismatch or …Unavailable
	// Reason says why it is unavailable: from the signed statement, or
	// that the attestation queue was full, in which case nothing was
	// recorded and asking again later may succeed.
	Reason string
	// Unrecorded is set when the attestation queue was full: Status is
	// unavailable, nothing was recorded, and a grade takes the
	// attestation as not known yet, as a pending one.
	Unrecorded bool
}

// queueFullReason is the Reason of an attestation asked for when the queue
// was full.
const queueFullReason = "the attestation queue is full; ask again later"

// attestation reads, or with ask asks for (consentkit.AskAttestation),
// the attestation of cert inside tx. Its status is the one its signed
// statement holds (consentkit.Service.CheckAttestation): one that does
// not hold is refused, logged, as a changed certificate is.
func (s *Service) attestation(ctx context.Context, tx consent.Tx, cert *consent.Certificate, ask bool) (*Attestation, error) {
	a, err := s.checkedAttestation(ctx, tx, cert, ask)
	switch {
	case errors.Is(err, consentkit.ErrAttestationQueueFull):
		return &Attestation{Status: consent.AttestationUnavailable, Reason: queueFullReason, Unrecorded: true}, nil
	case err != nil:
		return nil, err
	}
	return AttestationOf(a), nil
}

// AttestationOf returns a certificate's attestation a, read and checked
// (consentkit.Service.CheckAttestation), as a verification's answer holds
// it: its status, and why when it is unavailable; nil when a is nil (none
// was asked for).
func AttestationOf(a *consent.Attestation) *Attestation {
	if a == nil {
		return nil
	}
	out := &Attestation{Status: a.Status}
	if a.Status == consent.AttestationUnavailable {
		if p, err := a.Proof(); err == nil && p != nil {
			out.Reason = p.Statement.Reason
		}
	}
	return out
}

// checkedAttestation reads, or with ask asks for, the attestation of cert
// inside tx, checked (consentkit.Service.CheckAttestation); nil when none
// was asked for. One that does not hold is logged and refused with
// consent.ErrIntegrity.
func (s *Service) checkedAttestation(ctx context.Context, tx consent.Tx, cert *consent.Certificate, ask bool) (*consent.Attestation, error) {
	var (
		a   *consent.Attestation
		err error
	)
	if ask {
		a, err = s.svc.AskAttestation(ctx, tx, cert)
	} else {
		a, err = tx.Attestation(ctx, cert.ID)
	}
	switch {
	case !ask && consent.ErrorCode(err) == consent.NotFound:
		return nil, nil
	case err != nil:
		return nil, err
	}
	if err := s.svc.CheckAttestation(ctx, tx, cert, a); err != nil {
		slog.ErrorContext(ctx, "consentkit: an attestation failed its integrity check; its certificate is refused", "certificate", cert.ID,
			"company", cert.CompanyID, "err", err, "request_id", consentkit.RequestIDFrom(ctx))
		return nil, err
	}
	return a, nil
}

// maxTextBytes bounds consent text and terms; a record holds at most 64 KiB.
const maxTextBytes = 64 << 10

// Match checks that consent equals one of the certificate's records, byte
// for byte after trimming white space on both sides (D10).
func (s *Service) Match(ctx context.Context, caller string, req MatchRequest) (*Result, error) {
	if err := checkText("consent", req.Consent); err != nil {
		return nil, err
	}
	want := strings.TrimSpace(req.Consent)
	q := query{
		certificateID: req.CertificateID, companyID: req.CompanyID,
		originatorID: req.OriginatorCompanyID, propertyID: req.PropertyID, lead: req.Lead,
		kind: wallet.ExactMatch, action: consent.AuditVerifyMatch, attest: req.Attest, insights: req.Insights, profile: req.Profile,
		match: func(r consent.Record) bool { return strings.TrimSpace(r.Text) == want },
	}
	return s.verify(ctx, caller, q)
}

// PartialMatch checks that term occurs in one of the certificate's records,
// ignoring case by Unicode simple case folding; term is trimmed and must not
// be empty (D11).
func (s *Service) PartialMatch(ctx context.Context, caller string, req PartialMatchRequest) (*Result, error) {
	if err := checkText("term", req.Term); err != nil {
		return nil, err
	}
	// Found in time linear in both, whatever the certificate holds
	// (textsearch): the search runs in the write transaction.
	term := textsearch.New(consent.Fold(strings.TrimSpace(req.Term)))
	q := query{
		certificateID: req.CertificateID, companyID: req.CompanyID,
		originatorID: req.OriginatorCompanyID, propertyID: req.PropertyID, lead: req.Lead,
		kind: wallet.PartialMatch, action: consent.AuditVerifyPartialMatch, attest: req.Attest, insights: req.Insights, profile: req.Profile,
		match: func(r consent.Record) bool { return term.Index(consent.Fold(r.Text)) >= 0 },
	}
	return s.verify(ctx, caller, q)
}

// checkText checks consent text or a term as D10 and D11 compare it:
// trimmed, so the limit applies to what is left, and white space around
// a record of the largest size does not refuse it.
func checkText(field, v string) error {
	t := strings.TrimSpace(v)
	if t == "" {
		return consent.Errorf(consent.Invalid, "%s is required", field)
	}
	if len(t) > maxTextBytes || !utf8.ValidString(v) {
		return consent.Errorf(consent.Invalid, "%s must be valid UTF-8 of at most %d bytes", field, maxTextBytes)
	}
	return nil
}

type query struct {
	certificateID, companyID, originatorID, propertyID string
	lead                                               Lead
	kind                                               wallet.EntryKind
	action                                             string // of the audit entry
	match                                              func(consent.Record) bool
	attest, insights                                   bool
	profile                                            string // the caller's, to grade by; "": none
}

func (s *Service) verify(ctx context.Context, caller string, q query) (*Result, error) {
	if err := checkIDs(q.certificateID, q.companyID, q.originatorID, q.propertyID); err != nil {
		return nil, err
	}
	email, mobile, err := q.lead.digests()
	if err != nil {
		return nil, err
	}
	if q.profile != "" {
		if err := consent.CheckProfileName("profile", q.profile); err != nil {
			return nil, err
		}
	}
	if caller != q.companyID {
		return nil, consent.Errorf(consent.Forbidden, "the credentials are not those of company_id")
	}
	owner, vtype := q.companyID, FirstParty
	if q.originatorID != "" && q.originatorID != q.companyID {
		owner, vtype = q.originatorID, ThirdParty
	}
	// A grade whose text rules read many bytes is made before the write
	// transaction (gradeText), which ends with errTextUngraded to ask for
	// it; the next run takes it, or grades the rules it reads when they
	// changed meanwhile and read little, or asks again. A profile that
	// keeps changing to rules that read much is refused at the last run
	// (errProfileChanging), so no write transaction grades them.
	var text *textGraded
	for run := 1; ; run++ {
		res, err := s.verifyOnce(ctx, caller, q, owner, vtype, email, mobile, text, run == maxTextRuns)
		if !errors.Is(err, errTextUngraded) {
			return res, err
		}
		if text, err = s.gradeText(ctx, caller, q.profile, q.certificateID); err != nil {
			return nil, err
		}
	}
}

// maxTextRuns bounds the runs of a verification whose profile's text
// rules are graded before its transaction: the first, and those after a
// grade whose rules changed before the transaction read them.
const maxTextRuns = 3

// errProfileChanging refuses a verification whose profile's text rules,
// reading much, changed under each of its grades: a refusal like any
// other (uncharged, audited), which a retry meets no more once the
// profile stays.
var errProfileChanging = consent.Errorf(consent.Conflict, "the profile changed while the verification graded it: try again")

// maxTextWorkInTx is the most bytes a grade's text rules may read of a
// certificate's consents inside a verification's write transaction
// (profile.TextWork): a few milliseconds. A certificate holds up to 100
// consents of 64 KiB and a profile 50 approved texts and 50 brand names,
// a grade of which reads hundreds of MiB: made inside, it would hold the
// store (every write, on SQLite) for as long.
const maxTextWorkInTx = 4 << 20

// errTextUngraded ends a write transaction that would grade text rules
// reading more than maxTextWorkInTx bytes, before the charge: not a
// refusal, so the transaction rolls back, and the verification grades
// them first (gradeText) and runs again.
var errTextUngraded = errors.New("verify: the profile's text rules were not graded")

// textGraded is the grade of the text rules of a profile as it was read,
// of a certificate's consents, made outside the write transaction.
type textGraded struct {
	rules json.RawMessage // the profile's rules as read (consent.Profile.Rules); nil when none was found
	grade *profile.TextGrade
}

// gradeText grades the text rules of the caller's profile of that name,
// of the certificate's consents, in a read-only transaction of its own. A
// profile or certificate not found grades nothing: the write transaction
// refuses the verification as it would.
func (s *Service) gradeText(ctx context.Context, caller, name, certificateID string) (*textGraded, error) {
	var (
		p    *consent.Profile
		cert *consent.Certificate
	)
	err := s.svc.Store().View(ctx, func(tx consent.Tx) error {
		var err error
		if p, err = tx.Profile(ctx, caller, name); err != nil {
			return err
		}
		cert, err = tx.Certificate(ctx, certificateID)
		return err
	})
	switch {
	case consent.ErrorCode(err) == consent.NotFound:
		return &textGraded{}, nil
	case err != nil:
		return nil, err
	}
	prof, err := profile.Decode(p)
	if err != nil {
		return nil, err
	}
	return &textGraded{rules: p.Rules, grade: profile.GradeText(&prof.Rules, cert.Records)}, nil
}

// verifyOnce runs a verification's write transaction, with the text
// rules' grade made before it when there is one.
func (s *Service) verifyOnce(ctx context.Context, caller string, q query, owner, vtype string, email, mobile *consent.Digest, text *textGraded, last bool) (*Result, error) {
	return withRecording(ctx, s, q.certificateID, owner, caller, func(recording recordingCheck) (*Result, error) {
		start := auditDetail{VerificationType: vtype}
		if vtype == ThirdParty {
			start.Originator = owner
		}
		detail := new(auditDetail)
		audit := &consentkit.AuditParams{CompanyID: caller, Action: q.action, Target: q.certificateID, Detail: detail}
		return consentkit.Paid(ctx, s.svc, audit, func(tx consent.Tx) (*Result, error) {
			// A store may run this more than once (consent.Store): each
			// run's entry says what that run did, never an earlier,
			// rolled-back run's charge.
			*detail = start
			if vtype == ThirdParty {
				if err := checkAuthorization(ctx, tx, owner, caller); err != nil {
					return nil, err
				}
			}
			if q.propertyID != "" {
				if err := consent.CheckProperty(ctx, tx, q.companyID, q.propertyID); err != nil {
					return nil, err
				}
			}
			var (
				prof      *profile.Profile
				textGrade *profile.TextGrade // made before the transaction, of these rules
			)
			if q.profile != "" {
				// Named by the entry of a refusal too, an unknown
				// profile's included (D51).
				detail.Profile = q.profile
				p, err := tx.Profile(ctx, caller, q.profile)
				if err != nil {
					return nil, err
				}
				if prof, err = profile.Decode(p); err != nil {
					return nil, err
				}
				if text != nil && bytes.Equal(text.rules, p.Rules) {
					textGrade = text.grade
				}
			}
			cert, err := s.certificateOf(ctx, tx, q.certificateID, owner, recording)
			if err != nil {
				return nil, err
			}
			if prof != nil && textGrade == nil && profile.TextWork(&prof.Rules, cert.Records) > maxTextWorkInTx {
				if last {
					return nil, errProfileChanging
				}
				return nil, errTextUngraded
			}
			res := result(cert, q.match)
			res.VerificationType = vtype
			res.EmailMatched, res.MobileMatched = matched(email, cert.EmailDigest), matched(mobile, cert.MobileDigest)
			// Every refusal comes before the charge, and every write after
			// it: a refused verification commits its audit entry alone
			// (D3), never an attestation asked for and not paid.
			if res.Attestation, err = s.attestation(ctx, tx, cert, false); err != nil {
				return nil, err
			}
			var in *Insights // what a grade by verdicts needs, asked or not
			if q.insights || prof != nil && prof.Rules.Verdicts != nil {
				if in, err = s.insightsOf(ctx, tx, cert, caller); err != nil {
					return nil, err
				}
			}
			if q.insights {
				res.Insights = in
			}
			res.Charged, res.Balance, err = s.svc.Charge(ctx, tx, caller, q.kind, cert.ID)
			if err != nil {
				return nil, err
			}
			detail.Valid, detail.Charged = &res.Valid, &res.Charged
			if q.attest && (res.Attestation == nil || res.Attestation.Status == consent.AttestationPending) {
				// Asked when there is none, and when one is pending: a
				// pending row whose job was lost is queued again (D49).
				// Past the charge every error is a storage failure, which
				// rolls the charge back; a refusal here would keep it.
				if res.Attestation, err = s.attestation(ctx, tx, cert, true); err != nil {
					return nil, consent.StorageFailure("ask for the attestation of "+cert.ID, err)
				}
			}
			if prof != nil {
				f := Facts(cert, s.svc.Now(), res.Attestation, in)
				f.Text = textGrade
				g := profile.Grade(&prof.Rules, f)
				res.Audit, detail.Audit = &g, g.Result
			}
			return res, nil
		})
	})
}

// auditDetail is the Detail of a verification's audit entry: what was
// known when it ended (a refusal before the charge has no Valid or
// Charged). A struct, not a map: its JSON takes a few allocations instead
// of a map's dozen, on every verification. Fields are in the order of
// their names, as a map's would be.
type auditDetail struct {
	Audit            string         `json:"audit,omitempty"` // the grade's result
	Charged          *wallet.Amount `json:"charged,omitempty"`
	Originator       string         `json:"originator_company_id,omitempty"`
	Profile          string         `json:"profile,omitempty"`
	Valid            *bool          `json:"valid,omitempty"`
	VerificationType string         `json:"verification_type"`
}

// infoDetail is the Detail of a certificate-info's audit entry.
type infoDetail struct {
	Charged    *wallet.Amount `json:"charged,omitempty"`
	PropertyID string         `json:"property_id"`
}

// digests returns the digests of the lead's email and mobile; nil for one
// not given. Invalid when one given is malformed.
func (l Lead) digests() (email, mobile *consent.Digest, err error) {
	if strings.TrimSpace(l.Email) != "" {
		d, err := contact.EmailDigest(l.Email)
		if err != nil {
			return nil, nil, err
		}
		email = &d
	}
	if strings.TrimSpace(l.Mobile) != "" {
		d, err := contact.MobileDigest(l.Mobile)
		if err != nil {
			return nil, nil, err
		}
		mobile = &d
	}
	return email, mobile, nil
}

// matched compares a lead's digest with the certificate's: nil when the
// lead gave none; false when the certificate holds none.
func matched(lead *consent.Digest, cert consent.Digest) *bool {
	if lead == nil {
		return nil
	}
	ok := !cert.IsZero() && *lead == cert
	return &ok
}

// checkIDs validates the identifiers of a request: the first two are
// required, the others optional (D29).
func checkIDs(certificateID, companyID, originatorID, propertyID string) error {
	if err := consent.CheckID("certificate_id", certificateID); err != nil {
		return err
	}
	if err := consent.CheckID("company_id", companyID); err != nil {
		return err
	}
	if originatorID != "" {
		if err := consent.CheckID("originator_company_id", originatorID); err != nil {
			return err
		}
	}
	if propertyID != "" {
		if err := consent.CheckID("property_id", propertyID); err != nil {
			return err
		}
	}
	return nil
}

// checkAuthorization: the originator exists, has third-party verification
// on, and lists the caller; all failures look alike (D9).
func checkAuthorization(ctx context.Context, tx consent.Tx, originator, caller string) error {
	org, err := tx.Company(ctx, originator)
	if consent.ErrorCode(err) == consent.NotFound || err == nil && !org.Authorizes(caller) {
		return consent.Errorf(consent.Forbidden, "third-party verification is not authorized by the originating company")
	}
	return err
}

// certificateOf returns the certificate when it belongs to owner and is not
// revoked. Another company's certificate is reported as not found (D9).
func (s *Service) certificateOf(ctx context.Context, tx consent.Tx, id, owner string, recording recordingCheck) (*consent.Certificate, error) {
	cert, err := tx.Certificate(ctx, id)
	if consent.ErrorCode(err) == consent.NotFound || err == nil && cert.CompanyID != owner {
		return nil, consent.Errorf(consent.NotFound, "certificate not found")
	}
	if err != nil {
		return nil, err
	}
	if !recording.read && !cert.RecordingSHA256.IsZero() {
		if !recording.inTx {
			return nil, errRecordingUnread
		}
		if recording.digest, err = RecordingOf(ctx, tx, cert); err != nil {
			return nil, err
		}
	}
	if err := s.integrity(ctx, tx, cert, recording.digest); err != nil {
		return nil, err
	}
	if cert.Revoked() {
		return nil, consent.Errorf(consent.OptedOut, "This session has opted out")
	}
	return cert, nil
}

// A certificate issued with a recording's SHA-256 is checked against the
// recording as it is now (D41), which may be up to 64 MiB: it is read and
// hashed in a read-only transaction before the verification's write
// transaction, since on SQLite a write transaction holds the one writer
// and every charge would queue behind the read. Most certificates of a
// store either have a recording or do not, and reading the certificate
// only to learn which would cost every verification of one without a
// recording a transaction of its own; so the write transaction goes first
// unless the certificate is known to have one, and when it finds a
// recording hash that was not read it rolls back (nothing charged or
// audited), the certificate is remembered, and the verification starts
// again with the recording read first.

// recordingCheck is what the write transaction knows of the recording:
// read, the recording was looked at before it; digest is its SHA-256, nil
// when there was nothing to check (recordingDigest). inTx has the write
// transaction read it itself, when it must (withRecording).
type recordingCheck struct {
	read, inTx bool
	digest     *consent.Digest
}

// errRecordingUnread ends a write transaction that found a recording hash
// on a certificate whose recording was not read. It is not a refusal, so
// the transaction rolls back.
var errRecordingUnread = errors.New("verify: the certificate has a recording, which was not read")

// withRecording runs attempt, which runs the verification's write
// transaction, with the recording's check: read first when the certificate
// is known to have a recording, else not read and, should the certificate
// turn out to have one, read and attempted again. The recording is read
// only for a caller that may verify the certificate (recordingDigest): an
// attempt that finds it unread refuses anyone else before it looks.
func withRecording[T any](ctx context.Context, s *Service, certificateID, owner, caller string, attempt func(recordingCheck) (T, error)) (T, error) {
	if !s.recorded.has(certificateID) {
		out, err := attempt(recordingCheck{})
		if !errors.Is(err, errRecordingUnread) {
			return out, err
		}
		s.recorded.add(certificateID)
	}
	check, err := s.recordingDigest(ctx, certificateID, owner, caller)
	if err != nil {
		var zero T
		return zero, err
	}
	out, err := attempt(check)
	if !errors.Is(err, errRecordingUnread) {
		return out, err
	}
	// Not read for a caller that the owner authorized only since: the
	// write transaction reads it itself, on this rare path.
	return attempt(recordingCheck{inTx: true})
}

// recordedSlots is the size of a recordedSet: 16 Ki ids, 128 KiB of
// pointers.
const recordedSlots = 1 << 14

// recordedSet remembers ids of certificates that have a recording, in a
// fixed table where an id takes the slot of its hash: another id with the
// same slot takes its place, and the next verification of the first one
// costs a transaction that rolls back. It is only a hint; the write
// transaction checks what it reads.
type recordedSet struct {
	slots [recordedSlots]atomic.Pointer[string]
}

func slotOf(id string) uint64 { return maphash.String(recordedSeed, id) % recordedSlots }

var recordedSeed = maphash.MakeSeed()

func (r *recordedSet) has(id string) bool {
	p := r.slots[slotOf(id)].Load()
	return p != nil && *p == id
}

func (r *recordedSet) add(id string) { r.slots[slotOf(id)].Store(&id) }

// recordingDigest reads the recording behind the certificate for its
// integrity check (D41), in a read-only transaction of its own
// (RecordingOf). It is not read, and the check says so, unless the
// certificate is owner's and the caller is owner or authorized by it: a
// recording of up to 64 MiB is never hashed for a caller that may not
// verify the certificate, which would cost the service its time for free
// and tell the caller, by how long the refusal took, that the certificate
// exists (D9). A caller that may verify it and is then refused (an empty
// wallet, an unknown profile) has had it read: those refusals come in the
// write transaction, which holds the certificate as read there.
func (s *Service) recordingDigest(ctx context.Context, certificateID, owner, caller string) (recordingCheck, error) {
	var check recordingCheck
	err := s.svc.Store().View(ctx, func(tx consent.Tx) error {
		check = recordingCheck{}
		cert, err := tx.Certificate(ctx, certificateID)
		if consent.ErrorCode(err) == consent.NotFound || err == nil && cert.CompanyID != owner {
			return nil
		}
		if err != nil {
			return err
		}
		if owner != caller {
			if err := checkAuthorization(ctx, tx, owner, caller); consent.Refused(err) {
				return nil
			} else if err != nil {
				return err
			}
		}
		check.read = true
		check.digest, err = RecordingOf(ctx, tx, cert)
		return err
	})
	return check, err
}

// RecordingOf returns the SHA-256 of cert's recording as it is now, read
// in tx, for Service.CheckIntegrity (verifications and the dashboard's
// certificate page read it alike); nil when there is nothing to check: cert was issued without a
// recording hash, or its session was purged since (its recording is gone
// by design).
//
// A store may read each statement of tx as committed then (PostgreSQL's
// READ COMMITTED): another instance's purge of the session may commit
// after the session was read, not expired, and before its recording was,
// which then reads as emptied. So a recording that does not hash as
// issued, or cannot be read, has its session read again, and is not
// checked when that session is now purged: a sound certificate is never
// refused as tampered for a purge.
func RecordingOf(ctx context.Context, tx consent.Tx, cert *consent.Certificate) (*consent.Digest, error) {
	if cert.RecordingSHA256.IsZero() {
		return nil, nil
	}
	ses, err := tx.Session(ctx, cert.SessionID)
	if err != nil || ses.RetentionStatus == consent.RetentionExpired {
		return nil, err
	}
	sum, err := consent.RecordingDigest(ctx, tx, cert.SessionID)
	if err == nil && sum == cert.RecordingSHA256 {
		return &sum, nil
	}
	if now, rerr := tx.Session(ctx, cert.SessionID); rerr == nil && now.RetentionStatus == consent.RetentionExpired {
		return nil, nil // purged meanwhile
	}
	if err != nil {
		return nil, err
	}
	return &sum, nil
}

// integrity refuses a certificate whose content no longer matches its
// signature, or whose recording no longer has the SHA-256 it was issued
// with (recordingDigest): a 409, logged, before any charge.
func (s *Service) integrity(ctx context.Context, tx consent.Tx, cert *consent.Certificate, recording *consent.Digest) error {
	if err := s.svc.CheckIntegrity(ctx, tx, cert, recording); err != nil {
		slog.ErrorContext(ctx, "consentkit: a certificate failed its integrity check; it is refused", "certificate", cert.ID,
			"company", cert.CompanyID, "err", err, "request_id", consentkit.RequestIDFrom(ctx))
		return err
	}
	return nil
}

// result builds the answer of D12.
func result(cert *consent.Certificate, match func(consent.Record) bool) *Result {
	n := 0
	for _, r := range cert.Records {
		n += len(r.Types)
	}
	res := &Result{Origin: cert.Origin, ConsentTypes: make([]string, 0, n), RevokedBefore: cert.RevokedBefore}
	for i, r := range cert.Records {
		if !res.Valid && match(r) {
			res.Valid, res.ConsentOptIn = true, r.OptInAt
		}
		if !res.Valid && (i == 0 || r.OptInAt.Before(res.ConsentOptIn)) {
			res.ConsentOptIn = r.OptInAt
		}
		res.ConsentTypes = append(res.ConsentTypes, r.Types...)
	}
	slices.Sort(res.ConsentTypes)
	res.ConsentTypes = slices.Compact(res.ConsentTypes)
	return res
}

// InfoRequest is the body of /verify/certificate-info.
type InfoRequest struct {
	CertificateID string // required
	CompanyID     string // required: the caller's company
	PropertyID    string // required: a property of CompanyID (D15)
}

// Info is certificate metadata: the answer of /verify/certificate-info
// (D15).
type Info struct {
	CertificateID  string
	CreatedAt      time.Time
	ConsentCount   int
	EventsCombined []byte // a JSON object
	// What a buyer of the lead needs beyond the documented fields: the
	// session (to retain it, D35), where and when consent was given, and
	// what the browser showed and sent (D37).
	SessionID       string
	Origin          string
	ConsentTypes    []string
	ConsentOptIn    time.Time // of the earliest record
	ClientIP        string
	UserAgent       string
	RecordingSHA256 consent.Digest
	// KeyID and Signature are the certificate's signature (D41); empty
	// when it was issued unsigned.
	KeyID     string
	Signature []byte
	Signed    signed.Content // what the signature covers
	// Visibility is the certificate's single measurement, of its first
	// consent, as snippets made it before each consent had its own.
	Visibility *consent.Visibility
	// Records are the consents, each with its own visibility and opt-in
	// method when the snippet measured them (D47, D48).
	Records       []consent.Record
	RevokedBefore time.Time // zero: none (Result.RevokedBefore)
	// Attestation is the certificate's attestation with its signed
	// statement (D49), checked (consentkit.Service.CheckAttestation: one
	// that does not hold refuses the certificate); nil when none was
	// asked for.
	Attestation *consent.Attestation
	// Insights are the certificate's insights with their signed statement
	// (D50); nil when it has none (issued before they were computed).
	Insights *consent.Insights
	// InsightsAsked are what its insights say when asked, unsigned; nil
	// with Insights.
	InsightsAsked *insights.Asked
	Charged       wallet.Amount
	Balance       wallet.Amount
}

// CertificateInfo returns the metadata of one of the caller's certificates.
// property_id is required and must be the company's (D15); a revoked
// certificate is refused (D13). It costs Prices.CertificateInfo, free by
// default.
func (s *Service) CertificateInfo(ctx context.Context, caller string, req InfoRequest) (*Info, error) {
	if err := checkIDs(req.CertificateID, req.CompanyID, "", req.PropertyID); err != nil {
		return nil, err
	}
	if req.PropertyID == "" {
		return nil, consent.Errorf(consent.Invalid, "property_id is required")
	}
	if caller != req.CompanyID {
		return nil, consent.Errorf(consent.Forbidden, "the credentials are not those of company_id")
	}
	return withRecording(ctx, s, req.CertificateID, caller, caller, func(recording recordingCheck) (*Info, error) {
		return s.info(ctx, caller, req, recording)
	})
}

// info is CertificateInfo with the recording's check.
func (s *Service) info(ctx context.Context, caller string, req InfoRequest, recording recordingCheck) (*Info, error) {
	detail := new(infoDetail)
	audit := &consentkit.AuditParams{CompanyID: caller, Action: consent.AuditVerifyCertificateInfo, Target: req.CertificateID, Detail: detail}
	return consentkit.Paid(ctx, s.svc, audit, func(tx consent.Tx) (*Info, error) {
		*detail = infoDetail{PropertyID: req.PropertyID} // each run afresh, as verify's
		if err := consent.CheckProperty(ctx, tx, req.CompanyID, req.PropertyID); err != nil {
			return nil, err
		}
		cert, err := s.certificateOf(ctx, tx, req.CertificateID, req.CompanyID, recording)
		if err != nil {
			return nil, err
		}
		r := result(cert, func(consent.Record) bool { return false })
		info := &Info{
			CertificateID: cert.ID, CreatedAt: cert.CreatedAt, ConsentCount: len(cert.Records),
			EventsCombined: cert.EventsCombined, SessionID: cert.SessionID, Origin: cert.Origin,
			ConsentTypes: r.ConsentTypes, ConsentOptIn: r.ConsentOptIn, ClientIP: cert.ClientIP,
			UserAgent: cert.UserAgent, RecordingSHA256: cert.RecordingSHA256, Visibility: cert.Visibility,
			KeyID: cert.KeyID, Signature: cert.Signature, Signed: consent.Signed(cert),
			Records: cert.Records, RevokedBefore: cert.RevokedBefore,
		}
		if info.Attestation, err = s.checkedAttestation(ctx, tx, cert, false); err != nil {
			return nil, err
		}
		if info.Insights, info.InsightsAsked, err = s.insights(ctx, tx, cert, caller); err != nil {
			return nil, err
		}
		if info.Charged, info.Balance, err = s.svc.Charge(ctx, tx, caller, wallet.CertificateInfo, cert.ID); err != nil {
			return nil, err // refused: no charge to record
		}
		detail.Charged = &info.Charged
		return info, nil
	})
}
