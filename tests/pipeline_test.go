package tests

import (
	"maps"
	"testing"

	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/harness/sampletable"
	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/plan"
)

// TestPipeline_CompactsAndKeepsEveryRow runs the whole pipeline on each kind
// of merge-on-read table and checks the live rows are exactly the same
// multiset before and after, with fewer files and no delete files left.
func TestPipeline_CompactsAndKeepsEveryRow(t *testing.T) {
	tests := []struct {
		name string
		opts sampletable.Options
	}{
		{"position deletes v2", sampletable.Options{FormatVersion: 2, Partitions: 1, Files: 6, RowsPerFile: 200, PositionDeletes: true}},
		{"deletion vectors v3", sampletable.Options{FormatVersion: 3, Partitions: 1, Files: 6, RowsPerFile: 200, PositionDeletes: true}},
		{"equality deletes", sampletable.Options{FormatVersion: 2, Partitions: 1, Files: 6, RowsPerFile: 200, EqualityDeletes: true}},
		{"partitioned, all delete kinds", sampletable.Options{FormatVersion: 2, Partitions: 3, Files: 6, RowsPerFile: 100, PositionDeletes: true, EqualityDeletes: true}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := setup(t)
			e.createTable(tc.opts)
			before, statsBefore := e.fingerprint(), e.stats()
			if statsBefore.DeleteFiles() == 0 && (tc.opts.PositionDeletes || tc.opts.EqualityDeletes) {
				t.Fatalf("sample table has no delete files: %+v", statsBefore)
			}

			r := e.plan()
			if r.Outcome != plan.OutcomePlanned {
				t.Fatalf("plan outcome %s (%s)", r.Outcome, r.Reason)
			}
			if want := max(tc.opts.Partitions, 1); r.Groups != want {
				t.Fatalf("groups = %d, want %d (one per partition)", r.Groups, want)
			}
			e.drainTasks()
			e.drainCommits()

			j := e.job(r.JobID)
			if j.State != jobs.Committed {
				t.Fatalf("job state %s (%s), want committed", j.State, j.Reason)
			}
			after, statsAfter := e.fingerprint(), e.stats()
			if after != before {
				t.Fatalf("rows changed: before %s, after %s", before, after)
			}
			if statsAfter.DataFiles != r.Groups {
				t.Fatalf("data files after = %d, want %d", statsAfter.DataFiles, r.Groups)
			}
			if statsAfter.DeleteFiles() != 0 {
				t.Fatalf("delete files left: %+v", statsAfter)
			}
			if n := e.jobSnapshots(r.JobID); n != 1 {
				t.Fatalf("snapshots stamped with the job: %d, want 1", n)
			}
			if j.CommittedSnapshotID != e.load().CurrentSnapshot().SnapshotID {
				t.Fatalf("job records snapshot %d, table is at %d", j.CommittedSnapshotID, e.load().CurrentSnapshot().SnapshotID)
			}
		})
	}
}

// TestPlanner_AJobOfManyGroupsSendsEveryTask: the planner encodes and
// sends tasks ten at a time; a job of 23 groups (three batches, the last
// partial) gets every task, once, and commits every row.
func TestPlanner_AJobOfManyGroupsSendsEveryTask(t *testing.T) {
	e := setup(t)
	e.createTable(sampletable.Options{FormatVersion: 2, Partitions: 23, Files: 5, RowsPerFile: 10})
	want := e.fingerprint()
	r := e.plan()
	if r.Outcome != plan.OutcomePlanned || r.Groups != 23 {
		t.Fatalf("plan: %s, %d groups (%s); want 23", r.Outcome, r.Groups, r.Reason)
	}
	st := e.drainTasks()
	if st.Delivered != 23 || st.Failed != 0 {
		t.Fatalf("rewriters: %d deliveries, %d failed; want 23 tasks, once each", st.Delivered, st.Failed)
	}
	e.drainCommits()
	e.requireCommitted(r.JobID, want)
	if s := e.stats(); s.DataFiles != 23 {
		t.Fatalf("%d data files after the job, want one per partition", s.DataFiles)
	}
}

// TestPipeline_ACompactionLeavesTheOwnersPropertiesAsTheyAre: iceberg-go's
// rewrite sets schema.name-mapping.default on a table that has none (Spark
// and Iceberg Java's tables have none); icekeeper's compaction must not:
// Iceberg Java's RewriteFiles changes no property.
func TestPipeline_ACompactionLeavesTheOwnersPropertiesAsTheyAre(t *testing.T) {
	e := setup(t)
	e.createTable(smallTable)
	txn := e.load().NewTransaction()
	if err := txn.RemoveProperties([]string{table.DefaultNameMappingKey}); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(e.ctx); err != nil {
		t.Fatal(err)
	}
	before := e.load().Properties()
	if _, ok := before[table.DefaultNameMappingKey]; ok {
		t.Fatal("the table still has a name mapping: the test proves nothing")
	}
	e.compactAndRequireSame()
	after := e.load().Properties()
	if !maps.Equal(before, after) {
		t.Fatalf("properties changed:\nbefore %v\nafter  %v", before, after)
	}
}
