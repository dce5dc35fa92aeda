package tests

import (
	"strings"
	"testing"

	"github.com/icekeeper/icekeeper/shared/joblog"
)

// TestJobLog_EveryJobLeavesACompleteRecord: a committed job and an aborted
// one each leave a maintenance log record with what they did.
func TestJobLog_EveryJobLeavesACompleteRecord(t *testing.T) {
	e := setup(t)
	e.createTable(smallTable)
	before := e.stats()
	want := e.fingerprint()

	// An aborted job: another tool undoes a delete the job applied.
	aborted := e.plan()
	e.drainTasks()
	e.undeleteConcurrently()
	e.drainCommits()
	// A committed one.
	want = e.fingerprint()
	committed := e.plan()
	e.drainTasks()
	e.drainCommits()
	e.requireCommitted(committed.JobID, want)

	records, err := joblog.New(e.deps.Blobs).Read(e.ctx, e.name(), 0)
	if err != nil {
		t.Fatal(err)
	}
	if len(records) != 2 || records[0].JobID != committed.JobID || records[1].JobID != aborted.JobID {
		t.Fatalf("records %+v, want the committed job then the aborted one (newest first)", records)
	}
	c, a := records[0], records[1]
	if c.Outcome != "committed" || int64(c.CommittedSnapshotID) != e.load().CurrentSnapshot().SnapshotID || c.Trigger != "test" {
		t.Fatalf("committed record %+v", c)
	}
	if c.Before == nil || c.After == nil || c.Before.DataFiles != before.DataFiles || c.After.DataFiles != committed.Groups || c.After.DeleteFiles != 0 {
		t.Fatalf("before/after %+v %+v", c.Before, c.After)
	}
	if c.FilesIn != int64(before.DataFiles) || c.FilesOut != int64(committed.Groups) || c.RowsOut != want.Rows || c.BytesOut <= 0 || c.DeletedRows <= 0 {
		t.Fatalf("files, bytes or rows: %+v", c)
	}
	if c.RewriteMillis <= 0 || c.CommitMillis < 0 || c.Cost.USD <= 0 || c.Cost.LambdaGBSeconds <= 0 || c.Cost.S3Gets <= 0 {
		t.Fatalf("durations or cost: %+v", c)
	}
	if c.Parameters.LeaseToken == 0 || c.Parameters.SequenceNumber == 0 || c.PinnedMetadata == "" {
		t.Fatalf("parameters %+v", c)
	}
	if a.Outcome != "aborted" || !strings.Contains(a.Reason, undoneDelete) || a.After != nil || a.Before == nil || a.CommittedSnapshotID != 0 {
		t.Fatalf("aborted record %+v", a)
	}
}
