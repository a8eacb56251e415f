package blob_test

import (
	"strings"
	"testing"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/store/blob"
	_ "github.com/fleetscope/fleetscope/store/blob/localfs"
	_ "github.com/fleetscope/fleetscope/store/blob/s3"
)

func TestCheckKey(t *testing.T) {
	for _, key := range []string{
		"a", "tenant/0123abcd", "a/b/c.pprof", "..a", "a..", "a/.hidden", "with space", "ünïcode/キー",
		strings.Repeat("k", blob.MaxKeyLen),
	} {
		if err := blob.CheckKey(key); err != nil {
			t.Errorf("CheckKey(%q) = %v, want nil", key, err)
		}
	}
	for _, key := range []string{
		"", "/", "/abs", "a/", "a//b", ".", "..", "./a", "a/.", "a/./b", "../a", "a/../b", "a/..",
		`a\b`, `\`, "a\x00", "a\rb", "\x1f", "a\x7f", "\xff", strings.Repeat("k", blob.MaxKeyLen+1),
	} {
		if err := blob.CheckKey(key); fleetscope.ErrorCode(err) != fleetscope.EINVALID {
			t.Errorf("CheckKey(%q) = %v, want EINVALID", key, err)
		}
	}
}

func TestCheckPrefix(t *testing.T) {
	for _, p := range []string{"", "a", "a/", "a/b", "tenant/ab", "..", "a/.."} {
		if err := blob.CheckPrefix(p); err != nil {
			t.Errorf("CheckPrefix(%q) = %v, want nil", p, err)
		}
	}
	for _, p := range []string{"/", "/a", "../", "a/../", "a//", "./", `a\`, "a\n"} {
		if err := blob.CheckPrefix(p); fleetscope.ErrorCode(err) != fleetscope.EINVALID {
			t.Errorf("CheckPrefix(%q) = %v, want EINVALID", p, err)
		}
	}
}

// TestOpenInvalid covers URLs rejected before any I/O.
func TestOpenInvalid(t *testing.T) {
	for _, tc := range []struct{ url, access, secret string }{
		{url: ""},
		{url: "/just/a/path"},
		{url: "ftp://host/dir"},
		{url: "://nothing"},
		{url: "file:"},
		{url: "file://"},
		{url: "file:///"},
		{url: "file:relative"},
		{url: "file://host/dir"},
		{url: "file:///dir?mode=fast"},
		{url: "s3://"},
		{url: "s3://Bad_Bucket"},
		{url: "s3://bucket/with/path"},
		{url: "s3://bucket?insecure=maybe"},
		{url: "s3://bucket?region=x"},
		{url: "s3://bucket?endpoint=a:1&endpoint=b:2"},
		{url: "s3://bucket?endpoint=127.0.0.1:9000/path"},
		{url: "s3://bucket?endpoint=127.0.0.1:9000", access: "only-access"},
	} {
		s, err := blob.Open(t.Context(), tc.url, tc.access, tc.secret)
		if fleetscope.ErrorCode(err) != fleetscope.EINVALID {
			t.Errorf("Open(%q) = %v, %v; want EINVALID", tc.url, s, err)
		}
	}
}
