package videokey

import (
	"testing"
	"time"
)

func TestNewParses(t *testing.T) {
	now := time.Date(2026, 11, 29, 16, 0, 0, 123, time.UTC)
	a, b := New("ses_1", Video, now), New("ses_1", Video, now)
	if a == b {
		t.Errorf("two writes at one moment got one key, %s", a)
	}
	for _, tc := range []struct {
		key  string
		want Key
	}{
		{a, Key{ID: "ses_1", Ext: Video, Own: true}},
		{New("c.1:x", Screenshot, now), Key{ID: "c.1:x", Ext: Screenshot, Own: true}},
		{"ses_1.mp4", Key{ID: "ses_1", Ext: Video}},
		{"cert-1.png", Key{ID: "cert-1", Ext: Screenshot}},
	} {
		if got, ok := Parse(tc.key); !ok || got != tc.want {
			t.Errorf("Parse(%s) = %+v, %v; want %+v", tc.key, got, ok, tc.want)
		}
	}
	for _, bad := range []string{"", ".mp4", "ses_1", "ses_1.mov", "a/b.mp4", "../x.mp4", "ses_1/20261129T160000.000000123Z-0000000.mp4",
		"ses_1/20261129T160000.000000123Z-00000000.mp4/x.mp4", "..mp4", "a b.mp4"} {
		if k, ok := Parse(bad); ok {
			t.Errorf("Parse(%q) = %+v, want refused", bad, k)
		}
	}
}
