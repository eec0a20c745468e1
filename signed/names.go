package signed

import (
	"bytes"
	"encoding/json"
	"fmt"
	"hash/maphash"
	"strconv"
	"unicode"
	"unicode/utf8"
)

// CheckNames fails when an object of the JSON answer, at any depth, has
// two members whose names are equal under Unicode simple case folding,
// such as "text" and "Text", or the same name twice. encoding/json reads
// either name into the same field and keeps the last, where other readers
// (jq, JavaScript) read the name as written: such an answer shows one
// value to one reader and another to the next, and no check of it holds
// for both. The error names the object and both members. CheckNames says
// nothing of input that is not JSON, which any decoder refuses, nor of
// JSON nested deeper than encoding/json reads (10000 arrays and objects):
// json.Valid, which stops at that depth and allocates next to nothing,
// tells them first. It then reads answer once, keeping a frame for each
// array and object open (no more than that depth) and where the names of
// the open objects' members are in answer: a name is decoded only when
// it has an escape or is not UTF-8, and a table is made only for an
// object of more than a few members.
func CheckNames(answer []byte) error {
	if !json.Valid(answer) {
		return nil // not JSON, or too deep: the decoder that reads it says so
	}
	n := names{answer: answer}
	type frame struct {
		object bool
		start  int            // the object's names are n.list[start:]; an array's, those before start
		table  map[uint64]int // foldHash → the index in n.list of a name of it, once the object has more than few
		index  int            // the element being read, in an array
		key    bool           // an object's next string is a member's name
	}
	const few = 16 // members of an object compared one by one, without a table
	var stack []frame
	path := func() string {
		var b []byte
		for k, f := range stack[:len(stack)-1] {
			if !f.object {
				b = append(b, '[')
				b = strconv.AppendInt(b, int64(f.index), 10)
				b = append(b, ']')
				continue
			}
			if len(b) > 0 {
				b = append(b, '.')
			}
			b = append(b, n.at(stack[k+1].start-1)...) // the member being read: the object's last name
		}
		return string(b)
	}
	seed := maphash.MakeSeed()
	for i := 0; i < len(answer); {
		switch answer[i] {
		case '{':
			stack = append(stack, frame{object: true, start: len(n.list), key: true})
		case '[':
			stack = append(stack, frame{start: len(n.list)})
		case '}':
			n.list = n.list[:stack[len(stack)-1].start]
			stack = stack[:len(stack)-1]
		case ']':
			stack = stack[:len(stack)-1]
		case ',':
			if top := &stack[len(stack)-1]; top.object {
				top.key = true
			} else {
				top.index++
			}
		case '"':
			start, end, escaped := i+1, i+1, false
			for answer[end] != '"' { // answer is valid JSON: the string ends
				if answer[end] == '\\' {
					escaped = true
					end++
				}
				end++
			}
			i = end + 1 // past the quote
			if len(stack) == 0 || !stack[len(stack)-1].key {
				continue // a string value
			}
			top := &stack[len(stack)-1]
			top.key = false
			name := answer[start:end]
			decoded := escaped || !utf8.Valid(name)
			if decoded { // read as encoding/json reads it
				var s string
				_ = json.Unmarshal(answer[start-1:end+1], &s) // a valid JSON string
				name = []byte(s)
			}
			var h uint64
			if top.table != nil {
				h = foldHash(seed, name)
			}
			if first, twice := n.seen(top.start, top.table, h, name); twice {
				where := "the answer"
				if p := path(); p != "" {
					where = "the answer's " + p
				}
				return fmt.Errorf("signed: %s has members %q and %q, one name twice to a reader that ignores case", where, first, name)
			}
			if decoded {
				n.list = append(n.list, span{-1, len(n.decoded)})
				n.decoded = append(n.decoded, name)
			} else {
				n.list = append(n.list, span{start, end})
			}
			if top.table == nil && len(n.list)-top.start > few {
				top.table = make(map[uint64]int, 2*(len(n.list)-top.start))
				for k := top.start; k < len(n.list); k++ {
					if h := foldHash(seed, n.at(k)); !hasKey(top.table, h) {
						top.table[h] = k
					}
				}
			} else if top.table != nil && !hasKey(top.table, h) {
				top.table[h] = len(n.list) - 1
			}
			continue
		}
		i++ // a structural character, white space, a colon, or a number, true, false or null
	}
	return nil
}

// names are the names of the members of the open objects, in the order
// CheckNames reads them: where each is in the answer, or, for one decoded,
// in decoded.
type names struct {
	answer  []byte
	list    []span
	decoded [][]byte
}

// span is answer[start:end], or decoded[end] when start is negative.
type span struct{ start, end int }

// at returns the k-th name of n.
func (n *names) at(k int) []byte {
	if s := n.list[k]; s.start >= 0 {
		return n.answer[s.start:s.end]
	}
	return n.decoded[n.list[k].end]
}

// seen returns the name of n.list[start:], the members of one object,
// equal to name under simple case folding, as encoding/json matches a
// name to a field (ident.Fold, bytes.EqualFold). With table, which holds a
// name of each foldHash of its members, and h, name's foldHash, it looks at
// them one by one only when that name is another of the same hash.
func (n *names) seen(start int, table map[uint64]int, h uint64, name []byte) (string, bool) {
	if table != nil {
		k, ok := table[h]
		if !ok {
			return "", false
		}
		if m := n.at(k); bytes.EqualFold(m, name) {
			return string(m), true
		}
	}
	for k := start; k < len(n.list); k++ {
		if m := n.at(k); bytes.EqualFold(m, name) {
			return string(m), true
		}
	}
	return "", false
}

// foldHash is the hash, under seed, of name with every rune mapped to the
// smallest rune of its simple case folding orbit, as ident.Fold maps it:
// names equal under simple folding have one foldHash.
func foldHash(seed maphash.Seed, name []byte) uint64 {
	var h maphash.Hash
	h.SetSeed(seed)
	var buf [utf8.UTFMax]byte
	for len(name) > 0 {
		r, size := utf8.DecodeRune(name)
		name = name[size:]
		least := r
		for f := unicode.SimpleFold(r); f != r; f = unicode.SimpleFold(f) {
			least = min(least, f)
		}
		_, _ = h.Write(utf8.AppendRune(buf[:0], least))
	}
	return h.Sum64()
}

func hasKey(m map[uint64]int, k uint64) bool {
	_, ok := m[k]
	return ok
}
