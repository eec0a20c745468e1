package sqlrow_test

import (
	"math"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/store/internal/sqlrow"
)

// A records column: whatever DecodeRecords accepts encodes back to a
// column that decodes to the same records, with UTC times; and records a
// store may write (valid text, microsecond times, as consent.UTC makes
// them) decode from their encoding exactly as they were.
//
// go test -run '^$' -fuzz FuzzRecordsColumn ./store/internal/sqlrow
func FuzzRecordsColumn(f *testing.F) {
	for _, s := range []struct {
		column, text, typ string
		us                int64
	}{
		{`[{"text":"I agree","types":["tcpa","marketing"],"opt_in_at_us":1795301391553000}]`, "I agree", "tcpa", 1795301391553000},
		{`[{"text":"a"},{"text":"b","types":[],"opt_in_at_us":-62135596800000000}]`, "J'accepte 😀\t\r\n", "", -62135596800000000},
		{`[]`, "", "", 0}, {`null`, "x", "y", 1}, {`[{"TEXT":"x","opt_in_at_us":1.5}]`, "\u2028", "types", math.MaxInt64},
		{`[{"text":1}]`, "a", "b", math.MinInt64}, {`{}`, "", "", -1}, {``, "", "", 0}, {`[{"opt_in_at_us":9223372036854775807}]`, "a", "b", 0},
	} {
		f.Add([]byte(s.column), s.text, s.typ, s.us)
	}
	f.Fuzz(func(t *testing.T, column []byte, text, typ string, us int64) {
		if rs, err := sqlrow.DecodeRecords(column); err == nil {
			for i, r := range rs {
				if r.OptInAt.Location() != time.UTC {
					t.Fatalf("record %d decoded with a time in %s", i, r.OptInAt.Location())
				}
			}
			enc, err := sqlrow.EncodeRecords(rs)
			if err != nil {
				t.Fatalf("encode decoded records: %v", err)
			}
			again, err := sqlrow.DecodeRecords(enc)
			if err != nil {
				t.Fatalf("decode %s: %v", enc, err)
			}
			if d := cmp.Diff(rs, again, cmpopts.EquateEmpty()); d != "" {
				t.Fatalf("records differ after encoding again (-decoded +again):\n%s", d)
			}
		}

		// Records a store may write: valid text, times of microseconds
		// within the range of time.Time's Unix conversions.
		if !consent.ValidText(text) || !consent.ValidText(typ) {
			return
		}
		at := consent.UTC(time.UnixMicro(us))
		rs := []consent.Record{{Text: text, Types: []string{typ}, OptInAt: at}, {Text: typ, OptInAt: at}}
		enc, err := sqlrow.EncodeRecords(rs)
		if err != nil {
			t.Fatalf("encode %+v: %v", rs, err)
		}
		back, err := sqlrow.DecodeRecords(enc)
		if err != nil {
			t.Fatalf("decode %s: %v", enc, err)
		}
		if d := cmp.Diff(rs, back, cmpopts.EquateEmpty()); d != "" {
			t.Fatalf("records read back otherwise (-written +read):\n%s", d)
		}
	})
}

// A visibility column: whatever DecodeVisibility accepts encodes back to
// the same facts; facts a store may write (consent's limits: a font size of
// 0 to 10,000 px, a contrast ratio of 1 to 21, valid colour text) read back
// exactly, and "" is none both ways.
//
// go test -run '^$' -fuzz FuzzVisibilityColumn ./store/internal/sqlrow
func FuzzVisibilityColumn(f *testing.F) {
	f.Add(`{"in_viewport":true,"visible":true,"font_size_px":16,"text_color":"rgb(0, 0, 0)","background_color":"rgb(255, 255, 255)","contrast_ratio":21}`,
		true, 16.0, "rgb(0, 0, 0)", 21.0)
	f.Add(``, false, 0.0, "", 1.0)
	f.Add(`null`, false, 1e-320, "\u00e9", 1.0000000000000002)
	f.Add(`{"font_size_px":"16"}`, true, 9999.999999999998, "rgba(0, 0, 0, 0.5)", 20.999999999999996)
	f.Add(`{"contrast_ratio":1e400}`, true, 5e-324, "", 4.5)
	f.Add(`[]`, false, 12.5, "\t", 3.0)
	f.Fuzz(func(t *testing.T, column string, visible bool, fontSize float64, colour string, contrast float64) {
		if v, err := sqlrow.DecodeVisibility(column); err == nil && v != nil {
			enc, err := sqlrow.EncodeVisibility(v)
			if err != nil {
				t.Fatalf("encode decoded %+v: %v", v, err)
			}
			again, err := sqlrow.DecodeVisibility(enc)
			if err != nil || !cmp.Equal(v, again) {
				t.Fatalf("visibility %+v encoded as %s decodes as %+v, %v", v, enc, again, err)
			}
		}
		if s, err := sqlrow.EncodeVisibility(nil); s != "" || err != nil {
			t.Fatalf("no visibility encodes as %q, %v", s, err)
		}
		if !(fontSize >= 0 && fontSize <= 10_000 && contrast >= 1 && contrast <= 21) || !consent.ValidText(colour) {
			return
		}
		v := &consent.Visibility{InViewport: visible, Visible: !visible, FontSizePx: fontSize, TextColor: colour, BackgroundColor: colour + ";",
			ContrastRatio: contrast, HiddenText: []string{colour}}
		enc, err := sqlrow.EncodeVisibility(v)
		if err != nil || enc == "" {
			t.Fatalf("encode %+v: %q, %v", v, enc, err)
		}
		back, err := sqlrow.DecodeVisibility(enc)
		if err != nil || !cmp.Equal(v, back) {
			t.Fatalf("visibility %+v encoded as %s reads back as %+v, %v", v, enc, back, err)
		}
	})
}

// A digest column holds NULL or 32 bytes; a time column NULL or
// microseconds: both read back what was written.
//
// go test -run '^$' -fuzz FuzzScalarColumns ./store/internal/sqlrow
func FuzzScalarColumns(f *testing.F) {
	f.Add([]byte(nil), int64(0))
	f.Add(make([]byte, 32), int64(1795301391553000))
	f.Add([]byte("short"), int64(-62135596800000000))
	f.Add(make([]byte, 33), int64(math.MaxInt64))
	f.Fuzz(func(t *testing.T, b []byte, us int64) {
		d, err := sqlrow.ScanDigest(b)
		switch {
		case b == nil && (err != nil || !d.IsZero()):
			t.Fatalf("NULL digest: %v %v", d, err)
		case b != nil && len(b) != 32 && err == nil:
			t.Fatalf("a digest of %d bytes was accepted", len(b))
		case len(b) == 32 && (err != nil || string(d[:]) != string(b)):
			t.Fatalf("digest %x read as %x, %v", b, d, err)
		}
		if col := sqlrow.Digest(d); err == nil && !d.IsZero() {
			if back, err := sqlrow.ScanDigest(col.([]byte)); err != nil || back != d {
				t.Fatalf("digest %x read back as %x, %v", d, back, err)
			}
		}

		at := time.UnixMicro(us).UTC()
		col := sqlrow.Micros(at)
		if at.IsZero() != (col == nil) {
			t.Fatalf("time %v stored as %v", at, col)
		}
		var stored *int64
		if col != nil {
			n := col.(int64)
			stored = &n
		}
		if back := sqlrow.Time(stored); !back.Equal(at) || back.Location() != time.UTC {
			t.Fatalf("time %v (%d µs) read back as %v", at, us, back)
		}
	})
}
