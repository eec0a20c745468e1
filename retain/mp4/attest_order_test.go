package mp4_test

import (
	"context"
	"encoding/json"
	"math"
	"testing"

	"github.com/consentkit/consentkit/retain/mp4"
)

// A recording whose first event is not its earliest (the browser's clock
// stepped back during the session: a later event carries an earlier
// timestamp) is replayed by rrweb in timestamp order, from its earliest
// event. The consent moment must be reached all the same: Attest measures
// the page, rather than failing with a transient error that the job then
// retries until it gives up ("the replay failed").
func TestAttestEventsOutOfOrder(t *testing.T) {
	c, _ := converter(t, mp4.Config{})
	rec := `[{"type":4,"data":{"href":"http://example.test/","width":320,"height":240},"timestamp":5000},
{"type":2,"data":{"node":{"type":0,"id":1,"childNodes":[{"type":2,"tagName":"html","id":2,"attributes":{},"childNodes":[
{"type":2,"tagName":"head","id":3,"attributes":{},"childNodes":[]},
{"type":2,"tagName":"body","id":5,"attributes":{},"childNodes":[
{"type":2,"tagName":"p","id":9,"attributes":{"data-consent":""},"childNodes":[{"type":3,"id":10,"textContent":"I agree."}]}]}]}]},"initialOffset":{"top":0,"left":0}},"timestamp":5010},
{"type":5,"data":{"tag":"consentkit/signals","payload":{"v":1}},"timestamp":4000}]`
	a, err := c.Attest(context.Background(), json.RawMessage(rec), math.MaxInt64, []int{9})
	if err != nil {
		t.Fatalf("Attest of a recording whose first event is not its earliest: %v", err)
	}
	if m := a.Consents[0]; !m.Found || m.Text != "I agree." {
		t.Errorf("the consent: %+v, want found with its text", m)
	}
}
