package tests

import (
	"testing"

	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/lease"
	"github.com/icekeeper/icekeeper/shared/outputs"
	"github.com/icekeeper/icekeeper/shared/plan"
)

// TestCleanup_TheNextJobRemovesRebasedDeletesAFailedJobLeft: a compaction
// whose committer died in a rebase round, after writing rebased delete
// files, and that then ended failed without its own clean-up, leaves
// files named for its rebase attempt that no record lists. The table's
// next planning removes them; the table's rows and live files stay.
func TestCleanup_TheNextJobRemovesRebasedDeletesAFailedJobLeft(t *testing.T) {
	e := setup(t)
	e.createTable(smallTable)
	want := e.fingerprint()
	r := e.plan()
	if r.Outcome != plan.OutcomePlanned {
		t.Fatalf("plan: %+v", r)
	}
	j := e.job(r.JobID)
	run, err := outputs.RunID(jobs.RebaseAttempt(j.ID, 0), 7)
	if err != nil {
		t.Fatal(err)
	}
	left := e.plant("data/region=region-00/00000-0-"+run.String()+"-deletes.parquet", 0)
	if err := e.deps.Jobs.Transition(e.ctx, j.ID, []jobs.State{jobs.Planned, jobs.Running}, jobs.Failed, "test: committer died in a rebase round"); err != nil {
		t.Fatal(err)
	}
	if err := e.deps.Leases.Release(e.ctx, lease.Lease{Table: j.Table, Owner: j.ID, Token: j.Token}); err != nil {
		t.Fatal(err)
	}
	live := e.dataFilesOnDisk()
	r2 := e.plan()
	if exists(left) {
		t.Fatalf("the failed job's rebased delete file is still there: %s (next planning %+v)", left, r2)
	}
	for p := range live {
		if !exists(p) && e.isLive(p) {
			t.Fatalf("a live file is gone: %s", p)
		}
	}
	if got := e.fingerprint(); got != want {
		t.Fatalf("rows %s, want %s", got, want)
	}
}
