// Package blob owns the one small interface the service uses for raw
// uploaded profile files (Store), the rules every key obeys (CheckKey), and
// Open, which picks a backend from a URL.
//
// The backends live in sub-packages and register their URL scheme when they
// are linked in: store/blob/localfs ("file") and store/blob/s3 ("s3"). A
// program that calls Open imports the ones it supports:
//
//	import (
//		_ "github.com/fleetscope/fleetscope/store/blob/localfs"
//		_ "github.com/fleetscope/fleetscope/store/blob/s3"
//	)
//
// Blob stores hold bytes under keys chosen by the caller; they know nothing
// about profiles or tenants, and nothing in this package may import a
// storage driver (minio-go stays in store/blob/s3).
package blob

import (
	"context"
	"fmt"
	"io"
	"maps"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/fleetscope/fleetscope"
)

// Store holds raw uploaded profile files under keys chosen by the caller
// (e.g. "tenant/<sha256>"). Every method returns EINVALID for a key that
// fails CheckKey.
type Store interface {
	// Put streams r to key (never holding the whole object in memory);
	// size is the exact length of r, or -1 if unknown. Atomic: if Put fails
	// or ctx is cancelled, nothing new is visible under key. Overwriting an
	// existing key is allowed.
	Put(ctx context.Context, key string, r io.Reader, size int64) error
	// Get opens the object under key. Returns ENOTFOUND if there is none.
	Get(ctx context.Context, key string) (io.ReadCloser, error)
	// Stat describes the object under key. Returns ENOTFOUND if there is none.
	Stat(ctx context.Context, key string) (Info, error)
	// Delete removes the object under key; a missing key is not an error.
	Delete(ctx context.Context, key string) error
	// List calls fn for every object whose key starts with prefix ("" for
	// all), in no particular order, e.g. for orphan checks. It stops at
	// and returns the first error from fn.
	List(ctx context.Context, prefix string, fn func(Info) error) error
	// Partials calls fn for every unfinished write (what a crashed or
	// abandoned Put leaves: a temporary file, an incomplete multipart
	// upload) begun before olderThan, and removes it when remove is set
	// (after fn returns nil). Partials are never visible as objects; this
	// reclaims their space. Info.Key is the backend's name for the partial.
	Partials(ctx context.Context, olderThan time.Time, remove bool, fn func(Info) error) error
}

// Info describes a stored object.
type Info struct {
	Key      string
	Size     int64 // bytes
	Modified time.Time
}

// MaxKeyLen is the longest key in bytes (the S3 limit).
const MaxKeyLen = 1024

// CheckKey returns an EINVALID error unless key is a clean relative
// slash-separated path that every backend stores as itself: not empty, at
// most MaxKeyLen bytes of UTF-8, no leading or trailing '/', no empty, "."
// or ".." segments, no backslashes and no control characters.
func CheckKey(key string) error {
	if key == "" {
		return fleetscope.Errorf(fleetscope.EINVALID, "blob key is empty")
	}
	if err := checkChars("blob key", key); err != nil {
		return err
	}
	if strings.HasPrefix(key, "/") {
		return fleetscope.Errorf(fleetscope.EINVALID, "blob key %q is an absolute path", key)
	}
	for _, seg := range strings.Split(key, "/") {
		if seg == "" || seg == "." || seg == ".." {
			return fleetscope.Errorf(fleetscope.EINVALID, "blob key %q has an empty, \".\" or \"..\" segment", key)
		}
	}
	return nil
}

// CheckPrefix returns an EINVALID error unless prefix is "" or could begin
// a valid key: its part up to the last '/' is a valid key and the rest has
// no forbidden characters. "tenant/" and "tenant/ab" are valid prefixes.
func CheckPrefix(prefix string) error {
	if prefix == "" {
		return nil
	}
	if err := checkChars("blob prefix", prefix); err != nil {
		return err
	}
	if i := strings.LastIndex(prefix, "/"); i >= 0 {
		if err := CheckKey(prefix[:i]); err != nil {
			return fleetscope.Errorf(fleetscope.EINVALID, "blob prefix %q: %v", prefix, err)
		}
	}
	return nil
}

// checkChars rejects what no key may contain anywhere.
func checkChars(what, s string) error {
	if len(s) > MaxKeyLen {
		return fleetscope.Errorf(fleetscope.EINVALID, "%s is %d bytes long, more than %d", what, len(s), MaxKeyLen)
	}
	if !utf8.ValidString(s) {
		return fleetscope.Errorf(fleetscope.EINVALID, "%s %q is not valid UTF-8", what, s)
	}
	for _, r := range s {
		if r < 0x20 || r == 0x7f {
			return fleetscope.Errorf(fleetscope.EINVALID, "%s %q contains a control character", what, s)
		}
		if r == '\\' {
			return fleetscope.Errorf(fleetscope.EINVALID, "%s %q contains a backslash", what, s)
		}
	}
	return nil
}

// Opener opens a Store for a parsed URL of the scheme it was registered
// for. It returns EINVALID if the URL is malformed for that scheme.
type Opener func(ctx context.Context, u *url.URL, accessKey, secretKey string) (Store, error)

var (
	mu      sync.RWMutex
	openers = map[string]Opener{}
)

// Register makes a backend available to Open under scheme. Backends call it
// from init; it panics if the scheme is registered twice.
func Register(scheme string, open Opener) {
	mu.Lock()
	defer mu.Unlock()
	if _, dup := openers[scheme]; dup {
		panic("blob: Register called twice for scheme " + scheme)
	}
	openers[scheme] = open
}

// Open opens the store named by rawURL:
//
//	file:///abs/dir                      a local directory (localfs)
//	file://./relative/dir                the same, relative to the working directory
//	s3://bucket?endpoint=host:port&insecure=true
//	                                     S3 or MinIO (s3); without endpoint, AWS S3;
//	                                     insecure=true means plain HTTP
//
// accessKey and secretKey are the S3 credentials (ignored for file). For s3,
// Open creates the bucket if it does not exist. Returns EINVALID if the URL
// is malformed or its scheme's backend is not linked into the program.
func Open(ctx context.Context, rawURL, accessKey, secretKey string) (Store, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return nil, fleetscope.Errorf(fleetscope.EINVALID, "blob URL: %v", err)
	}
	mu.RLock()
	open, ok := openers[u.Scheme]
	mu.RUnlock()
	if !ok {
		return nil, fleetscope.Errorf(fleetscope.EINVALID,
			"blob URL %q: unsupported scheme %q (have %s; backends register by being imported)",
			rawURL, u.Scheme, strings.Join(schemes(), ", "))
	}
	s, err := open(ctx, u, accessKey, secretKey)
	if err != nil {
		return nil, fmt.Errorf("open blob store %s: %w", u.Redacted(), err)
	}
	return s, nil
}

func schemes() []string {
	mu.RLock()
	defer mu.RUnlock()
	return slices.Sorted(maps.Keys(openers))
}

// DeleteUnused removes the object under key unless inUse reports that
// something still refers to it (a profile of the same bytes stored
// meanwhile): after a failed ingest, and after a profile's deletion.
func DeleteUnused(ctx context.Context, s Store, key string, inUse func(context.Context, string) (bool, error)) error {
	if used, err := inUse(ctx, key); err != nil || used {
		return err
	}
	return s.Delete(ctx, key)
}
