// Package s3api holds what the library's S3 stores (retain/s3video,
// blob/s3blob) read the same way from the S3 client's answers.
package s3api

import (
	"errors"

	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// ErrorCode is the S3 error code of err ("NoSuchKey", …); "" when err is
// not an answer of the server.
func ErrorCode(err error) string {
	var api smithy.APIError
	if errors.As(err, &api) {
		return api.ErrorCode()
	}
	return ""
}

// Missing reports whether err says the object or the version asked for
// does not exist, whichever way the server says it: a HEAD answers
// NotFound without a body, a GET NoSuchKey or NoSuchVersion.
func Missing(err error) bool {
	var noKey *types.NoSuchKey
	var notFound *types.NotFound
	switch code := ErrorCode(err); {
	case errors.As(err, &noKey), errors.As(err, &notFound):
		return true
	default:
		return code == "NoSuchKey" || code == "NoSuchVersion" || code == "NotFound"
	}
}

// Optional is s as an optional parameter: nil when empty.
func Optional(s string) *string {
	if s == "" {
		return nil
	}
	return &s
}
