package blob_test

import (
	"context"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/consentkit/consentkit/blob"
)

func Example() {
	ctx := context.Background()
	s := blob.NewMemory() // blob.NewDir(root) on disk
	info, err := s.Put(ctx, "s_1.mp4", strings.NewReader("not really a video"))
	if err != nil {
		panic(err)
	}
	fmt.Println(info.Size)

	rc, _, err := s.OpenRange(ctx, "s_1.mp4", 13, 5)
	if err != nil {
		panic(err)
	}
	b, _ := io.ReadAll(rc)
	_ = rc.Close()
	fmt.Printf("%s\n", b)

	_ = s.Lock(ctx, "s_1.mp4", time.Now().Add(time.Hour))
	fmt.Println(s.Delete(ctx, "s_1.mp4") != nil)
	// Output:
	// 18
	// video
	// true
}
