package interop

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/icekeeper/icekeeper/shared/health"
	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/plan"
)

// An action is one of icekeeper's maintenance jobs, run through the whole
// pipeline (planner, rewriters, committer).
type action string

const (
	compact          action = "compact"
	rewriteDeletes   action = "rewrite-deletes"
	rewriteManifests action = "rewrite-manifests"
	expire           action = "expire"
	removeOrphans    action = "remove-orphans"
)

// everyAction is the order a case runs them in: the delete-file and
// manifest rewrites while the writers' deletes and manifests are there,
// then compaction, then the two that delete files.
var everyAction = []action{rewriteDeletes, rewriteManifests, compact, expire, removeOrphans}

// Results of a job, as the matrix shows them.
const (
	resultKept    = "kept every row"
	resultNothing = "nothing to do"
	resultRefused = "refused"
	resultDamaged = "DAMAGED"
)

// outcome is what one action did to one table.
type outcome struct {
	Action action
	Result string
	// Detail is the refusal's reason or the damage found.
	Detail string
	// Job is the job's id, for a failing test's message.
	Job string
}

func (o outcome) String() string {
	if o.Detail == "" {
		return fmt.Sprintf("%s: %s", o.Action, o.Result)
	}
	return fmt.Sprintf("%s: %s (%s)", o.Action, o.Result, o.Detail)
}

// maintain runs one action on the table and checks, through Spark, that
// it changed nothing a reader sees and deleted nothing anyone needs.
func (w *world) maintain(a action) outcome {
	w.t.Helper()
	w.icekeeper()
	before := w.read()
	beforeMeta := w.load().MetadataLocation()
	var orphan string
	if a == removeOrphans {
		orphan = w.plantOrphan()
	}
	out := outcome{Action: a}
	res, err := w.plan(a)
	switch {
	case err != nil:
		out.Result, out.Detail = resultRefused, err.Error()
	case res.Outcome == plan.OutcomeNothingToDo:
		out.Result, out.Detail = resultNothing, res.Reason
	case res.Outcome != plan.OutcomePlanned:
		out.Result, out.Detail = resultRefused, fmt.Sprintf("%s: %s", res.Outcome, res.Reason)
	default:
		out.Job = res.JobID
		w.drain()
		switch j := w.job(res.JobID); j.State {
		case jobs.Committed:
			out.Result = resultKept
		case jobs.Failed, jobs.Aborted:
			out.Result, out.Detail = resultRefused, fmt.Sprintf("job %s: %s", j.State, j.Reason)
		default:
			out.Result, out.Detail = resultDamaged, fmt.Sprintf("job %s did not end: %s", res.JobID, j.State)
		}
	}
	after := w.read()
	bad := w.requireSame(before, after, a == expire)
	bad = append(bad, w.requireFilesOnStorage()...)
	bad = append(bad, w.agreeWithSpark()...)
	bad = append(bad, w.agreeWithPyIceberg(beforeMeta, after)...)
	if orphan != "" && out.Result == resultKept {
		if _, err := os.Stat(orphan); err == nil {
			bad = append(bad, "the planted orphan file is still there")
		}
	}
	if len(bad) > 0 {
		out.Result, out.Detail = resultDamaged, strings.Join(bad, "; ")
	}
	w.t.Logf("%s", out)
	return out
}

func (w *world) plan(a action) (plan.Result, error) {
	name := "db.t"
	switch a {
	case compact:
		return w.planner.PlanTable(w.ctx, name, "interop")
	case rewriteDeletes:
		return w.planner.PlanDeleteRewrite(w.ctx, name, "interop")
	case rewriteManifests:
		return w.planner.PlanManifestRewrite(w.ctx, name, "interop")
	case expire:
		return w.planner.PlanExpiry(w.ctx, name, "interop")
	case removeOrphans:
		return w.planner.PlanOrphanCleanup(w.ctx, name, "interop", 0)
	}
	return plan.Result{}, fmt.Errorf("unknown action %s", a)
}

// orphanAge is how old every file of the table is made before an orphan
// cleanup: older than the safety age, so that only the live-set check
// keeps the table's files.
const orphanAge = 30 * 24 * time.Hour

// plantOrphan writes a file no snapshot references under the table's data
// folder (as a failed Spark task leaves one) and ages every file of the
// table past the orphan safety age.
func (w *world) plantOrphan() string {
	w.t.Helper()
	root := localPath(w.load().Location())
	p := filepath.Join(root, "data", "00000-0-interop-orphan-00001.parquet")
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		w.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("PAR1 not a real file PAR1"), 0o644); err != nil {
		w.t.Fatal(err)
	}
	old := time.Now().Add(-orphanAge)
	err := filepath.Walk(root, func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() {
			return err
		}
		return os.Chtimes(path, old, old)
	})
	if err != nil {
		w.t.Fatal(err)
	}
	return p
}

// agreeWithSpark compares icekeeper's view of the current snapshot (its
// health measure) with Spark's metadata tables.
func (w *world) agreeWithSpark() []string {
	st, err := health.Measure(w.ctx, w.load())
	if err != nil {
		return []string{fmt.Sprintf("icekeeper cannot measure the table: %v", err)}
	}
	var bad []string
	count := func(q string) int {
		raw := w.sql("%s", q)
		var c struct {
			N int `json:"n"`
		}
		mustUnmarshal(w, raw[0], &c)
		return c.N
	}
	if n := count("SELECT count(*) AS n FROM {t}.data_files"); n != st.DataFiles {
		bad = append(bad, fmt.Sprintf("Spark counts %d data files, icekeeper %d", n, st.DataFiles))
	}
	if n := count("SELECT count(*) AS n FROM {t}.delete_files"); n != st.DeleteFiles() {
		bad = append(bad, fmt.Sprintf("Spark counts %d delete files, icekeeper %d", n, st.DeleteFiles()))
	}
	if n := count("SELECT count(*) AS n FROM {t}.snapshots"); n != st.Snapshots {
		bad = append(bad, fmt.Sprintf("Spark counts %d snapshots, icekeeper %d", n, st.Snapshots))
	}
	return bad
}
