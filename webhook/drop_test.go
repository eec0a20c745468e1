package webhook_test

import (
	"context"
	"fmt"
	"net/http"
	"testing"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/internal/teststore"
	"github.com/consentkit/consentkit/jobs"
	"github.com/consentkit/consentkit/webhook"
)

// revoked writes a consent.revoked message of cert-1 to acme's endpoints.
func (e *env) revoked(t *testing.T) {
	t.Helper()
	err := e.svc.Store().Update(ctx, func(tx consent.Tx) error {
		return e.svc.EmitEvent(ctx, tx, "acme", consent.EventConsentRevoked, map[string]string{"certificate_id": "cert-1"})
	})
	if err != nil {
		t.Fatal(err)
	}
}

// countJobs returns how many webhook jobs of acme are queued.
func (e *env) countJobs(t *testing.T) int {
	t.Helper()
	var n int
	err := e.svc.Store().View(ctx, func(tx consent.Tx) error {
		var err error
		n, err = tx.CountCompanyJobs(ctx, consent.JobWebhook, "acme")
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return n
}

// A deleted endpoint's undelivered messages are dropped with it: an
// endpoint added again with its id (Params.ID), by the same company,
// subscribed to the message's type, with a new URL and secret, is sent
// none of them (nor is the old URL).
func TestDeletedEndpointsMessagesDropped(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(tb testing.TB) consent.Store) {
		e := newEnv(t, open(t), envOpts{})
		hooks := webhook.Endpoints{Service: e.svc}
		first, again := newReceiver(t), newReceiver(t)
		if _, err := hooks.Add(ctx, webhook.Params{ID: "ep-1", CompanyID: "acme", URL: first.URL, Secret: secret,
			Events: []string{consent.EventConsentRevoked}}); err != nil {
			t.Fatal(err)
		}
		e.revoked(t)
		if err := hooks.Delete(ctx, "acme", "ep-1"); err != nil {
			t.Fatal(err)
		}
		if n := e.countJobs(t); n != 0 {
			t.Errorf("%d jobs queued after the delete; want none", n)
		}
		if _, err := hooks.Add(ctx, webhook.Params{ID: "ep-1", CompanyID: "acme", URL: again.URL,
			Events: []string{consent.EventConsentRevoked}}); err != nil {
			t.Fatal(err)
		}
		e.drain(t)
		if got := len(first.requests()) + len(again.requests()); got != 0 {
			t.Errorf("the deleted endpoint's message was sent %d times; want dropped", got)
		}
		// The endpoint added again gets the events from then on.
		e.revoked(t)
		e.drain(t)
		if len(first.requests()) != 0 || len(again.requests()) != 1 {
			t.Errorf("a new event: %d requests to the deleted endpoint's URL, %d to the new one's; want 0 and 1",
				len(first.requests()), len(again.requests()))
		}
	})
}

// A disabled endpoint's undelivered messages are dropped: enabled again
// before they ran, it is sent none of its backlog, only the events from
// then on. Another endpoint of the company keeps its own messages.
func TestDisabledEndpointsMessagesDropped(t *testing.T) {
	teststore.Each(t, func(t *testing.T, open func(tb testing.TB) consent.Store) {
		e := newEnv(t, open(t), envOpts{})
		hooks := webhook.Endpoints{Service: e.svc}
		rc, other := newReceiver(t), newReceiver(t)
		ep := e.endpoint(t, rc.URL, consent.EventConsentRevoked)
		e.endpoint(t, other.URL, consent.EventConsentRevoked)
		e.revoked(t)
		e.revoked(t)
		if err := hooks.SetDisabled(ctx, "acme", ep.ID, true); err != nil {
			t.Fatal(err)
		}
		if err := hooks.SetDisabled(ctx, "acme", ep.ID, false); err != nil {
			t.Fatal(err)
		}
		e.drain(t)
		if got := len(rc.requests()); got != 0 {
			t.Errorf("sent %d times after re-enabling; want the backlog dropped", got)
		}
		if got := len(other.requests()); got != 2 {
			t.Errorf("the other endpoint was sent %d messages; want its 2", got)
		}
		e.revoked(t)
		e.drain(t)
		if got := len(rc.requests()); got != 1 {
			t.Errorf("a new event after re-enabling: sent %d times; want 1", got)
		}
		// Enabling drops nothing.
		e.revoked(t)
		if err := hooks.SetDisabled(ctx, "acme", ep.ID, false); err != nil {
			t.Fatal(err)
		}
		e.drain(t)
		if got := len(rc.requests()); got != 2 {
			t.Errorf("enabling an enabled endpoint: sent %d times in all; want 2", got)
		}
	})
}

// A delivery whose job is deleted after it was leased but before it read
// the endpoint (here: the endpoint deleted and added again with its id,
// or disabled and enabled again, just as Do begins) sends nothing.
func TestMessagesDroppedAsDeliveryBegins(t *testing.T) {
	for _, c := range []struct {
		name   string
		change func(t *testing.T, hooks webhook.Endpoints, url string)
	}{
		{"deleted and added again", func(t *testing.T, hooks webhook.Endpoints, url string) {
			if err := hooks.Delete(ctx, "acme", "ep-1"); err != nil {
				t.Error(err)
			}
			if _, err := hooks.Add(ctx, webhook.Params{ID: "ep-1", CompanyID: "acme", URL: url,
				Events: []string{consent.EventConsentRevoked}}); err != nil {
				t.Error(err)
			}
		}},
		{"disabled and enabled again", func(t *testing.T, hooks webhook.Endpoints, _ string) {
			if err := hooks.SetDisabled(ctx, "acme", "ep-1", true); err != nil {
				t.Error(err)
			}
			if err := hooks.SetDisabled(ctx, "acme", "ep-1", false); err != nil {
				t.Error(err)
			}
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			teststore.Each(t, func(t *testing.T, open func(tb testing.TB) consent.Store) {
				first, again := newReceiver(t), newReceiver(t)
				var e *env
				e = newEnv(t, open(t), envOpts{wrap: func(h jobs.Handler) jobs.Handler {
					do := h.Do
					h.Do = func(ctx context.Context, j *consent.Job) (jobs.Result, error) {
						c.change(t, webhook.Endpoints{Service: e.svc}, again.URL)
						return do(ctx, j)
					}
					return h
				}})
				if _, err := (webhook.Endpoints{Service: e.svc}).Add(ctx, webhook.Params{ID: "ep-1", CompanyID: "acme",
					URL: first.URL, Secret: secret, Events: []string{consent.EventConsentRevoked}}); err != nil {
					t.Fatal(err)
				}
				e.revoked(t)
				if n := e.drain(t); n != 1 {
					t.Errorf("%d jobs ran; want 1", n)
				}
				if got := len(first.requests()) + len(again.requests()); got != 0 {
					t.Errorf("sent %d times; want dropped", got)
				}
			})
		})
	}
}

// A delivery under way when its endpoint is deleted or disabled ends
// cleanly: its job is gone, the runner reports no error (a lost lease),
// whether the receiver answered 2xx or not, and nothing is tried again.
func TestMessageInFlightWhenDropped(t *testing.T) {
	for _, status := range []int{http.StatusNoContent, http.StatusInternalServerError} {
		for _, disable := range []bool{false, true} {
			t.Run(fmt.Sprintf("status=%d,disable=%v", status, disable), func(t *testing.T) {
				teststore.Each(t, func(t *testing.T, open func(tb testing.TB) consent.Store) {
					e := newEnv(t, open(t), envOpts{})
					hooks := webhook.Endpoints{Service: e.svc}
					rc := newReceiver(t)
					ep := e.endpoint(t, rc.URL, consent.EventConsentRevoked)
					rc.answer = func(_ int, w http.ResponseWriter, _ *http.Request) {
						var err error
						if disable {
							err = hooks.SetDisabled(ctx, "acme", ep.ID, true)
						} else {
							err = hooks.Delete(ctx, "acme", ep.ID)
						}
						if err != nil {
							t.Error(err)
						}
						w.WriteHeader(status)
					}
					e.revoked(t)
					ran, err := e.runner.RunOnce(ctx, consent.JobWebhook)
					if !ran || err != nil {
						t.Errorf("status %d, disable %v: RunOnce = %v, %v; want true, nil", status, disable, ran, err)
					}
					if n := e.countJobs(t); n != 0 {
						t.Errorf("status %d, disable %v: %d jobs left; want none", status, disable, n)
					}
					if n := e.drain(t); n != 0 || len(rc.requests()) != 1 {
						t.Errorf("status %d, disable %v: then %d jobs ran, %d requests in all; want 0 and 1",
							status, disable, n, len(rc.requests()))
					}
				})
			})
		}
	}
}
