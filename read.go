package consentkit

import (
	"context"
	"slices"
	"strings"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/contact"
	"github.com/consentkit/consentkit/wallet"
)

// The reads of the operator surface: what an operator looks up
// about a company. Each runs in one read-only transaction and answers
// NotFound for a company that does not exist, so that an unknown company is
// told apart from one with nothing to show; each reads one company's data
// only (D9).

// Company returns the company. Invalid when id is not an identifier;
// NotFound when there is no such company.
func (s *Service) Company(ctx context.Context, id string) (*consent.Company, error) {
	var c *consent.Company
	err := s.companyView(ctx, id, func(tx consent.Tx) error {
		var err error
		c, err = tx.Company(ctx, id)
		return err
	})
	return c, err
}

// Companies returns up to limit companies (1 to MaxPage; 0 means
// DefaultPage) in the order of their ids, compared byte by byte, starting
// after the id after ("" for the first page). None: an empty slice.
func (s *Service) Companies(ctx context.Context, after string, limit int) ([]*consent.Company, error) {
	if limit == 0 {
		limit = consent.DefaultPage
	}
	if limit < 1 || limit > consent.MaxPage {
		return nil, consent.Errorf(consent.Invalid, "limit must be 1 to %d", consent.MaxPage)
	}
	if err := consent.CheckText("after", after); err != nil {
		return nil, err
	}
	out := []*consent.Company{}
	err := s.store.View(ctx, func(tx consent.Tx) error {
		out = out[:0]
		ids, err := tx.CompanyIDs(ctx, after, limit)
		if err != nil {
			return err
		}
		for _, id := range ids {
			c, err := tx.Company(ctx, id)
			if err != nil {
				return err
			}
			out = append(out, c)
		}
		return nil
	})
	return out, err
}

// companyView runs fn in a read-only transaction once the company is found:
// Invalid when companyID is not an identifier, NotFound when there is no
// such company.
func (s *Service) companyView(ctx context.Context, companyID string, fn func(tx consent.Tx) error) error {
	if err := consent.CheckID("company_id", companyID); err != nil {
		return err
	}
	return s.store.View(ctx, func(tx consent.Tx) error {
		if _, err := tx.Company(ctx, companyID); err != nil {
			return err
		}
		return fn(tx)
	})
}

// companyList reads a list of the company in companyView.
func companyList[T any](ctx context.Context, s *Service, companyID string, read func(tx consent.Tx) ([]T, error)) ([]T, error) {
	var out []T
	err := s.companyView(ctx, companyID, func(tx consent.Tx) error {
		var err error
		out, err = read(tx)
		return err
	})
	return out, err
}

// Properties returns the company's properties, oldest first. NotFound when
// the company does not exist.
func (s *Service) Properties(ctx context.Context, companyID string) ([]*consent.Property, error) {
	return companyList(ctx, s, companyID, func(tx consent.Tx) ([]*consent.Property, error) { return tx.Properties(ctx, companyID) })
}

// Tokens returns the company's tokens, revoked and expired ones included,
// oldest first, without their digests: a token's secret is shown once,
// when issued (D6), and nothing that identifies it is shown after.
// NotFound when the company does not exist.
func (s *Service) Tokens(ctx context.Context, companyID string) ([]*consent.Token, error) {
	ts, err := companyList(ctx, s, companyID, func(tx consent.Tx) ([]*consent.Token, error) { return tx.Tokens(ctx, companyID) })
	for _, t := range ts {
		t.Digest = consent.Digest{}
	}
	return ts, err
}

// pageOf reads the page p (a zero Limit means DefaultPage) with read in
// companyView.
func pageOf[T any](ctx context.Context, s *Service, p consent.Page, read func(consent.Tx, context.Context, consent.Page) ([]T, error)) ([]T, error) {
	if p.Limit == 0 {
		p.Limit = consent.DefaultPage
	}
	if err := p.Check(); err != nil {
		return nil, err
	}
	return companyList(ctx, s, p.CompanyID, func(tx consent.Tx) ([]T, error) { return read(tx, ctx, p) })
}

// LedgerPage returns a page of the company's ledger, newest first (D5; see
// Page). Invalid when p is not a valid page; NotFound when the company does
// not exist.
func (s *Service) LedgerPage(ctx context.Context, p consent.Page) ([]*wallet.Entry, error) {
	return pageOf(ctx, s, p, consent.Tx.LedgerPage)
}

// CertificatePage returns a page of the company's certificates, newest
// first (see Page); Since and Until select by creation time. Invalid when
// p is not a valid page; NotFound when the company does not exist.
func (s *Service) CertificatePage(ctx context.Context, p consent.Page) ([]*consent.Certificate, error) {
	return pageOf(ctx, s, p, consent.Tx.CertificatePage)
}

// SessionPage returns a page of the company's sessions, newest first (see
// Page). Invalid when p is not a valid page; NotFound when the company does
// not exist.
func (s *Service) SessionPage(ctx context.Context, p consent.Page) ([]*consent.Session, error) {
	return pageOf(ctx, s, p, consent.Tx.SessionPage)
}

// RevocationPage returns a page of the company's revocations (D19), newest
// first (see Page). Invalid when p is not a valid page; NotFound when the
// company does not exist.
func (s *Service) RevocationPage(ctx context.Context, p consent.Page) ([]*consent.Revocation, error) {
	return pageOf(ctx, s, p, consent.Tx.RevocationPage)
}

// CompanyCertificate returns the company's certificate. NotFound when the
// company does not exist, or the certificate does not, was purged, or is
// another company's (D9).
func (s *Service) CompanyCertificate(ctx context.Context, companyID, id string) (*consent.Certificate, error) {
	var c *consent.Certificate
	err := s.companyView(ctx, companyID, func(tx consent.Tx) error {
		var err error
		c, err = CertificateOf(ctx, tx, id, companyID)
		return err
	})
	return c, err
}

// CertificateOf returns the company's certificate inside tx, as
// consent.SessionOf returns its session: another company's certificate is
// reported as not found, the same as an unknown one (D9).
func CertificateOf(ctx context.Context, tx consent.Tx, id, companyID string) (*consent.Certificate, error) {
	if !consent.ValidID(id) {
		return nil, consent.Errorf(consent.NotFound, "certificate not found")
	}
	c, err := tx.Certificate(ctx, id)
	if consent.ErrorCode(err) == consent.NotFound || err == nil && c.CompanyID != companyID {
		return nil, consent.Errorf(consent.NotFound, "certificate not found")
	}
	return c, err
}

// CompanySession returns the company's session. NotFound when the company
// does not exist, or the session does not or is another company's (D9).
func (s *Service) CompanySession(ctx context.Context, companyID, id string) (*consent.Session, error) {
	var ses *consent.Session
	err := s.companyView(ctx, companyID, func(tx consent.Tx) error {
		if !consent.ValidID(id) {
			return consent.Errorf(consent.NotFound, "session not found")
		}
		var err error
		ses, err = tx.Session(ctx, id)
		if consent.ErrorCode(err) == consent.NotFound || err == nil && ses.CompanyID != companyID {
			return consent.Errorf(consent.NotFound, "session not found")
		}
		return err
	})
	return ses, err
}

// FindCertificates returns the company's certificates of a consumer: those
// whose email or mobile, normalized as opt-out normalizes them (D17), is one
// given — the union when both are — found through their digests, never by
// a scan. They come newest first, at most MaxPage of them. Invalid when
// neither is given, or one does not normalize; NotFound when the company
// does not exist. None: an empty slice.
func (s *Service) FindCertificates(ctx context.Context, companyID, email, mobile string) ([]*consent.Certificate, error) {
	var ed, md consent.Digest
	var err error
	if strings.TrimSpace(email) == "" && strings.TrimSpace(mobile) == "" {
		return nil, consent.Errorf(consent.Invalid, "one of email or mobile is required")
	}
	if strings.TrimSpace(email) != "" {
		if ed, err = contact.EmailDigest(email); err != nil {
			return nil, err
		}
	}
	if strings.TrimSpace(mobile) != "" {
		if md, err = contact.MobileDigest(mobile); err != nil {
			return nil, err
		}
	}
	return companyList(ctx, s, companyID, func(tx consent.Tx) ([]*consent.Certificate, error) {
		byEmail, err := tx.CertificatesByEmail(ctx, companyID, ed)
		if err != nil {
			return nil, err
		}
		byMobile, err := tx.CertificatesByMobile(ctx, companyID, md)
		if err != nil {
			return nil, err
		}
		ids := slices.Compact(slices.Sorted(slices.Values(append(byEmail, byMobile...))))
		newest := func(a, b *consent.Certificate) int {
			if consent.Newer(a.CreatedAt, a.ID, b.CreatedAt, b.ID) {
				return -1
			}
			return 1
		}
		// At most two pages of certificates are held, however many the
		// consumer has: past that, the older half is let go.
		out := make([]*consent.Certificate, 0, min(len(ids), 2*consent.MaxPage))
		for _, id := range ids {
			c, err := tx.Certificate(ctx, id)
			if err != nil {
				return nil, err
			}
			if out = append(out, c); len(out) == 2*consent.MaxPage {
				slices.SortFunc(out, newest)
				clear(out[consent.MaxPage:])
				out = out[:consent.MaxPage]
			}
		}
		slices.SortFunc(out, newest)
		return out[:min(len(out), consent.MaxPage)], nil
	})
}
