package tests

import (
	"testing"

	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/plan"
	"github.com/icekeeper/icekeeper/shared/sampletable"
)

// TestPlanner_AJobTakesAtMostMaxJobFilesAndLeavesTheRestForTheNextJobs: a
// compaction of more files than one committer can commit
// (ICEKEEPER_MAX_JOB_FILES, here 12 of 40 small files in 4 partitions of
// 10) takes whole groups up to that many files, says what it left
// (deferred_groups, deferred_bytes), and the next jobs take the rest until
// nothing is left to compact; the rows never change.
func TestPlanner_AJobTakesAtMostMaxJobFilesAndLeavesTheRestForTheNextJobs(t *testing.T) {
	const maxFiles = 12
	e := setup(t, func(c *config.Config) { c.MaxJobFiles = maxFiles })
	e.createTable(sampletable.Options{FormatVersion: 2, Partitions: 4, Files: 10, RowsPerFile: 200, PositionDeletes: true})
	want := e.fingerprint()
	files := int64(len(e.liveTasks()))

	var jobs int
	var compacted int64
	for {
		r := e.plan()
		if r.Outcome == plan.OutcomeNothingToDo {
			break
		}
		if r.Outcome != plan.OutcomePlanned {
			t.Fatalf("job %d: %s (%s)", jobs+1, r.Outcome, r.Reason)
		}
		jobs++
		if r.InputFiles > maxFiles || r.InputFiles == 0 {
			t.Fatalf("job %d takes %d files, want 1 to %d", jobs, r.InputFiles, maxFiles)
		}
		if left := files - compacted - r.InputFiles; left > 0 && (r.DeferredGroups == 0 || r.DeferredBytes == 0) {
			t.Fatalf("job %d leaves %d files but says it deferred %d groups, %d bytes", jobs, left, r.DeferredGroups, r.DeferredBytes)
		}
		compacted += r.InputFiles
		e.drainTasks()
		e.drainCommits()
		e.requireCommitted(r.JobID, want)
		if jobs > 10 {
			t.Fatal("more than 10 jobs for 40 files")
		}
	}
	if jobs < 4 || compacted != files {
		t.Fatalf("%d jobs compacted %d of %d files: want one per partition (a group is a partition's 10 files) and every file", jobs, compacted, files)
	}
	if got := len(e.liveTasks()); got != 4 {
		t.Fatalf("%d files left, want one per partition", got)
	}
}
