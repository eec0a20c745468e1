package insights

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"io"
	"slices"
	"strings"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/jobs"
	"github.com/consentkit/consentkit/signed"
)

// Handler returns the handler of consent.JobInsights jobs, which the
// Service enqueues with every certificate it issues (D50): it streams the
// certificate's session's recording from the store one chunk at a time
// into [Extract] (memory bounded by lim whatever the recording; an unset
// lim.MaxBytes is the service's Config.MaxRecordingBytes, so that a
// recording the service took is never past lim), with the certificate's
// user agent, judges the signals and the certificate's
// RevokedBefore by its company's rules (consent.Company.InsightsRules), and
// records the signed statement (signed.InsightsStatement) in the
// transaction that ends the job. A recording no longer kept, not the one
// the certificate was issued with (its RecordingSHA256), or one Extract
// refuses as malformed or past lim, is judged as no recording. Store
// failures are tried again with the Runner's backoff; a job that fails for
// good leaves the insights consent.InsightsFailed, with no statement.
func Handler(svc *consentkit.Service, lim Limits) jobs.Handler {
	if lim.MaxBytes <= 0 {
		lim.MaxBytes = svc.MaxRecordingBytes() // the recording as read is no longer than its chunks
	}
	h := &handler{svc: svc, lim: lim}
	return jobs.Handler{Kind: consent.JobInsights, Do: h.do, Failed: h.failed, Concurrency: 2}
}

type handler struct {
	svc *consentkit.Service
	lim Limits
}

// errStop ends the reading of a recording that Extract no longer reads.
var errStop = errors.New("insights: the recording is no longer read")

func (h *handler) do(ctx context.Context, j *consent.Job) (jobs.Result, error) {
	cert, rules, err := h.pending(ctx, j.Key)
	if err != nil || cert == nil {
		return jobs.Result{}, err
	}
	s, err := h.extract(ctx, cert)
	if err != nil {
		return jobs.Result{}, err
	}
	st, sig, err := Statement(h.svc, cert, s, rules.Judge(s, Facts{RevokedBefore: !cert.RevokedBefore.IsZero()}))
	if err != nil {
		return jobs.Result{}, err
	}
	body, err := signed.Marshal(st)
	if err != nil {
		return jobs.Result{}, err
	}
	return jobs.Result{Commit: func(ctx context.Context, tx consent.Tx) error {
		if err := h.svc.CheckSigningKey(ctx, tx); err != nil {
			return err // every instance would refuse the statement
		}
		return h.end(ctx, tx, cert.ID, func(in *consent.Insights) {
			in.Status, in.Statement, in.Signature, in.KeyID = consent.InsightsDone, body, sig, st.KeyID
		})
	}}, nil
}

// failed marks the insights failed when the job will not be tried again.
func (h *handler) failed(ctx context.Context, tx consent.Tx, j *consent.Job, _ error, final bool) error {
	if !final {
		return nil
	}
	return h.end(ctx, tx, j.Key, func(in *consent.Insights) { in.Status = consent.InsightsFailed })
}

// end sets the certificate's pending insights as set says; nothing when
// they are not pending or no longer kept (purged meanwhile).
func (h *handler) end(ctx context.Context, tx consent.Tx, certificateID string, set func(*consent.Insights)) error {
	in, err := tx.Insights(ctx, certificateID)
	if consent.ErrorCode(err) == consent.NotFound {
		return nil
	}
	if err != nil || in.Status != consent.InsightsPending {
		return err
	}
	set(in)
	in.UpdatedAt = h.svc.Now()
	return tx.UpdateInsights(ctx, in)
}

// pending returns the certificate whose insights are pending and its
// company's rules; a nil certificate when there is nothing left to do (the
// certificate purged, the insights done).
func (h *handler) pending(ctx context.Context, certificateID string) (*consent.Certificate, Rules, error) {
	var (
		cert  *consent.Certificate
		rules Rules
	)
	err := h.svc.Store().View(ctx, func(tx consent.Tx) error {
		cert = nil
		in, err := tx.Insights(ctx, certificateID)
		if consent.ErrorCode(err) == consent.NotFound {
			return nil
		}
		if err != nil || in.Status != consent.InsightsPending {
			return err
		}
		c, err := tx.Certificate(ctx, certificateID)
		if consent.ErrorCode(err) == consent.NotFound {
			return nil
		}
		if err != nil {
			return err
		}
		co, err := tx.Company(ctx, c.CompanyID)
		if err != nil {
			return err
		}
		cert, rules = c, Rules(co.InsightsRules)
		return nil
	})
	return cert, rules, err
}

// extract returns the signals of cert's recording, read from the store
// through a pipe one chunk at a time, joined as consent.JoinChunks joins
// them, so that no more than a chunk is held beside Extract's own bounded
// state.
func (h *handler) extract(ctx context.Context, cert *consent.Certificate) (*Signals, error) {
	pr, pipe := io.Pipe()
	sum := sha256.New()
	pw := io.MultiWriter(pipe, sum) // the pipe first: its error stops the write
	done := make(chan error, 1)
	go func() {
		err := h.svc.Store().View(ctx, func(tx consent.Tx) error {
			n := 0
			err := tx.EachEventChunk(ctx, cert.SessionID, func(chunk []byte) error {
				inner := innerEvents(chunk)
				if len(inner) == 0 {
					return nil
				}
				sep := []byte{','}
				if n == 0 {
					sep[0] = '['
				}
				n++
				if _, err := pw.Write(sep); err != nil {
					return err
				}
				_, err := pw.Write(inner)
				return err
			})
			if consent.ErrorCode(err) == consent.NotFound {
				err = nil // a session no longer kept: no recording
			}
			if err != nil {
				return err
			}
			end := "]"
			if n == 0 {
				end = "[]"
			}
			_, err = io.WriteString(pw, end)
			return err
		})
		pipe.CloseWithError(err) // nil: the reader sees the end
		done <- err
	}()
	s, err := Extract(pr, cert.UserAgent, h.lim)
	pr.CloseWithError(errStop)
	readErr := <-done
	switch {
	case readErr != nil && !errors.Is(readErr, errStop):
		return nil, readErr
	case errors.Is(err, ErrMalformed) || errors.Is(err, ErrTooLarge):
		return Extract(strings.NewReader("[]"), cert.UserAgent, h.lim)
	case err != nil:
		return nil, err
	case !cert.RecordingSHA256.IsZero() && consent.Digest(sum.Sum(nil)) != cert.RecordingSHA256:
		// Not the recording the certificate was issued with: its signals
		// are no evidence of this consent.
		return Extract(strings.NewReader("[]"), cert.UserAgent, h.lim)
	}
	return s, nil
}

// innerEvents is what a chunk, a JSON array of events, adds to its
// recording: the array's members without its brackets (consent.JoinChunks).
func innerEvents(chunk []byte) []byte {
	inner := bytes.TrimSpace(chunk)
	if len(inner) < 2 {
		return nil
	}
	return bytes.TrimSpace(inner[1 : len(inner)-1])
}

// Statement returns the statement of cert's signals s and judgement j,
// signed by svc (unsigned, with a nil signature, when svc has no signing
// keys), as the insights job records it.
func Statement(svc *consentkit.Service, cert *consent.Certificate, s *Signals, j Judgement) (*signed.InsightsStatement, []byte, error) {
	content := consent.Signed(cert)
	st, err := signed.NewInsightsStatement(&content, svc.Now())
	if err != nil {
		return nil, nil, err
	}
	st.Bot.Verdict, st.Bot.Reasons = string(j.Verdict), Codes(j.Reasons)
	st.Signals = statedSignals(s)
	sig, err := svc.SignInsights(&st)
	if err != nil {
		return nil, nil, err
	}
	return &st, sig, nil
}

// statedSignals returns s as a statement writes it.
func statedSignals(s *Signals) signed.InsightsSignals {
	out := signed.InsightsSignals{
		Client: signed.InsightsClient{Browser: s.Client.Browser, BrowserVersion: s.Client.BrowserVersion, Device: s.Client.Device,
			Headless: s.Client.Headless, NotABrowser: s.Client.NotABrowser, OS: s.Client.OS, OSVersion: s.Client.OSVersion},
		Events:          s.Events,
		Inputs:          []signed.InsightsInput{},
		KeysPerMinute:   signed.Number(s.KeysPerMinute),
		Keystrokes:      s.Keystrokes,
		Pointer:         signed.InsightsPointer{Clicks: s.Pointer.Clicks, Moves: s.Pointer.Moves, Scrolls: s.Pointer.Scrolls, Touches: s.Pointer.Touches},
		SecondsOnPage:   signed.Number(s.SecondsOnPage),
		SecondsToSubmit: signed.Number(s.SecondsToSubmit),
		Snapshot:        s.Snapshot,
	}
	for name, in := range s.Inputs {
		out.Inputs = append(out.Inputs, signed.InsightsInput{Name: name, Method: string(in.Method), Keystrokes: in.Keystrokes, Pastes: in.Pastes})
	}
	slices.SortFunc(out.Inputs, func(a, b signed.InsightsInput) int { return strings.Compare(a.Name, b.Name) })
	if r := s.Reported; r != nil {
		out.Reported = &signed.InsightsReported{IsFramed: r.IsFramed, Language: r.Language, ParentOrigin: r.ParentOrigin,
			TimeZone: r.TimeZone, Viewport: signed.InsightsViewport{Width: r.Viewport.Width, Height: r.Viewport.Height}, Webdriver: r.Webdriver}
	}
	return out
}
