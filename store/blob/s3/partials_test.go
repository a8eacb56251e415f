package s3

import (
	"testing"
	"time"

	"github.com/minio/minio-go/v7"

	"github.com/fleetscope/fleetscope/store/blob"
	"github.com/fleetscope/fleetscope/store/blob/miniotest"
)

// TestPartials: an abandoned multipart upload (a crash mid-Put) is found
// once older than the cut-off, and removed on request.
func TestPartials(t *testing.T) {
	srv := miniotest.Start(t)
	s := open(t, srv, "partials")
	core := minio.Core{Client: s.client}
	if _, err := core.NewMultipartUpload(t.Context(), s.bucket, "7/abc", minio.PutObjectOptions{}); err != nil {
		t.Fatal(err)
	}
	var found []blob.Info
	collect := func(i blob.Info) error { found = append(found, i); return nil }
	if err := s.Partials(t.Context(), time.Now().Add(-time.Hour), false, collect); err != nil || len(found) != 0 {
		t.Fatalf("an upload begun now, cut-off an hour ago: %v, %v; want none", found, err)
	}
	if err := s.Partials(t.Context(), time.Now().Add(time.Minute), true, collect); err != nil || len(found) != 1 || found[0].Key != "7/abc" {
		t.Fatalf("cut-off in a minute: %+v, %v; want the upload of 7/abc", found, err)
	}
	if n := uploads(t, s, "7/abc"); n != 0 {
		t.Fatalf("%d uploads of 7/abc left after removal", n)
	}
}
