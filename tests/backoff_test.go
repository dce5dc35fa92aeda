package tests

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strings"
	"testing"

	"github.com/icekeeper/icekeeper/shared/harness/sampletable"
	"github.com/icekeeper/icekeeper/shared/health"
	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/plan"
	plannerstage "github.com/icekeeper/icekeeper/shared/stage/planner"
	"github.com/icekeeper/icekeeper/shared/trigger"
)

// TestPipeline_TerminalFailureEndsTheJobAtOnceAndRepeatedOnesBackOff: an
// input file vanishes after planning (another tool expired it). No retry
// can read it, so the first delivery fails the group and the job ends,
// with the reason, its files removed and the lease released (the task
// message itself goes on to the dead-letter queue). When the next job fails the same way,
// the table is backed off: the planner leaves it alone and says why.
func TestPipeline_TerminalFailureEndsTheJobAtOnceAndRepeatedOnesBackOff(t *testing.T) {
	e := setup(t)
	e.createTable(smallTable)
	for i := 0; i < 2; i++ {
		r := e.plan()
		if r.Outcome != plan.OutcomePlanned {
			t.Fatalf("job %d: %s (%s)", i+1, r.Outcome, r.Reason)
		}
		victim := ""
		for _, task := range e.liveTasks() {
			victim = strings.TrimPrefix(task.File.FilePath(), "file://")
		}
		restore := e.hideFile(victim)
		e.drainTasks()
		e.drainCommits()
		j := e.job(r.JobID)
		if j.State != jobs.Failed || !strings.Contains(j.Reason, "delivery 1") {
			t.Fatalf("job %d: %s (%s), want failed on the first delivery", i+1, j.State, j.Reason)
		}
		if left := e.jobFilesOnDisk(r.JobID); len(left) > 0 {
			t.Fatalf("job %d left %d files", i+1, len(left))
		}
		// Put the file back so that only the failure's kind carries over.
		restore()
	}
	r := e.plan()
	if r.Outcome != plan.OutcomeBackedOff || !strings.Contains(r.Reason, "rewrite") {
		t.Fatalf("third planning: %s (%s), want backed off after two rewrite failures", r.Outcome, r.Reason)
	}
}

// TestPlanner_PlanningThatCannotSucceedBacksOff: a table
// whose properties make planning fail every time (a malformed
// write.target-file-size-bytes) is backed off after two failures; the third
// attempt is skipped with the reason.
func TestPlanner_PlanningThatCannotSucceedBacksOff(t *testing.T) {
	e := setup(t)
	tbl := e.createTable(smallTable)
	txn := tbl.NewTransaction()
	if err := txn.SetProperties(map[string]string{"write.target-file-size-bytes": "lots"}); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(e.ctx); err != nil {
		t.Fatal(err)
	}
	for i := 0; i < 2; i++ {
		if _, err := e.planner.PlanTable(e.ctx, e.name(), "test"); err == nil {
			t.Fatalf("planning %d succeeded on a malformed property", i+1)
		}
	}
	r, err := e.planner.PlanTable(e.ctx, e.name(), "test")
	if err != nil || r.Outcome != plan.OutcomeBackedOff || !strings.Contains(r.Reason, "planning") {
		t.Fatalf("third planning: %+v %v, want backed off after two planning failures", r, err)
	}
}

// TestPipeline_ConflictAbortsInARowMakeTheTableWait: a job aborted by a
// concurrent commit (another tool removes a position delete file the job
// applied, so its rows are visible again) is not the table's fault, so the next job is planned at once; after the second such abort
// in a row the table waits (lease.ConflictBackoffBase) before the next
// attempt, the planner says why, and each abort counts ConflictAborts for
// the table (its alarm is per table).
func TestPipeline_ConflictAbortsInARowMakeTheTableWait(t *testing.T) {
	e := setup(t)
	e.createTable(smallTable)
	for i := 0; i < 2; i++ {
		r := e.plan()
		if r.Outcome != plan.OutcomePlanned {
			t.Fatalf("job %d: %s (%s)", i+1, r.Outcome, r.Reason)
		}
		e.drainTasks()
		e.undeleteConcurrently()
		want := e.fingerprint()
		e.drainCommits()
		e.requireAborted(r.JobID, undoneDelete, want)
	}
	r := e.plan()
	if r.Outcome != plan.OutcomeBackedOff || !strings.Contains(r.Reason, "aborted by concurrent commits") {
		t.Fatalf("third planning: %s (%s), want a wait after two conflict aborts", r.Outcome, r.Reason)
	}
	m := e.metrics.metricTotals(t)
	if m["ConflictAborts/"+e.name()] != 2 || m["TablesBackedOff"] != 0 {
		t.Fatalf("ConflictAborts %v, TablesBackedOff %v; want 2 for the table and none", m["ConflictAborts/"+e.name()], m["TablesBackedOff"])
	}
	// ConflictAborts is published per table (the ConflictAbortsPerTable
	// alarm groups it by Table); the job counts of the same line are not.
	for _, c := range []struct {
		sig  Signature
		want bool
	}{
		{Signature{Name: "ConflictAborts", Dimensions: []string{"Function", "Table"}, Function: "committer"}, true},
		{Signature{Name: "JobsAborted", Dimensions: []string{"Function"}, Function: "committer"}, true},
		{Signature{Name: "JobsAborted", Dimensions: []string{"Function", "Table"}, Function: "committer"}, false},
	} {
		emitted.Lock()
		_, got := emitted.m[c.sig.key()]
		emitted.Unlock()
		if got != c.want {
			t.Errorf("signature %s emitted: %v, want %v", c.sig.key(), got, c.want)
		}
	}
}

// hideFile removes a local file, as if storage lost it; restore puts it
// back.
func (e *env) hideFile(path string) (restore func()) {
	e.t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		e.t.Fatal(err)
	}
	if err := os.Remove(path); err != nil {
		e.t.Fatal(err)
	}
	return func() {
		e.t.Helper()
		if err := os.WriteFile(path, data, 0o644); err != nil {
			e.t.Fatal(err)
		}
	}
}

// TestPlanner_ATableTooLargeForThePlannersMemoryFailsLoud: when scan
// planning would hold more file metadata than the planner's memory limit
// (here a budget just below the estimate of this table: its files times
// the per-file cost; a binpack compaction reads no bounds), planning fails at once with
// plan.ErrTooLargeToPlan and a message naming the files, the memory and
// the setting to raise, writes nothing, frees the lease and, failing
// again, backs the table off. With the budget above the estimate the same
// table plans.
func TestPlanner_ATableTooLargeForThePlannersMemoryFailsLoud(t *testing.T) {
	e := setup(t)
	e.createTable(smallTable)
	files := int64(len(e.liveTasks()))
	estimate := files * 600

	e.planner = e.plannerWithMemoryBudget(estimate - 1)
	for i := 0; i < 2; i++ {
		r, err := e.planner.PlanTable(e.ctx, e.name(), "test")
		if !errors.Is(err, plan.ErrTooLargeToPlan) || !strings.Contains(err.Error(), fmt.Sprintf("%d live data files", files)) || !strings.Contains(err.Error(), "plannerMemoryMb") {
			t.Fatalf("planning %d: %+v %v, want ErrTooLargeToPlan naming %d files and the setting", i+1, r, err, files)
		}
		if r.JobID != "" {
			t.Fatalf("planning %d started job %s", i+1, r.JobID)
		}
	}
	r, err := e.planner.PlanTable(e.ctx, e.name(), "test")
	if err != nil || r.Outcome != plan.OutcomeBackedOff {
		t.Fatalf("third planning: %+v %v, want backed off", r, err)
	}

	e2 := setup(t)
	e2.createTable(smallTable)
	e2.planner = e2.plannerWithMemoryBudget(estimate)
	if r := e2.plan(); r.Outcome != plan.OutcomePlanned {
		t.Fatalf("with the budget at the estimate: %s (%s), want planned", r.Outcome, r.Reason)
	}
}

// TestPlanner_ADeleteRewriteTooLargeForThePlannersMemoryFailsLoud: a
// delete-file rewrite plans with the same light scan planning as a
// compaction (package filescan) and is refused by the same guard, instead
// of holding every file's complete metadata until the function runs out of
// memory; with the budget at the estimate it plans.
func TestPlanner_ADeleteRewriteTooLargeForThePlannersMemoryFailsLoud(t *testing.T) {
	e := setup(t)
	o := sampletable.Options{FormatVersion: 2, Partitions: 2, Files: 2, RowsPerFile: 60}
	e.createTable(o)
	e.positionDeletesInEveryPartition(o, 5)
	files := int64(len(e.liveTasks()))

	e.planner = e.plannerWithMemoryBudget(files*600 - 1)
	r, err := e.planner.PlanDeleteRewrite(e.ctx, e.name(), "test")
	if !errors.Is(err, plan.ErrTooLargeToPlan) || !strings.Contains(err.Error(), fmt.Sprintf("%d live data files", files)) || r.JobID != "" {
		t.Fatalf("delete rewrite: %+v %v, want ErrTooLargeToPlan naming %d files and no job", r, err, files)
	}
	e.planner = e.plannerWithMemoryBudget(files * 600)
	if r := e.planDeleteRewrite(); r.Outcome != plan.OutcomePlanned {
		t.Fatalf("with the budget at the estimate: %s (%s), want planned", r.Outcome, r.Reason)
	}
}

// TestHealth_ATableTooLargeToPlanIsReportedAndLeftToThePlannerToRefuse:
// the planner function's health assessment of a table too large for its
// memory skips the compaction plan (it would run out of memory the same
// way), says why in the report, and marks compaction as possibly due, so
// that in mode active the planner is asked and refuses it loud
// (TestPlanner_ATableTooLargeForThePlannersMemoryFailsLoud) instead of the
// table never being looked at.
func TestHealth_ATableTooLargeToPlanIsReportedAndLeftToThePlannerToRefuse(t *testing.T) {
	e := setup(t)
	e.createTable(smallTable)
	a, err := trigger.HealthAssessor{MemoryBudget: 1}.Assess(e.ctx, e.name(), e.load())
	if err != nil {
		t.Fatal(err)
	}
	var r health.Report
	if err := json.Unmarshal(a.Report, &r); err != nil {
		t.Fatal(err)
	}
	if a.CompactionBytes != 1 || !strings.Contains(r.CompactionPlanSkipped, "live data files") {
		t.Fatalf("compaction bytes %d, skipped %q: want 1 and the reason", a.CompactionBytes, r.CompactionPlanSkipped)
	}
	if a, err = (trigger.HealthAssessor{}).Assess(e.ctx, e.name(), e.load()); err != nil || a.CompactionBytes <= 1 {
		t.Fatalf("without a budget: compaction bytes %d, %v", a.CompactionBytes, err)
	}
}

// plannerWithMemoryBudget is the planner as the function builds it, with
// a memory budget of budget bytes.
func (e *env) plannerWithMemoryBudget(budget int64) *plan.Planner {
	e.t.Helper()
	p, err := plannerstage.PlannerWith(e.deps.Deps, e.cat, func(o *plan.Options) { o.MemoryBudget = budget })
	if err != nil {
		e.t.Fatal(err)
	}
	return p
}
