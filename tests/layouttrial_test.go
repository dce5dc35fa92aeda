package tests

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/harness/sampletable"
	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/layouttrial"
	"github.com/icekeeper/icekeeper/shared/optin"
	"github.com/icekeeper/icekeeper/shared/plan"
	"github.com/icekeeper/icekeeper/shared/signals"
	plannerstage "github.com/icekeeper/icekeeper/shared/stage/planner"
	"github.com/icekeeper/icekeeper/shared/trigger"
)

// withDispatchClock rebuilds the dispatcher and the committer with now as
// their clock (the table's snapshots keep the times they were committed
// at).
func (d *dispatchEnv) withDispatchClock(now time.Time) {
	d.t.Helper()
	d.withClock(now)
	disp, err := d.deps.Dispatcher(d.cat)
	if err != nil {
		d.t.Fatal(err)
	}
	d.planner = plannerstage.Handler{Dispatch: disp, Metrics: d.deps.Metrics, Log: d.deps.Log}
	if d.committer, err = d.deps.Committer(d.cat); err != nil {
		d.t.Fatal(err)
	}
}

// recordTrialQueries records, for each day from the first to the last
// (days from now), queries filtering amount on each region given: five a
// day on region-02 (the most queried), three on the others, each scanning
// that region's bytes.
func (d *dispatchEnv) recordTrialQueries(now time.Time, first, last int, bytes map[string]int64) {
	d.t.Helper()
	store := signals.Store{DB: cloud.Clients.DynamoDB, TableName: d.cfg.JobsTable}
	for day := first; day <= last; day++ {
		for region, b := range bytes {
			n := 3
			if region == sampletable.Region(2) {
				n = 5
			}
			for range n {
				o := signals.Observation{Table: "demo.events", BytesScanned: b, At: now.AddDate(0, 0, day), Partitions: []string{"region=" + region},
					Filters: []signals.Filter{{Column: "amount", Predicate: signals.PredicateEq}}}
				if err := store.Record(d.ctx, o); err != nil {
					d.t.Fatal(err)
				}
			}
		}
	}
}

// trialReport reads the health report the planner published last.
func (d *dispatchEnv) trialReport(o trigger.TableOutcome) (trigger.LayoutReport, string) {
	d.t.Helper()
	raw, err := d.deps.Blobs.Get(d.ctx, o.ReportKey)
	if err != nil {
		d.t.Fatal(err)
	}
	var r trigger.LayoutReport
	if err := json.Unmarshal(raw, &r); err != nil {
		d.t.Fatal(err)
	}
	return r, string(raw)
}

// startTrial takes a table through a layout change to a sort on amount
// (from two weeks of signals on it, region-02 queried most), and the
// first sort compaction, bounded to one partition a job, which reaches
// region-02 only; the next visit holds the rollout there.
func startTrial(t *testing.T) (*dispatchEnv, time.Time) {
	d := setupDispatch(t, config.ModeActive, "demo", func(c *config.Config) { c.MinInterval = 0 })
	d.createNamed("demo.events", sampletable.Options{FormatVersion: 2, Partitions: 4, Files: 6, RowsPerFile: 50,
		Properties: map[string]string{optin.PropertyEnabled: "true", optin.PropertyLayoutAuto: "true"}})
	var largest int64
	per := map[string]int64{}
	for _, task := range d.liveTasks() {
		per[plan.PartitionString(task)] += task.File.FileSizeBytes()
		largest = max(largest, per[plan.PartitionString(task)])
	}
	d.setProperties(iceberg.Properties{optin.PropertyMaxBytesPerJob: strconv.FormatInt(largest+largest/2, 10)})
	now := time.Now()
	d.recordTrialQueries(now, -14, -1, map[string]int64{sampletable.Region(2): 100 << 20, sampletable.Region(0): 50 << 20})

	o := outcomeOf(t, d.handle(commitEvent("demo.events")), "demo.events")
	if o.Plan == nil || d.job(o.Plan.JobID).Kind != jobs.KindChangeLayout {
		t.Fatalf("first visit %+v, want a layout change", o)
	}
	d.drainCommits()
	trial, on, err := layouttrial.ParseTrial(d.load().Properties())
	if err != nil || !on || trial.Layout != "sort" || !slices.Equal(trial.Columns, []string{"amount"}) {
		t.Fatalf("trial %+v %v %v, want a sort on amount on trial", trial, on, err)
	}

	o = outcomeOf(t, d.handle(commitEvent("demo.events")), "demo.events")
	if o.Plan == nil || o.Plan.Strategy != optin.StrategySort {
		t.Fatalf("second visit %+v, want a sort compaction", o.Plan)
	}
	groups := d.planOf(o.Plan.JobID).Groups
	if len(groups) != 1 || !strings.HasSuffix(groups[0].Partition, sampletable.Region(2)) {
		t.Fatalf("the first sort compaction took %+v, want region-02 (the most queried) only", groups)
	}
	before := d.fingerprint()
	d.drainTasks()
	d.drainCommits()
	d.requireCommitted(o.Plan.JobID, before)

	o = outcomeOf(t, d.handle(commitEvent("demo.events")), "demo.events")
	if o.Plan == nil || o.Plan.Outcome != plan.OutcomeNothingToDo || !strings.Contains(o.Plan.Reason, "on trial") {
		t.Fatalf("third visit %+v, want the rollout held for the verdict", o.Plan)
	}
	r, raw := d.trialReport(o)
	if r.LayoutTrial == nil || r.LayoutTrial.Decision != layouttrial.Pending {
		t.Fatalf("report's trial %+v, want pending\n%s", r.LayoutTrial, raw)
	}
	return d, now
}

// TestLayoutTrial_ALayoutThatPaysIsKeptAndRollsOn: after the sort
// reached region-02, its queries read a tenth of what they read before
// while region-00's (untouched) read the same: the verdict is keep, in
// the report, the metric and the maintenance log; one commit ends the
// trial, the order stays, and the rollout goes on to the other
// partitions.
func TestLayoutTrial_ALayoutThatPaysIsKeptAndRollsOn(t *testing.T) {
	d, now := startTrial(t)
	d.recordTrialQueries(now, 1, 8, map[string]int64{sampletable.Region(2): 10 << 20, sampletable.Region(0): 50 << 20})
	d.withDispatchClock(now.AddDate(0, 0, 10))
	o := outcomeOf(t, d.handle(commitEvent("demo.events")), "demo.events")
	r, raw := d.trialReport(o)
	if r.LayoutTrial == nil || r.LayoutTrial.Decision != layouttrial.Keep || r.LayoutTrial.Evidence.Gain < 0.85 || !r.LayoutTrial.Evidence.Control {
		t.Fatalf("verdict %+v, want keep with a 90%% gain\n%s", r.LayoutTrial, raw)
	}
	if o.Plan == nil || d.job(o.Plan.JobID).Kind != jobs.KindChangeLayout {
		t.Fatalf("verdict visit %+v, want the trial settled", o.Plan)
	}
	d.drainCommits()
	j := d.job(o.Plan.JobID)
	if j.State != jobs.Committed || !strings.Contains(j.Reason, "layout trial settled: keep") || !strings.Contains(j.Reason, "10.0 MiB after") {
		t.Fatalf("settle job %s (%s)", j.State, j.Reason)
	}
	tbl := d.load()
	if _, on, _ := layouttrial.ParseTrial(tbl.Properties()); on || tbl.SortOrder().Len() != 1 || tbl.Properties()[optin.PropertyCompactionStrategy] != "sort" {
		t.Fatalf("after keep: trial %v, order %s, strategy %q", on, tbl.SortOrder(), tbl.Properties()[optin.PropertyCompactionStrategy])
	}
	if m := d.metrics.metricTotals(t); m["LayoutTrialVerdict"] != 1 {
		t.Errorf("LayoutTrialVerdict totals %v, want 1 (pending visits 0, then keep)", m["LayoutTrialVerdict"])
	}
	o = outcomeOf(t, d.handle(commitEvent("demo.events")), "demo.events")
	if o.Plan == nil || o.Plan.Outcome != plan.OutcomePlanned || o.Plan.Strategy != optin.StrategySort {
		t.Fatalf("after keep %+v, want the sort rolling on", o.Plan)
	}
	if g := d.planOf(o.Plan.JobID).Groups; len(g) != 1 || !strings.HasSuffix(g[0].Partition, sampletable.Region(0)) {
		t.Fatalf("after keep the sort took %+v, want region-00 next", g)
	}
}

// TestLayoutTrial_ALayoutThatDoesNotPayIsRevertedOnce: region-02's
// queries read as much after the sort as before: the verdict is revert,
// and one commit that rewrites no file restores the table's previous
// (unsorted) order and strategy and records the rejection. Later visits
// on the same evidence neither change the layout again nor re-propose it.
func TestLayoutTrial_ALayoutThatDoesNotPayIsRevertedOnce(t *testing.T) {
	d, now := startTrial(t)
	d.recordTrialQueries(now, 1, 8, map[string]int64{sampletable.Region(2): 98 << 20, sampletable.Region(0): 50 << 20})
	files := func() []string {
		var out []string
		for _, task := range d.liveTasks() {
			out = append(out, task.File.FilePath())
		}
		slices.Sort(out)
		return out
	}
	beforeFiles, beforeRows := files(), d.fingerprint()
	d.withDispatchClock(now.AddDate(0, 0, 10))
	o := outcomeOf(t, d.handle(commitEvent("demo.events")), "demo.events")
	if r, raw := d.trialReport(o); r.LayoutTrial == nil || r.LayoutTrial.Decision != layouttrial.Revert {
		t.Fatalf("verdict %+v, want revert\n%s", r.LayoutTrial, raw)
	}
	d.drainCommits()
	j := d.job(o.Plan.JobID)
	if j.State != jobs.Committed || !strings.Contains(j.Reason, "layout trial settled: revert") || !strings.Contains(j.Reason, "does not measurably beat") {
		t.Fatalf("settle job %s (%s)", j.State, j.Reason)
	}
	tbl := d.load()
	rejected, err := layouttrial.ParseRejected(tbl.Properties())
	if err != nil || len(rejected) != 1 || rejected[0].Layout != "sort" || tbl.SortOrder().Len() != 0 || tbl.Properties()[optin.PropertyCompactionStrategy] != "" {
		t.Fatalf("after revert: order %s, strategy %q, rejected %+v %v", tbl.SortOrder(), tbl.Properties()[optin.PropertyCompactionStrategy], rejected, err)
	}
	if _, on, _ := layouttrial.ParseTrial(tbl.Properties()); on {
		t.Fatal("the trial is still on after the revert")
	}
	if got := files(); !slices.Equal(got, beforeFiles) || d.fingerprint() != beforeRows {
		t.Fatal("the revert changed files or rows")
	}
	if m := d.metrics.metricTotals(t); m["LayoutTrialVerdict"] != -1 {
		t.Errorf("LayoutTrialVerdict totals %v, want -1", m["LayoutTrialVerdict"])
	}
	for range 2 {
		o = outcomeOf(t, d.handle(commitEvent("demo.events")), "demo.events")
		if o.Plan != nil && o.Plan.JobID != "" && d.job(o.Plan.JobID).Kind == jobs.KindChangeLayout {
			t.Fatalf("a layout change planned again on the same evidence: %+v", o.Plan)
		}
		d.drainTasks()
		d.drainCommits()
	}
	r, _ := d.trialReport(o)
	if r.Layout == nil || r.Layout.Change || !strings.Contains(r.Layout.Why, "a trial rejected this layout") {
		t.Fatalf("layout advice after the revert %+v, want no change until new evidence", r.Layout)
	}
}

// TestSignals_TheReportProposesAPartitionSpecChangeAndNeverMakesIt: a
// table split into 16 region partitions of a few KiB each (far under an
// eighth of its target file size) gets a proposal to drop the region
// field, with the files it would take, in the published health report;
// the spec is not changed, in active mode either.
func TestSignals_TheReportProposesAPartitionSpecChangeAndNeverMakesIt(t *testing.T) {
	d := setupDispatch(t, config.ModeActive, "demo", func(c *config.Config) { c.MinInterval = 0 })
	d.createNamed("demo.events", sampletable.Options{FormatVersion: 2, Partitions: 16, Files: 2, RowsPerFile: 10,
		Properties: map[string]string{optin.PropertyEnabled: "true", optin.PropertyLayoutAuto: "true"}})
	d.recordTrialQueries(time.Now(), -3, 0, map[string]int64{sampletable.Region(1): 1 << 20})
	specBefore := d.load().Spec()
	o := outcomeOf(t, d.handle(commitEvent("demo.events")), "demo.events")
	r, raw := d.trialReport(o)
	if len(r.PartitionProposals) != 1 || r.PartitionProposals[0].SQL != "ALTER TABLE demo.events DROP PARTITION FIELD region" || r.PartitionProposals[0].ExpectedFiles != 1 {
		t.Fatalf("proposals %+v; want the region field dropped, one file for the data\n%s", r.PartitionProposals, raw)
	}
	d.drainTasks()
	d.drainCommits()
	if spec := d.load().Spec(); !spec.Equals(specBefore) {
		t.Fatalf("the spec changed: %s, was %s", spec, specBefore)
	}
}

// TestLayoutTrial_AnOwnersOrderChangeEndsTheTrial: the owner sorts the
// table by id after the planner decided to revert the trial's sort on
// amount and before the commit: the committer stands down (the order
// changed since planning), and later visits neither revert the owner's
// order, nor judge or hold a trial the table is no longer in, nor change
// the layout back on the evidence the trial judged.
func TestLayoutTrial_AnOwnersOrderChangeEndsTheTrial(t *testing.T) {
	d, now := startTrial(t)
	d.recordTrialQueries(now, 1, 8, map[string]int64{sampletable.Region(2): 98 << 20, sampletable.Region(0): 50 << 20})
	d.withDispatchClock(now.AddDate(0, 0, 10))
	o := outcomeOf(t, d.handle(commitEvent("demo.events")), "demo.events")
	if o.Plan == nil || d.job(o.Plan.JobID).Kind != jobs.KindChangeLayout {
		t.Fatalf("verdict visit %+v, want the revert planned", o.Plan)
	}
	d.sortByID() // the owner's order, meanwhile
	d.drainCommits()
	if j := d.job(o.Plan.JobID); j.State != jobs.Committed || !strings.Contains(j.Reason, "owner's order stands") {
		t.Fatalf("settle job %s (%s)", j.State, j.Reason)
	}
	o = outcomeOf(t, d.handle(commitEvent("demo.events")), "demo.events")
	if o.Plan != nil && o.Plan.JobID != "" && d.job(o.Plan.JobID).Kind == jobs.KindChangeLayout {
		t.Fatalf("a layout job planned over the owner's order: %+v", o.Plan)
	}
	r, raw := d.trialReport(o)
	if r.LayoutTrial != nil {
		t.Fatalf("a trial judged on a table no longer in its layout: %+v\n%s", r.LayoutTrial, raw)
	}
	if r.Layout == nil || r.Layout.Change || !strings.Contains(r.Layout.Why, "the owner's layout stands") {
		t.Fatalf("advice %+v, want no change over the owner's layout", r.Layout)
	}
	d.drainTasks()
	d.drainCommits()
	if order := d.load().SortOrder(); order.Len() != 1 || order.Field(0).SourceID() != 1 {
		t.Fatalf("sort order %s, want the owner's (id)", order)
	}
}
