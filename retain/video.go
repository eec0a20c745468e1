package retain

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/consentkit/consentkit/blob"
	"github.com/consentkit/consentkit/consent"
	"github.com/consentkit/consentkit/retain/internal/videokey"
)

// Converter turns a session's rrweb recording (a JSON array of events) into
// an MP4 file at dst. It returns the video's duration. It must stop and
// clean up when ctx is done. Package retain/mp4 has the real one.
//
// An error that has a method Permanent() bool returning true (such as
// *mp4.RecordingError) says that trying again cannot help: the worker fails
// the job at once instead of retrying it.
type Converter interface {
	Convert(ctx context.Context, events json.RawMessage, dst string) (time.Duration, error)
}

// VideoStore keeps converted videos.
type VideoStore interface {
	// Put stores the MP4 at src as the video of the session, replacing any
	// earlier one, and describes what it stored (Duration left zero). It
	// does not lock the video: the transaction that records it asks for
	// its lock (Lock), so that no object is locked that no row names (D45).
	Put(ctx context.Context, sessionID, src string) (consent.Video, error)
	// Open returns the stored video that Put described, for reading.
	Open(ctx context.Context, v consent.Video) (io.ReadSeekCloser, error)
	// Delete removes the video at path, a Path that Put or PutScreenshot
	// returned, when the purge (D43) ends its session's or its
	// certificate's retention. A video already gone is not an error; a path
	// that is not one of the store's is.
	Delete(ctx context.Context, path string) error
	// PutScreenshot stores png, the PNG of the viewport at a certificate's
	// consent moment that its attestation took (D49), replacing any
	// earlier one, and describes it as Put does; it does not lock either.
	// Open reads it and Delete removes it.
	PutScreenshot(ctx context.Context, certificateID string, png []byte) (consent.Video, error)
	// Lock makes the video or screenshot at path, a Path that Put or
	// PutScreenshot returned, undeletable until until, where the store can
	// (S3 Object Lock): never less long than it already is, and not at all
	// when until is not in the future. The lock jobs (JobLockVideo,
	// JobLockScreenshot) call it once a committed row names path, with the
	// row's retention date, and again when a later retention moves that
	// date. A store that cannot lock returns nil, as Dir does.
	Lock(ctx context.Context, path string, until time.Time) error
}

// VideoDiscarder is a VideoStore each of whose Puts and PutScreenshots
// writes an object of its own, such as s3video.Store. Discard removes the
// object at path alone: one written for a commit that never came, which no
// row names. (Delete removes every video of the session, or screenshot of
// the certificate, which only the purge may.) A worker whose commit fails
// discards what it wrote when its row does not name it; what a crash
// leaves is unlocked, and the purge's Delete removes it.
type VideoDiscarder interface {
	Discard(ctx context.Context, path string) error
}

// VideoSweeper is a VideoStore that removes every object it keeps of an
// id, a session's videos or a certificate's screenshots, without a Path:
// those of attempts whose commit never came and that no later attempt
// replaced, which no row names. The purge's removal jobs call it when no
// row names a path (D45, D49); Dir and s3video.Store are VideoSweepers.
// Objects already gone are not an error; a locked one is refused.
type VideoSweeper interface {
	DeleteAll(ctx context.Context, id string, screenshots bool) error
}

// Dir is a VideoStore that keeps each video and each screenshot in a file
// of its own, <Root>/<id>/<time>-<random>.mp4 (or .png), through a
// [blob.Dir] rooted at Root: no write replaces another, so a conversion
// that lost its lease cannot overwrite the video that the job's next
// holder recorded, and a file that no committed row names is discarded
// (VideoDiscarder) or removed by the purge with the rest of its id. Files
// of the earlier form, <Root>/<id>.mp4, still open and are removed with
// them. A file is written to a temporary file in a .tmp directory beside
// it, synced, and renamed into place, so readers never see half of one.
type Dir struct {
	Root string
}

var (
	_ VideoStore     = Dir{}
	_ VideoDiscarder = Dir{}
	_ VideoSweeper   = Dir{}
)

// Put copies src into the directory. A directory cannot lock files (Lock
// does nothing): use an S3 store with Object Lock where videos must be
// undeletable.
func (d Dir) Put(ctx context.Context, sessionID, src string) (consent.Video, error) {
	in, err := os.Open(src)
	if err != nil {
		return consent.Video{}, err
	}
	defer func() { _ = in.Close() }() // read only: its Close loses nothing
	return d.put(ctx, sessionID, videokey.Video, in)
}

// PutScreenshot writes png into the directory, unlockable as with Put.
func (d Dir) PutScreenshot(ctx context.Context, certificateID string, png []byte) (consent.Video, error) {
	return d.put(ctx, certificateID, videokey.Screenshot, bytes.NewReader(png))
}

// put writes in as a new file of id through the blob store, so the file
// is written whole or not at all and its digest is computed as it streams.
func (d Dir) put(ctx context.Context, id, ext string, in io.Reader) (consent.Video, error) {
	if err := videokey.CheckID(id); err != nil {
		return consent.Video{}, fmt.Errorf("retain: %q cannot name a file: %w", id, err)
	}
	bs, err := blob.NewDir(d.Root)
	if err != nil {
		return consent.Video{}, err
	}
	key := videokey.New(id, ext, time.Now())
	info, err := bs.Put(ctx, key, in)
	if err != nil {
		return consent.Video{}, fmt.Errorf("retain: %w", err)
	}
	return consent.Video{Path: filepath.Join(d.Root, filepath.FromSlash(key)), Bytes: info.Size, SHA256: info.SHA256}, nil
}

// Lock does nothing: a directory cannot lock files. Use an S3 store
// with Object Lock where videos must be undeletable.
func (d Dir) Lock(context.Context, string, time.Time) error { return nil }

// Open opens the video at v.Path, which must be a file of the directory:
// a path that a changed database row points elsewhere is refused, and so
// is a file whose size is not v's.
func (d Dir) Open(_ context.Context, v consent.Video) (io.ReadSeekCloser, error) {
	key, _, err := d.key(v.Path)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(filepath.Join(d.Root, filepath.FromSlash(key)))
	if err != nil {
		return nil, err
	}
	if fi, err := f.Stat(); err != nil || v.Bytes != 0 && fi.Size() != v.Bytes {
		_ = f.Close() // read only
		if err == nil {
			err = fmt.Errorf("retain: %s holds %d bytes, not the video's %d", v.Path, fi.Size(), v.Bytes)
		}
		return nil, err
	}
	return f, nil
}

// Discard removes the file at path alone, one that Put or PutScreenshot
// wrote and no row names (VideoDiscarder). A file already gone is not an
// error.
func (d Dir) Discard(ctx context.Context, path string) error {
	key, k, err := d.key(path)
	if err != nil {
		return err
	}
	if !k.Own {
		return fmt.Errorf("retain: discard %s: not a file of its own (a path written before)", path)
	}
	return (&blob.Dir{Root: d.Root}).Delete(ctx, key)
}

// Delete removes the file at path, which must be a file of the directory,
// with every other file of the same id and kind (.mp4 or .png): an attempt
// whose commit never came wrote one that no row names. Files already gone
// are not an error.
func (d Dir) Delete(ctx context.Context, path string) error {
	_, k, err := d.key(path)
	if err != nil {
		return err
	}
	if err := d.DeleteAll(ctx, k.ID, k.Ext == videokey.Screenshot); err != nil {
		return fmt.Errorf("retain: delete %s: %w", path, err)
	}
	return nil
}

// DeleteAll removes every video of the session id, or every screenshot of
// the certificate id, one of the earlier form (<Root>/<id>.mp4) too, and
// then the id's directory once empty (VideoSweeper).
func (d Dir) DeleteAll(ctx context.Context, id string, screenshots bool) error {
	if err := videokey.DeleteAll(ctx, &blob.Dir{Root: d.Root}, id, videokey.Ext(screenshots)); err != nil {
		return fmt.Errorf("retain: %w", err)
	}
	// A video and a screenshot never share an id, but a directory in use
	// is simply left.
	dir := filepath.Join(d.Root, id)
	_ = os.Remove(filepath.Join(dir, ".tmp"))
	_ = os.Remove(dir)
	return nil
}

// key returns the blob key of a video or screenshot of the directory,
// refusing any other path.
func (d Dir) key(path string) (string, videokey.Key, error) {
	bad := fmt.Errorf("retain: video path %q is not a file of %s", path, d.Root)
	root, err := filepath.Abs(d.Root)
	if err != nil {
		return "", videokey.Key{}, err
	}
	p, err := filepath.Abs(path)
	if err != nil {
		return "", videokey.Key{}, bad
	}
	rel, err := filepath.Rel(root, p)
	if err != nil || !filepath.IsLocal(rel) {
		return "", videokey.Key{}, bad
	}
	key := filepath.ToSlash(rel)
	k, ok := videokey.Parse(key)
	if !ok {
		return "", videokey.Key{}, bad
	}
	return key, k, nil
}
