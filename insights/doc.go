// Package insights tells a buyer how a consent's form was filled and
// whether a person filled it (D50): behaviour signals computed from the
// session's recording, and a bot verdict that lists its reasons.
//
// [Extract] reads a recording — the JSON array of rrweb events the service
// keeps, with the snippet's own "consentkit/signals" event (docs/capture.md)
// — in one streaming pass, and returns its [Signals]: counts and categories,
// never content. [Rules.Judge] turns them, with the [Facts] the service
// knows beside the recording, into a [Judgement]: [Human],
// [Suspect] or [Bot], with every [Reason] that led there.
//
// # Input methods
//
// Each text field (an input of type text, email, tel, number, search, url
// or password, or a textarea) that holds a value at consent is keyed by its
// name, else its id, else "#" and its id in the recording, as the snippet
// keys its counts — by the name it has when pressed, so a mutation that
// renames it keys it anew; fields sharing a key are one. A field a mutation
// removed from the page, and did not add back, holds none; one removed
// with an ancestor (its form, or a step of the form, removed whole) still
// reads as holding its last value, since the recording lists only the
// removed subtree's root and telling its fields would mean keeping the
// page's whole tree. A later full snapshot rebuilds the page: a field it
// does not hold holds no value, unless a mutation added it since. Its
// [Method] is, in this order:
//
//   - [Prefilled]: its value was in the page as loaded (the value in the
//     recording's first full snapshot, or in a same-origin frame's page as
//     it was attached), nothing changed it (a mutation that moves it, or
//     its form, with the same value changes nothing), and the
//     snippet counted no key press or paste in it. A value the browser
//     put there before the recorder started reads prefilled too; one the
//     person typed or pasted then (the snippet counts from its own start,
//     the recorder starts once rrweb.js has loaded) reads typed or pasted.
//   - [Pasted]: the person pasted into it (a trusted paste event).
//   - [Typed]: the person pressed keys in it (trusted key presses).
//   - [Autofilled]: a change the browser marks as the person's (an input
//     event with userTriggered true) but no key press and no paste. This is
//     what the browser's autofill does; dictation and dropped text read
//     autofilled too.
//   - [Scripted]: every change was made by a script: input events no person
//     triggered (userTriggered false), a value attribute set, or an input
//     added with its value. A password manager that fills fields by script
//     reads scripted; so does a page's own script that copies one field to
//     another.
//   - [Unknown]: the recording does not say — it was made before the
//     snippet recorded userTriggered, or it holds no signals event to tell
//     typing from autofill.
//
// Keystrokes are the snippet's counts of key presses in the field. A
// script that edits a field after the person did (an input mask) does not
// change its method: the person's acts decide.
//
// The pace of typing (Signals.KeysPerMinute) counts only what the
// recording saw: in each field, no more key presses than recorded changes
// that were not a script's, over the time from the first of them to the
// last (a framework's echo of the value a millisecond after a key is no
// press); a field whose every change was a script's (a mask that takes
// the keys itself) is timed by those. Presses made
// before the recorder started count among the keystrokes (MinKeystrokes
// judges them all) but not in the pace, whose time the recording does not
// span.
//
// # Reasons
//
// Each [Reason] alone makes the verdict [Bot] or [Suspect] ([Reason.Verdict]);
// [Rules] SuspectsForBot suspicions together make it Bot; none makes it
// [Human]. The recording's own reasons are judged only when it has events.
//
//	no_recording              bot      the recording holds no events
//	no_snapshot               bot      it holds no full snapshot: no page was recorded
//	not_a_browser             bot      the user agent is empty, not a browser's (it
//	                                   does not start "Mozilla/") or a crawler's
//	headless_user_agent       bot      the user agent is a headless browser's
//	webdriver                 bot      navigator.webdriver was true at submit
//	submitted_too_fast        bot      under MinSecondsOnPage from the page's load
//	                                   to consent (Signals.SecondsOnPage)
//	typing_too_fast           bot      at least MinKeystrokes key presses, at more
//	                                   than MaxKeysPerMinute
//	no_signals                suspect  the recording holds no signals event (made by
//	                                   an older snippet, cut, or not by the snippet)
//	no_pointer_or_touch       suspect  no pointer move and no touch in the whole
//	                                   session (a keyboard user's has none either)
//	scripted_input            suspect  a field's method is scripted
//	consent_after_revocation  suspect  the consumer had opted out of the company
//	                                   before this consent (RevokedBefore)
//	attestation_mismatch      suspect  the attestation's replay measured otherwise
//	                                   than the browser claimed (D49)
//	high_velocity             suspect  more than MaxPerHour of the company's
//	                                   certificates in the hour before, or more than
//	                                   MaxPerDay in the day before, from the same
//	                                   address, the same email or the same mobile
//
// The insights job judges the recording, the user agent and
// consent_after_revocation when the certificate is issued, and signs that
// verdict. attestation_mismatch and high_velocity depend on what happens
// later, so they are found when asked ([Ask]): an answer's verdict is the
// signed one with those reasons added ([Rules.Add]), never milder, and
// says which reasons it added.
//
// The thresholds are a company's own (consent.InsightsRules, set with
// Service.SetInsightsRules, the operator API, the command line or the
// dashboard); [Rules] documents each and its default.
//
// A session driven by a script that masks one flag — navigator.webdriver,
// or the user agent — is still caught by what it did: fields set by script,
// no pointer, keys faster than hands, a form sent before a person could
// read it. A browser driven with human pace and pointer moves cannot be
// told from a person by these signals; nor can a recording forged whole
// with care. The recording's times are the browser's clock; they are not
// yet held to the server's own (the session begins when the snippet first
// reaches the service, which a failing network delays, so the two spans
// differ in honest sessions too). The verdict is the recording's word,
// judged by fixed rules.
//
// # Bounds
//
// Extract decodes the recording token by token with encoding/json's
// Decoder, keeping one event's facts at a time, so its memory does not
// grow with the number of events: it is bounded by [Limits] (bytes read,
// nesting depth, fields tracked) and by the longest single JSON string. A
// recording past a limit is [ErrTooLarge]; one that is not a JSON array of
// rrweb events is [ErrMalformed].
//
// # The user agent
//
// The consent request's user agent is parsed with
// github.com/mileusna/useragent: it has no dependencies, it scans the
// agent's tokens rather than trying a list of regular expressions (a parse
// takes about 2 µs and 14 small allocations here), it names headless
// Chrome and the common crawlers, and it gives the device class.
// ua-parser's uap-go covers more agents but compiles hundreds of regular
// expressions from a YAML file; the verdict needs the browser, the OS, the
// device class and "headless", which this one gives.
package insights
