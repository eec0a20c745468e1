// Package videokey names the objects that the video stores (retain.Dir,
// s3video.Store) write: a key of its own for every write,
// <id>/<time>-<random>.mp4 (or .png), so that no write replaces another —
// a conversion that lost its lease cannot overwrite the video that the
// job's next holder recorded — and every object of an id lies under one
// prefix, where the purge finds them all.
package videokey

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"math"
	"regexp"
	"slices"
	"time"

	"github.com/consentkit/consentkit/blob"
	"github.com/consentkit/consentkit/consent"
)

// Kinds of object: a session's video, a certificate's screenshot.
const (
	Video      = ".mp4"
	Screenshot = ".png"
)

// New returns a new key of id for an object of kind ext (Video or
// Screenshot), written at now.
func New(id, ext string, now time.Time) string {
	var r [4]byte
	_, _ = rand.Read(r[:]) // crypto/rand never fails
	return id + "/" + now.UTC().Format("20060102T150405.000000000Z") + "-" + hex.EncodeToString(r[:]) + ext
}

// CheckID fails when id cannot name objects: an id that is not an
// identifier, or whose keys the blob store refuses (one starting with ".").
func CheckID(id string) error {
	if !consent.ValidID(id) {
		return fmt.Errorf("%q is not an identifier", id)
	}
	return blob.ValidKey(New(id, Video, time.Time{}))
}

// shape is the form of the keys New makes, and of those written before
// each object had a key of its own, <id>.mp4 (or .png).
var shape = regexp.MustCompile(`^([^/]+?)(/[0-9]{8}T[0-9]{6}\.[0-9]{9}Z-[0-9a-f]{8})?(\.mp4|\.png)$`)

// Key is what Parse reads of a key.
type Key struct {
	ID  string // the session's or the certificate's
	Ext string // Video or Screenshot
	// Own is true for a key that New made, false for one of the earlier
	// form, which every write of its id replaced.
	Own bool
}

// Parse reads a key that New made, or one of the earlier form; ok is false
// for any other key.
func Parse(key string) (k Key, ok bool) {
	m := shape.FindStringSubmatch(key)
	if m == nil || !consent.ValidID(m[1]) || m[1] == "." || m[1] == ".." {
		return Key{}, false
	}
	return Key{ID: m[1], Ext: m[3], Own: m[2] != ""}, true
}

// Prefix is the prefix of the keys that New makes for id.
func Prefix(id string) string { return id + "/" }

// Earlier is the key of id's object of kind ext of the earlier form.
func Earlier(id, ext string) string { return id + ext }

// Ext is the kind of object of a session's videos, or with screenshots of
// a certificate's screenshots.
func Ext(screenshots bool) string {
	if screenshots {
		return Screenshot
	}
	return Video
}

// DeleteAll removes from blobs every object of id of kind ext: each that
// New made, and the one of the earlier form. Objects already gone are not
// an error; the first delete that fails ends it.
func DeleteAll(ctx context.Context, blobs blob.Store, id, ext string) error {
	if !consent.ValidID(id) || id == "." || id == ".." {
		return fmt.Errorf("%q names no object", id)
	}
	keys, err := blobs.ListAfter(ctx, Prefix(id), "", math.MaxInt)
	if err != nil {
		return err
	}
	keys = slices.DeleteFunc(keys, func(key string) bool { k, ok := Parse(key); return !ok || k.Ext != ext })
	for _, key := range append(keys, Earlier(id, ext)) {
		if err := blobs.Delete(ctx, key); err != nil {
			return err
		}
	}
	return nil
}
