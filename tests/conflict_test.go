package tests

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/commit"
	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/messages"
	"github.com/icekeeper/icekeeper/shared/sampletable"
)

// interloper is a catalog that lets a concurrent writer commit right after
// the committer loaded the table, so the committer's commit meets a stale
// base (the sql catalog answers with a plain "requirement failed").
type interloper struct {
	commit.Catalog
	loads int
	at    int
	write func(*table.Table)
	fired bool
}

func (c *interloper) LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error) {
	tbl, err := c.Catalog.LoadTable(ctx, ident)
	c.loads++
	if err == nil && c.loads == c.at && !c.fired {
		c.fired = true
		c.write(tbl)
	}
	return tbl, err
}

// TestCommitter_StaleBaseIsReloadedRevalidatedAndRebuilt: a writer commits
// between the committer's load and its commit. An append is merged by
// reload, re-validate and rebuild; a position delete on a rewritten file is
// caught by the re-validation and aborts the job, so its rows stay deleted.
func TestCommitter_StaleBaseIsReloadedRevalidatedAndRebuilt(t *testing.T) {
	tests := []struct {
		name      string
		write     func(t *testing.T, e *env, tbl *table.Table)
		wantState jobs.State
	}{
		{"append", func(t *testing.T, e *env, tbl *table.Table) {
			if _, err := sampletable.AppendRows(e.ctx, tbl, 2_000_000, 2, 10); err != nil {
				t.Fatal(err)
			}
		}, jobs.Committed},
		{"position delete on a rewritten file", func(t *testing.T, e *env, tbl *table.Table) {
			if _, err := sampletable.DeleteByPosition(e.ctx, tbl, []int64{12, 13}); err != nil {
				t.Fatal(err)
			}
		}, jobs.Aborted},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := setup(t)
			e.createTable(smallTable)
			r := e.plan()
			e.drainTasks()

			ic := &interloper{Catalog: e.cat, at: 1}
			ic.write = func(tbl *table.Table) { tc.write(t, e, tbl) }
			c, err := commit.New(commit.Settings{LeaseTTL: time.Minute, MaxRetries: 3, Backoff: time.Millisecond, CommitTakeover: time.Hour},
				ic, e.deps.Jobs, e.deps.Leases, e.deps.Blobs, e.deps.Tables, nil, nil)
			if err != nil {
				t.Fatal(err)
			}
			res, err := c.Handle(e.ctx, messages.CommitRequest{Version: messages.FormatVersion, JobID: r.JobID}, 1)
			if err != nil {
				t.Fatalf("commit: %v", err)
			}
			if !ic.fired {
				t.Fatal("the concurrent writer never ran")
			}
			want := e.fingerprint() // the table as the writers left it
			j := e.job(r.JobID)
			if j.State != tc.wantState {
				t.Fatalf("job %s (%s), want %s", j.State, j.Reason, tc.wantState)
			}
			if tc.wantState == jobs.Committed {
				if res.Retries < 1 {
					t.Fatalf("committed without meeting the conflict: %+v", res)
				}
				if e.jobSnapshots(r.JobID) != 1 {
					t.Fatal("want exactly one job snapshot")
				}
			}
			if tc.wantState == jobs.Aborted && !strings.Contains(j.Reason, "position delete") {
				t.Fatalf("abort reason %q", j.Reason)
			}
			if got := e.fingerprint(); got != want {
				t.Fatalf("rows %s, want %s", got, want)
			}
		})
	}
}

// TestRewriter_TaskOfAJobThatLostItsLeaseIsDropped: when the job's lease
// expired before a rewriter got to its task, the task is dropped (not
// retried, not dead-lettered) and the committer ends the job.
func TestRewriter_TaskOfAJobThatLostItsLeaseIsDropped(t *testing.T) {
	e := setup(t, func(c *config.Config) { c.LeaseTTL = time.Millisecond })
	e.createTable(smallTable)
	want := e.fingerprint()
	r := e.plan()
	time.Sleep(5 * time.Millisecond)
	st := e.drainTasks()
	if st.Failed != 0 {
		t.Fatalf("stale tasks were failed (would be retried): %+v", st)
	}
	e.drainCommits()
	j := e.job(r.JobID)
	if j.State != jobs.Failed || !strings.Contains(j.Reason, "lease lost") {
		t.Fatalf("job %s (%s), want failed: lease lost", j.State, j.Reason)
	}
	if got := e.fingerprint(); got != want || e.jobSnapshots(r.JobID) != 0 {
		t.Fatalf("rows %s want %s, snapshots %d", got, want, e.jobSnapshots(r.JobID))
	}
	if n, _ := e.dlq(e.ctx); n != 0 {
		t.Fatalf("%d stale tasks dead-lettered", n)
	}
}
