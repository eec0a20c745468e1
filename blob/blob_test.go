package blob_test

import (
	"testing"

	"github.com/consentkit/consentkit/blob"
	"github.com/consentkit/consentkit/blob/blobtest"
)

func TestMemory(t *testing.T) {
	blobtest.Run(t, func(*testing.T) blob.Store { return blob.NewMemory() })
}

func TestDir(t *testing.T) {
	blobtest.Run(t, func(t *testing.T) blob.Store {
		d, err := blob.NewDir(t.TempDir())
		if err != nil {
			t.Fatal(err)
		}
		return d
	})
}
