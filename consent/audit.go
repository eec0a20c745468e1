package consent

import (
	"time"
)

// AuditEntry is one record of the audit log (D42): who did what, to what,
// when, with what outcome, under which request. Each company has a chain of
// its own: Seq counts its entries from 1 without a gap, and each entry holds
// the Hash of the one before it (PrevHash; zero for the first), so that an
// edited, inserted or deleted entry breaks the chain (audit.VerifyChain).
type AuditEntry struct {
	CompanyID string
	Seq       int64     // assigned by the store: the company's last Seq plus one
	At        time.Time // UTC, to the microsecond
	// Actor is who acted: a token id, "property:<id>" for company-and-
	// property credentials (D8), ActorOperator, ActorConsumer or ActorSystem.
	Actor string
	// Action is what was done, a short dotted name such as "verify.match"
	// (the Audit… constants).
	Action string
	// Target is what it was done to: a certificate, session, token,
	// property, revocation or ledger entry id; "" when nothing in particular.
	Target string
	// Outcome is "ok" (AuditOK) or the code of the error that refused it,
	// such as "not_found" or "payment".
	Outcome   string
	RequestID string // the request it was part of; "" when none
	// Detail is a short JSON object of facts about the action (never an
	// email, a mobile number or a secret); "" when none.
	Detail   string
	PrevHash Digest // Hash of the entry Seq-1; zero for Seq 1
	Hash     Digest // audit.Hash of this entry
}

// AuditHead is the end of a company's chain, kept by the store apart from
// the entries: the Seq and Hash of its last entry (zero when it has none).
// A deleted last entry is found only by comparing the chain with it. The
// store appends under a lock of the head: appends to one company take turns,
// appends to different companies never wait for each other, and no chain
// can fork. Someone able to rewrite both the entries and the head in the
// database can rewrite history consistently; to catch that, record a
// company's head somewhere else from time to time and compare.
type AuditHead struct {
	CompanyID string
	Seq       int64
	Hash      Digest
}

// Outcome of an entry that was not refused.
const AuditOK = "ok"

// Actors that are not tokens.
const (
	ActorOperator = "operator" // the host application through the Go API
	ActorConsumer = "consumer" // a consumer's opt-out
	ActorSystem   = "system"   // a job of the library
)

// Actions recorded in the audit log.
const (
	AuditVerifyMatch           = "verify.match"
	AuditVerifyPartialMatch    = "verify.partial_match"
	AuditVerifyCertificateInfo = "verify.certificate_info"
	AuditRetainSingle          = "retain.single"      // Retain API, one session
	AuditRetainBatch           = "retain.batch"       // Retain API batch: one entry per session
	AuditRetainSession         = "retain.session"     // /verify/session
	AuditRetainCertificate     = "retain.certificate" // /verify/certificate
	AuditOptOut                = "optout.revoke"
	AuditTokenIssue            = "token.issue"
	AuditTokenRevoke           = "token.revoke"
	AuditWalletCredit          = "wallet.credit"
	AuditCompanyCreate         = "company.create"
	AuditCompanyUpdate         = "company.update"
	AuditCompanyAttestation    = "company.attestation"    // Company.AttestCertificates changed
	AuditCompanyInsightsRules  = "company.insights_rules" // Company.InsightsRules changed
	AuditProfilePut            = "profile.put"            // an audit profile created or replaced (D51)
	AuditProfileDelete         = "profile.delete"         // an audit profile deleted
	AuditPropertyCreate        = "property.create"
	AuditPropertyUpdate        = "property.update"
	AuditWebhookCreate         = "webhook.create"
	AuditWebhookDelete         = "webhook.delete"
	AuditWebhookDisable        = "webhook.disable"
	AuditWebhookEnable         = "webhook.enable"
)

// Limits of an audit entry's text fields, in bytes.
const (
	MaxAuditField  = 256      // Actor, Action, Target, Outcome, RequestID
	MaxAuditDetail = 16 << 10 // Detail
	// MaxAuditPage is the most entries one AuditEntries call returns.
	MaxAuditPage = 1000
)

// Check checks e's text fields and their lengths, and its time
// (CheckTime).
func (e *AuditEntry) Check() error {
	if err := checkTexts("company_id", e.CompanyID, "actor", e.Actor, "action", e.Action, "target", e.Target,
		"outcome", e.Outcome, "request_id", e.RequestID, "detail", e.Detail); err != nil {
		return err
	}
	for _, f := range [...]struct{ name, v string }{
		{"company_id", e.CompanyID}, {"actor", e.Actor}, {"action", e.Action}, {"target", e.Target},
		{"outcome", e.Outcome}, {"request_id", e.RequestID},
	} {
		if len(f.v) > MaxAuditField {
			return Errorf(Invalid, "audit %s must be at most %d bytes", f.name, MaxAuditField)
		}
	}
	if len(e.Detail) > MaxAuditDetail {
		return Errorf(Invalid, "audit detail must be at most %d bytes", MaxAuditDetail)
	}
	if e.CompanyID == "" || e.Action == "" || e.Actor == "" || e.Outcome == "" {
		return Errorf(Invalid, "an audit entry needs a company_id, actor, action and outcome")
	}
	return CheckTime("at", e.At)
}

// AuditQuery selects entries of one company's audit log, one page at a time.
type AuditQuery struct {
	CompanyID string // required
	// ActionPrefix keeps entries whose Action starts with it, such as
	// "verify." or "retain.single"; "" keeps all.
	ActionPrefix string
	Target       string    // keeps entries of this Target; "" keeps all
	Actor        string    // keeps entries of this Actor; "" keeps all
	Since        time.Time // keeps entries at or after it; zero: no bound
	Until        time.Time // keeps entries before it; zero: no bound
	// AfterSeq and BeforeSeq are the keyset: entries with Seq > AfterSeq
	// and, when BeforeSeq > 0, Seq < BeforeSeq.
	AfterSeq, BeforeSeq int64
	// Newest returns the newest entries first (page on with BeforeSeq set
	// to the last Seq returned); otherwise the oldest first (page on with
	// AfterSeq).
	Newest bool
	// Limit is the most entries returned: 1 to MaxAuditPage.
	Limit int
}

// Check returns Invalid when q is not a query a store can run: no company,
// a limit outside 1 to MaxAuditPage, a negative Seq, text that is not
// ValidText, or a time outside the years 1 to 9999 (CheckTime).
func (q *AuditQuery) Check() error {
	if q.CompanyID == "" {
		return Errorf(Invalid, "company_id is required")
	}
	if q.Limit < 1 || q.Limit > MaxAuditPage {
		return Errorf(Invalid, "limit must be 1 to %d", MaxAuditPage)
	}
	if q.AfterSeq < 0 || q.BeforeSeq < 0 {
		return Errorf(Invalid, "after and before must not be negative")
	}
	if err := checkTexts("company_id", q.CompanyID, "action", q.ActionPrefix, "target", q.Target, "actor", q.Actor); err != nil {
		return err
	}
	return checkTimes([]string{"since", "until"}, q.Since, q.Until)
}

// Match reports whether e passes q's filters (not its keyset or limit).
// Stores that filter in memory use it; the SQL stores filter alike.
func (q *AuditQuery) Match(e *AuditEntry) bool {
	return e.CompanyID == q.CompanyID &&
		len(e.Action) >= len(q.ActionPrefix) && e.Action[:len(q.ActionPrefix)] == q.ActionPrefix &&
		(q.Target == "" || e.Target == q.Target) &&
		(q.Actor == "" || e.Actor == q.Actor) &&
		(q.Since.IsZero() || !e.At.Before(UTC(q.Since))) &&
		(q.Until.IsZero() || e.At.Before(UTC(q.Until))) &&
		e.Seq > q.AfterSeq && (q.BeforeSeq == 0 || e.Seq < q.BeforeSeq)
}

// Refused reports whether err refuses a request for a reason of its own (a
// coded error other than Internal), as opposed to a failure of storage.
func Refused(err error) bool {
	code := ErrorCode(err)
	return code != "" && code != Internal
}
