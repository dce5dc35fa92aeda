// Package blob stores icekeeper's own small objects (plans, oversized task
// payloads, rewriter descriptors) in S3 under one bucket and prefix.
//
// It never touches table data: table files are written and removed through
// the table's own iceberg-go FileIO. Keys are built by the callers from job
// ids, group indexes and attempt ids, so every write is idempotent: a retry
// writes the same key.
package blob

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// ErrNotFound means the object does not exist.
var ErrNotFound = errors.New("blob: not found")

// S3 is the subset of the S3 client the store needs.
type S3 interface {
	PutObject(ctx context.Context, in *s3.PutObjectInput, opts ...func(*s3.Options)) (*s3.PutObjectOutput, error)
	GetObject(ctx context.Context, in *s3.GetObjectInput, opts ...func(*s3.Options)) (*s3.GetObjectOutput, error)
	DeleteObject(ctx context.Context, in *s3.DeleteObjectInput, opts ...func(*s3.Options)) (*s3.DeleteObjectOutput, error)
	ListObjectsV2(ctx context.Context, in *s3.ListObjectsV2Input, opts ...func(*s3.Options)) (*s3.ListObjectsV2Output, error)
}

// Store reads and writes objects in one bucket under one prefix.
type Store struct {
	client S3
	bucket string
	prefix string
}

// NewStore validates its arguments and returns a Store. prefix may be empty.
func NewStore(client S3, bucket, prefix string) (*Store, error) {
	if client == nil {
		return nil, errors.New("blob: nil S3 client")
	}
	if bucket == "" {
		return nil, errors.New("blob: empty bucket (set ICEKEEPER_BUCKET)")
	}
	prefix = strings.Trim(prefix, "/")
	if prefix != "" {
		prefix += "/"
	}
	return &Store{client: client, bucket: bucket, prefix: prefix}, nil
}

// Bucket returns the bucket name.
func (s *Store) Bucket() string { return s.bucket }

// Key returns the full object key for a relative name.
func (s *Store) Key(name string) string { return s.prefix + strings.TrimPrefix(name, "/") }

// Put writes data at the relative name and returns the full key.
func (s *Store) Put(ctx context.Context, name string, data []byte) (string, error) {
	k := s.Key(name)
	_, err := s.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket: aws.String(s.bucket), Key: aws.String(k), Body: bytes.NewReader(data),
		ContentLength: aws.Int64(int64(len(data))),
	})
	if err != nil {
		return "", fmt.Errorf("blob: put s3://%s/%s: %w", s.bucket, k, err)
	}
	return k, nil
}

// Get reads the object at a full key (as returned by Put).
func (s *Store) Get(ctx context.Context, key string) ([]byte, error) {
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
	if err != nil {
		var nsk *types.NoSuchKey
		if errors.As(err, &nsk) {
			return nil, fmt.Errorf("%w: s3://%s/%s", ErrNotFound, s.bucket, key)
		}
		if denied(err) {
			// S3 answers a missing key with 403 AccessDenied, not 404,
			// to a caller without s3:ListBucket on the bucket (Amazon S3
			// API Reference, GetObject, "Permissions":
			// https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObject.html),
			// and the functions' ListBucket is limited by s3:prefix. A
			// listing with the key as its prefix tells the two apart
			// (LIST is strongly consistent with PUT and DELETE: Amazon S3
			// User Guide, "Amazon S3 data consistency model",
			// https://docs.aws.amazon.com/AmazonS3/latest/userguide/Welcome.html#ConsistencyModel).
			if !s.probed(key) {
				return nil, fmt.Errorf("blob: get s3://%s/%s: %w", s.bucket, key, err)
			}
			if missing, lerr := s.missing(ctx, key); lerr == nil && missing {
				return nil, fmt.Errorf("%w: s3://%s/%s (read denied, and no such key listed)", ErrNotFound, s.bucket, key)
			} else if lerr != nil {
				err = errors.Join(err, lerr)
			}
		}
		return nil, fmt.Errorf("blob: get s3://%s/%s: %w", s.bucket, key, err)
	}
	defer out.Body.Close()
	data, err := io.ReadAll(out.Body)
	if err != nil {
		return nil, fmt.Errorf("blob: read s3://%s/%s: %w", s.bucket, key, err)
	}
	return data, nil
}

// denied reports whether err is S3's 403 (AccessDenied, or Forbidden for
// a request without a response body).
func denied(err error) bool {
	var ae smithy.APIError
	if errors.As(err, &ae) && (ae.ErrorCode() == "AccessDenied" || ae.ErrorCode() == "Forbidden") {
		return true
	}
	var re *awshttp.ResponseError
	return errors.As(err, &re) && re.HTTPStatusCode() == http.StatusForbidden
}

// probed reports whether a denied read of key is checked with a listing:
// only the keys whose absence a step acts on (a job's deletions.json and
// listing.json, the parts of its deletions record and the markers of its
// fanned-out listing: "not there" means "first run", "done" or "listed
// meanwhile"; a table's health/<table>/latest.json: "not there" means
// "first report", written), which are exactly the prefixes the stack
// lets the functions list (infra/iam.go: JobRecordsProbe,
// DeletionPartsList, ListingMarkersList, and the planner's
// SummaryInputsList for health/). Any other missing key is an error
// either way, and a listing there would only be denied too.
func (s *Store) probed(key string) bool {
	return strings.HasSuffix(key, "/deletions.json") || strings.HasSuffix(key, "/listing.json") ||
		strings.Contains(key, "/deletions/") || strings.Contains(key, "/listing/") ||
		strings.HasPrefix(key, s.Key("health/")) && strings.HasSuffix(key, "/latest.json")
}

// missing reports whether no object has the full key: a listing with the
// key as its prefix returns keys in UTF-8 binary order, so the key itself,
// if it exists, comes first.
func (s *Store) missing(ctx context.Context, key string) (bool, error) {
	out, err := s.client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(s.bucket), Prefix: aws.String(key), MaxKeys: aws.Int32(1)})
	if err != nil {
		return false, fmt.Errorf("blob: list s3://%s/%s to tell a missing key from a denied read: %w", s.bucket, key, err)
	}
	return len(out.Contents) == 0 || aws.ToString(out.Contents[0].Key) != key, nil
}

// Delete removes the object at a full key; a missing object is not an error.
func (s *Store) Delete(ctx context.Context, key string) error {
	_, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String(s.bucket), Key: aws.String(key)})
	if err != nil {
		return fmt.Errorf("blob: delete s3://%s/%s: %w", s.bucket, key, err)
	}
	return nil
}

// List returns the full keys of the objects under the relative prefix.
func (s *Store) List(ctx context.Context, prefix string) ([]string, error) {
	var keys []string
	p := s.Key(prefix)
	var token *string
	for {
		out, err := s.client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(s.bucket), Prefix: aws.String(p), ContinuationToken: token})
		if err != nil {
			return nil, fmt.Errorf("blob: list s3://%s/%s: %w", s.bucket, p, err)
		}
		for _, o := range out.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
		if !aws.ToBool(out.IsTruncated) || out.NextContinuationToken == nil {
			return keys, nil
		}
		token = out.NextContinuationToken
	}
}
