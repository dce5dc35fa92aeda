package blob

import (
	"context"
	"errors"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
)

// fakeS3 answers GetObject with getErr and ListObjectsV2 with listed (or
// listErr), recording the listing's prefix.
type fakeS3 struct {
	getErr, listErr error
	listed          []string
	prefix          string
}

func (f *fakeS3) PutObject(context.Context, *s3.PutObjectInput, ...func(*s3.Options)) (*s3.PutObjectOutput, error) {
	return &s3.PutObjectOutput{}, nil
}
func (f *fakeS3) GetObject(context.Context, *s3.GetObjectInput, ...func(*s3.Options)) (*s3.GetObjectOutput, error) {
	return nil, f.getErr
}
func (f *fakeS3) DeleteObject(context.Context, *s3.DeleteObjectInput, ...func(*s3.Options)) (*s3.DeleteObjectOutput, error) {
	return &s3.DeleteObjectOutput{}, nil
}
func (f *fakeS3) ListObjectsV2(_ context.Context, in *s3.ListObjectsV2Input, _ ...func(*s3.Options)) (*s3.ListObjectsV2Output, error) {
	f.prefix = aws.ToString(in.Prefix)
	if f.listErr != nil {
		return nil, f.listErr
	}
	var out s3.ListObjectsV2Output
	for _, k := range f.listed {
		out.Contents = append(out.Contents, types.Object{Key: aws.String(k)})
	}
	return &out, nil
}

// TestGet_ADeniedReadOfAMissingKeyIsNotFound: S3 answers a missing key
// 403 to a caller without s3:ListBucket; Get lists with the key as the
// prefix and says ErrNotFound only when the key is not listed. A key
// that is listed, or a listing that is denied too, keeps the read's
// AccessDenied; a 404 is ErrNotFound without a listing.
func TestGet_ADeniedReadOfAMissingKeyIsNotFound(t *testing.T) {
	denied := &smithy.GenericAPIError{Code: "AccessDenied", Message: "Access Denied"}
	const key = "icekeeper/jobs/j1/deletions.json"
	for name, c := range map[string]struct {
		f            fakeS3
		key          string
		notFound     bool
		wantListing  bool
		deniedRemain bool
	}{
		// A key whose absence no step acts on is not probed: the read's
		// AccessDenied stands (the function may not list there).
		"another job object, denied": {f: fakeS3{getErr: denied}, key: "icekeeper/jobs/j1/tasks/3.json", deniedRemain: true},
		"a deletion part, missing":   {f: fakeS3{getErr: denied}, key: "icekeeper/jobs/j1/deletions/00001.json", notFound: true, wantListing: true},
		// The planner reads a table's latest health report before
		// writing another; a first report finds none.
		"a latest health report, missing": {f: fakeS3{getErr: denied}, key: "icekeeper/health/shop.orders/latest.json", notFound: true, wantListing: true},
		"a stamped health report, denied": {f: fakeS3{getErr: denied}, key: "icekeeper/health/shop.orders/20261202T120000Z.json", deniedRemain: true},
		"latest.json outside health/":     {f: fakeS3{getErr: denied}, key: "icekeeper/summary/latest.json", deniedRemain: true},
		"missing, listing allowed":        {f: fakeS3{getErr: denied}, notFound: true, wantListing: true},
		"a longer key listed":             {f: fakeS3{getErr: denied, listed: []string{key + ".tmp"}}, notFound: true, wantListing: true},
		"present but denied":              {f: fakeS3{getErr: denied, listed: []string{key}}, wantListing: true, deniedRemain: true},
		"listing denied too":              {f: fakeS3{getErr: denied, listErr: denied}, wantListing: true, deniedRemain: true},
		"404 needs no listing":            {f: fakeS3{getErr: &types.NoSuchKey{}}, notFound: true},
		"another error, nothing listed":   {f: fakeS3{getErr: errors.New("timeout")}},
	} {
		t.Run(name, func(t *testing.T) {
			f := c.f
			s, err := NewStore(&f, "b", "icekeeper")
			if err != nil {
				t.Fatal(err)
			}
			k := key
			if c.key != "" {
				k = c.key
			}
			_, err = s.Get(context.Background(), k)
			if got := errors.Is(err, ErrNotFound); got != c.notFound {
				t.Fatalf("Get: %v, not found %t, want %t", err, got, c.notFound)
			}
			if c.wantListing != (f.prefix == k) {
				t.Errorf("listed with prefix %q, want a listing %t", f.prefix, c.wantListing)
			}
			var ae smithy.APIError
			if c.deniedRemain && (!errors.As(err, &ae) || ae.ErrorCode() != "AccessDenied") {
				t.Errorf("Get: %v, want the AccessDenied kept", err)
			}
		})
	}
}
