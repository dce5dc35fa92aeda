package tests

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/commit"
	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/harness/fingerprint"
	"github.com/icekeeper/icekeeper/shared/harness/sampletable"
	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/messages"
	"github.com/icekeeper/icekeeper/shared/plan"
)

// interloper is a catalog that lets a concurrent writer commit right after
// the committer loaded the table, so the committer's commit meets a stale
// base (the sql catalog answers with a plain "requirement failed").
type interloper struct {
	commit.Catalog
	loads int
	// at is the load after which the writer commits, and alsoAt (if not
	// 0) one after which it commits again.
	at, alsoAt int
	write      func(*table.Table)
	fired      bool
}

func (c *interloper) LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error) {
	tbl, err := c.Catalog.LoadTable(ctx, ident)
	c.loads++
	if err == nil && (c.loads == c.at || c.loads == c.alsoAt) {
		c.fired = true
		c.write(tbl)
	}
	return tbl, err
}

// TestCommitter_StaleBaseIsReloadedRevalidatedAndRebuilt: a writer commits
// between the committer's load and its commit. An append is merged by
// reload, re-validate and rebuild. A position delete on a rewritten file is
// found by the re-validation and rebased onto the new files, so its rows
// stay deleted; a second one landing during the rebase round makes that
// round conflict too, and the next round rebases both (the conflicting
// round's delete files are removed). Another tool undoing a delete the job
// applied aborts the job, so the rows it brought back stay visible.
func TestCommitter_StaleBaseIsReloadedRevalidatedAndRebuilt(t *testing.T) {
	const anyDelta = -1 << 62
	tests := []struct {
		name      string
		alsoAt    int
		write     func(t *testing.T, e *env, tbl *table.Table, n int)
		rowDelta  int64
		wantState jobs.State
		why       string
	}{
		{"append", 0, func(t *testing.T, e *env, tbl *table.Table, _ int) {
			if _, err := sampletable.AppendRows(e.ctx, tbl, 2_000_000, 2, 10); err != nil {
				t.Fatal(err)
			}
		}, +20, jobs.Committed, ""},
		{"position delete on a rewritten file", 0, func(t *testing.T, e *env, tbl *table.Table, _ int) {
			if _, err := sampletable.DeleteByPosition(e.ctx, tbl, []int64{12, 13}); err != nil {
				t.Fatal(err)
			}
		}, -2, jobs.Committed, ""},
		{"position deletes before and during the rebase round", 2, func(t *testing.T, e *env, tbl *table.Table, n int) {
			if _, err := sampletable.DeleteByPosition(e.ctx, tbl, []int64{int64(12 + 2*n), int64(13 + 2*n)}); err != nil {
				t.Fatal(err)
			}
		}, -4, jobs.Committed, ""},
		{"another tool undoes a delete the job applied", 0, func(t *testing.T, e *env, tbl *table.Table, _ int) {
			e.undeleteConcurrently()
		}, anyDelta, jobs.Aborted, undoneDelete},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			overCatalogs(t, func(t *testing.T, e *env) {
				e.createTable(smallTable)
				before := e.fingerprint()
				r := e.plan()
				e.drainTasks()

				// want is the table as the concurrent writer left it, read
				// before the committer can touch it again.
				var want fingerprint.Fingerprint
				ic := &interloper{Catalog: e.cat, at: 1, alsoAt: tc.alsoAt}
				writes := 0
				ic.write = func(tbl *table.Table) {
					tc.write(t, e, tbl, writes)
					writes++
					want = e.fingerprint()
				}
				c, err := commit.New(commit.Settings{LeaseTTL: time.Minute, MaxRetries: 3, Backoff: time.Millisecond, CommitTakeover: time.Hour},
					ic, e.deps.Jobs, e.deps.Leases, e.deps.Blobs, e.deps.Tables, nil, nil, commit.Options{Metrics: e.deps.Metrics})
				if err != nil {
					t.Fatal(err)
				}
				res, err := c.Handle(e.ctx, messages.CommitJob(r.JobID), 1)
				if err != nil {
					t.Fatalf("commit: %v", err)
				}
				if !ic.fired {
					t.Fatal("the concurrent writer never ran")
				}
				if tc.rowDelta != anyDelta && want.Rows != before.Rows+tc.rowDelta {
					t.Fatalf("the concurrent writer left %d rows, want %d%+d", want.Rows, before.Rows, tc.rowDelta)
				}
				j := e.job(r.JobID)
				if j.State != tc.wantState {
					t.Fatalf("job %s (%s), want %s", j.State, j.Reason, tc.wantState)
				}
				if tc.wantState == jobs.Committed {
					if res.Retries < 1 {
						t.Fatalf("committed without meeting the conflict: %+v", res)
					}
					if m := e.metrics.metricTotals(t); m["CommitConflicts"] < 1 || m["CommitRetries"] < 1 {
						t.Fatalf("conflict and retry not counted: %v", m)
					}
					if e.jobSnapshots(r.JobID) != 1 {
						t.Fatal("want exactly one job snapshot")
					}
					if tc.alsoAt > 0 && res.Conflicts < 2 {
						t.Fatalf("the second write did not make the rebase round conflict: %+v", res)
					}
					e.requireNoDanglingDeletes(r.JobID)
					e.requireRebasedFilesLive(r.JobID)
				}
				if tc.wantState == jobs.Aborted && !strings.Contains(j.Reason, tc.why) {
					t.Fatalf("abort reason %q, want %q", j.Reason, tc.why)
				}
				if got := e.fingerprint(); got != want {
					t.Fatalf("rows %s, want %s", got, want)
				}
			})
		})
	}
}

// TestPlanner_TakingOverAnExpiredLeaseEndsTheOldJob: job A's lease expires
// before its rewriters run (as if the pipeline stalled) and a new planner
// takes the table over for job B. A's tasks are dropped (not retried, not
// dead-lettered), the committer ends A and removes what it wrote, and B
// compacts the table.
func TestPlanner_TakingOverAnExpiredLeaseEndsTheOldJob(t *testing.T) {
	e := setup(t, func(c *config.Config) { c.LeaseTTL = 20 * time.Millisecond })
	e.createTable(smallTable)
	want := e.fingerprint()
	a := e.plan()
	time.Sleep(50 * time.Millisecond)
	b := e.plan()
	if b.Outcome != plan.OutcomePlanned {
		t.Fatalf("takeover plan: %s (%s)", b.Outcome, b.Reason)
	}
	st := e.drainTasks()
	if st.Failed != 0 {
		t.Fatalf("stale tasks were failed (would be retried): %+v", st)
	}
	e.drainCommits()
	ja := e.job(a.JobID)
	if ja.State != jobs.Failed || !strings.Contains(ja.Reason, b.JobID) {
		t.Fatalf("old job %s (%s), want failed, superseded by %s", ja.State, ja.Reason, b.JobID)
	}
	if e.jobSnapshots(a.JobID) != 0 {
		t.Fatal("the superseded job committed")
	}
	e.requireCommitted(b.JobID, want)
	if n, _ := e.dlq(e.ctx); n != 0 {
		t.Fatalf("%d stale tasks dead-lettered", n)
	}
}
