package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"maps"
	"net/http"
	"net/url"
	"os"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"
	"unicode"

	"github.com/consentkit/consentkit"
	"github.com/consentkit/consentkit/audit"
	"github.com/consentkit/consentkit/blob"
	"github.com/consentkit/consentkit/blob/s3blob"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/httpadapter"
	"github.com/consentkit/consentkit/profile"
	"github.com/consentkit/consentkit/retain/s3video"
	"github.com/consentkit/consentkit/wallet"
)

// commands is every command, in the order consentkit -h lists them.
var commands = []*command{
	{group: "migrate", local: true, summary: "Create or upgrade the schema of a database (-dsn)",
		about: `Applies the schema migrations that the database lacks, each in its own
transaction; safe to run again. No other command changes a schema: they
refuse a database that has none.`,
		setup: func(fs *flag.FlagSet) action {
			return func(ctx context.Context, c *call) error {
				dsn, err := c.database()
				if err != nil {
					return err
				}
				if err := migrate(ctx, dsn); err != nil {
					return err
				}
				if c.json {
					return c.writeJSON(map[string]any{"migrated": true, "dsn": redact(dsn)})
				}
				fmt.Fprintf(c.stdout, "%s: migrated\n", redact(dsn))
				return nil
			}
		}},

	{group: "recordings", name: "move", local: true, summary: "Move the finished recordings out of a database (-dsn) into a blob store (D52)",
		about: `Moves every finished recording still in the database — of a session closed
at consent, or that took no chunk for -idle — into one compressed object
each, in the directory of -dir or the S3 bucket of -s3-bucket (credentials
from AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY), a batch at a time until
none is left, and says how many moved. A server does the same every
minute; this moves at once the recordings of a database that kept them
all, such as one upgraded from a version before D52. Give the store the
server uses (its -recordings-dir, or its -video-s3-bucket).`,
		setup: func(fs *flag.FlagSet) action {
			dir := fs.String("dir", "", "`directory` to move the recordings to (a server's -recordings-dir)")
			var s3 s3video.Config
			fs.StringVar(&s3.Bucket, "s3-bucket", "", "S3 `bucket` to move the recordings to, under recordings/, instead of -dir")
			fs.StringVar(&s3.Endpoint, "s3-endpoint", "", "`URL` of an S3-compatible server (default Amazon S3)")
			fs.StringVar(&s3.Region, "s3-region", os.Getenv("AWS_REGION"), "the bucket's `region` (default $AWS_REGION, else us-east-1)")
			idle := fs.Duration("idle", consentkit.DefaultRecordingIdle, "how long a session takes no chunk before its recording is finished")
			return func(ctx context.Context, c *call) error {
				dsn, err := c.database()
				if err != nil {
					return err
				}
				blobs, err := recordingStore(ctx, *dir, s3, c.getenv)
				if err != nil {
					return err
				}
				st, closeStore, err := c.openStore(ctx, dsn)
				if err != nil {
					return err
				}
				defer func() { _ = closeStore() }() // the moves are committed, or their error returned
				svc, err := consentkit.NewService(st, consentkit.Config{Now: c.now, Recordings: blobs, RecordingIdle: *idle})
				if err != nil {
					return err
				}
				const batch = 500
				total := 0
				for {
					n, err := svc.MoveRecordings(ctx, batch)
					total += n
					if err != nil {
						return fmt.Errorf("%d moved, then: %w", total, err)
					}
					if n < batch {
						break
					}
				}
				if c.json {
					return c.writeJSON(map[string]any{"moved": total})
				}
				fmt.Fprintf(c.stdout, "%d recordings moved\n", total)
				return nil
			}
		}},

	{group: "companies", name: "create", summary: "Create a company with an empty wallet",
		about: `The id is yours to choose: sent again after a lost answer, the create is
refused with 409 and the company stands.`,
		setup: func(fs *flag.FlagSet) action {
			id := fs.String("id", "", "the company's `id` (required)")
			name := fs.String("name", "", "its `name` (required)")
			thirdParty := fs.Bool("third-party", false, "let the authorized companies verify its certificates (third-party verification)")
			var authorized list
			fs.Var(&authorized, "authorize", "a company `id` allowed third-party verification; repeat for more")
			attest := fs.Bool("attest", false, "attest every certificate the company issues (D49)")
			return func(ctx context.Context, c *call) error {
				if *id == "" || *name == "" {
					return usagef("-id and -name are required")
				}
				body := httpadapter.CreateCompanyRequest{ID: *id, Name: *name, ThirdPartyVerificationEnabled: *thirdParty,
					AuthorizedThirdParties: authorized.orEmpty(), AttestCertificates: *attest}
				a, err := c.do(ctx, http.MethodPost, "/companies", nil, body, nil)
				return show(c, a, err, func(v *httpadapter.CompanyBody) { c.showCompany(v) })
			}
		}},
	{group: "companies", name: "list", summary: "List the companies by id, a page at a time",
		setup: func(fs *flag.FlagSet) action {
			after := fs.String("after", "", "start after this company `id` (the next page's, printed below a full page)")
			limit := fs.Int("limit", 0, "the most companies listed, 1 to 500 (default 50)")
			return func(ctx context.Context, c *call) error {
				q := url.Values{}
				setQuery(q, "after", *after)
				setInt(q, "limit", *limit)
				a, err := c.do(ctx, http.MethodGet, "/companies", q, nil, nil)
				return show(c, a, err, func(v *httpadapter.CompaniesResponse) {
					t := c.table("ID", "NAME", "THIRD-PARTY", "AUTHORIZED", "ATTEST", "CREATED")
					for _, co := range v.Companies {
						t.row(co.ID, co.Name, onOff(co.ThirdPartyVerificationEnabled), join(co.AuthorizedThirdParties),
							onOff(co.AttestCertificates), ts(co.CreatedAt))
					}
					t.flush()
					if v.NextAfter != nil {
						fmt.Fprintf(c.stdout, "next page: -after %s\n", *v.NextAfter)
					}
				})
			}
		}},
	{group: "companies", name: "show", company: true, summary: "Show a company and its balance",
		setup: func(fs *flag.FlagSet) action {
			return func(ctx context.Context, c *call) error {
				a, err := c.do(ctx, http.MethodGet, c.companyPath(), nil, nil, nil)
				if err != nil || c.json {
					return show(c, a, err, func(*httpadapter.CompanyBody) {})
				}
				// The balance is a second request, made for the text only:
				// -json stays the answer of one API call.
				b, err := c.do(ctx, http.MethodGet, c.companyPath("wallet"), nil, nil, nil)
				if err != nil {
					return err
				}
				var bal httpadapter.BalanceBody
				if err := json.Unmarshal(b.body, &bal); err != nil {
					return err
				}
				return show(c, a, nil, func(v *httpadapter.CompanyBody) {
					c.pairs("id", v.ID, "name", v.Name, "third-party verification", onOff(v.ThirdPartyVerificationEnabled),
						"authorized third parties", join(v.AuthorizedThirdParties), "attest certificates", onOff(v.AttestCertificates),
						"insights rules", rulesText(v.InsightsRules), "created", ts(v.CreatedAt), "balance", bal.Balance.String())
				})
			}
		}},
	{group: "companies", name: "attest", company: true,
		summary: "Show or set the attestation of every certificate a company issues (D49)",
		about: `Without -on or -off it shows the company. -on attests every certificate
it issues from then on, not those it issued before; -off stops that (a
certificate retained or asked for is still attested).`,
		setup: func(fs *flag.FlagSet) action {
			on := fs.Bool("on", false, "attest every certificate the company issues")
			off := fs.Bool("off", false, "attest only those retained or asked for")
			return func(ctx context.Context, c *call) error {
				if *on && *off {
					return usagef("-on and -off contradict each other")
				}
				if !*on && !*off {
					a, err := c.do(ctx, http.MethodGet, c.companyPath(), nil, nil, nil)
					return show(c, a, err, func(v *httpadapter.CompanyBody) { c.showCompany(v) })
				}
				body := httpadapter.AttestationSettingRequest{AttestCertificates: on}
				a, err := c.do(ctx, http.MethodPut, c.companyPath("attestation"), nil, body, nil)
				return show(c, a, err, func(v *httpadapter.CompanyBody) { c.showCompany(v) })
			}
		}},
	{group: "companies", name: "insights-rules", company: true,
		summary: "Show or set the thresholds of a company's bot verdict (D50)",
		about: `Without threshold flags it shows the company. With any, it replaces
every threshold: one not given is its default (package insights documents
them), a negative one turns its rule off. The insights job judges the
certificates issued from then on by them; a verdict given when asked uses
them too, never milder than the signed one.`,
		setup: func(fs *flag.FlagSet) action {
			set := ownFlagsGiven(fs)
			var r consent.InsightsRules
			fs.Float64Var(&r.MinSecondsOnPage, "min-seconds-on-page", 0, "a consent sooner after the page loaded is submitted_too_fast (default 1.5)")
			fs.Float64Var(&r.MaxKeysPerMinute, "max-keys-per-minute", 0, "typing faster is typing_too_fast (default 1500)")
			fs.IntVar(&r.MinKeystrokes, "min-keystrokes", 0, "the fewest key presses whose pace is judged (default 10; negative, like a negative -max-keys-per-minute, turns typing_too_fast off)")
			fs.IntVar(&r.SuspectsForBot, "suspects-for-bot", 0, "how many suspect reasons make the verdict bot (default 2)")
			fs.IntVar(&r.MaxPerHour, "max-per-hour", 0, "more certificates than this in the hour before, from one address, email or mobile, is high_velocity (default 5)")
			fs.IntVar(&r.MaxPerDay, "max-per-day", 0, "likewise in the day before (default 20)")
			return func(ctx context.Context, c *call) error {
				if !set() {
					a, err := c.do(ctx, http.MethodGet, c.companyPath(), nil, nil, nil)
					return show(c, a, err, func(v *httpadapter.CompanyBody) { c.showCompany(v) })
				}
				body := httpadapter.InsightsRulesRequest{InsightsRules: r}
				a, err := c.do(ctx, http.MethodPut, c.companyPath("insights-rules"), nil, body, nil)
				return show(c, a, err, func(v *httpadapter.CompanyBody) { c.showCompany(v) })
			}
		}},

	{group: "properties", name: "add", company: true, summary: "Add a property (a site or form) to a company",
		setup: func(fs *flag.FlagSet) action {
			id := fs.String("id", "", "the property's `id` (default: a random one; give one to make a retry safe)")
			name := fs.String("name", "", "its `name` (required)")
			var origins list
			fs.Var(&origins, "origin", "an allowed `origin` of capture, scheme://host[:port] (D32); repeat for more")
			return func(ctx context.Context, c *call) error {
				if *name == "" {
					return usagef("-name is required")
				}
				body := httpadapter.AddPropertyRequest{ID: *id, Name: *name, AllowedOrigins: origins.orEmpty()}
				a, err := c.do(ctx, http.MethodPost, c.companyPath("properties"), nil, body, nil)
				return show(c, a, err, func(v *httpadapter.PropertyBody) { c.showProperty(v) })
			}
		}},
	{group: "properties", name: "list", company: true, summary: "List a company's properties, oldest first",
		setup: func(fs *flag.FlagSet) action {
			return func(ctx context.Context, c *call) error {
				a, err := c.do(ctx, http.MethodGet, c.companyPath("properties"), nil, nil, nil)
				return show(c, a, err, func(v *httpadapter.PropertiesResponse) {
					t := c.table("ID", "NAME", "ALLOWED ORIGINS", "CREATED")
					for _, p := range v.Properties {
						t.row(p.ID, p.Name, join(p.AllowedOrigins), ts(p.CreatedAt))
					}
					t.flush()
				})
			}
		}},
	{group: "properties", name: "origins", company: true, args: []string{"PROPERTY_ID"},
		summary: "Show or replace a property's allowed origins (D32)",
		about: `Without -origin or -none it shows them. With -origin, the list given
replaces the property's; -none allows no origin at all.`,
		setup: func(fs *flag.FlagSet) action {
			var origins list
			fs.Var(&origins, "origin", "an allowed `origin`, scheme://host[:port]; repeat for more")
			none := fs.Bool("none", false, "allow no origin: capture is refused everywhere")
			return func(ctx context.Context, c *call) error {
				id := c.args[0]
				switch {
				case *none && len(origins) > 0:
					return usagef("-none and -origin contradict each other")
				case *none || len(origins) > 0:
					body := httpadapter.AllowedOriginsRequest{AllowedOrigins: origins.orEmpty()}
					a, err := c.do(ctx, http.MethodPut, c.companyPath("properties", id, "allowed-origins"), nil, body, nil)
					return show(c, a, err, func(v *httpadapter.PropertyBody) { c.showProperty(v) })
				}
				a, err := c.do(ctx, http.MethodGet, c.companyPath("properties"), nil, nil, nil)
				if err != nil {
					return err
				}
				var v struct {
					Properties []json.RawMessage `json:"properties"`
				}
				if err := json.Unmarshal(a.body, &v); err != nil {
					return err
				}
				for _, raw := range v.Properties {
					var p httpadapter.PropertyBody
					if err := json.Unmarshal(raw, &p); err != nil {
						return err
					}
					if p.ID == id {
						return show(c, &answer{body: raw}, nil, func(p *httpadapter.PropertyBody) { c.showProperty(p) })
					}
				}
				return &apiError{status: http.StatusNotFound, message: fmt.Sprintf("company %s has no property %s", c.company, id)}
			}
		}},

	{group: "tokens", name: "issue", company: true, summary: "Issue a token; its secret is shown once",
		about: `Only the secret's SHA-256 digest is kept (D6): copy the secret from this
answer, which is the only place it is ever shown. A token that was issued
but whose answer was lost cannot be recovered: revoke it and issue another.`,
		setup: func(fs *flag.FlagSet) action {
			var perms list
			fs.Var(&perms, "permission", "a `permission` granted beyond the Verification API; repeat for more")
			retention := fs.Bool("retention", false, "grant "+string(consent.PermissionRetention)+", the Retain API (same as -permission "+string(consent.PermissionRetention)+")")
			expires := fs.String("expires", "", "when the token expires: an RFC 3339 `time`, or a duration from now such as 720h or 90d (default never)")
			return func(ctx context.Context, c *call) error {
				if *retention {
					perms = append(perms, string(consent.PermissionRetention))
				}
				exp, err := c.expiry(*expires)
				if err != nil {
					return err
				}
				body := httpadapter.IssueTokenRequest{Permissions: perms.orEmpty(), ExpiresAt: exp}
				a, err := c.do(ctx, http.MethodPost, c.companyPath("tokens"), nil, body, nil)
				return show(c, a, err, func(v *httpadapter.TokenBody) {
					c.pairs("id", v.ID, "permissions", join(v.Permissions), "expires", ts(v.ExpiresAt), "created", ts(v.CreatedAt),
						"secret", v.Secret)
					fmt.Fprintln(c.stdout, "The secret is shown this once: only its digest is kept.")
				})
			}
		}},
	{group: "tokens", name: "list", company: true, summary: "List a company's tokens, without their secrets",
		setup: func(fs *flag.FlagSet) action {
			return func(ctx context.Context, c *call) error {
				a, err := c.do(ctx, http.MethodGet, c.companyPath("tokens"), nil, nil, nil)
				return show(c, a, err, func(v *httpadapter.TokensResponse) {
					t := c.table("ID", "ACTIVE", "PERMISSIONS", "EXPIRES", "REVOKED", "CREATED")
					for _, k := range v.Tokens {
						t.row(k.ID, yesNo(k.Active), join(k.Permissions), ts(k.ExpiresAt), ts(k.RevokedAt), ts(k.CreatedAt))
					}
					t.flush()
				})
			}
		}},
	{group: "tokens", name: "revoke", company: true, args: []string{"TOKEN_ID"}, summary: "Revoke a token",
		about: `It stops authenticating at once on the server that revokes it, and within
the token cache's lifetime (2 s by default) on other instances; with -dsn,
on every server of the database within that time. Revoking it again
answers the same.`,
		setup: func(fs *flag.FlagSet) action {
			return func(ctx context.Context, c *call) error {
				a, err := c.do(ctx, http.MethodPost, c.companyPath("tokens", c.args[0], "revoke"), nil, nil, nil)
				return show(c, a, err, func(*httpadapter.SuccessResponse) { fmt.Fprintf(c.stdout, "revoked %s\n", c.args[0]) })
			}
		}},

	{group: "wallet", name: "topup", company: true, summary: "Credit a company's wallet, once (D40)",
		about: `The top-up is sent with an Idempotency-Key: -key, or a new one printed
here. When the answer is lost (a timeout, a dropped connection), send the
same command again with that -key: it credits at most once and answers as
the first did, through either backend. The same key with another amount or
reference is refused (422).`,
		setup: func(fs *flag.FlagSet) action {
			amount := fs.String("amount", "", "`dollars` to credit, an exact decimal such as 25 or 12.50 (required)")
			reference := fs.String("reference", "", "the payment's `reference`, such as an invoice number")
			key := fs.String("key", "", "the Idempotency-Key: a retry's, or a `key` of your own (default: a new one)")
			return func(ctx context.Context, c *call) error {
				if *amount == "" {
					return usagef("-amount is required")
				}
				a, err := wallet.ParseAmount(*amount)
				if err != nil || a <= 0 {
					return usagef("-amount %q must be a positive number of dollars with at most 6 decimals", *amount)
				}
				k := *key
				if k == "" {
					k = consent.NewID("topup")
				}
				if err := consent.CheckIdempotencyKey(k); err != nil {
					return usagef("-key: %s", consent.ErrorMessage(err))
				}
				// Nothing is sent until the backend is set up: its errors
				// (no backend, no secret, no database) are told as they are.
				if err := c.connect(ctx); err != nil {
					return err
				}
				// The amount goes as decimal text: exact (D1).
				body := httpadapter.TopUpRequest{Amount: &a, Reference: *reference}
				ans, err := c.do(ctx, http.MethodPost, c.companyPath("wallet", "top-ups"), nil, body,
					http.Header{"Idempotency-Key": {k}})
				if err != nil {
					if ae, ok := errors.AsType[*apiError](err); !ok || ae.status >= 500 || ae.status == http.StatusConflict {
						return fmt.Errorf("%w; whether it was credited is unknown: run it again with -key %s, which credits at most once", err, k)
					}
					return err
				}
				replayed := ans.header.Get("Idempotent-Replayed") == "true"
				if c.json {
					fmt.Fprintf(c.stderr, "idempotency key: %s\n", k)
					if replayed {
						fmt.Fprintln(c.stderr, "replayed: this key's top-up was made before; nothing more was credited")
					}
				}
				return show(c, ans, nil, func(v *httpadapter.TopUpBody) {
					c.pairs("company", v.CompanyID, "credited", v.Amount.String(), "reference", dash(v.Reference),
						"balance", v.Balance.String(), "idempotency key", k)
					if replayed {
						fmt.Fprintln(c.stdout, "Replayed: this key's top-up was made before; nothing more was credited.")
					}
				})
			}
		}},
	{group: "wallet", name: "balance", company: true, summary: "Show a company's balance",
		setup: func(fs *flag.FlagSet) action {
			return func(ctx context.Context, c *call) error {
				a, err := c.do(ctx, http.MethodGet, c.companyPath("wallet"), nil, nil, nil)
				return show(c, a, err, func(v *httpadapter.BalanceBody) { c.pairs("company", v.CompanyID, "balance", v.Balance.String()) })
			}
		}},
	{group: "wallet", name: "ledger", company: true, summary: "List a company's ledger, newest first, a page at a time (D5)",
		setup: func(fs *flag.FlagSet) action {
			pf := pageFlags(fs, "entries")
			return func(ctx context.Context, c *call) error {
				q, err := pf.query()
				if err != nil {
					return err
				}
				a, err := c.do(ctx, http.MethodGet, c.companyPath("wallet", "ledger"), q, nil, nil)
				return show(c, a, err, func(v *httpadapter.LedgerResponse) {
					t := c.table("CREATED", "KIND", "AMOUNT", "REFERENCE", "ID")
					for _, e := range v.Entries {
						amount := "-" + e.Amount.String()
						if e.Credit {
							amount = "+" + e.Amount.String()
						}
						t.row(ts(e.CreatedAt), e.Kind, amount, dash(e.Reference), e.ID)
					}
					t.flush()
					c.nextPage(v.NextBefore)
				})
			}
		}},

	{group: "certificates", name: "find", company: true, summary: "Find a company's certificates: by email or mobile, by id, or by time",
		about: `With -email or -mobile: the certificates of that consumer, matched by the
digests of the normalized values (D17), newest first. With -id: that
certificate, as certificates show prints it. Otherwise: the certificates
created in -since … -until, newest first, a page at a time.`,
		setup: func(fs *flag.FlagSet) action {
			email := fs.String("email", "", "the consumer's `email`")
			mobile := fs.String("mobile", "", "the consumer's `mobile` number")
			id := fs.String("id", "", "a certificate `id`")
			pf := pageFlags(fs, "certificates")
			return func(ctx context.Context, c *call) error {
				byConsumer := *email != "" || *mobile != ""
				switch {
				case *id != "" && (byConsumer || pf.set()), byConsumer && pf.set():
					return usagef("search by -email/-mobile, by -id or by time (-since, -until, -before, -limit): one of them")
				case *id != "":
					return c.showCertificate(ctx, *id)
				case byConsumer:
					// In the body, not the URL, so that no access log keeps them.
					body := httpadapter.SearchRequest{Email: *email, Mobile: *mobile}
					a, err := c.do(ctx, http.MethodPost, c.companyPath("certificates", "search"), nil, body, nil)
					return show(c, a, err, func(v *httpadapter.CertificatesResponse) { c.showCertificates(v) })
				}
				q, err := pf.query()
				if err != nil {
					return err
				}
				a, err := c.do(ctx, http.MethodGet, c.companyPath("certificates"), q, nil, nil)
				return show(c, a, err, func(v *httpadapter.CertificatesResponse) { c.showCertificates(v) })
			}
		}},
	{group: "certificates", name: "show", company: true, args: []string{"CERTIFICATE_ID"},
		summary: "Show a certificate with its consents and signature",
		about: `Each consent's text is printed a line at a time. A carriage return within
a line, and any other character that would move the cursor or reorder the
line, is printed escaped (\r, \u202e); -json prints the text as stored.`,
		setup: func(fs *flag.FlagSet) action {
			return func(ctx context.Context, c *call) error { return c.showCertificate(ctx, c.args[0]) }
		}},

	{group: "sessions", name: "list", company: true, summary: "List a company's recorded sessions, newest first, a page at a time",
		setup: func(fs *flag.FlagSet) action {
			pf := pageFlags(fs, "sessions")
			return func(ctx context.Context, c *call) error {
				q, err := pf.query()
				if err != nil {
					return err
				}
				a, err := c.do(ctx, http.MethodGet, c.companyPath("sessions"), q, nil, nil)
				return show(c, a, err, func(v *httpadapter.SessionsResponse) {
					t := c.table("ID", "CREATED", "PROPERTY", "RETENTION", "VIDEO", "CHUNKS", "BYTES", "CERTIFICATE")
					for _, s := range v.Sessions {
						t.row(s.ID, ts(s.CreatedAt), s.PropertyID, s.RetentionStatus, s.VideoStatus, strconv.Itoa(s.EventChunks),
							strconv.FormatInt(s.EventBytes, 10), dash(s.CertificateID))
					}
					t.flush()
					c.nextPage(v.NextBefore)
				})
			}
		}},
	{group: "sessions", name: "show", company: true, args: []string{"SESSION_ID"}, summary: "Show a recorded session",
		setup: func(fs *flag.FlagSet) action {
			return func(ctx context.Context, c *call) error {
				a, err := c.do(ctx, http.MethodGet, c.companyPath("sessions", c.args[0]), nil, nil, nil)
				return show(c, a, err, func(s *httpadapter.OperatorSessionBody) {
					c.pairs("id", s.ID, "property", s.PropertyID, "url", dash(s.URL), "created", ts(s.CreatedAt),
						"expires", ts(s.ExpiresAt), "closed", ts(s.ClosedAt), "retention", s.RetentionStatus,
						"video", s.VideoStatus, "event chunks", strconv.Itoa(s.EventChunks), "event bytes", strconv.FormatInt(s.EventBytes, 10),
						"certificate", dash(s.CertificateID), "video bytes", strconv.FormatInt(s.VideoBytes, 10),
						"video sha256", dash(s.VideoSHA256), "video duration", (time.Duration(s.VideoDurationMS) * time.Millisecond).String())
				})
			}
		}},

	{group: "revocations", name: "list", company: true, summary: "List a company's revocations (D19), newest first, a page at a time",
		setup: func(fs *flag.FlagSet) action {
			pf := pageFlags(fs, "revocations")
			return func(ctx context.Context, c *call) error {
				q, err := pf.query()
				if err != nil {
					return err
				}
				a, err := c.do(ctx, http.MethodGet, c.companyPath("revocations"), q, nil, nil)
				return show(c, a, err, func(v *httpadapter.RevocationsResponse) {
					t := c.table("ID", "CREATED", "CERTIFICATES", "BY", "CLIENT IP", "REASON")
					for _, r := range v.Revocations {
						var by []string
						if r.CertificateID != "" {
							by = append(by, "certificate "+r.CertificateID)
						}
						if r.EmailGiven {
							by = append(by, "email")
						}
						if r.MobileGiven {
							by = append(by, "mobile")
						}
						t.row(r.ID, ts(r.CreatedAt), join(r.CertificateIDs), join(by), dash(r.ClientIP), dash(r.Reason))
					}
					t.flush()
					c.nextPage(v.NextBefore)
				})
			}
		}},

	{group: "profiles", name: "list", company: true, summary: "List a company's audit profiles (D51), by name",
		setup: func(fs *flag.FlagSet) action {
			return func(ctx context.Context, c *call) error {
				a, err := c.do(ctx, http.MethodGet, c.companyPath("profiles"), nil, nil, nil)
				return show(c, a, err, func(v *httpadapter.ProfilesResponse) {
					t := c.table("NAME", "RULES", "UPDATED")
					for _, p := range v.Profiles {
						t.row(p.Name, join(ruleNames(p.Rules)), ts(p.UpdatedAt))
					}
					t.flush()
				})
			}
		}},
	{group: "profiles", name: "show", company: true, args: []string{"NAME"}, summary: "Show an audit profile and its rules",
		setup: func(fs *flag.FlagSet) action {
			return func(ctx context.Context, c *call) error {
				a, err := c.do(ctx, http.MethodGet, c.companyPath("profiles", c.args[0]), nil, nil, nil)
				return show(c, a, err, func(v *httpadapter.ProfileBody) { c.showProfile(v) })
			}
		}},
	{group: "profiles", name: "put", company: true, args: []string{"NAME"},
		summary: "Create or replace an audit profile (D51)",
		about: `-rules is the profile's rules as a JSON object, or @ and the name of a
file that holds one, for example
  -rules '{"approved_language":{"texts":["I agree to be called by {{*}}."]},
           "legibility":{"min_font_size_px":12,"min_contrast":4.5,"on_miss":"warn"}}'
Rules: approved_language, brand_names, legibility, opt_in_methods,
attestation, lead_age, verdicts; a member this command does not know is
refused before anything is sent. The rules replace the profile's.`,
		setup: func(fs *flag.FlagSet) action {
			rules := fs.String("rules", "", "the rules: a JSON `object`, or @file (required)")
			return func(ctx context.Context, c *call) error {
				r, err := readRules(*rules)
				if err != nil {
					return err
				}
				body := httpadapter.PutProfileRequest{Rules: r}
				a, err := c.do(ctx, http.MethodPut, c.companyPath("profiles", c.args[0]), nil, body, nil)
				return show(c, a, err, func(v *httpadapter.ProfileBody) { c.showProfile(v) })
			}
		}},
	{group: "profiles", name: "delete", company: true, args: []string{"NAME"}, summary: "Delete an audit profile",
		setup: func(fs *flag.FlagSet) action {
			return func(ctx context.Context, c *call) error {
				a, err := c.do(ctx, http.MethodDelete, c.companyPath("profiles", c.args[0]), nil, nil, nil)
				return show(c, a, err, func(*httpadapter.SuccessResponse) { fmt.Fprintf(c.stdout, "deleted %s\n", c.args[0]) })
			}
		}},

	{group: "webhooks", name: "add", company: true, summary: "Add a webhook endpoint (D44); its secret is shown once",
		about: "Events: " + strings.Join(consent.EventTypes, ", ") + ".",
		setup: func(fs *flag.FlagSet) action {
			u := fs.String("endpoint", "", "the endpoint's `URL`, http:// or https:// (required)")
			var events list
			fs.Var(&events, "event", "an `event` type to deliver; repeat for more (required)")
			private := fs.Bool("webhook-allow-private", false, "with -dsn, let the endpoint have a loopback or private address, as a server started with -webhook-allow-private does (D44)")
			return func(ctx context.Context, c *call) error {
				if *u == "" || len(events) == 0 {
					return usagef("-endpoint and at least one -event are required")
				}
				c.allowPrivate = *private
				// The signing secret is made by the server, never passed on
				// a command line.
				body := httpadapter.AddWebhookRequest{URL: *u, Events: events.orEmpty()}
				a, err := c.do(ctx, http.MethodPost, c.companyPath("webhooks"), nil, body, nil)
				return show(c, a, err, func(v *httpadapter.WebhookBody) {
					c.pairs("id", v.ID, "url", v.URL, "events", join(v.Events), "created", ts(v.CreatedAt), "secret", v.Secret)
					fmt.Fprintln(c.stdout, "The secret is shown this once: keep it where the receiver verifies signatures.")
				})
			}
		}},
	{group: "webhooks", name: "list", company: true, summary: "List a company's webhook endpoints",
		setup: func(fs *flag.FlagSet) action {
			return func(ctx context.Context, c *call) error {
				a, err := c.do(ctx, http.MethodGet, c.companyPath("webhooks"), nil, nil, nil)
				return show(c, a, err, func(v *httpadapter.WebhooksResponse) {
					t := c.table("ID", "URL", "EVENTS", "DISABLED", "CREATED")
					for _, e := range v.Endpoints {
						t.row(e.ID, e.URL, join(e.Events), ts(e.DisabledAt), ts(e.CreatedAt))
					}
					t.flush()
				})
			}
		}},
	webhookChange("disable", http.MethodPost, "Stop deliveries to a webhook endpoint", "disabled"),
	webhookChange("enable", http.MethodPost, "Resume deliveries to a webhook endpoint", "enabled"),
	webhookChange("delete", http.MethodDelete, "Delete a webhook endpoint and its delivery log", "deleted"),
	{group: "webhooks", name: "deliveries", company: true, args: []string{"ENDPOINT_ID"},
		summary: "List a webhook endpoint's deliveries, newest first",
		setup: func(fs *flag.FlagSet) action {
			before := fs.Int64("before", 0, "deliveries with a lower `seq` (the next page's, printed below a full page)")
			limit := fs.Int("limit", 0, "the most deliveries listed, 1 to 1000 (default 50)")
			return func(ctx context.Context, c *call) error {
				q := url.Values{}
				setInt(q, "before", int(*before))
				setInt(q, "limit", *limit)
				a, err := c.do(ctx, http.MethodGet, c.companyPath("webhooks", c.args[0], "deliveries"), q, nil, nil)
				return show(c, a, err, func(v *httpadapter.DeliveriesResponse) {
					t := c.table("SEQ", "AT", "EVENT", "MESSAGE", "ATTEMPT", "STATUS", "MS", "ERROR")
					for _, d := range v.Deliveries {
						t.row(strconv.FormatInt(d.Seq, 10), ts(d.At), d.EventType, d.MessageID, strconv.Itoa(d.Attempt),
							strconv.Itoa(d.Status), strconv.FormatFloat(d.DurationMS, 'f', -1, 64), dash(d.Error))
					}
					t.flush()
					if v.NextBefore != nil {
						fmt.Fprintf(c.stdout, "next page: -before %d\n", *v.NextBefore)
					}
				})
			}
		}},

	{group: "audit", name: "tail", company: true, summary: "Show the newest entries of a company's audit log (D42); -f follows it",
		about: `Entries are printed oldest first, the newest last. With -f it keeps
polling for new entries until interrupted. With -json each entry is one
JSON object on a line of its own, as the operator API answers it.`,
		setup: func(fs *flag.FlagSet) action {
			n := fs.Int("n", 20, "how many of the newest entries to show first, 0 to 1000")
			follow := fs.Bool("f", false, "follow: poll for new entries until interrupted")
			interval := fs.Duration("interval", 2*time.Second, "with -f, how often to poll")
			action := fs.String("action", "", "keep entries whose action starts with this `prefix`, such as wallet. or token.revoke")
			actor := fs.String("actor", "", "keep entries of this `actor`: a token id, operator, consumer, system")
			target := fs.String("target", "", "keep entries about this `id`")
			return func(ctx context.Context, c *call) error {
				if *n < 0 || *n > consent.MaxAuditPage {
					return usagef("-n must be 0 to %d", consent.MaxAuditPage)
				}
				if *interval <= 0 {
					return usagef("-interval must be positive")
				}
				filter := url.Values{}
				setQuery(filter, "action", *action)
				setQuery(filter, "actor", *actor)
				setQuery(filter, "target", *target)
				return c.tail(ctx, *n, *follow, *interval, filter)
			}
		}},
	{group: "audit", name: "verify", company: true, summary: "Check a company's audit chain (D42), a bounded run at a time",
		about: `Each run checks at most -limit entries, from -from on: that each follows
the one before, links to its hash and matches its own, and, at the end of
the chain, that the last is the head the store keeps apart. A run that
stops at its limit prints the -from to resume with; a run from N re-checks
entry N-1 too. With -all it goes on, run after run, to the end of the chain
or its first broken entry, telling its progress on standard error.

The check is a read: it is not audited. -json prints each run's answer as
the operator API sent it, one per line. Exit status: 0 when every entry
checked is intact, 1 when the chain is broken (the first broken entry is
named) or the check failed, 2 a usage error.`,
		setup: func(fs *flag.FlagSet) action {
			from := fs.Int64("from", 0, "the first `entry` to check: the -from printed by a run that stopped at its limit (default 1)")
			limit := fs.Int("limit", 0, fmt.Sprintf("the most `entries` one run checks, 1 to %d (default %d)",
				audit.MaxCheck, httpadapter.DefaultAuditVerify))
			all := fs.Bool("all", false, "run after run to the end of the chain, or its first broken entry")
			return func(ctx context.Context, c *call) error {
				if *from < 0 {
					return usagef("-from must be an entry's number, 1 or more")
				}
				if *limit < 0 || *limit > audit.MaxCheck {
					return usagef("-limit must be 1 to %d", audit.MaxCheck)
				}
				return c.verifyAudit(ctx, *from, *limit, *all)
			}
		}},
}

// ownFlagsGiven is called by a command's setup before it defines its
// flags: the function it returns reports whether the command line gave any
// of them. fs.NFlag cannot tell: it counts the flags every command takes
// too (-company, -url, -json…), given on nearly every command line.
func ownFlagsGiven(fs *flag.FlagSet) func() bool {
	common := map[string]bool{}
	fs.VisitAll(func(f *flag.Flag) { common[f.Name] = true })
	return func() bool {
		given := false
		fs.Visit(func(f *flag.Flag) { given = given || !common[f.Name] })
		return given
	}
}

// readRules reads a profile's rules from -rules: JSON, or @file. A member
// that is not a rule's is refused here, where the server would ignore it.
func readRules(v string) (profile.Rules, error) {
	if v == "" {
		return profile.Rules{}, usagef("-rules is required")
	}
	text := []byte(v)
	if name, ok := strings.CutPrefix(v, "@"); ok {
		b, err := os.ReadFile(name)
		if err != nil {
			return profile.Rules{}, err
		}
		text = b
	}
	r, err := profile.ParseRules(text)
	if err != nil {
		return r, usagef("-rules: %v", err)
	}
	return r, nil
}

// ruleNames lists the rules a profile holds, by their JSON names.
func ruleNames(r profile.Rules) []string {
	var m map[string]json.RawMessage
	b, _ := json.Marshal(r)
	_ = json.Unmarshal(b, &m)
	names := slices.Sorted(maps.Keys(m))
	return names
}

// webhookChange is a command that acts on one webhook endpoint.
func webhookChange(name, method, summary, done string) *command {
	return &command{group: "webhooks", name: name, company: true, args: []string{"ENDPOINT_ID"}, summary: summary,
		setup: func(fs *flag.FlagSet) action {
			return func(ctx context.Context, c *call) error {
				path := c.companyPath("webhooks", c.args[0])
				if method == http.MethodPost {
					path += "/" + name
				}
				a, err := c.do(ctx, method, path, nil, nil, nil)
				return show(c, a, err, func(*httpadapter.SuccessResponse) { fmt.Fprintf(c.stdout, "%s %s\n", done, c.args[0]) })
			}
		}}
}

// tail prints the newest n entries of the audit log and, when follow is
// set, every entry added after them until ctx ends.
func (c *call) tail(ctx context.Context, n int, follow bool, interval time.Duration, filter url.Values) error {
	var last int64 // the highest seq printed
	if n > 0 {
		q := clone(filter)
		q.Set("order", "newest")
		setInt(q, "limit", n)
		page, err := c.auditPage(ctx, q)
		if err != nil {
			return err
		}
		slices.Reverse(page) // oldest first, as tail(1) prints
		c.printEntries(page)
		if len(page) > 0 {
			last = page[len(page)-1].Seq
		}
	} else if follow {
		// Start at the newest entry without printing it.
		q := clone(filter)
		q.Set("order", "newest")
		q.Set("limit", "1")
		page, err := c.auditPage(ctx, q)
		if err != nil {
			return err
		}
		if len(page) > 0 {
			last = page[0].Seq
		}
	}
	for follow {
		q := clone(filter)
		setInt(q, "after", int(last))
		setInt(q, "limit", consent.MaxAuditPage)
		page, err := c.auditPage(ctx, q)
		if ctx.Err() != nil {
			return nil // interrupted: the end of following, not a failure
		}
		if err != nil {
			return err
		}
		c.printEntries(page)
		if len(page) > 0 {
			last = page[len(page)-1].Seq
		}
		if len(page) == consent.MaxAuditPage {
			continue // more are waiting
		}
		select {
		case <-ctx.Done():
			return nil
		case <-time.After(interval):
		}
	}
	return nil
}

// verifyAudit checks the company's audit chain from entry from, a run of
// at most limit entries (0: the operator API's default); with all, run
// after run until the end of the chain or its first broken entry. It
// prints what the runs found together, or with -json each run's answer, and
// returns an *audit.ChainError when the chain is broken.
func (c *call) verifyAudit(ctx context.Context, from int64, limit int, all bool) error {
	var sum httpadapter.AuditVerifyResponse // the runs so far, together
	for run := 0; ; run++ {
		if run > 0 && ctx.Err() != nil {
			return fmt.Errorf("interrupted after entry %d; resume with -from %d", sum.Last, from)
		}
		q := url.Values{}
		if from > 0 {
			q.Set("from", strconv.FormatInt(from, 10))
		}
		setInt(q, "limit", limit)
		a, err := c.do(ctx, http.MethodGet, c.companyPath("audit", "verify"), q, nil, nil)
		var v httpadapter.AuditVerifyResponse
		if err == nil {
			if err = json.Unmarshal(a.body, &v); err != nil {
				err = fmt.Errorf("an answer this command cannot read (is the server another version?): %w", err)
			}
		}
		if err != nil {
			if run > 0 {
				return fmt.Errorf("%w; entries %d to %d were intact: resume with -from %d", err, sum.From, sum.Last, from)
			}
			return err
		}
		if c.json {
			if err := c.writeAnswer(a); err != nil {
				return err
			}
		}
		if run == 0 {
			sum = v
		} else {
			sum.Checked += v.Checked
			sum.Last, sum.Head, sum.Next, sum.Intact, sum.Broken = v.Last, v.Head, v.Next, v.Intact, v.Broken
		}
		if !all || !v.Intact || v.Next == 0 {
			break
		}
		if !c.json {
			fmt.Fprintf(c.stderr, "checked entries %d to %d of %d: intact; going on from %d\n", v.From, v.Last, v.Head, v.Next)
		}
		from = v.Next
	}
	if !c.json {
		entries := "none"
		if sum.Last > 0 {
			entries = fmt.Sprintf("none after entry %d", sum.Last)
		}
		if sum.Checked > 0 {
			entries = fmt.Sprintf("%d to %d", sum.From, sum.Last)
		}
		intact := "yes, to the end of the chain"
		switch {
		case !sum.Intact:
			intact = "no"
		case sum.Next != 0:
			intact = fmt.Sprintf("yes, up to entry %d", sum.Last)
		}
		kv := []string{"company", sum.CompanyID, "entries", entries, "checked", strconv.FormatInt(sum.Checked, 10),
			"head", strconv.FormatInt(sum.Head, 10), "intact", intact}
		if sum.Broken != nil {
			kv = append(kv, "broken", fmt.Sprintf("entry %d: %s", sum.Broken.Seq, sum.Broken.Reason))
		}
		c.pairs(kv...)
		if sum.Intact && sum.Next != 0 {
			fmt.Fprintf(c.stdout, "next run: -from %d\n", sum.Next)
		}
	}
	if sum.Broken != nil {
		return &audit.ChainError{CompanyID: sum.CompanyID, Seq: sum.Broken.Seq, Reason: sum.Broken.Reason}
	}
	if !sum.Intact {
		return fmt.Errorf("the audit log of %s is not intact, and the answer says nowhere broken", sum.CompanyID)
	}
	return nil
}

// auditEntry is an entry of an audit page, with its JSON as answered.
type auditEntry struct {
	httpadapter.AuditEntryBody
	raw json.RawMessage
}

func (c *call) auditPage(ctx context.Context, q url.Values) ([]auditEntry, error) {
	a, err := c.do(ctx, http.MethodGet, c.companyPath("audit"), q, nil, nil)
	if err != nil {
		return nil, err
	}
	var v struct {
		Entries []json.RawMessage `json:"entries"`
	}
	if err := json.Unmarshal(a.body, &v); err != nil {
		return nil, err
	}
	out := make([]auditEntry, len(v.Entries))
	for i, raw := range v.Entries {
		out[i].raw = raw
		if err := json.Unmarshal(raw, &out[i].AuditEntryBody); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// printEntries prints a batch of entries, in columns of their own.
func (c *call) printEntries(entries []auditEntry) {
	if c.json {
		for _, e := range entries {
			fmt.Fprintf(c.stdout, "%s\n", e.raw)
		}
		return
	}
	t := &table{tw: tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)}
	for _, e := range entries {
		detail := e.Detail
		if detail == "{}" || detail == "null" {
			detail = ""
		}
		t.row(strconv.FormatInt(e.Seq, 10), ts(e.At), e.Actor, e.Action, dash(e.Target), e.Outcome, detail)
	}
	t.flush()
}

// showCertificate prints the certificate id of the call's company.
func (c *call) showCertificate(ctx context.Context, id string) error {
	a, err := c.do(ctx, http.MethodGet, c.companyPath("certificates", id), nil, nil, nil)
	return show(c, a, err, func(v *httpadapter.CertificateBody) {
		c.pairs("id", v.ID, "property", v.PropertyID, "session", v.SessionID, "origin", v.Origin,
			"created", ts(v.CreatedAt), "expires", ts(v.ExpiresAt), "revoked", ts(v.RevokedAt), "retention", v.RetentionStatus,
			"email given", yesNo(v.EmailGiven), "mobile given", yesNo(v.MobileGiven), "client ip", dash(v.ClientIP),
			"user agent", dash(v.UserAgent), "recording sha256", dash(v.RecordingSHA256), "signed", yesNo(v.Signed),
			"key id", dash(v.KeyID))
		for i, r := range v.Consents {
			fmt.Fprintf(c.stdout, "\nconsent %d  opted in %s  types %s\n", i+1, ts(r.OptInAt), join(r.Types))
			for _, line := range consentLines(r.Text) {
				fmt.Fprintf(c.stdout, "    %s\n", line)
			}
		}
	})
}

// consentLines splits a consent's text into the lines it prints, at each
// line feed (a carriage return before it included). A character that
// would move the cursor or reorder what the terminal shows — a carriage
// return elsewhere, another control character, a bidirectional control, a
// line or paragraph separator — is printed escaped, as \r or \u202e, so
// that the operator reads the words the certificate holds: a bare \r
// would have the rest of its line overwrite the start.
func consentLines(text string) []string {
	lines := strings.Split(text, "\n")
	for i, line := range lines {
		if i < len(lines)-1 {
			line = strings.TrimSuffix(line, "\r")
		}
		if strings.IndexFunc(line, hidden) < 0 {
			lines[i] = line
			continue
		}
		var b strings.Builder
		for _, r := range line {
			switch {
			case r == '\r':
				b.WriteString(`\r`)
			case hidden(r):
				fmt.Fprintf(&b, `\u%04x`, r)
			default:
				b.WriteRune(r)
			}
		}
		lines[i] = b.String()
	}
	return lines
}

// hidden reports whether r, printed as it is, would not show as itself.
func hidden(r rune) bool {
	return r != '\t' && unicode.IsControl(r) || unicode.Is(unicode.Bidi_Control, r) || unicode.In(r, unicode.Zl, unicode.Zp)
}

func (c *call) showCertificates(v *httpadapter.CertificatesResponse) {
	t := c.table("ID", "CREATED", "PROPERTY", "SESSION", "RETENTION", "REVOKED", "EMAIL", "MOBILE", "ORIGIN")
	for _, x := range v.Certificates {
		t.row(x.ID, ts(x.CreatedAt), x.PropertyID, x.SessionID, x.RetentionStatus, ts(x.RevokedAt),
			given(x.EmailGiven), given(x.MobileGiven), x.Origin)
	}
	t.flush()
	if v.Truncated {
		fmt.Fprintf(c.stdout, "only the newest %d are shown: the consumer may have older ones, which one search does not answer\n", len(v.Certificates))
	}
	c.nextPage(v.NextBefore)
}

func (c *call) showCompany(v *httpadapter.CompanyBody) {
	c.pairs("id", v.ID, "name", v.Name, "third-party verification", onOff(v.ThirdPartyVerificationEnabled),
		"authorized third parties", join(v.AuthorizedThirdParties), "attest certificates", onOff(v.AttestCertificates),
		"insights rules", rulesText(v.InsightsRules), "created", ts(v.CreatedAt))
}

// rulesText lists the thresholds a company set, or says it keeps the
// defaults.
func rulesText(r consent.InsightsRules) string {
	b, err := json.Marshal(r)
	if err != nil || string(b) == "{}" {
		return "the defaults"
	}
	return string(b)
}

func (c *call) showProperty(v *httpadapter.PropertyBody) {
	c.pairs("id", v.ID, "name", v.Name, "allowed origins", join(v.AllowedOrigins), "created", ts(v.CreatedAt))
}

// nextPage prints how to ask for the next page of a keyset-paged list.
func (c *call) nextPage(next *string) {
	if next != nil {
		fmt.Fprintf(c.stdout, "next page: -before %s\n", *next)
	}
}

// expiry reads -expires: "" (never), an RFC 3339 time, or a duration
// from now (Go's, or whole days such as 90d).
func (c *call) expiry(s string) (string, error) {
	if s == "" {
		return "", nil
	}
	if t, err := time.Parse(time.RFC3339Nano, s); err == nil {
		return t.UTC().Format(time.RFC3339Nano), nil
	}
	now := time.Now
	if c.now != nil {
		now = c.now
	}
	bad := usagef("-expires %q must be an RFC 3339 time such as 2027-01-31T00:00:00Z, or a positive duration such as 720h or 90d (at most %d days)", s, maxExpiryDays)
	if days, ok := strings.CutSuffix(s, "d"); ok {
		// Days of 24 hours, in UTC; n*24h would overflow a time.Duration
		// past 106,751 days.
		n, err := strconv.Atoi(days)
		if err != nil || n <= 0 || n > maxExpiryDays {
			return "", bad
		}
		return now().UTC().AddDate(0, 0, n).Format(time.RFC3339), nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d <= 0 {
		return "", bad
	}
	return now().Add(d).UTC().Format(time.RFC3339), nil
}

// maxExpiryDays bounds -expires Nd: some 2,700 years, short of the year
// 9999 that the stores keep times to.
const maxExpiryDays = 1_000_000

// pageFlagSet are the flags of a list read by consent.Page: newest first,
// cut by keyset.
type pageFlagSet struct {
	fs                   *flag.FlagSet
	since, until, before string
	limit                int
}

func pageFlags(fs *flag.FlagSet, what string) *pageFlagSet {
	p := &pageFlagSet{fs: fs}
	fs.StringVar(&p.since, "since", "", what+" created at or after this RFC 3339 `time`")
	fs.StringVar(&p.until, "until", "", what+" created before this RFC 3339 `time`")
	fs.StringVar(&p.before, "before", "", "the next page: the `cursor` printed below a full page")
	fs.IntVar(&p.limit, "limit", 0, "the most "+what+" listed, 1 to 500 (default 50)")
	return p
}

// set reports whether any page flag was given.
func (p *pageFlagSet) set() bool {
	return p.since != "" || p.until != "" || p.before != "" || p.limit != 0
}

func (p *pageFlagSet) query() (url.Values, error) {
	q := url.Values{}
	for _, f := range []struct{ name, v string }{{"since", p.since}, {"until", p.until}} {
		if f.v == "" {
			continue
		}
		t, err := time.Parse(time.RFC3339Nano, f.v)
		if err != nil {
			return nil, usagef("-%s %q must be an RFC 3339 time such as 2027-01-31T00:00:00Z", f.name, f.v)
		}
		q.Set(f.name, t.UTC().Format(time.RFC3339Nano))
	}
	setQuery(q, "before", p.before)
	setInt(q, "limit", p.limit)
	return q, nil
}

func setQuery(q url.Values, name, v string) {
	if v != "" {
		q.Set(name, v)
	}
}

func setInt(q url.Values, name string, v int) {
	if v != 0 {
		q.Set(name, strconv.Itoa(v))
	}
}

func clone(q url.Values) url.Values {
	out := url.Values{}
	for k, v := range q {
		out[k] = append([]string(nil), v...)
	}
	return out
}

// list is a flag that may be repeated; a value may also hold several,
// separated by commas.
type list []string

func (l *list) String() string { return strings.Join(*l, ",") }

func (l *list) Set(s string) error {
	for _, v := range strings.Split(s, ",") {
		if v = strings.TrimSpace(v); v != "" {
			*l = append(*l, v)
		}
	}
	return nil
}

// orEmpty is l, or an empty list for none: a JSON array, never null.
func (l list) orEmpty() []string {
	if l == nil {
		return []string{}
	}
	return l
}

// showProfile prints a profile: its name and times, then its rules as
// indented JSON, each rule's miss included.
func (c *call) showProfile(v *httpadapter.ProfileBody) {
	c.pairs("name", v.Name, "created", ts(v.CreatedAt), "updated", ts(v.UpdatedAt))
	b, err := json.MarshalIndent(v.Rules, "", "  ")
	if err == nil {
		fmt.Fprintf(c.stdout, "rules\n%s\n", b)
	}
}

// recordingStore is the blob store of recordings move: the directory, or
// the S3 bucket.
func recordingStore(ctx context.Context, dir string, s3 s3video.Config, getenv func(string) string) (blob.Store, error) {
	switch {
	case (dir == "") == (s3.Bucket == ""):
		return nil, usagef("give the recordings store: -dir or -s3-bucket, one of them")
	case dir != "":
		if _, err := os.Stat(dir); err != nil {
			return nil, fmt.Errorf("-dir: %w", err)
		}
		return blob.NewDir(dir)
	}
	s3.AccessKeyID, s3.SecretAccessKey = getenv("AWS_ACCESS_KEY_ID"), getenv("AWS_SECRET_ACCESS_KEY")
	s3.PathStyle = s3.Endpoint != ""
	client, err := s3video.NewClient(s3)
	if err != nil {
		return nil, err
	}
	return s3blob.New(ctx, s3blob.Config{Client: client, Bucket: s3.Bucket})
}
