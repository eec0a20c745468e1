package s3video_test

import (
	"context"
	"log"
	"os"

	"github.com/consentkit/consentkit/retain"
	"github.com/consentkit/consentkit/retain/s3video"
)

// A store on an S3-compatible server with static keys. Amazon S3 needs no
// Endpoint nor PathStyle; a host with its own AWS configuration passes its
// *s3.Client in Config.Client instead.
func ExampleNew() {
	ctx := context.Background()
	store, err := s3video.New(ctx, s3video.Config{
		Bucket:            "consent-videos",
		Endpoint:          "http://127.0.0.1:7070",
		AccessKeyID:       os.Getenv("AWS_ACCESS_KEY_ID"),
		SecretAccessKey:   os.Getenv("AWS_SECRET_ACCESS_KEY"),
		PathStyle:         true,
		RequireObjectLock: true, // D45: retained videos must be undeletable
	})
	if err != nil {
		log.Fatal(err)
	}
	cfg := retain.WorkerConfig{Videos: store} // with Service and Converter
	_ = cfg
}
