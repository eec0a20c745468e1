package storetest

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/consentkit/consentkit/consent"
)

func endpointIDs(list []*consent.WebhookEndpoint) []string {
	var ids []string
	for _, e := range list {
		ids = append(ids, e.ID)
	}
	return ids
}

func testWebhookEndpoint(t *testing.T, s consent.Store) {
	fixture(t, s)
	a1 := endpoint("ep-a1", "acme", consent.EventCertificateIssued, consent.EventConsentRevoked)
	a2 := endpoint("ep-a2", "acme", consent.EventVideoFailed)
	a2.DisabledAt = t0.Add(time.Hour)
	o1 := endpoint("ep-o1", "other", consent.EventSessionRetained)
	bare := &consent.WebhookEndpoint{ID: "ep-a3", CompanyID: "acme", URL: "http://h.example", Secret: "whsec_x", CreatedAt: t0}
	update(t, s, func(tx consent.Tx) error {
		// Created in this order, listed in this order, whatever the ids.
		for _, e := range []*consent.WebhookEndpoint{a2, o1, a1, bare} {
			if err := tx.CreateWebhookEndpoint(ctx, e); err != nil {
				return err
			}
		}
		return nil
	})
	view(t, s, func(tx consent.Tx) error {
		found(t, "WebhookEndpoint", a1)(tx.WebhookEndpoint(ctx, "ep-a1"))
		found(t, "WebhookEndpoints(acme)", []*consent.WebhookEndpoint{a2, a1, bare})(tx.WebhookEndpoints(ctx, "acme"))
		if list, err := tx.WebhookEndpoints(ctx, "nobody"); err != nil || list == nil || len(list) != 0 {
			t.Errorf("WebhookEndpoints(nobody) = %v, %v; want an empty slice", list, err)
		}
		_, err := tx.WebhookEndpoint(ctx, "ep-none")
		wantCode(t, "WebhookEndpoint(none)", err, consent.NotFound)
		return nil
	})
	err := s.Update(ctx, func(tx consent.Tx) error { return tx.CreateWebhookEndpoint(ctx, endpoint("ep-a1", "other")) })
	wantCode(t, "CreateWebhookEndpoint(taken id)", err, consent.Conflict)
	err = s.Update(ctx, func(tx consent.Tx) error { return tx.CreateWebhookEndpoint(ctx, endpoint("ep-x", "nobody")) })
	wantCode(t, "CreateWebhookEndpoint(unknown company)", err, consent.NotFound)

	// Disable and enable, only through the endpoint's company.
	err = s.Update(ctx, func(tx consent.Tx) error { return tx.DisableWebhookEndpoint(ctx, "other", "ep-a1", t0) })
	wantCode(t, "DisableWebhookEndpoint(other company)", err, consent.NotFound)
	err = s.Update(ctx, func(tx consent.Tx) error { return tx.DisableWebhookEndpoint(ctx, "acme", "ep-none", t0) })
	wantCode(t, "DisableWebhookEndpoint(none)", err, consent.NotFound)
	update(t, s, func(tx consent.Tx) error {
		if err := tx.DisableWebhookEndpoint(ctx, "acme", "ep-a1", t0.Add(time.Minute)); err != nil {
			return err
		}
		return tx.DisableWebhookEndpoint(ctx, "acme", "ep-a2", time.Time{})
	})
	view(t, s, func(tx consent.Tx) error {
		got, err := tx.WebhookEndpoint(ctx, "ep-a1")
		if err != nil || !got.DisabledAt.Equal(t0.Add(time.Minute)) {
			t.Errorf("disabled endpoint: %+v, %v; want DisabledAt %v", got, err, t0.Add(time.Minute))
		}
		got, err = tx.WebhookEndpoint(ctx, "ep-a2")
		if err != nil || got.Disabled() {
			t.Errorf("enabled endpoint: %+v, %v; want no DisabledAt", got, err)
		}
		return nil
	})

	// Delete, only through the endpoint's company, with its log.
	update(t, s, func(tx consent.Tx) error {
		return tx.AppendWebhookDelivery(ctx, &consent.WebhookDelivery{EndpointID: "ep-a1", MessageID: "msg_1",
			EventType: consent.EventConsentRevoked, Attempt: 1, At: t0, Status: 204})
	})
	err = s.Update(ctx, func(tx consent.Tx) error { return tx.DeleteWebhookEndpoint(ctx, "other", "ep-a1") })
	wantCode(t, "DeleteWebhookEndpoint(other company)", err, consent.NotFound)
	update(t, s, func(tx consent.Tx) error { return tx.DeleteWebhookEndpoint(ctx, "acme", "ep-a1") })
	err = s.Update(ctx, func(tx consent.Tx) error { return tx.DeleteWebhookEndpoint(ctx, "acme", "ep-a1") })
	wantCode(t, "DeleteWebhookEndpoint(again)", err, consent.NotFound)
	view(t, s, func(tx consent.Tx) error {
		_, err := tx.WebhookEndpoint(ctx, "ep-a1")
		wantCode(t, "WebhookEndpoint(deleted)", err, consent.NotFound)
		list, err := tx.WebhookEndpoints(ctx, "acme")
		if err != nil {
			t.Errorf("WebhookEndpoints after delete: %v", err)
		}
		wantSame(t, []string{"ep-a2", "ep-a3"}, endpointIDs(list), exact, "WebhookEndpoints after delete")
		log, err := tx.WebhookDeliveries(ctx, "ep-a1", 0, 10)
		if err != nil || len(log) != 0 {
			t.Errorf("log of a deleted endpoint = %v, %v; want none", log, err)
		}
		return nil
	})
	// Its id may be used again, with an empty log.
	update(t, s, func(tx consent.Tx) error { return tx.CreateWebhookEndpoint(ctx, endpoint("ep-a1", "other")) })
	view(t, s, func(tx consent.Tx) error {
		log, err := tx.WebhookDeliveries(ctx, "ep-a1", 0, 10)
		if err != nil || len(log) != 0 {
			t.Errorf("log of a new endpoint with a reused id = %v, %v; want none", log, err)
		}
		return nil
	})
}

func testWebhookDeliveries(t *testing.T, s consent.Store) {
	fixture(t, s)
	update(t, s, func(tx consent.Tx) error {
		if err := tx.CreateWebhookEndpoint(ctx, endpoint("ep-a", "acme", consent.EventConsentRevoked)); err != nil {
			return err
		}
		return tx.CreateWebhookEndpoint(ctx, endpoint("ep-b", "acme", consent.EventConsentRevoked))
	})
	var want []*consent.WebhookDelivery
	for i := range 5 {
		d := &consent.WebhookDelivery{
			Seq: 999, EndpointID: "ep-a", MessageID: "msg_" + string(rune('a'+i)), EventType: consent.EventConsentRevoked,
			Attempt: i + 1, At: t0.Add(time.Duration(i) * time.Second), Status: 500, Error: "HTTP 500 — ünïcødé",
			Duration: 1234567 * time.Nanosecond,
		}
		if i == 4 {
			d.Status, d.Error = 200, ""
		}
		if i == 2 {
			d.Status, d.Error = 0, "dial tcp 10.0.0.1:443: refused"
		}
		update(t, s, func(tx consent.Tx) error {
			if err := tx.AppendWebhookDelivery(ctx, d); err != nil {
				return err
			}
			// Another endpoint's entries, between them, are not in ep-a's log.
			return tx.AppendWebhookDelivery(ctx, &consent.WebhookDelivery{EndpointID: "ep-b", MessageID: "msg_b", Attempt: 1, At: t0})
		})
		n := *d
		n.Duration = 1234 * time.Microsecond // kept to the microsecond
		want = append([]*consent.WebhookDelivery{&n}, want...)
	}
	ignoreSeq := cmpopts.IgnoreFields(consent.WebhookDelivery{}, "Seq")
	var all []*consent.WebhookDelivery
	view(t, s, func(tx consent.Tx) error {
		var err error
		all, err = tx.WebhookDeliveries(ctx, "ep-a", 0, 100)
		if d := cmp.Diff(want, all, opts, ignoreSeq); err != nil || d != "" {
			t.Fatalf("WebhookDeliveries: %v (-want +got):\n%s", err, d)
		}
		return nil
	})
	for i := 1; i < len(all); i++ {
		if all[i].Seq >= all[i-1].Seq || all[i].Seq <= 0 {
			t.Fatalf("Seq of the log, newest first: %d then %d; want positive and falling", all[i-1].Seq, all[i].Seq)
		}
	}
	view(t, s, func(tx consent.Tx) error {
		// Pages of two, each starting below the last entry of the one before.
		var paged []*consent.WebhookDelivery
		before := int64(0)
		for range 4 {
			page, err := tx.WebhookDeliveries(ctx, "ep-a", before, 2)
			if err != nil {
				return err
			}
			if len(page) > 2 {
				t.Errorf("page of %d entries; limit 2", len(page))
			}
			if len(page) == 0 {
				break
			}
			paged = append(paged, page...)
			before = page[len(page)-1].Seq
		}
		if d := cmp.Diff(all, paged, opts); d != "" {
			t.Errorf("pages (-all +pages):\n%s", d)
		}
		if got, err := tx.WebhookDeliveries(ctx, "ep-a", 0, 0); err != nil || len(got) != 0 {
			t.Errorf("limit 0: %v, %v; want none", got, err)
		}
		if got, err := tx.WebhookDeliveries(ctx, "ep-none", 0, 10); err != nil || got == nil || len(got) != 0 {
			t.Errorf("unknown endpoint: %v, %v; want an empty slice", got, err)
		}
		return nil
	})
	err := s.Update(ctx, func(tx consent.Tx) error {
		return tx.AppendWebhookDelivery(ctx, &consent.WebhookDelivery{EndpointID: "ep-none", MessageID: "m", At: t0})
	})
	wantCode(t, "AppendWebhookDelivery(unknown endpoint)", err, consent.NotFound)
}

func testWebhookRollsBack(t *testing.T, s consent.Store) {
	fixture(t, s)
	update(t, s, func(tx consent.Tx) error { return tx.CreateWebhookEndpoint(ctx, endpoint("ep-a", "acme")) })
	boom := errors.New("boom")
	err := s.Update(ctx, func(tx consent.Tx) error {
		if err := tx.CreateWebhookEndpoint(ctx, endpoint("ep-b", "acme")); err != nil {
			return err
		}
		if err := tx.AppendWebhookDelivery(ctx, &consent.WebhookDelivery{EndpointID: "ep-a", MessageID: "m", At: t0}); err != nil {
			return err
		}
		if err := tx.DisableWebhookEndpoint(ctx, "acme", "ep-a", t0); err != nil {
			return err
		}
		if err := tx.DeleteWebhookEndpoint(ctx, "acme", "ep-a"); err != nil {
			return err
		}
		return boom
	})
	if !errors.Is(err, boom) {
		t.Fatalf("Update = %v, want boom", err)
	}
	view(t, s, func(tx consent.Tx) error {
		list, err := tx.WebhookEndpoints(ctx, "acme")
		if err != nil || len(list) != 1 || list[0].ID != "ep-a" || list[0].Disabled() {
			t.Errorf("endpoints after rollback = %v, %v; want ep-a alone, enabled", list, err)
		}
		log, err := tx.WebhookDeliveries(ctx, "ep-a", 0, 10)
		if err != nil || len(log) != 0 {
			t.Errorf("log after rollback = %v, %v; want none", log, err)
		}
		return nil
	})
	// Writes fail in View.
	err = s.View(ctx, func(tx consent.Tx) error { return tx.CreateWebhookEndpoint(ctx, endpoint("ep-c", "acme")) })
	if err == nil {
		t.Error("CreateWebhookEndpoint in View succeeded")
	}
}
