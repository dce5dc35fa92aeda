package tests

import (
	"fmt"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/harness/churn"
	"github.com/icekeeper/icekeeper/shared/harness/fingerprint"
	"github.com/icekeeper/icekeeper/shared/harness/sampletable"
	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/plan"
)

// TestRebase_JobsUnderABusyWriterCommitAndKeepEveryRow: a writer commits
// appends and merge-on-read deletes (position delete files on v2, deletion
// vectors on v3) to the table's partitions every few milliseconds, the
// same change to a twin table nothing maintains, while jobs plan, rewrite
// and commit one after another. Every job commits (its deletes rebased),
// and when the writer stops the table holds exactly the twin's rows: none
// lost, duplicated or resurrected.
func TestRebase_JobsUnderABusyWriterCommitAndKeepEveryRow(t *testing.T) {
	for _, version := range []int{2, 3} {
		t.Run(fmt.Sprintf("v%d", version), func(t *testing.T) {
			// The writer commits every 150 ms, and a commit attempt on a
			// loaded machine (CI running other tests alongside) can take
			// longer: the default retry budget could run out, which aborts
			// the job with every row kept but is not what this test is
			// about (the rebase). More attempts keep it about the rebase.
			e := setup(t, func(c *config.Config) { c.CommitRetries = 30 })
			opts := smallTable
			opts.FormatVersion = version
			e.createTable(opts)
			twin := table.Identifier{e.ident[0], e.ident[1] + "_twin"}
			if _, err := sampletable.Create(e.ctx, e.cat, twin, opts); err != nil {
				t.Fatal(err)
			}
			if got, want := e.fingerprint(), e.twinFingerprint(twin); got != want {
				t.Fatalf("the twin starts with other rows: %s, want %s", want, got)
			}
			w := churn.Start(e.ctx, e.cat, e.ident, twin, churn.Options{
				Interval: 150 * time.Millisecond, Partitions: opts.Partitions, AppendPerPartition: 5, Deletes: 4,
				SampleRows: int64(opts.Partitions * opts.Files * opts.RowsPerFile), FirstID: 1_000_000, Seed: uint64(version),
			})
			const jobsToRun = 6
			var committed int
			for i := 0; i < jobsToRun; i++ {
				r := e.plan()
				for tries := 0; r.Outcome == plan.OutcomeNothingToDo && tries < 50; tries++ {
					time.Sleep(40 * time.Millisecond) // the writer adds small files
					r = e.plan()
				}
				if r.Outcome != plan.OutcomePlanned {
					t.Fatalf("job %d: %s (%s)", i+1, r.Outcome, r.Reason)
				}
				e.drainTasks()
				time.Sleep(400 * time.Millisecond) // the writer commits on the job's files
				e.drainCommits()
				j := e.job(r.JobID)
				if j.State == jobs.Committed {
					committed++
				} else {
					t.Errorf("job %d %s (%s)", i+1, j.State, j.Reason)
				}
			}
			st, err := w.Stop()
			if err != nil {
				t.Fatalf("writer: %v", err)
			}
			if st.Commits < jobsToRun {
				t.Fatalf("the writer committed %d times during %d jobs; the test needs it busy", st.Commits, jobsToRun)
			}
			rebased := int(e.metrics.metricTotals(t)["DeletesRebased/"+e.name()])
			t.Logf("%d of %d jobs committed, %d concurrent delete files rebased; writer: %+v", committed, jobsToRun, rebased, st)
			if rebased == 0 {
				t.Fatal("no job rebased a delete; the writer did not write on the jobs' files")
			}
			if got, want := e.fingerprint(), e.twinFingerprint(twin); got != want {
				t.Fatalf("rows %s, the twin's %s: maintenance lost, duplicated or resurrected rows", got, want)
			}
		})
	}
}

func (e *env) twinFingerprint(twin table.Identifier) fingerprint.Fingerprint {
	e.t.Helper()
	tbl, err := e.cat.LoadTable(e.ctx, twin)
	if err != nil {
		e.t.Fatal(err)
	}
	f, err := fingerprint.Table(e.ctx, tbl)
	if err != nil {
		e.t.Fatal(err)
	}
	return f
}
