package tests

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/icekeeper/icekeeper/shared/harness/gluestandin"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/icekeeper/icekeeper/shared/catalogs"
	"github.com/icekeeper/icekeeper/shared/commit"
	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/harness/s3requests"
	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/messages"
	"github.com/icekeeper/icekeeper/shared/plan"
)

// TestPipeline_S3Warehouse keeps the table itself in S3 (the emulator's):
// rewriters write Parquet straight under the table's s3:// location through
// iceberg-go's S3 file IO (through package fileio), and the committer finds and removes a crashed
// attempt's file by listing the bucket.
func TestPipeline_S3Warehouse(t *testing.T) {
	e, bucket := s3Setup(t, cloud.URL)
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

// TestExpire_S3WarehouseDeletesThroughTheFanOut: an expiry on a table kept
// in S3 (the emulator's), with its deletions fanned out to the rewriters
// in parts of 3 files: afterwards the bucket holds exactly the objects the
// table's snapshots need, plus its metadata files, and the rows are kept.
func TestExpire_S3WarehouseDeletesThroughTheFanOut(t *testing.T) {
	e, bucket := s3Setup(t, cloud.URL)
	compactedWithShortRetention(t, e)
	want := e.fingerprint()
	r, err := e.planner.PlanExpiry(e.ctx, e.name(), "test")
	if err != nil || r.Outcome != plan.OutcomePlanned {
		t.Fatalf("plan: %+v %v", r, err)
	}
	c, err := commit.New(commit.Settings{LeaseTTL: time.Minute, MaxRetries: 3, Backoff: time.Millisecond, CommitTakeover: time.Hour, DeletionPartFiles: 3},
		e.cat, e.deps.Jobs, e.deps.Leases, e.deps.Blobs, e.deps.Tables, nil, nil, commit.Options{DeletionTasks: e.deps.Tasks, DeletionFanOutParts: 2})
	if err != nil {
		t.Fatal(err)
	}
	if res, err := c.Handle(e.ctx, messages.CommitJob(r.JobID), 1); err != nil || res.Outcome != commit.OutcomeWaiting {
		t.Fatalf("commit: %+v %v", res, err)
	}
	e.drainTasks()
	e.drainCommits()
	if j := e.job(r.JobID); j.State != jobs.Committed {
		t.Fatalf("job %s (%s)", j.State, j.Reason)
	}
	if got := e.fingerprint(); got != want {
		t.Fatalf("rows %s, want %s", got, want)
	}
	need := e.referencedFiles()
	var keys []string
	p := s3.NewListObjectsV2Paginator(cloud.Clients.S3, &s3.ListObjectsV2Input{Bucket: aws.String(bucket)})
	for p.HasMorePages() {
		page, err := p.NextPage(e.ctx)
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range page.Contents {
			keys = append(keys, aws.ToString(o.Key))
		}
	}
	have := map[string]bool{}
	for _, k := range keys {
		uri := "s3://" + bucket + "/" + k
		have[uri] = true
		if !need[uri] && !strings.HasSuffix(k, ".metadata.json") {
			t.Errorf("left in the bucket, needed by no snapshot: %s", uri)
		}
	}
	for uri := range need {
		if !have[uri] {
			t.Errorf("deleted, but a kept snapshot needs it: %s", uri)
		}
	}
}

// TestPipeline_S3WarehouseRequestBudget counts the S3 requests the
// rewriters send for the table's files (through a counting proxy in front
// of the emulator): each input data and delete file is read with one GET,
// the pinned metadata file once for every task of the process, and each new
// file is one PUT (every file here is smaller than an upload part); the
// committer reads each manifest list and manifest once.
func TestPipeline_S3WarehouseRequestBudget(t *testing.T) {
	counter, err := s3requests.Start(cloud.URL)
	if err != nil {
		t.Fatal(err)
	}
	defer counter.Close()
	// One file at a time, as a rewriter of one vCPU scans (GOMAXPROCS 1).
	e, _ := s3Setup(t, counter.URL, func(c *config.Config) { c.ScanConcurrency = 1 })
	e.createTable(smallTable)
	want := e.fingerprint()
	before := e.stats()
	r := e.plan()
	counter.Reset()
	// S3 answers in tens of milliseconds, not at once: the rewriters
	// read their files ahead, several at a time (package fileio).
	counter.SetLatency(5 * time.Millisecond)
	e.drainTasks()
	counter.SetLatency(0)
	c := counter.Counts()
	counter.Reset()
	e.drainCommits()
	e.requireCommitted(r.JobID, want)
	for key, n := range counter.Counts().Gets {
		// A catalog's LoadTable reads the current metadata file through
		// an IO of its own, which package fileio does not see.
		if n > 1 && !strings.HasSuffix(key, ".metadata.json") {
			t.Errorf("the committer read %s with %d GETs (manifest lists and manifests are immutable: read once)", key, n)
		}
	}

	inputs := int64(before.DataFiles + before.DeleteFiles())
	gets := c.Ops[s3requests.GetObject]
	t.Logf("rewriters, %d groups over %d data and %d delete files: %v, %d GETs overlapped another", r.Groups, before.DataFiles, before.DeleteFiles(), c.Ops, c.OverlappedGets)
	for key, n := range c.Gets {
		if n > 1 {
			t.Errorf("%s was read with %d GETs", key, n)
		}
	}
	if gets > inputs+1 {
		t.Fatalf("rewriters sent %d GETs for %d input files, want one per file and one for the pinned metadata file", gets, inputs)
	}
	// The delete files' reads can overlap one another only; the data
	// files' must too.
	if c.OverlappedGets <= int64(before.DeleteFiles()) {
		t.Errorf("%d of the rewriters' GETs overlapped another (at most %d at once) for %d data and %d delete files: want the data files read ahead too, several at a time",
			c.OverlappedGets, c.MostGetsInFlight, before.DataFiles, before.DeleteFiles())
	}
	if puts := c.Class(s3requests.ClassPut); puts != int64(r.Groups) || c.Ops[s3requests.UploadPart] != 0 {
		t.Fatalf("rewriters sent %d PUT-class requests (%v) for %d new files, want one PutObject each", puts, c.Ops, r.Groups)
	}
}

// testBucket names a bucket for the test t, unique to it and within S3's
// naming rules, which kumo does not apply and S3 (and moto) do: 3 to 63
// characters of lower-case letters, digits, dots and hyphens, beginning
// and ending with a letter or digit (Amazon S3 User Guide, "General
// purpose bucket naming rules":
// https://docs.aws.amazon.com/AmazonS3/latest/userguide/bucketnamingrules.html).
func testBucket(t *testing.T, prefix string) string {
	t.Helper()
	name := []byte(strings.ToLower(prefix + "-" + t.Name()))
	for i, c := range name {
		if !(c >= 'a' && c <= 'z' || c >= '0' && c <= '9' || c == '-') {
			name[i] = '-'
		}
	}
	sum := sha256.Sum256([]byte(t.Name()))
	suffix := "-" + hex.EncodeToString(sum[:4])
	if len(name) > 63-len(suffix) {
		name = name[:63-len(suffix)]
	}
	return strings.Trim(string(name), "-") + suffix
}

// s3Setup is an env whose warehouse is a new bucket of the emulator's S3,
// reached through endpoint (the emulator, or a request counter in front
// of it); mutate changes its configuration further.
func s3Setup(t *testing.T, endpoint string, mutate ...func(*config.Config)) (*env, string) {
	t.Helper()
	bucket := testBucket(t, "warehouse")
	if _, err := cloud.Clients.S3.CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	return setup(t, append([]func(*config.Config){func(c *config.Config) {
		c.Catalog.Warehouse = "s3://" + bucket + "/wh"
		c.Catalog.Properties = map[string]string{
			"s3.endpoint": endpoint, "s3.region": "us-east-1",
			"s3.access-key-id": "test", "s3.secret-access-key": "test",
			"s3.force-virtual-addressing": "false",
		}
	}}, mutate...)...), bucket
}

// TestCatalogs_AGlueEndpointIsGluesAlone: a Glue catalog at its own
// endpoint (glue.endpoint: a VPC endpoint, a stand-in) over a table in S3,
// with no s3.endpoint: the table's files are still read and written at
// S3's endpoint (the environment's, here the emulator's), not sent to
// Glue's, and within the functions' synthesized policies (the bucket and
// warehouse they grant, infra/testdata/policies.json). Found on
// LocalStack, where every GetObject went to the Glue endpoint and failed.
func TestCatalogs_AGlueEndpointIsGluesAlone(t *testing.T) {
	t.Setenv("AWS_ENDPOINT_URL", cloud.URL)
	const bucket = "lake" // the policies' warehouse: s3://lake/warehouse/demo.db
	if _, err := cloud.Clients.S3.CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		var owned *s3types.BucketAlreadyOwnedByYou
		if !errors.As(err, &owned) {
			t.Fatal(err)
		}
	}
	_, glueURL := gluestandin.ForTest(t)
	e := setup(t, func(c *config.Config) {
		c.Catalog = catalogs.Config{Type: "glue", Name: "test", Warehouse: "s3://" + bucket + "/warehouse",
			Properties: map[string]string{
				"glue.endpoint": glueURL, "glue.region": "us-east-1",
				"s3.region": "us-east-1", "s3.access-key-id": "test", "s3.secret-access-key": "test",
				"s3.force-virtual-addressing": "false",
			}}
	})
	tbl := e.createTable(smallTable)
	if !strings.HasPrefix(tbl.Location(), "s3://"+bucket+"/warehouse/") {
		t.Fatalf("table location %s is not in the S3 warehouse", tbl.Location())
	}
	want := e.fingerprint()
	r := e.plan()
	e.drainTasks()
	e.drainCommits()
	e.requireCommitted(r.JobID, want)
}
