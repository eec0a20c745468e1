package dashboard

import (
	"bytes"
	"encoding/json"
	"strings"

	"github.com/consentkit/consentkit/wallet"
)

// detailField is one fact of an audit entry's detail, as the page shows
// it: a key and its value in words.
type detailField struct {
	Key, Value string
}

// moneyKeys are the detail keys whose numbers are amounts of dollars
// (wallet.Amount's JSON): shown as money.
var moneyKeys = map[string]bool{"amount": true, "balance": true, "charged": true}

// detailFields reads an audit entry's Detail, a JSON object, as a list of
// its members in their order: a string as its text, a number or a boolean
// as written (an amount as money), null and [] as "none", a list of
// plain values joined by commas, anything else nested as compact JSON.
// ok is false when the detail is not a JSON object: the page shows it as
// it is. The page escapes every key and value (html/template).
func detailFields(detail string) (fields []detailField, ok bool) {
	dec := json.NewDecoder(strings.NewReader(detail))
	dec.UseNumber()
	if t, err := dec.Token(); err != nil || t != json.Delim('{') {
		return nil, false
	}
	for dec.More() {
		t, err := dec.Token()
		if err != nil {
			return nil, false
		}
		key, _ := t.(string)
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, false
		}
		fields = append(fields, detailField{Key: strings.ReplaceAll(key, "_", " "), Value: detailValue(key, raw)})
	}
	if t, err := dec.Token(); err != nil || t != json.Delim('}') {
		return nil, false
	}
	if _, err := dec.Token(); err == nil { // more after the object
		return nil, false
	}
	return fields, true
}

// detailValue shows one value of a detail in words.
func detailValue(key string, raw json.RawMessage) string {
	var v any
	d := json.NewDecoder(bytes.NewReader(raw))
	d.UseNumber()
	if d.Decode(&v) != nil {
		return string(raw)
	}
	switch v := v.(type) {
	case nil:
		return "none"
	case string:
		return v
	case json.Number:
		if moneyKeys[key] {
			if a, err := wallet.ParseAmount(v.String()); err == nil {
				return money(a)
			}
		}
		return v.String()
	case bool:
		return yesNo(v)
	case []any:
		if len(v) == 0 {
			return "none"
		}
		parts := make([]string, 0, len(v))
		for _, x := range v {
			switch x := x.(type) {
			case string:
				if x == "" || strings.Contains(x, ",") {
					return compact(raw) // joined, it would read as other items
				}
				parts = append(parts, x)
			case json.Number:
				parts = append(parts, x.String())
			case bool:
				parts = append(parts, yesNo(x))
			default:
				return compact(raw)
			}
		}
		return strings.Join(parts, ", ")
	}
	return compact(raw)
}

// compact is raw JSON without its insignificant spaces.
func compact(raw json.RawMessage) string {
	var b bytes.Buffer
	if json.Compact(&b, raw) != nil {
		return string(raw)
	}
	return b.String()
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}
