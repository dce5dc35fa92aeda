package interop

import (
	"reflect"
	"testing"

	"github.com/icekeeper/icekeeper/shared/harness/localrun"
	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/plan"
	committerstage "github.com/icekeeper/icekeeper/shared/stage/committer"
	rewriterstage "github.com/icekeeper/icekeeper/shared/stage/rewriter"
)

// Spark, the reference writer, commits between icekeeper's stages: after
// the planner pinned its snapshot and before the rewriters run, and after
// the rewriters and before the committer. Whatever the committer decides
// (commit, rebase the concurrent deletes, or abort), Spark then reads
// exactly the rows its own writes left.
func TestInterop_SparkCommitsBetweenStagesKeepTheOutcomeTheGuaranteesPromise(t *testing.T) {
	writes := []struct {
		name  string
		write func(w *world)
	}{
		{"MoR DELETE on files the job rewrites", func(w *world) { w.sql("DELETE FROM {t} WHERE id %% 4 = 1") }},
		{"MERGE INTO", func(w *world) {
			w.sql(`MERGE INTO {t} AS t USING (SELECT id FROM range(0, 300, 5)) AS s ON t.id = s.id
				WHEN MATCHED THEN UPDATE SET t.value = -7.0`)
		}},
		{"append", func(w *world) { insertEvents(w, 500, 560, 1) }},
		{"schema change and append", func(w *world) {
			w.sql("ALTER TABLE {t} ADD COLUMN late string")
			w.sql("INSERT INTO {t} SELECT 900, 'c0', timestamp_seconds(1704067200), 'late', 1.0, 'yes'")
		}},
	}
	type between int
	const (
		beforeRewriters between = iota
		beforeCommitter
	)
	for _, wr := range writes {
		for _, when := range []between{beforeRewriters, beforeCommitter} {
			if !runAll() && when == beforeRewriters && wr.name != writes[0].name {
				continue
			}
			name := wr.name + "/before the rewriters"
			if when == beforeCommitter {
				name = wr.name + "/before the committer"
			}
			t.Run(name, func(t *testing.T) {
				w := newWorld(t, kindJDBC)
				morTable(2, "PARTITIONED BY (category)")(w)
				w.icekeeper()
				res, err := w.planner.PlanTable(w.ctx, "db.t", "interop")
				if err != nil || res.Outcome != plan.OutcomePlanned {
					t.Fatalf("plan: %v %s %s", err, res.Outcome, res.Reason)
				}
				rh := rewriterstage.Handler{Rewrite: w.rewriter, Delete: rewriterstage.Deleter(w.deps.Deps, w.cat), List: rewriterstage.Lister(w.deps.Deps, w.cat)}.Handle
				if when == beforeRewriters {
					wr.write(w)
				}
				if _, err := localrun.Drain(w.ctx, w.deps.Tasks, rh, 1, 0); err != nil {
					t.Fatal(err)
				}
				if when == beforeCommitter {
					wr.write(w)
				}
				want := w.read()
				ch := committerstage.Handler{Commit: w.committer}.Handle
				if _, err := localrun.Drain(w.ctx, w.deps.Commits, ch, 1, 0); err != nil {
					t.Fatal(err)
				}
				w.drain()
				j := w.job(res.JobID)
				if !j.State.Terminal() {
					t.Fatalf("job %s did not end: %s", res.JobID, j.State)
				}
				if j.State == jobs.Failed {
					t.Fatalf("job failed, not kept or aborted: %s", j.Reason)
				}
				got := w.read()
				if bad := w.requireSame(want, got, false); len(bad) > 0 {
					t.Fatalf("job %s (%s): %v", j.State, j.Reason, bad)
				}
				if bad := w.requireFilesOnStorage(); len(bad) > 0 {
					t.Fatal(bad)
				}
				if !reflect.DeepEqual(want.current, w.rows("")) {
					t.Fatal("Spark's rows changed")
				}
				t.Logf("job %s: %s", j.State, j.Reason)
			})
		}
	}
}
