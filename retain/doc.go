// Package retain keeps consent evidence for the long term. The Retain API
// (POST /api/integrations/{companyId}/retain/{sessionId}, and
// …/retain/batch for up to 100 sessions) retains chosen session recordings
// and queues them for conversion to MP4 video, which a Worker (or
// ConversionHandler in a jobs.Runner) does with a Converter and keeps in a
// VideoStore; /verify/session and /verify/certificate retain a session, or
// its certificates, without a video. The Purger removes what has expired.
//
//	r := retain.New(svc)
//	ret, err := r.Retain(ctx, caller, "acme", "ses_123") // ret.RetainedUntil, ret.Charged
//	w, err := retain.NewWorker(retain.WorkerConfig{Service: svc, Converter: conv, Videos: retain.Dir{Root: "videos"}})
//	go w.Run(ctx)
//
// Each retention is one atomic step (D22): the session must be the
// company's (NotFound otherwise) and not retained yet (Conflict), the wallet
// must cover the price (Payment); then the charge, its ledger entry,
// retention_status=retained, rrweb_to_video_status=pending and the
// conversion job are written together or not at all. A batch (D23) runs its
// entries in order in one transaction and commits all its successes at once.
//
// Every retention is recorded in the company's audit log (D42) in its
// transaction: retain.single, retain.batch (one entry per session of the
// batch), retain.session and retain.certificate, with the charge, or with
// the code a refused one was refused with (not found, conflict, payment).
//
// A session retained long-term through /verify/session is already retained:
// the Retain API answers Conflict for it, as D22 says.
package retain
