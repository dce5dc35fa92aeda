package tests

import (
	"testing"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/icekeeper/icekeeper/shared/harness/sampletable"
	"github.com/icekeeper/icekeeper/shared/health"
	"github.com/icekeeper/icekeeper/shared/optin"
	"github.com/icekeeper/icekeeper/shared/plan"
)

// TestPlanner_TheTablesMinInputFilesCompactsAFewSmallFiles: three small
// files a partition that together do not fill a target file are three
// times the partition's optimal file count: with min-input-files unset,
// the file-count goal compacts them (the health report recommends it);
// once the owner sets icekeeper.compaction.min-input-files to Iceberg's 5,
// theirs stands and they are left, in the plan and in the health report
// alike; set to 3, one job compacts each partition into one file, with
// the same rows, and the table is healthy by the same rule.
func TestPlanner_TheTablesMinInputFilesCompactsAFewSmallFiles(t *testing.T) {
	e := setup(t)
	e.createTable(sampletable.Options{FormatVersion: 2, Partitions: 2, Files: 3, RowsPerFile: 50})
	if got := e.filesPerRegion(); got["region-00"] != 3 || got["region-01"] != 3 {
		t.Fatalf("files per region %v, want 3 each", got)
	}
	rep, err := health.Assess(e.ctx, e.load(), time.Now(), mustThresholds(t, e))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := rep.Recommends(health.ActionCompaction); !ok || rep.Thresholds.FileCountGoal != health.DefaultFileCountGoal {
		t.Fatalf("health with min-input-files unset: compaction not recommended for 3 files a partition (thresholds %+v)", rep.Thresholds)
	}

	e.setProperties(iceberg.Properties{optin.PropertyCompactionMinInputFiles: "5"})
	if r := e.plan(); r.Outcome != plan.OutcomeNothingToDo {
		t.Fatalf("plan with the owner's min-input-files=5: %s (%s), want nothing to do", r.Outcome, r.Reason)
	}
	if rep, err = health.Assess(e.ctx, e.load(), time.Now(), mustThresholds(t, e)); err != nil {
		t.Fatal(err)
	}
	if rec, ok := rep.Recommends(health.ActionCompaction); ok {
		t.Fatalf("health recommends compaction with the owner's min-input-files=5: %+v", rec)
	}

	e.setProperties(iceberg.Properties{optin.PropertyCompactionMinInputFiles: "3"})
	want := e.fingerprint()
	rep, err = health.Assess(e.ctx, e.load(), time.Now(), mustThresholds(t, e))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := rep.Recommends(health.ActionCompaction); !ok || rep.Thresholds.MinInputFiles != 3 {
		t.Fatalf("health with min-input-files=3: compaction not recommended (thresholds %+v)", rep.Thresholds)
	}
	r := e.plan()
	if r.Outcome != plan.OutcomePlanned {
		t.Fatalf("plan with min-input-files=3: %s (%s)", r.Outcome, r.Reason)
	}
	e.drainTasks()
	e.drainCommits()
	e.requireCommitted(r.JobID, want)
	if got := e.filesPerRegion(); got["region-00"] != 1 || got["region-01"] != 1 {
		t.Fatalf("files per region %v after the job, want 1 each", got)
	}
	if r := e.plan(); r.Outcome != plan.OutcomeNothingToDo {
		t.Fatalf("plan after the job: %s (%s), want nothing to do", r.Outcome, r.Reason)
	}
}
