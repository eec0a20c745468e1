package httpadapter_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/httpadapter"
	"github.com/consentkit/consentkit/wallet"
)

// bearerOf is the secret of an Authorization header as RFC 6750 has it:
// the scheme Bearer in any case, white space, the credential; white space
// around the two is forgiven.
func bearerOf(header string) (string, bool) {
	// HTTP's optional white space is spaces and tabs (RFC 9110, 5.6.3);
	// any other character, a line feed too, is part of a word.
	f := strings.FieldsFunc(header, func(r rune) bool { return r == ' ' || r == '\t' })
	if len(f) != 2 || !strings.EqualFold(f[0], "Bearer") {
		return "", false
	}
	return f[1], true
}

// checkAnswer fails t unless rec's status is one of allowed and its body
// is a JSON object; an error answer must be of the route's shape (D14):
// {"status":<the status>,"error":<a message>} on the Verification API and
// capture, {"success":false,"error":<a message>} on the Retain API, with
// required and current_balance on a 402 and certificate_id on a 409 of
// consent (D35), and nothing else. It returns the decoded body.
func checkAnswer(t *testing.T, what string, rec *httptest.ResponseRecorder, shape httpadapter.ErrorShape, allowed ...int) map[string]any {
	t.Helper()
	if !slices.Contains(allowed, rec.Code) {
		t.Fatalf("%s: status %d, not one of %v: %s", what, rec.Code, allowed, rec.Body)
	}
	if ct := rec.Header().Get("Content-Type"); ct != "application/json" {
		t.Fatalf("%s: Content-Type %q", what, ct)
	}
	dec := json.NewDecoder(bytes.NewReader(rec.Body.Bytes()))
	dec.UseNumber()
	var body map[string]any
	if err := dec.Decode(&body); err != nil || body == nil || dec.More() {
		t.Fatalf("%s: %d, the body is not one JSON object: %s", what, rec.Code, rec.Body)
	}
	if rec.Code < 400 {
		return body
	}
	if msg, ok := body["error"].(string); !ok || msg == "" {
		t.Fatalf("%s: %d without an error message: %s", what, rec.Code, rec.Body)
	}
	want := map[string]bool{"error": true}
	if shape == httpadapter.RetainErrors {
		if body["success"] != false {
			t.Fatalf("%s: %d, a Retain API error without \"success\":false: %s", what, rec.Code, rec.Body)
		}
		want["success"] = true
	} else {
		if n, ok := body["status"].(json.Number); !ok || n.String() != fmt.Sprint(rec.Code) {
			t.Fatalf("%s: %d, the body's status is not the answer's: %s", what, rec.Code, rec.Body)
		}
		want["status"] = true
	}
	switch rec.Code {
	case 402:
		want["required"], want["current_balance"] = true, true
	case 409:
		if _, ok := body["certificate_id"]; ok {
			want["certificate_id"] = true
		}
	}
	for k := range body {
		if !want[k] {
			t.Fatalf("%s: %d, an error body with %q: %s", what, rec.Code, k, rec.Body)
		}
	}
	for k := range want {
		if _, ok := body[k]; !ok {
			t.Fatalf("%s: %d, an error body without %q: %s", what, rec.Code, k, rec.Body)
		}
	}
	return body
}

// journal is a consent.Store that records the writes of every transaction
// that commits, by the name of the Tx method, so that a test can say what
// a request stored: nothing but its audit entry when it was refused.
type journal struct {
	consent.Store
	mu     sync.Mutex
	writes []string
}

func (j *journal) Update(ctx context.Context, fn func(tx consent.Tx) error) error {
	var writes []string
	err := j.Store.Update(ctx, func(tx consent.Tx) error {
		writes = writes[:0] // fn may run more than once
		return fn(&journalTx{Tx: tx, writes: &writes})
	})
	if err == nil {
		j.mu.Lock()
		j.writes = append(j.writes, writes...)
		j.mu.Unlock()
	}
	return err
}

// mark returns a position in the journal, for since.
func (j *journal) mark() int {
	j.mu.Lock()
	defer j.mu.Unlock()
	return len(j.writes)
}

// since returns the writes committed after mark, leaving out those in
// ignore.
func (j *journal) since(mark int, ignore ...string) []string {
	j.mu.Lock()
	defer j.mu.Unlock()
	var out []string
	for _, w := range j.writes[mark:] {
		if !slices.Contains(ignore, w) {
			out = append(out, w)
		}
	}
	return out
}

// journalTx records the successful calls of every method of consent.Tx
// that writes.
type journalTx struct {
	consent.Tx
	writes *[]string
}

// done records a write that succeeded.
func (t *journalTx) done(name string, err error) error {
	if err == nil {
		*t.writes = append(*t.writes, name)
	}
	return err
}

func (t *journalTx) CreateCompany(ctx context.Context, c *consent.Company) error {
	return t.done("CreateCompany", t.Tx.CreateCompany(ctx, c))
}

func (t *journalTx) UpdateCompany(ctx context.Context, c *consent.Company) error {
	return t.done("UpdateCompany", t.Tx.UpdateCompany(ctx, c))
}

func (t *journalTx) CreateProperty(ctx context.Context, p *consent.Property) error {
	return t.done("CreateProperty", t.Tx.CreateProperty(ctx, p))
}

func (t *journalTx) UpdateProperty(ctx context.Context, p *consent.Property) error {
	return t.done("UpdateProperty", t.Tx.UpdateProperty(ctx, p))
}

func (t *journalTx) CreateToken(ctx context.Context, tok *consent.Token) error {
	return t.done("CreateToken", t.Tx.CreateToken(ctx, tok))
}

func (t *journalTx) RevokeToken(ctx context.Context, companyID, id string, at time.Time) error {
	return t.done("RevokeToken", t.Tx.RevokeToken(ctx, companyID, id, at))
}

func (t *journalTx) CreateSession(ctx context.Context, s *consent.Session) error {
	return t.done("CreateSession", t.Tx.CreateSession(ctx, s))
}

func (t *journalTx) AppendEvents(ctx context.Context, sessionID string, chunk []byte, at time.Time) error {
	return t.done("AppendEvents", t.Tx.AppendEvents(ctx, sessionID, chunk, at))
}

func (t *journalTx) SetRecording(ctx context.Context, sessionID string, r consent.Recording) error {
	return t.done("SetRecording", t.Tx.SetRecording(ctx, sessionID, r))
}

func (t *journalTx) UpdateSession(ctx context.Context, s *consent.Session) error {
	return t.done("UpdateSession", t.Tx.UpdateSession(ctx, s))
}

func (t *journalTx) CreateCertificate(ctx context.Context, c *consent.Certificate) error {
	return t.done("CreateCertificate", t.Tx.CreateCertificate(ctx, c))
}

func (t *journalTx) UpdateCertificate(ctx context.Context, c *consent.Certificate) error {
	return t.done("UpdateCertificate", t.Tx.UpdateCertificate(ctx, c))
}

func (t *journalTx) RevokeCertificate(ctx context.Context, id string, at time.Time) error {
	return t.done("RevokeCertificate", t.Tx.RevokeCertificate(ctx, id, at))
}

func (t *journalTx) CreateRevocation(ctx context.Context, r *consent.Revocation) error {
	return t.done("CreateRevocation", t.Tx.CreateRevocation(ctx, r))
}

func (t *journalTx) PurgeSessions(ctx context.Context, before time.Time, limit int) ([]*consent.Session, error) {
	v, err := t.Tx.PurgeSessions(ctx, before, limit)
	return v, t.done("PurgeSessions", err)
}

func (t *journalTx) PurgeCertificates(ctx context.Context, before time.Time, limit int) ([]string, error) {
	v, err := t.Tx.PurgeCertificates(ctx, before, limit)
	return v, t.done("PurgeCertificates", err)
}

func (t *journalTx) EnqueueJob(ctx context.Context, j *consent.Job) error {
	return t.done("EnqueueJob", t.Tx.EnqueueJob(ctx, j))
}

func (t *journalTx) LeaseJob(ctx context.Context, kinds []string, owner string, now, until time.Time) (*consent.Job, error) {
	v, err := t.Tx.LeaseJob(ctx, kinds, owner, now, until)
	return v, t.done("LeaseJob", err)
}

func (t *journalTx) RenewJob(ctx context.Context, kind, key, owner string, until time.Time) error {
	return t.done("RenewJob", t.Tx.RenewJob(ctx, kind, key, owner, until))
}

func (t *journalTx) EndJob(ctx context.Context, kind, key, owner string, next *consent.Job) error {
	return t.done("EndJob", t.Tx.EndJob(ctx, kind, key, owner, next))
}

func (t *journalTx) ClaimIdempotencyKey(ctx context.Context, r *consent.IdempotencyRecord, now time.Time) (*consent.IdempotencyRecord, error) {
	v, err := t.Tx.ClaimIdempotencyKey(ctx, r, now)
	return v, t.done("ClaimIdempotencyKey", err)
}

func (t *journalTx) AnswerIdempotencyKey(ctx context.Context, scope, key string, status int, body []byte) error {
	return t.done("AnswerIdempotencyKey", t.Tx.AnswerIdempotencyKey(ctx, scope, key, status, body))
}

func (t *journalTx) ReleaseIdempotencyKey(ctx context.Context, scope, key string) error {
	return t.done("ReleaseIdempotencyKey", t.Tx.ReleaseIdempotencyKey(ctx, scope, key))
}

func (t *journalTx) PruneIdempotencyKeys(ctx context.Context, now time.Time, limit int) (int, error) {
	v, err := t.Tx.PruneIdempotencyKeys(ctx, now, limit)
	return v, t.done("PruneIdempotencyKeys", err)
}

func (t *journalTx) CreateOperatorSession(ctx context.Context, s *consent.OperatorSession) error {
	return t.done("CreateOperatorSession", t.Tx.CreateOperatorSession(ctx, s))
}

func (t *journalTx) DeleteOperatorSession(ctx context.Context, d consent.Digest) error {
	return t.done("DeleteOperatorSession", t.Tx.DeleteOperatorSession(ctx, d))
}

func (t *journalTx) PruneOperatorSessions(ctx context.Context, now time.Time, limit int) (int, error) {
	v, err := t.Tx.PruneOperatorSessions(ctx, now, limit)
	return v, t.done("PruneOperatorSessions", err)
}

func (t *journalTx) CreateWebhookEndpoint(ctx context.Context, e *consent.WebhookEndpoint) error {
	return t.done("CreateWebhookEndpoint", t.Tx.CreateWebhookEndpoint(ctx, e))
}

func (t *journalTx) DisableWebhookEndpoint(ctx context.Context, companyID, id string, at time.Time) error {
	return t.done("DisableWebhookEndpoint", t.Tx.DisableWebhookEndpoint(ctx, companyID, id, at))
}

func (t *journalTx) DeleteWebhookEndpoint(ctx context.Context, companyID, id string) error {
	return t.done("DeleteWebhookEndpoint", t.Tx.DeleteWebhookEndpoint(ctx, companyID, id))
}

func (t *journalTx) AppendWebhookDelivery(ctx context.Context, d *consent.WebhookDelivery) error {
	return t.done("AppendWebhookDelivery", t.Tx.AppendWebhookDelivery(ctx, d))
}

func (t *journalTx) Credit(ctx context.Context, e *wallet.Entry) (wallet.Amount, error) {
	v, err := t.Tx.Credit(ctx, e)
	return v, t.done("Credit", err)
}

func (t *journalTx) Debit(ctx context.Context, e *wallet.Entry) (wallet.Amount, error) {
	v, err := t.Tx.Debit(ctx, e)
	return v, t.done("Debit", err)
}

func (t *journalTx) AppendAudit(ctx context.Context, e *consent.AuditEntry) error {
	return t.done("AppendAudit", t.Tx.AppendAudit(ctx, e))
}

// The bulk writes are journalled under the names of their one-row forms,
// so that a test's list of writes to leave out covers both.

func (t *journalTx) AppendAudits(ctx context.Context, es []*consent.AuditEntry) error {
	return t.done("AppendAudit", t.Tx.AppendAudits(ctx, es))
}

func (t *journalTx) UpdateSessions(ctx context.Context, list []*consent.Session) error {
	return t.done("UpdateSession", t.Tx.UpdateSessions(ctx, list))
}

func (t *journalTx) EnqueueJobs(ctx context.Context, jobs []*consent.Job) error {
	return t.done("EnqueueJob", t.Tx.EnqueueJobs(ctx, jobs))
}

func (t *journalTx) DebitAll(ctx context.Context, es []*wallet.Entry) (wallet.Amount, error) {
	v, err := t.Tx.DebitAll(ctx, es)
	return v, t.done("Debit", err)
}
