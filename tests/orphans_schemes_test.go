package tests

import (
	"bytes"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/lease"
	"github.com/icekeeper/icekeeper/shared/plan"
)

// later moves the stages' clocks on by d, as if they ran d from now: the
// files written so far are d old to them (an S3 object's age cannot be
// set, a local file's can).
func (e *env) later(d time.Duration) {
	e.t.Helper()
	now := func() time.Time { return time.Now().Add(d) }
	e.deps.Now = now
	var err error
	if e.deps.Leases, err = lease.NewStore(cloud.Clients.DynamoDB, e.cfg.LeaseTable, now); err != nil {
		e.t.Fatal(err)
	}
	if e.deps.Jobs, err = jobs.NewStore(cloud.Clients.DynamoDB, e.cfg.JobsTable, now); err != nil {
		e.t.Fatal(err)
	}
	if e.planner, err = e.deps.Planner(e.cat); err != nil {
		e.t.Fatal(err)
	}
	if e.rewriter, err = e.deps.Rewriter(); err != nil {
		e.t.Fatal(err)
	}
	if e.committer, err = e.deps.Committer(e.cat); err != nil {
		e.t.Fatal(err)
	}
}

// s3aTable creates the sample table at s3a://bucket/wh/demo/events, as a
// Hadoop S3A writer names its files, then moves the table's location to
// spell (the same bucket and key, or another bucket): every file the
// table references keeps its s3a:// name.
func s3aTable(t *testing.T, e *env, bucket, spell string) *table.Table {
	t.Helper()
	o := smallTable
	o.Location = "s3a://" + bucket + "/wh/demo/events"
	e.createTable(o)
	if _, _, err := e.cat.CommitTable(e.ctx, e.ident, nil, []table.Update{table.NewSetLocationUpdate(spell)}); err != nil {
		t.Fatal(err)
	}
	tbl := e.load()
	if tbl.Location() != spell {
		t.Fatalf("location %s, want %s", tbl.Location(), spell)
	}
	return tbl
}

// s3Key is the key of an s3, s3a or s3n URI in bucket, or "".
func s3Key(bucket, uri string) string {
	for _, scheme := range []string{"s3://", "s3a://", "s3n://"} {
		if rest, ok := strings.CutPrefix(uri, scheme+bucket+"/"); ok {
			return rest
		}
	}
	return ""
}

func (e *env) requireObject(bucket, key string) {
	e.t.Helper()
	if _, err := cloud.Clients.S3.HeadObject(e.ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(key)}); err != nil {
		e.t.Fatalf("s3://%s/%s is gone: %v", bucket, key, err)
	}
}

func (e *env) putObject(bucket, key string) {
	e.t.Helper()
	if _, err := cloud.Clients.S3.PutObject(e.ctx, &s3.PutObjectInput{Bucket: aws.String(bucket), Key: aws.String(key), Body: bytes.NewReader([]byte("stray"))}); err != nil {
		e.t.Fatal(err)
	}
}

// TestOrphans_FilesRecordedAsS3AAreNotOrphansOfAnS3Table: a table at
// s3://bucket/... whose files are all recorded as s3a://bucket/... (the
// same objects): an orphan cleanup run long after removes the one real
// orphan and keeps every file the table references, and the rows read the
// same (Iceberg Java's equal schemes: s3a and s3n are s3).
func TestOrphans_FilesRecordedAsS3AAreNotOrphansOfAnS3Table(t *testing.T) {
	e, bucket := s3Setup(t, cloud.URL)
	tbl := s3aTable(t, e, bucket, "s3://"+bucket+"/wh/demo/events")
	want := e.fingerprint()
	referenced := e.referencedFiles()
	referenced[tbl.MetadataLocation()] = true
	for e := range tbl.Metadata().PreviousFiles() {
		referenced[e.MetadataFile] = true
	}
	live := 0
	for uri := range referenced {
		if strings.HasPrefix(uri, "s3a://") {
			live++
		}
	}
	if live < 10 {
		t.Fatalf("only %d references are spelled s3a://: %v", live, referenced)
	}
	stray := "wh/demo/events/data/region=region-00/00000-0-stray.parquet"
	e.putObject(bucket, stray)
	e.later(96 * time.Hour)

	r, err := e.planner.PlanOrphanCleanup(asFunction(e.ctx, "Planner"), e.name(), "test", 0)
	if err != nil || r.Outcome != plan.OutcomePlanned {
		t.Fatalf("plan: %+v %v", r, err)
	}
	e.drainCommits()
	if j := e.job(r.JobID); j.State != jobs.Committed {
		t.Fatalf("job %s (%s)", j.State, j.Reason)
	}
	for uri := range referenced {
		e.requireObject(bucket, s3Key(bucket, uri))
	}
	if _, err := cloud.Clients.S3.HeadObject(e.ctx, &s3.HeadObjectInput{Bucket: aws.String(bucket), Key: aws.String(stray)}); err == nil {
		t.Fatal("the orphan is left")
	}
	if got := e.fingerprint(); got != want {
		t.Fatalf("rows %s, want %s", got, want)
	}
}

// TestOrphans_AFileMatchingAReferenceButForItsBucketRefusesTheCleanup: an
// older snapshot of the table references a data file in another bucket
// (s3a://other/...), and the table's bucket holds an object at the same
// key: whether it is that file is not known (Iceberg Java's
// PrefixMismatchMode.ERROR), so the cleanup is refused naming both, by the
// committer (aborted) for an object written after the plan, and by the
// planner after; nothing is deleted and the rows read the same.
func TestOrphans_AFileMatchingAReferenceButForItsBucketRefusesTheCleanup(t *testing.T) {
	e, bucket := s3Setup(t, cloud.URL)
	tbl := e.createTable(smallTable)
	want := e.fingerprint()
	referenced := e.referencedFiles()
	dir, key, foreign := referenceInOtherBucket(t, e, tbl, bucket)
	stray := dir + "00000-0-stray.parquet"
	e.putObject(bucket, stray)
	e.later(96 * time.Hour)

	r, err := e.planner.PlanOrphanCleanup(asFunction(e.ctx, "Planner"), e.name(), "test", 0)
	if err != nil || r.Outcome != plan.OutcomePlanned {
		t.Fatalf("plan: %+v %v", r, err)
	}
	e.putObject(bucket, key)
	e.drainCommits()
	j := e.job(r.JobID)
	if j.State != jobs.Aborted || !strings.Contains(j.Reason, "s3://"+bucket+"/"+key) || !strings.Contains(j.Reason, foreign) {
		t.Fatalf("job %s (%s), want aborted naming both URIs", j.State, j.Reason)
	}
	e.requireObject(bucket, stray)
	e.requireObject(bucket, key)

	r, err = e.planner.PlanOrphanCleanup(asFunction(e.ctx, "Planner"), e.name(), "test", 0)
	if err != nil || r.Outcome != plan.OutcomeNothingToDo || !strings.HasPrefix(r.Reason, plan.ReasonOrphansRefused) || !strings.Contains(r.Reason, foreign) {
		t.Fatalf("second plan: %+v %v, want refused naming %s", r, err, foreign)
	}
	for uri := range referenced {
		e.requireObject(bucket, s3Key(bucket, uri))
	}
	e.requireObject(bucket, stray)
	e.requireObject(bucket, key)
	if got := e.fingerprint(); got != want {
		t.Fatalf("rows %s, want %s", got, want)
	}
}

// TestOrphans_AFannedOutListingThatMustRefuseEndsTheJobAtOnce: the
// cleanup of TestOrphans_AFileMatchingAReferenceButForItsBucketRefusesTheCleanup
// with its listing fanned out to the rewriters. The listing task of the
// prefix holding the object that matches a reference but for its bucket
// records the refusal instead of failing every delivery (into the
// dead-letter queue, the job left waiting for it), and the committer's
// listing-done request ends the job aborted, naming both URIs, instead of
// failing every delivery itself; nothing is deleted, no task is
// dead-lettered, and the rows read the same.
func TestOrphans_AFannedOutListingThatMustRefuseEndsTheJobAtOnce(t *testing.T) {
	e, bucket := s3Setup(t, cloud.URL, func(c *config.Config) { c.OrphanListFanOutFiles = 1 })
	tbl := e.createTable(smallTable)
	want := e.fingerprint()
	referenced := e.referencedFiles()
	dir, key, foreign := referenceInOtherBucket(t, e, tbl, bucket)
	e.putObject(bucket, key)
	stray := dir + "00000-0-stray.parquet"
	e.putObject(bucket, stray)
	e.later(96 * time.Hour)

	r, err := e.planner.PlanOrphanCleanup(asFunction(e.ctx, "Planner"), e.name(), "test", 0)
	if err != nil || r.Outcome != plan.OutcomePlanned || !strings.Contains(r.Reason, "listed by") {
		t.Fatalf("plan: %+v %v, want a fanned-out listing", r, err)
	}
	for range 3 {
		e.drainCommits()
		e.drainTasks()
	}
	e.drainCommits()
	j := e.job(r.JobID)
	if j.State != jobs.Aborted || !strings.Contains(j.Reason, "s3://"+bucket+"/"+key) || !strings.Contains(j.Reason, foreign) {
		t.Fatalf("job %s (%s), want aborted naming both URIs\n%s", j.State, j.Reason, e.diagnose(r.JobID))
	}
	if n, err := e.dlq(e.ctx); err != nil || n != 0 {
		t.Fatalf("%d tasks dead-lettered (%v), want none", n, err)
	}
	for uri := range referenced {
		e.requireObject(bucket, s3Key(bucket, uri))
	}
	e.requireObject(bucket, stray)
	e.requireObject(bucket, key)
	if got := e.fingerprint(); got != want {
		t.Fatalf("rows %s, want %s", got, want)
	}
}

// referenceInOtherBucket commits a data file of tbl named
// s3a://<bucket>-other/<key>, a key under the table's own location in its
// own bucket, then rolls main back to the snapshot before: the file stays
// referenced by the newer snapshot, which is not read. It returns the
// directory of key, key, and the file's URI.
func referenceInOtherBucket(t *testing.T, e *env, tbl *table.Table, bucket string) (dir, key, foreign string) {
	t.Helper()
	current := tbl.CurrentSnapshot().SnapshotID
	dir = s3Key(bucket, tbl.Location()) + "/data/region=region-00/"
	key = dir + "00000-0-elsewhere.parquet"
	foreign = "s3a://" + bucket + "-other/" + key
	b, err := iceberg.NewDataFileBuilder(tbl.Spec(), iceberg.EntryContentData, foreign, iceberg.ParquetFile,
		map[int]any{1000: "region-00"}, nil, nil, 1, 5)
	if err != nil {
		t.Fatal(err)
	}
	tx := tbl.NewTransaction()
	if err := tx.AddDataFiles(e.ctx, []iceberg.DataFile{b.Build()}, nil); err != nil {
		t.Fatal(err)
	}
	if tbl, err = tx.Commit(e.ctx); err != nil {
		t.Fatal(err)
	}
	tx = tbl.NewTransaction()
	if err := tx.RollbackToSnapshot(current); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(e.ctx); err != nil {
		t.Fatal(err)
	}
	return dir, key, foreign
}
