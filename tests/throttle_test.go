package tests

import (
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/harness/sampletable"
	"github.com/icekeeper/icekeeper/shared/lease"
	"github.com/icekeeper/icekeeper/shared/plan"
)

// withClock rebuilds the planner with now as its clock (the table's
// snapshots keep the times they were committed at).
func (e *env) withClock(now time.Time) {
	e.t.Helper()
	e.deps.Now = func() time.Time { return now }
	p, err := e.deps.Planner(e.cat)
	if err != nil {
		e.t.Fatal(err)
	}
	e.planner = p
}

// recordConflictAborts records n jobs of the table aborted by concurrent
// commits in a row, as the committer records them.
func (e *env) recordConflictAborts(n int) {
	e.t.Helper()
	for range n {
		if _, err := e.deps.Leases.RecordFailure(e.ctx, e.name(), lease.ClassConflict); err != nil {
			e.t.Fatal(err)
		}
	}
}

// removeFilesOneByOne removes, one commit each, the live data files of a
// region, as another writer's copy-on-write delete would: commits that
// remove files.
func (e *env) removeFilesOneByOne(region string) int {
	e.t.Helper()
	n := 0
	for _, task := range e.liveTasks() {
		if task.File.Partition()[1000] != region {
			continue
		}
		txn := e.load().NewTransaction()
		if err := txn.NewRewrite(iceberg.Properties{"removed-by": "another-writer"}).DeleteFile(task.File).Commit(e.ctx); err != nil {
			e.t.Fatal(err)
		}
		if _, err := txn.Commit(e.ctx); err != nil {
			e.t.Fatal(err)
		}
		n++
	}
	return n
}

// TestPlanner_TheThrottleFollowsTheWritersAndTheConflictAborts: on a
// table whose writers removed files in 6 commits of the last hour (busy),
// in a stack that rewrites 4 groups at once, the planner records the
// throttle's decision and follows it. With 3 conflict aborts in a row
// (their own wait over) it backs off, and says why; with one, the job
// takes 2 of the 4 groups, the job record says why, and the rest waits
// for a later visit (not continued at once); once writes have paused for
// an hour, the table is quiet and the next job takes every group left.
func TestPlanner_TheThrottleFollowsTheWritersAndTheConflictAborts(t *testing.T) {
	e := setup(t, func(c *config.Config) { c.RewriterConcurrency = 4 })
	e.createTable(sampletable.Options{FormatVersion: 2, Partitions: 5, Files: 6, RowsPerFile: 10}) // 6 appends
	if n := e.removeFilesOneByOne("region-04"); n != 6 {                                           // 6 commits removing files; a group per other region
		t.Fatalf("removed %d files of region-04, want 6", n)
	}
	want := e.fingerprint()
	created := time.UnixMilli(e.load().CurrentSnapshot().TimestampMs)

	// Busy, and 3 conflict aborts in a row: backed off once the lease's
	// own wait (10 minutes after the third) is over.
	e.recordConflictAborts(3)
	e.withClock(created.Add(15 * time.Minute))
	r := e.plan()
	if r.Outcome != plan.OutcomeBackedOff || r.Throttle == nil || r.Throttle.Start || r.Throttle.WriterCommits != 12 || r.Throttle.RemovingCommits != 6 || r.Throttle.ConflictAborts != 3 || !strings.Contains(r.Reason, "backed off") {
		t.Fatalf("busy, 3 conflict aborts: %s (%s), throttle %+v; want backed off by the throttle", r.Outcome, r.Reason, r.Throttle)
	}

	// Busy, one conflict abort: half the stack's wave.
	if err := e.deps.Leases.RecordSuccess(e.ctx, e.name()); err != nil {
		t.Fatal(err)
	}
	e.recordConflictAborts(1)
	e.withClock(created.Add(time.Minute))
	r = e.plan()
	if r.Outcome != plan.OutcomePlanned || r.Groups != 2 || r.DeferredGroups != 2 || r.Continues {
		t.Fatalf("busy, 1 conflict abort: %s (%s), %d groups, %d deferred, continues %t; want 2 groups, 2 left for a later visit", r.Outcome, r.Reason, r.Groups, r.DeferredGroups, r.Continues)
	}
	if d := r.Throttle; d == nil || !d.Start || d.MaxGroups != 2 || d.Concurrency != 2 || d.Level != 2 || !strings.Contains(d.Reason, "busy writers") {
		t.Fatalf("throttle %+v; want at most 2 groups, busy writers and a conflict abort", d)
	}
	if j := e.job(r.JobID); j.Throttle != r.Throttle.Reason || j.Continues || j.DeferredGroups != 2 {
		t.Fatalf("job record: throttle %q, continues %t, deferred %d; want the throttle's reason, 2 deferred, not continued", j.Throttle, j.Continues, j.DeferredGroups)
	}
	e.drainTasks()
	e.drainCommits()
	e.requireCommitted(r.JobID, want)

	// Writes paused for an hour, and the commit cleared the conflict
	// aborts: quiet, not bounded.
	e.withClock(created.Add(2 * time.Hour))
	r = e.plan()
	if r.Outcome != plan.OutcomePlanned || r.Groups != 2 || r.DeferredGroups != 0 {
		t.Fatalf("quiet: %s (%s), %d groups, %d deferred; want the 2 groups left", r.Outcome, r.Reason, r.Groups, r.DeferredGroups)
	}
	if d := r.Throttle; d == nil || d.Bounded() || d.Concurrency != 4 || d.WriterCommits != 0 || !strings.Contains(d.Reason, "quiet") {
		t.Fatalf("throttle %+v; want quiet, not bounded, 4 at once", d)
	}
	if j := e.job(r.JobID); j.Throttle != "" {
		t.Fatalf("job record throttle %q; want none for a quiet table", j.Throttle)
	}
	e.drainTasks()
	e.drainCommits()
	e.requireCommitted(r.JobID, want)
	if got := e.filesPerRegion(); len(got) != 4 || got["region-00"] != 1 || got["region-03"] != 1 || got["region-04"] != 0 {
		t.Fatalf("files per region %v; want every region compacted to one file", got)
	}
}
