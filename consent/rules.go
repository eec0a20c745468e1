package consent

import (
	"context"
	"encoding/json"
)

// SessionOf returns the company's session inside tx. Another company's
// session is reported as not found, the same as an unknown one (D9). A
// purged session is returned, with RetentionStatus expired (D26, D43).
func SessionOf(ctx context.Context, tx Tx, id, companyID string) (*Session, error) {
	ses, err := tx.Session(ctx, id)
	if ErrorCode(err) == NotFound || err == nil && ses.CompanyID != companyID {
		return nil, Errorf(NotFound, "session not found")
	}
	return ses, err
}

// CheckProperty returns nil when the property exists and is the company's.
// Another company's property is reported as not found, the same as an
// unknown one (D9, D15).
func CheckProperty(ctx context.Context, tx Tx, companyID, propertyID string) error {
	prop, err := tx.Property(ctx, propertyID)
	if ErrorCode(err) == NotFound || err == nil && prop.CompanyID != companyID {
		return Errorf(NotFound, "property not found")
	}
	return err
}

// ReadRecording returns the session's recording as JoinChunks writes it,
// reading it inside tx a chunk at a time (EachEventChunk): the joined
// recording is the one copy held, never its chunks besides. NotFound when
// the session does not exist.
func ReadRecording(ctx context.Context, tx Tx, sessionID string) (json.RawMessage, error) {
	var j joiner
	err := tx.EachEventChunk(ctx, sessionID, func(chunk []byte) error {
		j.add(chunk)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return j.done(), nil
}

// RecordingDigest returns the SHA-256 of the session's recording as
// JoinChunks writes it, reading it inside tx a chunk at a time
// (EachEventChunk): never more of it in memory than one chunk. NotFound
// when the session does not exist.
func RecordingDigest(ctx context.Context, tx Tx, sessionID string) (Digest, error) {
	h := NewRecordingHash()
	err := tx.EachEventChunk(ctx, sessionID, func(chunk []byte) error {
		h.Add(chunk)
		return nil
	})
	if err != nil {
		return Digest{}, err
	}
	return h.Sum(), nil
}
