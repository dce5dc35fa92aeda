package tests

import (
	"bytes"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/icekeeper/icekeeper/shared/config"
)

// TestPipeline_S3Warehouse keeps the table itself in S3 (the emulator's):
// rewriters write Parquet straight under the table's s3:// location through
// iceberg-go's S3 file IO, and the committer finds and removes a crashed
// attempt's file by listing the bucket.
func TestPipeline_S3Warehouse(t *testing.T) {
	bucket := "warehouse-" + strings.ToLower(strings.ReplaceAll(t.Name(), "_", "-"))
	if _, err := cloud.Clients.S3.CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	e := setup(t, func(c *config.Config) {
		c.Catalog.Warehouse = "s3://" + bucket + "/wh"
		c.Catalog.Properties = map[string]string{
			"s3.endpoint": cloud.URL, "s3.region": "us-east-1",
			"s3.access-key-id": "test", "s3.secret-access-key": "test",
			"s3.force-virtual-addressing": "false",
		}
	})
	tbl := e.createTable(smallTable)
	if !strings.HasPrefix(tbl.Location(), "s3://"+bucket+"/") {
		t.Fatalf("table location %s is not in the S3 warehouse", tbl.Location())
	}
	want := e.fingerprint()
	r := e.plan()

	const crashed = "0badc0de-0000-4000-8000-0000000000s3"
	if err := e.deps.Jobs.RegisterAttempt(e.ctx, r.JobID, e.job(r.JobID).Token, 1, crashed); err != nil {
		t.Fatal(err)
	}
	key := strings.TrimPrefix(tbl.Location(), "s3://"+bucket+"/") + "/data/region=region-01/00000-0-" + crashed + ".parquet"
	if _, err := cloud.Clients.S3.PutObject(e.ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader([]byte("partial"))}); err != nil {
		t.Fatal(err)
	}
	e.drainTasks()
	e.drainCommits()

	e.requireCommitted(r.JobID, want)
	if s := e.stats(); s.DataFiles != r.Groups || s.DeleteFiles() != 0 {
		t.Fatalf("stats %+v", s)
	}
	if _, err := cloud.Clients.S3.HeadObject(e.ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}); err == nil {
		t.Fatal("crashed attempt's object still in the bucket")
	}
}
