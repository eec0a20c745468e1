package storetest

import (
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/consentkit/consentkit/consent"
)

func testJob(t *testing.T, s consent.Store) {
	// Any bytes, invalid UTF-8 and NUL included, come back as they went in.
	want := &consent.Job{Kind: consent.JobConvert, Key: "s1", Payload: notText(), RunAfter: t0, CreatedAt: t0}
	update(t, s, func(tx consent.Tx) error { return tx.EnqueueJob(ctx, want) })
	// The same key in another kind is another job.
	update(t, s, func(tx consent.Tx) error { return tx.EnqueueJob(ctx, job("webhook", "s1", t0)) })
	view(t, s, func(tx consent.Tx) error {
		found(t, "Job", want)(tx.Job(ctx, consent.JobConvert, "s1"))
		got, err := tx.Job(ctx, "webhook", "s1")
		if err != nil || got.Kind != "webhook" || len(got.Payload) != 0 {
			t.Errorf("Job(webhook, s1) = %+v, %v; want the webhook job with no payload", got, err)
		}
		_, err = tx.Job(ctx, consent.JobConvert, "s2")
		wantCode(t, "Job(none)", err, consent.NotFound)
		_, err = tx.Job(ctx, "purge", "s1")
		wantCode(t, "Job(other kind)", err, consent.NotFound)
		return nil
	})
	err := s.Update(ctx, func(tx consent.Tx) error { return tx.EnqueueJob(ctx, want) })
	wantCode(t, "EnqueueJob(again)", err, consent.Conflict)
}

// testEnqueueJobs: every job is added as EnqueueJob adds it, payloads
// byte for byte; a taken kind and key, or one listed twice, adds none.
func testEnqueueJobs(t *testing.T, s consent.Store) {
	withPayload := func(j *consent.Job, p []byte) *consent.Job { j.Payload = p; return j }
	list := []*consent.Job{
		withPayload(job("webhook", "msg_1:ep_1", t0), notText()),
		job(consent.JobConvert, "s1", t0.Add(time.Second)),
		withPayload(job("webhook", "msg_1:ep_2", t0), []byte{}),
		{Kind: "purge", Key: "p1", Attempts: 2, LastError: "line 1\nline \"2\"\t\\ ünï ✓ 𝄞", RunAfter: t0.Add(time.Hour), CreatedAt: t0},
	}
	update(t, s, func(tx consent.Tx) error { return tx.EnqueueJobs(ctx, list) })
	update(t, s, func(tx consent.Tx) error { return tx.EnqueueJobs(ctx, nil) })
	got := append(jobsOf(t, s, "webhook", "msg_1:ep_1"), jobsOf(t, s, consent.JobConvert, "s1")[0],
		jobsOf(t, s, "webhook", "msg_1:ep_2")[0], jobsOf(t, s, "purge", "p1")[0])
	want := make([]*consent.Job, len(list))
	for i, j := range list {
		n := *j
		if n.Payload == nil {
			n.Payload = []byte{}
		}
		want[i] = &n
	}
	wantSame(t, want, got, opts, "jobs after EnqueueJobs")
	if got := jobsOf(t, s, "webhook", "msg_1:ep_2")[0]; got == nil || got.Payload == nil || len(got.Payload) != 0 {
		t.Errorf("an empty payload came back as %+v, want empty", got)
	}

	for _, c := range []struct {
		name string
		list []*consent.Job
		code consent.Code
	}{
		{"a taken key", []*consent.Job{job("webhook", "new-1", t0), job(consent.JobConvert, "s1", t0)}, consent.Conflict},
		{"a key twice", []*consent.Job{job("webhook", "new-1", t0), job("webhook", "new-2", t0), job("webhook", "new-1", t0)}, consent.Conflict},
	} {
		err := s.Update(ctx, func(tx consent.Tx) error { return tx.EnqueueJobs(ctx, c.list) })
		wantCode(t, "EnqueueJobs with "+c.name, err, c.code)
		if got := jobsOf(t, s, "webhook", "new-1", "new-2"); got[0] != nil || got[1] != nil {
			t.Errorf("EnqueueJobs with %s added %+v", c.name, got)
		}
	}
}

func testLeaseJob(t *testing.T, s consent.Store) {
	update(t, s, func(tx consent.Tx) error {
		for _, j := range []*consent.Job{job(consent.JobConvert, "s1", t0), job(consent.JobConvert, "s2", t0.Add(time.Minute))} {
			if err := tx.EnqueueJob(ctx, j); err != nil {
				return err
			}
		}
		return nil
	})
	_, err := lease(s, "w0", t0, "purge", "webhook")
	wantCode(t, "lease of kinds with no job", err, consent.NotFound)
	_, err = lease(s, "w0", t0)
	wantCode(t, "lease of no kind", err, consent.NotFound)

	j, err := lease(s, "w1", t0, kinds...)
	want := &consent.Job{Kind: consent.JobConvert, Key: "s1", Attempts: 1, RunAfter: t0, LeaseOwner: "w1", LeaseUntil: t0.Add(10 * time.Minute), CreatedAt: t0}
	if err != nil {
		t.Fatalf("first lease: %v", err)
	}
	if !wantSame(t, want, j, opts, "first lease") {
		t.FailNow()
	}
	_, err = lease(s, "w2", t0, kinds...)
	wantCode(t, "lease while s2 is not due and s1 is leased", err, consent.NotFound)
	if j, err := lease(s, "w2", t0.Add(2*time.Minute), kinds...); err != nil || j.Key != "s2" {
		t.Fatalf("lease of s2: %+v, %v", j, err)
	}
	// w1 crashes; its lease runs out and w3 takes the job.
	j, err = lease(s, "w3", t0.Add(11*time.Minute), kinds...)
	if err != nil || j.Key != "s1" || j.Attempts != 2 || j.LeaseOwner != "w3" {
		t.Fatalf("lease after expiry: %+v, %v", j, err)
	}
	renew := func(key, owner string) error {
		return s.Update(ctx, func(tx consent.Tx) error { return tx.RenewJob(ctx, consent.JobConvert, key, owner, t0.Add(time.Hour)) })
	}
	end := func(key, owner string, next *consent.Job) error {
		return s.Update(ctx, func(tx consent.Tx) error { return tx.EndJob(ctx, consent.JobConvert, key, owner, next) })
	}
	wantCode(t, "RenewJob by the crashed runner", renew("s1", "w1"), consent.Conflict)
	wantCode(t, "EndJob by the crashed runner", end("s1", "w1", nil), consent.Conflict)
	if err := renew("s1", "w3"); err != nil {
		t.Fatalf("RenewJob by the holder: %v", err)
	}
	retry := &consent.Job{Payload: []byte("cursor"), Attempts: 2, RunAfter: t0.Add(20 * time.Minute), LastError: "chromium crashed"}
	if err := end("s1", "w3", retry); err != nil {
		t.Fatalf("EndJob(retry): %v", err)
	}
	view(t, s, func(tx consent.Tx) error {
		got, err := tx.Job(ctx, consent.JobConvert, "s1")
		want := &consent.Job{Kind: consent.JobConvert, Key: "s1", Payload: []byte("cursor"), Attempts: 2,
			RunAfter: t0.Add(20 * time.Minute), LastError: "chromium crashed", CreatedAt: t0}
		if err != nil {
			t.Errorf("job after retry: %v", err)
		}
		wantSame(t, want, got, opts, "job after retry")
		return nil
	})
	// At 19 min s1 is not due yet, and w2's lease of s2 ran out at 12 min.
	if j, err := lease(s, "w4", t0.Add(19*time.Minute), kinds...); err != nil || j.Key != "s2" || j.Attempts != 2 {
		t.Fatalf("lease at 19 min: %+v, %v; want s2 again", j, err)
	}
	if j, err := lease(s, "w4", t0.Add(20*time.Minute), kinds...); err != nil || j.Key != "s1" || j.Attempts != 3 {
		t.Fatalf("lease of the retry: %+v, %v", j, err)
	}
	// A failed job is never leased again.
	failed := &consent.Job{Attempts: 3, RunAfter: t0, LastError: "gave up", FailedAt: t0.Add(20 * time.Minute)}
	if err := end("s1", "w4", failed); err != nil {
		t.Fatalf("EndJob(failed): %v", err)
	}
	// The job of s2 is done.
	if j, err := lease(s, "w5", t0.Add(time.Hour), kinds...); err != nil || j.Key != "s2" {
		t.Fatalf("lease of s2 again: %+v, %v", j, err)
	}
	if err := end("s2", "w5", nil); err != nil {
		t.Fatalf("EndJob(done): %v", err)
	}
	_, err = lease(s, "w6", t0.Add(48*time.Hour), kinds...)
	wantCode(t, "lease with one job failed and one done", err, consent.NotFound)
	view(t, s, func(tx consent.Tx) error {
		_, err := tx.Job(ctx, consent.JobConvert, "s2")
		wantCode(t, "Job(done)", err, consent.NotFound)
		got, err := tx.Job(ctx, consent.JobConvert, "s1")
		if err != nil || !got.FailedAt.Equal(t0.Add(20*time.Minute)) || got.LastError != "gave up" {
			t.Errorf("failed job: %+v, %v", got, err)
		}
		return nil
	})
	wantCode(t, "RenewJob(done job)", renew("s2", "w5"), consent.NotFound)
	wantCode(t, "EndJob(done job)", end("s2", "w5", nil), consent.NotFound)
	// A done job's key can be used again.
	update(t, s, func(tx consent.Tx) error { return tx.EnqueueJob(ctx, job(consent.JobConvert, "s2", t0)) })

	// Order: the earliest RunAfter, then kind, then key, byte by byte.
	update(t, s, func(tx consent.Tx) error {
		for _, j := range []*consent.Job{job("webhook", "b", t0), job("webhook", "B", t0), job("purge", "z", t0)} {
			if err := tx.EnqueueJob(ctx, j); err != nil {
				return err
			}
		}
		return nil
	})
	var order []string
	for {
		j, err := lease(s, "w7", t0.Add(72*time.Hour), kinds...)
		if consent.ErrorCode(err) == consent.NotFound {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		order = append(order, j.Kind+"/"+j.Key)
	}
	wantSame(t, []string{"convert/s2", "purge/z", "webhook/B", "webhook/b"}, order, exact, "lease order")
}

// testConcurrentLeases: many runners leasing at once each get a different
// job, and no job is leased twice while its lease runs.
func testConcurrentLeases(t *testing.T, s consent.Store) {
	const jobs, runners = 24, 6
	update(t, s, func(tx consent.Tx) error {
		for i := range jobs {
			if err := tx.EnqueueJob(ctx, job(kinds[i%len(kinds)], fmt.Sprintf("j%02d", i), t0)); err != nil {
				return err
			}
		}
		return nil
	})
	leased := map[string]int{}
	concurrently(runners, func(w int, locked func(func())) {
		for {
			j, err := lease(s, fmt.Sprint("w", w), t0, kinds...)
			if consent.ErrorCode(err) == consent.NotFound {
				return
			}
			if err != nil {
				t.Errorf("lease: %v", err)
				return
			}
			locked(func() {
				leased[j.Kind+"/"+j.Key]++
			})
		}
	})
	if len(leased) != jobs {
		t.Errorf("%d jobs leased, want %d", len(leased), jobs)
	}
	for id, n := range leased {
		if n != 1 {
			t.Errorf("job %s leased %d times", id, n)
		}
	}
}

// testJobRollsBack: a job enqueued in a transaction that rolls back does
// not exist, and neither does an end or a lease rolled back.
func testJobRollsBack(t *testing.T, s consent.Store) {
	err := s.Update(ctx, func(tx consent.Tx) error {
		if err := tx.EnqueueJob(ctx, job(consent.JobConvert, "s1", t0)); err != nil {
			return err
		}
		return errBoom
	})
	if !errors.Is(err, errBoom) {
		t.Fatalf("Update = %v; want the callback's error", err)
	}
	_, err = lease(s, "w1", t0, kinds...)
	wantCode(t, "lease after a rolled-back enqueue", err, consent.NotFound)

	update(t, s, func(tx consent.Tx) error { return tx.EnqueueJob(ctx, job(consent.JobConvert, "s1", t0)) })
	err = s.Update(ctx, func(tx consent.Tx) error {
		if _, err := tx.LeaseJob(ctx, kinds, "w1", t0, t0.Add(time.Minute)); err != nil {
			return err
		}
		return errBoom
	})
	if !errors.Is(err, errBoom) {
		t.Fatalf("Update = %v; want the callback's error", err)
	}
	j, err := lease(s, "w2", t0, kinds...)
	if err != nil || j.Attempts != 1 || j.LeaseOwner != "w2" {
		t.Fatalf("lease after a rolled-back lease = %+v, %v; want w2's first attempt", j, err)
	}
	err = s.Update(ctx, func(tx consent.Tx) error {
		if err := tx.EndJob(ctx, consent.JobConvert, "s1", "w2", nil); err != nil {
			return err
		}
		return errBoom
	})
	if !errors.Is(err, errBoom) {
		t.Fatalf("Update = %v; want the callback's error", err)
	}
	view(t, s, func(tx consent.Tx) error {
		if j, err := tx.Job(ctx, consent.JobConvert, "s1"); err != nil || j.LeaseOwner != "w2" {
			t.Errorf("job after a rolled-back end = %+v, %v; want it still leased by w2", j, err)
		}
		return nil
	})
}

// testCountJobs: CountJobs counts the queued jobs of one kind, leased or
// not, and not those failed for good or done.
func testCountJobs(t *testing.T, s consent.Store) {
	count := func(kind string) int {
		t.Helper()
		var n int
		view(t, s, func(tx consent.Tx) error {
			var err error
			n, err = tx.CountJobs(ctx, kind)
			return err
		})
		return n
	}
	if n := count(consent.JobAttest); n != 0 {
		t.Errorf("CountJobs of an empty queue = %d", n)
	}
	update(t, s, func(tx consent.Tx) error {
		return tx.EnqueueJobs(ctx, []*consent.Job{job(consent.JobAttest, "c1", t0), job(consent.JobAttest, "c2", t0),
			job(consent.JobAttest, "c3", t0.Add(time.Hour)), job(consent.JobConvert, "c1", t0)})
	})
	if a, c, none, empty := count(consent.JobAttest), count(consent.JobConvert), count("webhook"), count(""); a != 3 || c != 1 || none != 0 || empty != 0 {
		t.Errorf("CountJobs = %d attest, %d convert, %d webhook, %d of the empty kind; want 3, 1, 0, 0", a, c, none, empty)
	}
	update(t, s, func(tx consent.Tx) error {
		leased, err := tx.LeaseJob(ctx, []string{consent.JobAttest}, "w1", t0, t0.Add(time.Minute))
		if err != nil {
			return err
		}
		failed := &consent.Job{Attempts: 1, RunAfter: t0, LastError: "gave up", FailedAt: t0}
		return tx.EndJob(ctx, leased.Kind, leased.Key, "w1", failed)
	})
	update(t, s, func(tx consent.Tx) error {
		_, err := tx.LeaseJob(ctx, []string{consent.JobAttest}, "w1", t0, t0.Add(time.Minute))
		return err
	})
	if n := count(consent.JobAttest); n != 2 {
		t.Errorf("CountJobs with one job failed and one leased = %d, want 2", n)
	}
	update(t, s, func(tx consent.Tx) error { return tx.EndJob(ctx, consent.JobAttest, "c2", "w1", nil) })
	if n := count(consent.JobAttest); n != 1 {
		t.Errorf("CountJobs once a job is done = %d, want 1", n)
	}
}

// testCountCompanyJobs: CountCompanyJobs counts the queued jobs of one
// kind that work for one company, leased or not, and not those failed for
// good or done, nor another company's, another kind's or a company-less
// one (those "" counts).
func testCountCompanyJobs(t *testing.T, s consent.Store) {
	count := func(kind, company string) int {
		t.Helper()
		var n int
		view(t, s, func(tx consent.Tx) error {
			var err error
			n, err = tx.CountCompanyJobs(ctx, kind, company)
			return err
		})
		return n
	}
	of := func(kind, key, company string) *consent.Job {
		j := job(kind, key, t0)
		j.CompanyID = company
		return j
	}
	if n := count(consent.JobAttest, "acme"); n != 0 {
		t.Errorf("CountCompanyJobs of an empty queue = %d", n)
	}
	update(t, s, func(tx consent.Tx) error {
		return tx.EnqueueJobs(ctx, []*consent.Job{of(consent.JobAttest, "c1", "acme"), of(consent.JobAttest, "c2", "acme"),
			of(consent.JobAttest, "c3", "acme"), of(consent.JobAttest, "g1", "globex"), of(consent.JobAttest, "n1", ""),
			of(consent.JobConvert, "c1", "acme")})
	})
	for _, c := range []struct {
		kind, company string
		want          int
	}{
		{consent.JobAttest, "acme", 3}, {consent.JobAttest, "globex", 1}, {consent.JobAttest, "", 1},
		{consent.JobAttest, "initech", 0}, {consent.JobConvert, "acme", 1}, {consent.JobConvert, "globex", 0},
		{consent.JobWebhook, "acme", 0}, {consent.JobAttest, "ACME", 0},
	} {
		if n := count(c.kind, c.company); n != c.want {
			t.Errorf("CountCompanyJobs(%s, %q) = %d, want %d", c.kind, c.company, n, c.want)
		}
	}
	// One of acme's fails for good, one is leased: it holds 2; globex's
	// is done: it holds none.
	update(t, s, func(tx consent.Tx) error {
		failed := &consent.Job{Attempts: 1, RunAfter: t0, LastError: "gave up", FailedAt: t0}
		if _, err := tx.LeaseJob(ctx, []string{consent.JobAttest}, "w1", t0, t0.Add(time.Minute)); err != nil {
			return err
		}
		if err := tx.EndJob(ctx, consent.JobAttest, "c1", "w1", failed); err != nil {
			return err
		}
		for _, key := range []string{"c2", "g1"} {
			j, err := tx.LeaseJob(ctx, []string{consent.JobAttest}, "w2", t0, t0.Add(time.Minute))
			if err != nil {
				return err
			}
			if j.Key != key {
				return fmt.Errorf("leased %s, want %s", j.Key, key)
			}
		}
		return tx.EndJob(ctx, consent.JobAttest, "g1", "w2", nil)
	})
	if a, g, n := count(consent.JobAttest, "acme"), count(consent.JobAttest, "globex"), count(consent.JobAttest, ""); a != 2 || g != 0 || n != 1 {
		t.Errorf("CountCompanyJobs with one failed, one leased and one done = %d acme, %d globex, %d of none; want 2, 0, 1", a, g, n)
	}
}

// testDeleteLaneJobs: DeleteLaneJobs deletes the queued jobs of one kind,
// company and lane, leased or not, and returns how many: not those failed
// for good, nor another kind's, company's or lane's ("" is the lane of the
// jobs in none). The holder of a lease on one it deleted finds it gone
// (NotFound), and a rollback keeps them.
func testDeleteLaneJobs(t *testing.T, s consent.Store) {
	hook := consent.JobWebhook
	of := func(kind, key, company, lane string, at time.Time) *consent.Job {
		j := job(kind, key, at)
		j.CompanyID, j.Lane = company, lane
		return j
	}
	update(t, s, func(tx consent.Tx) error {
		return tx.EnqueueJobs(ctx, []*consent.Job{
			of(hook, "m1:ep-1", "acme", "ep-1", t0.Add(-2*time.Minute)), of(hook, "m2:ep-1", "acme", "ep-1", t0.Add(-time.Minute)),
			of(hook, "m3:ep-1", "acme", "ep-1", t0), of(hook, "m4:ep-1", "acme", "ep-1", t0.Add(time.Hour)),
			of(hook, "m1:ep-2", "acme", "ep-2", t0), of(hook, "m5:ep-1", "globex", "ep-1", t0),
			of(consent.JobAttest, "ep-1", "acme", "ep-1", t0), of(hook, "m6", "acme", "", t0),
		})
	})
	// m1:ep-1 fails for good; m2:ep-1 is leased by w1.
	update(t, s, func(tx consent.Tx) error {
		j, err := tx.LeaseJob(ctx, []string{hook}, "w1", t0, t0.Add(time.Minute))
		if err != nil {
			return err
		}
		if j.Key != "m1:ep-1" {
			return fmt.Errorf("leased %s, want m1:ep-1", j.Key)
		}
		failed := &consent.Job{Attempts: 1, RunAfter: t0, LastError: "gave up", FailedAt: t0}
		if err := tx.EndJob(ctx, hook, "m1:ep-1", "w1", failed); err != nil {
			return err
		}
		if j, err = tx.LeaseJob(ctx, []string{hook}, "w1", t0, t0.Add(time.Minute)); err != nil {
			return err
		}
		if j.Key != "m2:ep-1" {
			return fmt.Errorf("leased %s, want m2:ep-1", j.Key)
		}
		return nil
	})
	del := func(kind, company, lane string) (n int, err error) {
		err = s.Update(ctx, func(tx consent.Tx) error {
			n, err = tx.DeleteLaneJobs(ctx, kind, company, lane)
			return err
		})
		return n, err
	}
	for _, c := range []struct{ kind, company, lane string }{
		{hook, "initech", "ep-1"}, {hook, "acme", "ep-3"}, {consent.JobConvert, "acme", "ep-1"}, {hook, "ACME", "ep-1"},
		{hook, "acme", "EP-1"}, {hook, "", "ep-1"},
	} {
		if n, err := del(c.kind, c.company, c.lane); err != nil || n != 0 {
			t.Errorf("DeleteLaneJobs(%s, %q, %q) = %d, %v; want 0", c.kind, c.company, c.lane, n, err)
		}
	}
	errBoom := errors.New("boom")
	err := s.Update(ctx, func(tx consent.Tx) error {
		if n, err := tx.DeleteLaneJobs(ctx, hook, "acme", "ep-1"); err != nil || n != 3 {
			return fmt.Errorf("DeleteLaneJobs = %d, %w; want 3", n, err)
		}
		return errBoom
	})
	if !errors.Is(err, errBoom) {
		t.Fatalf("DeleteLaneJobs rolled back: %v", err)
	}
	keys := []string{"m1:ep-1", "m2:ep-1", "m3:ep-1", "m4:ep-1", "m1:ep-2", "m5:ep-1", "m6"}
	present := func() []bool {
		t.Helper()
		var out []bool
		for _, j := range jobsOf(t, s, hook, keys...) {
			out = append(out, j != nil)
		}
		return append(out, jobsOf(t, s, consent.JobAttest, "ep-1")[0] != nil)
	}
	wantSame(t, []bool{true, true, true, true, true, true, true, true}, present(), exact, "jobs after a DeleteLaneJobs rolled back")
	if n, err := del(hook, "acme", "ep-1"); err != nil || n != 3 {
		t.Errorf("DeleteLaneJobs(webhook, acme, ep-1) = %d, %v; want 3: one leased, one due, one later", n, err)
	}
	// Left: the failed one, and every other kind's, company's and lane's.
	wantSame(t, []bool{true, false, false, false, true, true, true, true}, present(), exact,
		"jobs (%v, attest ep-1) after DeleteLaneJobs(webhook, acme, ep-1)", keys)
	err = s.Update(ctx, func(tx consent.Tx) error { return tx.RenewJob(ctx, hook, "m2:ep-1", "w1", t0.Add(time.Hour)) })
	wantCode(t, "RenewJob of a leased job deleted", err, consent.NotFound)
	err = s.Update(ctx, func(tx consent.Tx) error { return tx.EndJob(ctx, hook, "m2:ep-1", "w1", nil) })
	wantCode(t, "EndJob of a leased job deleted", err, consent.NotFound)
	if n, err := del(hook, "acme", "ep-1"); err != nil || n != 0 {
		t.Errorf("DeleteLaneJobs again = %d, %v; want 0", n, err)
	}
	if n, err := del(hook, "acme", ""); err != nil || n != 1 {
		t.Errorf("DeleteLaneJobs(webhook, acme, \"\") = %d, %v; want 1 (m6)", n, err)
	}
	wantSame(t, []bool{true, false, false, false, true, true, false, true}, present(), exact,
		"jobs (%v, attest ep-1) after DeleteLaneJobs(webhook, acme, \"\")", keys)
}

// testFairLease: LeaseJob takes the due job of the company holding the
// fewest leases of the kinds asked for, in a lane no lease holds (D53);
// a lease that ran out holds nothing.
func testFairLease(t *testing.T, s consent.Store) {
	fair := func(key, company, lane string, at time.Time) *consent.Job {
		j := job("webhook", key, at)
		j.CompanyID, j.Lane = company, lane
		return j
	}
	update(t, s, func(tx consent.Tx) error {
		return tx.EnqueueJobs(ctx, []*consent.Job{
			fair("a1", "acme", "ep1", t0), fair("a2", "acme", "ep1", t0.Add(time.Second)),
			fair("a3", "acme", "ep2", t0.Add(2*time.Second)), fair("a4", "acme", "", t0.Add(3*time.Second)),
			fair("b1", "beta", "ep3", t0.Add(time.Minute)),
		})
	})
	view(t, s, func(tx consent.Tx) error {
		found(t, "Job", fair("a2", "acme", "ep1", t0.Add(time.Second)))(tx.Job(ctx, "webhook", "a2"))
		return nil
	})
	now := t0.Add(time.Hour)
	next := func(owner string) string {
		t.Helper()
		j, err := lease(s, owner, now, "webhook")
		if consent.ErrorCode(err) == consent.NotFound {
			return ""
		}
		if err != nil {
			t.Fatalf("lease: %v", err)
		}
		return j.Key
	}
	// acme's leases outnumber beta's as soon as it holds one; ep1's second
	// delivery waits for its first; a job with no lane is never held back.
	var order []string
	for i := range 5 {
		order = append(order, next(fmt.Sprint("w", i)))
	}
	wantSame(t, []string{"a1", "b1", "a3", "a4", ""}, order, exact, "fair lease order")
	if err := s.Update(ctx, func(tx consent.Tx) error { return tx.EndJob(ctx, "webhook", "a1", "w0", nil) }); err != nil {
		t.Fatal(err)
	}
	if got := next("w5"); got != "a2" {
		t.Errorf("lease once ep1 is free = %q, want a2", got)
	}

	// Leases of another kind do not count against a company, and a lease
	// that ran out leaves its lane free.
	update(t, s, func(tx consent.Tx) error {
		c := job(consent.JobConvert, "c1", t0)
		c.CompanyID = "gamma"
		return tx.EnqueueJobs(ctx, []*consent.Job{c, fair("g1", "gamma", "ep9", t0), fair("g2", "gamma", "ep9", t0.Add(time.Second))})
	})
	if j, err := lease(s, "w6", now, consent.JobConvert); err != nil || j.Key != "c1" {
		t.Fatalf("lease of the conversion = %+v, %v", j, err)
	}
	if got := next("w7"); got != "g1" {
		t.Errorf("lease with gamma holding a conversion = %q, want g1 (only webhook leases count)", got)
	}
	if got := next("w8"); got != "" {
		t.Errorf("lease with ep9 held = %q, want none", got)
	}
	// Once every lease above has run out, the order starts afresh.
	now = now.Add(11 * time.Minute)
	order = order[:0]
	for i := range 5 {
		order = append(order, next(fmt.Sprint("x", i)))
	}
	wantSame(t, []string{"g1", "a2", "b1", "a3", "a4"}, order, exact, "lease order after the leases ran out")
}

// testConcurrentLanes: runners leasing at once never hold two jobs of one
// lane, however their transactions interleave.
func testConcurrentLanes(t *testing.T, s consent.Store) {
	const lanes, perLane, runners = 4, 6, 6
	update(t, s, func(tx consent.Tx) error {
		var list []*consent.Job
		for i := range lanes * perLane {
			j := job("webhook", fmt.Sprintf("j%02d", i), t0)
			j.CompanyID, j.Lane = "acme", fmt.Sprint("ep", i%lanes)
			list = append(list, j)
		}
		return tx.EnqueueJobs(ctx, list)
	})
	held := map[string]string{} // lane → key of the job leased in it
	done := 0
	concurrently(runners, func(w int, locked func(func())) {
		owner := fmt.Sprint("w", w)
		for range 10_000 { // bounds a runner that never sees the queue empty
			j, err := lease(s, owner, t0, "webhook")
			if consent.ErrorCode(err) == consent.NotFound {
				var finished bool
				locked(func() { finished = done == lanes*perLane })
				if finished {
					return
				}
				continue
			}
			if err != nil {
				t.Errorf("lease: %v", err)
				return
			}
			locked(func() {
				if other, ok := held[j.Lane]; ok {
					t.Errorf("lane %s leased to %s while %s holds it", j.Lane, j.Key, other)
				}
				held[j.Lane] = j.Key
			})
			// The lease is recorded only while it surely runs: after its
			// commit, and until just before the EndJob that ends it.
			view(t, s, func(tx consent.Tx) error {
				if got, err := tx.Job(ctx, "webhook", j.Key); err != nil || got.LeaseOwner != owner {
					t.Errorf("job %s while leased to %s: %+v, %v", j.Key, owner, got, err)
				}
				return nil
			})
			locked(func() { delete(held, j.Lane); done++ })
			if err := s.Update(ctx, func(tx consent.Tx) error { return tx.EndJob(ctx, "webhook", j.Key, owner, nil) }); err != nil {
				t.Errorf("EndJob: %v", err)
				return
			}
		}
	})
	if done != lanes*perLane {
		t.Errorf("%d jobs done, want %d", done, lanes*perLane)
	}
}
