package consent

import (
	"context"
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
