// Package s3 is the blob store on Amazon S3 or an S3-compatible server such
// as MinIO ("s3://bucket?endpoint=host:port&insecure=true" for blob.Open),
// through minio-go.
//
// It is the only package that imports minio-go, and minio-go's types stop
// here: NoSuchKey becomes ENOTFOUND and other failures are wrapped with the
// operation and key. Uploads of unknown size are streamed as multipart
// uploads of PartSize parts, so memory stays bounded whatever the file's
// size; a failed upload is aborted, so nothing becomes visible under the key.
// It knows nothing about profiles or tenants.
package s3

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"strconv"
	"time"

	"github.com/minio/minio-go/v7"
	"github.com/minio/minio-go/v7/pkg/credentials"
	"github.com/minio/minio-go/v7/pkg/s3utils"

	"github.com/fleetscope/fleetscope"
	"github.com/fleetscope/fleetscope/store/blob"
)

// PartSize is the size of each part of a multipart upload. An upload of
// unknown size holds one part in memory; one of known size above PartSize
// may hold a few in flight. S3 allows 10,000 parts, so objects of unknown
// size are limited to 160 GiB.
const PartSize = 16 << 20

// Client limits that keep a call from hanging for minutes when the server is
// gone: each request is tried at most maxAttempts times (minio-go backs off
// between 200ms and 1s), and a connection attempt gives up after dialTimeout.
const (
	maxAttempts = 3
	dialTimeout = 10 * time.Second
)

// Config says where the store lives.
type Config struct {
	Bucket   string
	Endpoint string // host:port; empty means AWS S3 (s3.amazonaws.com)
	Insecure bool   // plain HTTP instead of HTTPS

	// AccessKey and SecretKey are static credentials. If both are empty,
	// credentials come from the AWS environment variables, the AWS
	// credentials file or the EC2/ECS instance role, in that order.
	AccessKey string
	SecretKey string
}

// Store is a blob.Store in one S3 bucket.
type Store struct {
	client *minio.Client
	bucket string
}

var _ blob.Store = (*Store)(nil)

func init() { blob.Register("s3", openURL) }

// openURL accepts s3://bucket?endpoint=host:port&insecure=true.
func openURL(ctx context.Context, u *url.URL, accessKey, secretKey string) (blob.Store, error) {
	if u.Opaque != "" || u.User != nil || u.Fragment != "" || (u.Path != "" && u.Path != "/") {
		return nil, fleetscope.Errorf(fleetscope.EINVALID, "s3 URL %q: want s3://bucket?endpoint=host:port&insecure=true", u.Redacted())
	}
	c := Config{Bucket: u.Host, AccessKey: accessKey, SecretKey: secretKey}
	q, err := url.ParseQuery(u.RawQuery)
	if err != nil {
		return nil, fleetscope.Errorf(fleetscope.EINVALID, "s3 URL %q: %v", u.Redacted(), err)
	}
	for k, v := range q {
		if len(v) != 1 {
			return nil, fleetscope.Errorf(fleetscope.EINVALID, "s3 URL %q: %s given %d times", u.Redacted(), k, len(v))
		}
		switch k {
		case "endpoint":
			c.Endpoint = v[0]
		case "insecure":
			if c.Insecure, err = strconv.ParseBool(v[0]); err != nil {
				return nil, fleetscope.Errorf(fleetscope.EINVALID, "s3 URL %q: insecure=%q is not a boolean", u.Redacted(), v[0])
			}
		default:
			return nil, fleetscope.Errorf(fleetscope.EINVALID, "s3 URL %q: unknown parameter %q (want endpoint, insecure)", u.Redacted(), k)
		}
	}
	return New(ctx, c)
}

// New connects to the bucket, creating it if it does not exist. Returns
// EINVALID if the configuration is malformed.
func New(ctx context.Context, c Config) (*Store, error) {
	if err := s3utils.CheckValidBucketNameStrict(c.Bucket); err != nil {
		return nil, fleetscope.Errorf(fleetscope.EINVALID, "s3 bucket %q: %v", c.Bucket, err)
	}
	var creds *credentials.Credentials
	switch {
	case c.AccessKey != "" && c.SecretKey != "":
		creds = credentials.NewStaticV4(c.AccessKey, c.SecretKey, "")
	case c.AccessKey == "" && c.SecretKey == "":
		creds = credentials.NewChainCredentials([]credentials.Provider{
			&credentials.EnvAWS{}, &credentials.FileAWSCredentials{}, &credentials.IAM{},
		})
	default:
		return nil, fleetscope.Errorf(fleetscope.EINVALID, "s3: give both access key and secret key, or neither")
	}
	endpoint := c.Endpoint
	if endpoint == "" {
		endpoint = "s3.amazonaws.com"
	}
	tr, err := minio.DefaultTransport(!c.Insecure)
	if err != nil {
		return nil, fmt.Errorf("s3 transport: %w", err)
	}
	tr.DialContext = (&net.Dialer{Timeout: dialTimeout, KeepAlive: 30 * time.Second}).DialContext
	client, err := minio.New(endpoint, &minio.Options{
		Creds:      creds,
		Secure:     !c.Insecure,
		Transport:  tr,
		MaxRetries: maxAttempts,
	})
	if err != nil {
		return nil, fleetscope.Errorf(fleetscope.EINVALID, "s3 endpoint %q: %v", endpoint, err)
	}
	s := &Store{client: client, bucket: c.Bucket}
	if err := s.ensureBucket(ctx); err != nil {
		return nil, err
	}
	return s, nil
}

// ensureBucket creates the bucket unless it exists; losing the race to
// create it against another replica is fine.
func (s *Store) ensureBucket(ctx context.Context) error {
	ok, err := s.client.BucketExists(ctx, s.bucket)
	if err != nil {
		return fmt.Errorf("s3 bucket %q: %w", s.bucket, err)
	}
	if ok {
		return nil
	}
	err = s.client.MakeBucket(ctx, s.bucket, minio.MakeBucketOptions{})
	if err != nil && minio.ToErrorResponse(err).Code != minio.BucketAlreadyOwnedByYou {
		return fmt.Errorf("s3 create bucket %q: %w", s.bucket, err)
	}
	return nil
}

// Put uploads r: in one request if size is known and at most PartSize,
// otherwise as a multipart upload that minio-go aborts on any error,
// including a cancelled ctx. The object appears only when the upload
// completes.
func (s *Store) Put(ctx context.Context, key string, r io.Reader, size int64) error {
	if err := blob.CheckKey(key); err != nil {
		return err
	}
	_, err := s.client.PutObject(ctx, s.bucket, key, r, size, minio.PutObjectOptions{
		ContentType: "application/octet-stream",
		PartSize:    PartSize,
	})
	if err != nil {
		return s.fail("put", key, err)
	}
	return nil
}

// Get opens the object under key. Returns ENOTFOUND if there is none.
func (s *Store) Get(ctx context.Context, key string) (io.ReadCloser, error) {
	if err := blob.CheckKey(key); err != nil {
		return nil, err
	}
	obj, err := s.client.GetObject(ctx, s.bucket, key, minio.GetObjectOptions{})
	if err != nil {
		return nil, s.fail("get", key, err)
	}
	// GetObject is lazy: Stat sends the GET, so a missing key shows here.
	if _, err := obj.Stat(); err != nil {
		obj.Close()
		return nil, s.fail("get", key, err)
	}
	return obj, nil
}

// Stat describes the object under key. Returns ENOTFOUND if there is none.
func (s *Store) Stat(ctx context.Context, key string) (blob.Info, error) {
	if err := blob.CheckKey(key); err != nil {
		return blob.Info{}, err
	}
	oi, err := s.client.StatObject(ctx, s.bucket, key, minio.StatObjectOptions{})
	if err != nil {
		return blob.Info{}, s.fail("stat", key, err)
	}
	return blob.Info{Key: key, Size: oi.Size, Modified: oi.LastModified}, nil
}

// Delete removes the object under key; a missing key is not an error.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := blob.CheckKey(key); err != nil {
		return err
	}
	err := s.client.RemoveObject(ctx, s.bucket, key, minio.RemoveObjectOptions{})
	if err != nil && minio.ToErrorResponse(err).Code != minio.NoSuchKey {
		return s.fail("delete", key, err)
	}
	return nil
}

// List calls fn for every object whose key starts with prefix.
func (s *Store) List(ctx context.Context, prefix string, fn func(blob.Info) error) error {
	if err := blob.CheckPrefix(prefix); err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel() // stops the listing if fn fails
	for oi := range s.client.ListObjectsIter(ctx, s.bucket, minio.ListObjectsOptions{Prefix: prefix, Recursive: true}) {
		if oi.Err != nil {
			return fmt.Errorf("s3 list %q: %w", prefix, oi.Err)
		}
		if err := fn(blob.Info{Key: oi.Key, Size: oi.Size, Modified: oi.LastModified}); err != nil {
			return err
		}
	}
	return nil
}

// Partials lists the bucket's incomplete multipart uploads begun before
// olderThan (a Put that crashed before minio-go could abort it), removing
// them if asked.
func (s *Store) Partials(ctx context.Context, olderThan time.Time, remove bool, fn func(blob.Info) error) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for u := range s.client.ListIncompleteUploads(ctx, s.bucket, "", true) {
		if u.Err != nil {
			return fmt.Errorf("s3 list incomplete uploads: %w", u.Err)
		}
		if !u.Initiated.Before(olderThan) {
			continue
		}
		if err := fn(blob.Info{Key: u.Key, Size: u.Size, Modified: u.Initiated}); err != nil {
			return err
		}
		if remove {
			if err := s.client.RemoveIncompleteUpload(ctx, s.bucket, u.Key); err != nil {
				return fmt.Errorf("s3 remove incomplete upload %s: %w", u.Key, err)
			}
		}
	}
	return nil
}

// fail translates a minio-go error for key.
func (s *Store) fail(op, key string, err error) error {
	var resp minio.ErrorResponse
	if errors.As(err, &resp) && resp.Code == minio.NoSuchKey {
		return fleetscope.Errorf(fleetscope.ENOTFOUND, "blob %q not found", key)
	}
	return fmt.Errorf("s3 %s %s/%s: %w", op, s.bucket, key, err)
}
