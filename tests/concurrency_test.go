package tests

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	lambdaevents "github.com/aws/aws-lambda-go/events"

	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/harness/localrun"
	"github.com/icekeeper/icekeeper/shared/harness/sampletable"
	"github.com/icekeeper/icekeeper/shared/joblog"
	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/plan"
)

var smallTable = sampletable.Options{FormatVersion: 2, Partitions: 2, Files: 6, RowsPerFile: 100, PositionDeletes: true, EqualityDeletes: true}

// TestPipeline_ConcurrentAppendDuringRewriteIsKept: rows appended after the
// job pinned its snapshot survive the commit, and so do all the others.
func TestPipeline_ConcurrentAppendDuringRewriteIsKept(t *testing.T) {
	overCatalogs(t, testConcurrentAppendIsKept)
}

func testConcurrentAppendIsKept(t *testing.T, e *env) {
	tbl := e.createTable(smallTable)
	r := e.plan()
	e.drainTasks()

	if _, err := sampletable.AppendRows(e.ctx, tbl, 1_000_000, 2, 50); err != nil {
		t.Fatal(err)
	}
	want := e.fingerprint()
	e.drainCommits()

	if j := e.job(r.JobID); j.State != jobs.Committed {
		t.Fatalf("job %s (%s), want committed", j.State, j.Reason)
	}
	if got := e.fingerprint(); got != want {
		t.Fatalf("rows after commit %s, want %s", got, want)
	}
	if s := e.stats(); s.DataFiles != r.Groups+2 {
		t.Fatalf("data files %d, want %d compacted + 2 appended", s.DataFiles, r.Groups)
	}
}

// TestPipeline_ConcurrentEqualityDeleteStaysApplied: an equality delete
// committed while the job runs deletes rows that the rewriter copied into
// new files; the new files carry the pinned data sequence number, so the
// delete still applies and those rows stay deleted. The job commits.
func TestPipeline_ConcurrentEqualityDeleteStaysApplied(t *testing.T) {
	overCatalogs(t, testConcurrentEqualityDeleteStaysApplied)
}

func testConcurrentEqualityDeleteStaysApplied(t *testing.T, e *env) {
	tbl := e.createTable(smallTable)
	r := e.plan()
	e.drainTasks()

	ids := []int64{1, 2, 150, 151, 1101} // live rows in rewritten files
	if _, err := sampletable.DeleteByEquality(e.ctx, tbl, ids, sampletable.RegionOf(smallTable.Partitions, smallTable.RowsPerFile)); err != nil {
		t.Fatal(err)
	}
	want := e.fingerprint()
	if before := want.Rows; before == 0 {
		t.Fatal("empty table")
	}
	e.drainCommits()

	if j := e.job(r.JobID); j.State != jobs.Committed {
		t.Fatalf("job %s (%s), want committed", j.State, j.Reason)
	}
	if got := e.fingerprint(); got != want {
		t.Fatalf("rows after commit %s, want %s: the concurrent equality delete was lost", got, want)
	}
	if s := e.stats(); s.EqualityDeleteFiles == 0 {
		t.Fatalf("the concurrent equality delete file was removed: %+v", s)
	}
}

// TestPipeline_ConcurrentPositionDeleteOnRewrittenFileIsRebased: a
// position delete (v2) or deletion vector (v3) committed while the job runs
// targets files the job rewrote. The committer rebases it onto the new
// files: the job commits, the deleted rows stay deleted and every other row
// is there once; no delete file is left on a file that is gone.
func TestPipeline_ConcurrentPositionDeleteOnRewrittenFileIsRebased(t *testing.T) {
	for _, version := range []int{2, 3} {
		t.Run(fmt.Sprintf("v%d", version), func(t *testing.T) {
			overCatalogs(t, func(t *testing.T, e *env) {
				rebaseConcurrentPositionDelete(t, e, version, false)
			})
			// A row map over ICEKEEPER_INLINE_ROW_MAP_BYTES is an S3
			// object of its own, read back by the committer.
			t.Run("row map on its own", func(t *testing.T) {
				rebaseConcurrentPositionDelete(t, setup(t, func(c *config.Config) { c.InlineRowMapBytes = 1 }), version, true)
			})
		})
	}
}

// rebaseConcurrentPositionDelete deletes rows of a compaction's input files
// after its rewriters ran and checks that the commit rebased the deletes
// onto the new files, reading the row map from the descriptor or from an
// object of its own (ownObject).
func rebaseConcurrentPositionDelete(t *testing.T, e *env, version int, ownObject bool) {
	t.Helper()
	opts := smallTable
	opts.FormatVersion = version
	tbl := e.createTable(opts)
	r := e.plan()
	e.drainTasks()
	rowMaps, err := e.deps.Blobs.List(e.ctx, "jobs/"+r.JobID+"/rowmaps/")
	if err != nil {
		t.Fatal(err)
	}
	if ownObject != (len(rowMaps) > 0) {
		t.Fatalf("row map objects of the job: %v; want them only when the maps are over the inline size (%v)", rowMaps, ownObject)
	}

	if _, err := sampletable.DeleteByPosition(e.ctx, tbl, []int64{10, 20, 30, 120, 777}); err != nil {
		t.Fatal(err)
	}
	want := e.fingerprint()
	e.drainCommits()

	e.requireCommitted(r.JobID, want)
	e.requireNoDanglingDeletes(r.JobID)
	if l := e.deleteLayout(); l.records == 0 {
		t.Fatalf("no position delete or deletion vector is live after the commit: %+v", l)
	}
	if m := e.metrics.metricTotals(t); m["DeletesRebased/"+e.name()] < 1 {
		t.Fatalf("DeletesRebased not emitted: %v", m)
	}
	records, err := joblog.New(e.deps.Blobs).Read(e.ctx, e.name(), 0)
	if err != nil || len(records) == 0 || records[0].DeletesRebased < 1 {
		t.Fatalf("the maintenance log does not record the rebase: %+v %v", records, err)
	}
}

// TestPipeline_GroupWhoseRowsAreAllDeleted: every row of a partition is
// deleted; its group writes no file and the commit drops the partition's
// files and deletes.
func TestPipeline_GroupWhoseRowsAreAllDeleted(t *testing.T) {
	e := setup(t)
	opts := sampletable.Options{FormatVersion: 2, Partitions: 2, Files: 5, RowsPerFile: 20}
	tbl := e.createTable(opts)
	regionOf := sampletable.RegionOf(opts.Partitions, opts.RowsPerFile)
	var ids []int64
	for id := int64(0); id < int64(opts.Partitions*opts.Files*opts.RowsPerFile); id++ {
		if regionOf(id) == sampletable.Region(1) {
			ids = append(ids, id)
		}
	}
	if _, err := sampletable.DeleteByEquality(e.ctx, tbl, ids, regionOf); err != nil {
		t.Fatal(err)
	}
	want := e.fingerprint()
	r := e.plan()
	e.drainTasks()
	e.drainCommits()
	e.requireCommitted(r.JobID, want)
	if s := e.stats(); s.DataFiles != 1 || s.DeleteFiles() != 0 {
		t.Fatalf("stats %+v, want one data file and no deletes", s)
	}
}

// TestPipeline_RedeliveredTaskDoesNotDoubleCount: the first delivery of
// every task does the work but its acknowledgement is lost, so SQS delivers
// it again. The redelivery finds the group settled; the commit has each
// row once and no losing attempt leaves files behind.
func TestPipeline_RedeliveredTaskDoesNotDoubleCount(t *testing.T) {
	e := setup(t)
	e.createTable(smallTable)
	want := e.fingerprint()
	onDisk := e.dataFilesOnDisk()
	r := e.plan()

	seen := map[string]int{}
	loseFirstAck := func(ctx context.Context, ev lambdaevents.SQSEvent) (lambdaevents.SQSEventResponse, error) {
		resp, err := e.rewriterHandler()(ctx, ev)
		for _, rec := range ev.Records {
			seen[rec.MessageId]++
			if seen[rec.MessageId] == 1 {
				resp.BatchItemFailures = append(resp.BatchItemFailures, lambdaevents.SQSBatchItemFailure{ItemIdentifier: rec.MessageId})
			}
		}
		return resp, err
	}
	st, err := localrun.Drain(e.ctx, e.deps.Tasks, loseFirstAck, 1, 0)
	if err != nil {
		t.Fatal(err)
	}
	if st.Delivered != 2*r.Groups {
		t.Fatalf("delivered %d, want each of %d tasks twice", st.Delivered, r.Groups)
	}
	e.drainCommits()

	e.requireCommitted(r.JobID, want)
	for p := range e.dataFilesOnDisk() {
		if !onDisk[p] && !e.isLive(p) {
			t.Fatalf("file %s is neither an old file nor live", p)
		}
	}
}

// TestPipeline_CrashedAttemptsFilesAreRemoved: an attempt that registered,
// wrote part of its output and crashed leaves a file the table never
// references; the committer removes it with the job's other losers.
func TestPipeline_CrashedAttemptsFilesAreRemoved(t *testing.T) {
	e := setup(t)
	tbl := e.createTable(smallTable)
	want := e.fingerprint()
	r := e.plan()

	const crashed = "0badc0de-0000-4000-8000-000000000001"
	if err := e.deps.Jobs.RegisterAttempt(e.ctx, r.JobID, e.job(r.JobID).Token, 0, crashed); err != nil {
		t.Fatal(err)
	}
	orphan := filepath.Join(strings.TrimPrefix(tbl.Location(), "file://"), "data", "00000-0-"+crashed+".parquet")
	if err := os.MkdirAll(filepath.Dir(orphan), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(orphan, []byte("partial"), 0o644); err != nil {
		t.Fatal(err)
	}
	e.drainTasks()
	e.drainCommits()

	if j := e.job(r.JobID); j.State != jobs.Committed {
		t.Fatalf("job %s (%s)", j.State, j.Reason)
	}
	if _, err := os.Stat(orphan); !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("crashed attempt's file still there (err %v)", err)
	}
	if got := e.fingerprint(); got != want {
		t.Fatalf("rows %s, want %s", got, want)
	}
}

// TestPipeline_FailedGroupCommitsNothing: one group cannot read its input
// on any delivery. Its task lands in the dead-letter queue, the job fails
// with the reason, nothing is committed, every file the job wrote is
// removed and the lease is released.
func TestPipeline_FailedGroupCommitsNothing(t *testing.T) {
	e := setup(t)
	e.createTable(sampletable.Options{FormatVersion: 2, Partitions: 3, Files: 6, RowsPerFile: 100, PositionDeletes: true})
	want := e.fingerprint()
	onDisk := e.dataFilesOnDisk()
	snapBefore := e.load().CurrentSnapshot().SnapshotID
	r := e.plan()
	if r.Groups != 3 {
		t.Fatalf("groups %d, want 3", r.Groups)
	}

	// Hide one input file of region-01 while the rewriters run.
	var hidden string
	for p := range onDisk {
		if strings.Contains(p, "region=region-01") {
			hidden = p
			break
		}
	}
	if hidden == "" {
		t.Fatal("no region-01 file found")
	}
	if err := os.Rename(hidden, hidden+".away"); err != nil {
		t.Fatal(err)
	}
	e.drainTasks()
	if err := os.Rename(hidden+".away", hidden); err != nil {
		t.Fatal(err)
	}
	e.drainCommits()

	j := e.job(r.JobID)
	if j.State != jobs.Failed || !strings.Contains(j.Reason, "group") {
		t.Fatalf("job %s (%s), want failed with the group's reason", j.State, j.Reason)
	}
	if got := e.load().CurrentSnapshot().SnapshotID; got != snapBefore {
		t.Fatalf("a snapshot was committed: %d -> %d", snapBefore, got)
	}
	if got := e.fingerprint(); got != want {
		t.Fatalf("rows %s, want %s", got, want)
	}
	for p := range e.dataFilesOnDisk() {
		if !onDisk[p] {
			t.Fatalf("failed job left file %s", p)
		}
	}
	dlq, err := e.dlq(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	if dlq != 1 {
		t.Fatalf("dead-letter queue holds %d messages, want 1", dlq)
	}
	records, err := joblog.New(e.deps.Blobs).Read(e.ctx, e.name(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(records) != 1 || records[0].JobID != r.JobID || records[0].Outcome != "failed" || records[0].Reason != j.Reason ||
		records[0].Groups != 3 || records[0].GroupsDone >= 3 || records[0].Before == nil || records[0].After != nil {
		t.Fatalf("maintenance log after the failed job: %+v", records)
	}
	if r2 := e.plan(); r2.Outcome != plan.OutcomePlanned {
		t.Fatalf("lease not released: replan %s (%s)", r2.Outcome, r2.Reason)
	}
}

// TestPlanner_TwoPlannersRacingMakeOneJob: planners racing for one table
// produce exactly one job; the others skip, counted as lease held.
func TestPlanner_TwoPlannersRacingMakeOneJob(t *testing.T) {
	e := setup(t)
	e.createTable(smallTable)
	second, err := e.deps.Planner(e.cat)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	results := make([]plan.Result, 4)
	errs := make([]error, 4)
	for i := range results {
		p := e.planner
		if i%2 == 1 {
			p = second
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			results[i], errs[i] = p.PlanTable(e.ctx, e.name(), "race")
		}()
	}
	wg.Wait()
	planned, held := 0, 0
	for i, r := range results {
		if errs[i] != nil {
			t.Fatalf("planner %d: %v", i, errs[i])
		}
		switch r.Outcome {
		case plan.OutcomePlanned:
			planned++
		case plan.OutcomeLeaseHeld:
			held++
		}
	}
	if planned != 1 || held != len(results)-1 {
		t.Fatalf("planned %d, lease held %d: %+v", planned, held, results)
	}
}

// TestCommitter_CrashAfterCatalogCommitFinishesOnce: the committer crashes
// after the catalog accepted the commit and before it recorded it. The
// redelivered request finds the job's snapshot and only finishes the
// bookkeeping: one snapshot, every row once.
func TestCommitter_CrashAfterCatalogCommitFinishesOnce(t *testing.T) {
	// A short takeover window, so that the redelivery may take the job over
	// from the "crashed" committer (which waits it out before crashing).
	const takeover = 2 * time.Second
	e := setup(t, func(c *config.Config) { c.CommitTakeover = takeover })
	e.createTable(smallTable)
	want := e.fingerprint()
	r := e.plan()
	e.drainTasks()

	crashes := 0
	e.committer.SetAfterCatalogCommit(func(string) error {
		if crashes == 0 {
			crashes++
			time.Sleep(takeover + 100*time.Millisecond)
			return errors.New("simulated crash after the catalog commit")
		}
		return nil
	})
	st := e.drainCommits()
	if crashes != 1 || st.Failed < 1 {
		t.Fatalf("crash not exercised: crashes %d, failed deliveries %d", crashes, st.Failed)
	}
	j := e.job(r.JobID)
	if j.State != jobs.Committed {
		t.Fatalf("job %s (%s)", j.State, j.Reason)
	}
	if n := e.jobSnapshots(r.JobID); n != 1 {
		t.Fatalf("%d snapshots stamped with the job, want 1", n)
	}
	if got := e.fingerprint(); got != want {
		t.Fatalf("rows %s, want %s", got, want)
	}
	if r2 := e.plan(); r2.Outcome == plan.OutcomeLeaseHeld {
		t.Fatal("lease not released after the recovered commit")
	}
}

// TestPipeline_OversizedTasksTravelThroughS3: tasks larger than one
// message go through the descriptor bucket with a pointer in the message.
func TestPipeline_OversizedTasksTravelThroughS3(t *testing.T) {
	e := setup(t, func(c *config.Config) { c.InlineTaskBytes = 64 })
	e.createTable(smallTable)
	want := e.fingerprint()
	r := e.plan()
	msgs, err := e.deps.Tasks.Receive(e.ctx, 10, 0, 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(msgs) == 0 || !strings.Contains(msgs[0].Body, `"scan_tasks_key"`) {
		t.Fatalf("task message is not a pointer: %v", msgs)
	}
	for _, m := range msgs {
		if err := e.deps.Tasks.Release(e.ctx, m.ReceiptHandle, 0); err != nil {
			t.Fatal(err)
		}
	}
	e.drainTasks()
	e.drainCommits()
	e.requireCommitted(r.JobID, want)
}
