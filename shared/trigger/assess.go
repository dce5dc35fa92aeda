package trigger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/binpack"
	"github.com/icekeeper/icekeeper/shared/correlation"
	"github.com/icekeeper/icekeeper/shared/health"
	"github.com/icekeeper/icekeeper/shared/layouttrial"
	"github.com/icekeeper/icekeeper/shared/metrics"
	"github.com/icekeeper/icekeeper/shared/optin"
	"github.com/icekeeper/icekeeper/shared/orphans"
	"github.com/icekeeper/icekeeper/shared/pacing"
	"github.com/icekeeper/icekeeper/shared/plan"
	"github.com/icekeeper/icekeeper/shared/signals"
	"github.com/icekeeper/icekeeper/shared/specproposal"
	"github.com/icekeeper/icekeeper/shared/workload"
)

// HealthAssessor is the dispatcher's Assessor: a table's health report
// (package health), the layout its query signals recommend (package
// signals) and what an orphan cleanup would find (package orphans).
type HealthAssessor struct {
	// TargetFileSize overrides write.target-file-size-bytes (0: the table's).
	TargetFileSize int64
	Now            func() time.Time
	// MemoryBudget: see health.WithMemoryBudget (0: none).
	MemoryBudget int64
	// MemoryGate, sized to MemoryBudget, is shared by the assessments a
	// sweep runs at once (health.WithMemoryGate; nil: none).
	MemoryGate health.MemoryGate
	// Signals, when set, adds the layout the table's query signals
	// recommend to the report (package signals).
	Signals signals.DayReader
	// Catalog lists the catalog's tables, so that a report says an
	// orphan cleanup would be refused for another table inside the
	// location (nil: it says the cleanup would be refused).
	Catalog orphans.Catalog
}

// Metric names of the layout recommendation's gauges (values of the
// planner's EMF record only, metrics.LogOnly; the report's layout field
// holds the recommendation).
const (
	MetricLayoutChangeRecommended = "LayoutChangeRecommended"
	MetricLayoutBytesSaved        = "LayoutExpectedBytesSaved"
)

// reportWithLayout is the published report: the health report and the
// layout the query signals recommend.
type reportWithLayout struct {
	health.Report
	LayoutReport
	LayoutError string `json:"layout_error,omitempty"`
}

// LayoutReport is the layout advice of a table (AdviseLayout), as the
// health report and `icekeeper signals` show it.
type LayoutReport struct {
	Layout *signals.Recommendation `json:"layout,omitempty"`
	// LayoutClass is the workload class the layout serves and
	// LayoutClasses each class's recommendation side by side.
	LayoutClass   *workload.Choice      `json:"layout_class,omitempty"`
	LayoutClasses []signals.ClassAdvice `json:"layout_classes,omitempty"`
	// LayoutTrial is the verdict on a layout icekeeper changed to
	// (package layouttrial), while the table has one on trial.
	LayoutTrial *layouttrial.Verdict `json:"layout_trial,omitempty"`
	// PartitionProposals are the partition spec changes the signals and
	// the files call for (package specproposal): proposed, never applied.
	PartitionProposals []specproposal.Proposal `json:"partition_proposals,omitempty"`
}

// Metric names of a layout trial's gauges: the decision (0 pending, 1
// keep, -1 revert) and its gain (the fall in bytes per query beyond the
// control's, 0.25 for 25%).
const (
	MetricLayoutTrialVerdict = "LayoutTrialVerdict"
	MetricLayoutTrialGain    = "LayoutTrialGain"
)

// Assess reads the table's metadata and summarizes its health.
func (h HealthAssessor) Assess(ctx context.Context, name string, tbl *table.Table) (Assessment, error) {
	th, err := health.ThresholdsFor(tbl.Properties(), h.TargetFileSize)
	if err != nil {
		return Assessment{}, fmt.Errorf("%w: %w", ErrTableProperties, err)
	}
	now := time.Now
	if h.Now != nil {
		now = h.Now
	}
	r, err := health.Assess(ctx, tbl, now(), th, health.WithMemoryBudget(h.MemoryBudget), health.WithMemoryGate(h.MemoryGate))
	if err != nil {
		return Assessment{}, err
	}
	r.Table = name
	out := reportWithLayout{Report: r}
	gauges := r.Metrics()
	var decided *plan.LayoutChange
	if h.Signals != nil {
		var err error
		var lr LayoutReport
		var lg []metrics.Metric
		if lr, decided, lg, err = AdviseLayout(ctx, h.Signals, name, tbl, r, now()); err != nil {
			out.LayoutError, decided = err.Error(), nil
		} else {
			out.LayoutReport = lr
			gauges = append(gauges, lg...)
		}
	}
	report, err := json.Marshal(out)
	if err != nil {
		return Assessment{}, fmt.Errorf("encode health report: %w", err)
	}
	a := Assessment{Score: r.Score, Report: report, Gauges: gauges}
	switch l := out.Layout; {
	case decided != nil:
		a.Layout = decided
	case out.LayoutTrial != nil:
		// A layout on trial: no other change until its verdict.
	case l != nil && l.Change && (l.Layout == signals.LayoutSort || l.Layout == signals.LayoutZOrder):
		a.Layout = &plan.LayoutChange{Layout: l.Layout, Columns: l.Columns, Why: l.Why}
	}
	a.Pace = paceOf(r)
	if rec, ok := r.Recommends(health.ActionCompaction); ok {
		a.CompactionBytes = max(rec.EstimatedBytes, 1)
	}
	if r.CompactionPlanSkipped != "" {
		// Too large to plan here: in mode active the planner then refuses
		// it loud (plan.ErrTooLargeToPlan, backed off) rather than the
		// table never being looked at; the report says why.
		a.CompactionBytes = 1
	}
	_, a.ExpiryDue = r.Recommends(health.ActionExpireSnapshots)
	_, a.ManifestsDue = r.Recommends(health.ActionRewriteManifests)
	return a, nil
}

// paceOf is what pacing needs of a health report: the optimum of the
// partitions with data files, and the data files the table will have once
// the compaction it recommends commits (its input files replaced by a
// target-sized file per target of input).
func paceOf(r health.Report) pacing.Table {
	target := r.Thresholds.TargetFileSize
	t := pacing.Table{FilesAfter: r.DataFiles}
	for _, p := range r.Partitions {
		if p.DataFiles > 0 {
			t.Optimum += binpack.Optimum(p.DataBytes, target)
		}
	}
	if rec, ok := r.Recommends(health.ActionCompaction); ok && rec.EstimatedFiles > 0 {
		t.FilesAfter += binpack.Optimum(rec.EstimatedBytes, target) - rec.EstimatedFiles
	}
	return t
}

// AdviseLayout is the query signals' layout advice for a table, from its
// health report r (advisory: the owner or icekeeper.layout.auto acts on
// it): per workload class, the class the layout serves (package
// workload), its recommendation (package signals: sustained, without a
// second column the partition spec implies or the files' bounds
// correlate with the first, a rejected layout only on new evidence),
// and, for a table with a layout on trial, the trial's verdict (package
// layouttrial), which it returns as the change that settles it once
// decided. The gauges are the recommendation's and the trial's.
func AdviseLayout(ctx context.Context, reader signals.DayReader, name string, tbl *table.Table, r health.Report, at time.Time) (LayoutReport, *plan.LayoutChange, []metrics.Metric, error) {
	now := func() time.Time { return at }
	var out LayoutReport
	var gauges []metrics.Metric
	props := tbl.Properties()
	policy, err := signals.PolicyOf(props)
	if err != nil {
		return out, nil, nil, err
	}
	rejected, err := layouttrial.ParseRejected(props)
	if err != nil {
		return out, nil, nil, err
	}
	trial, onTrial, err := layouttrial.Active(tbl)
	if err != nil {
		return out, nil, nil, err
	}
	// The last four weeks weigh the advice; a trial also needs its
	// windows before the change.
	since := now().AddDate(0, 0, -28)
	rules := layouttrial.DefaultRules
	if onTrial {
		if t := trial.At.AddDate(0, 0, -rules.Window*rules.MaxWindows-1); t.Before(since) {
			since = t
		}
	}
	days, err := reader.Days(ctx, name, since, now())
	if err != nil {
		return out, nil, nil, err
	}
	var recent []signals.Day
	for _, d := range days {
		if d.Date >= signals.DateOf(now().AddDate(0, 0, -28)) {
			recent = append(recent, d)
		}
	}
	lookups := map[string]float64{}
	for _, c := range r.Columns {
		lookups[c.Column] = c.PointLookupFiles
	}
	t := signals.TableFor(tbl, lookups)
	t.Redundant = map[[2]string]float64{}
	for _, c := range r.Correlations {
		if correlation.Redundant(c.Rho, c.Files) {
			t.Redundant[c.Columns] = c.Rho
			t.Redundant[[2]string{c.Columns[1], c.Columns[0]}] = c.Rho
		}
	}
	t.Rejected = map[string]time.Time{}
	for _, rj := range rejected {
		t.Rejected[signals.LayoutKey(rj.Layout, rj.Columns)] = rj.At
	}
	advice, err := signals.Advise(recent, now(), t, signals.DefaultGuard, policy)
	if err != nil {
		return out, nil, nil, err
	}
	rec := advice.Recommendation
	if stale, present, _ := layouttrial.ParseTrial(props); present && !onTrial && rec.Change {
		// The owner changed the layout during icekeeper's trial: the
		// owner's layout stands, whatever the signals say.
		rec.Change = false
		rec.Why = fmt.Sprintf("%s; but the owner changed the layout while icekeeper's %s on %s was on trial: the owner's layout stands (remove %s to let icekeeper change it again)",
			rec.Why, stale.Layout, strings.Join(stale.Columns, ", "), layouttrial.PropertyTrial)
	}
	out.Layout, out.LayoutClass, out.LayoutClasses = &rec, &advice.Choice, advice.Classes
	out.PartitionProposals = specproposal.Propose(specTable(name, tbl, r, recent, now()), specproposal.DefaultRules)
	change := 0.0
	if rec.Change && !onTrial {
		change = 1
	}
	gauges = append(gauges,
		metrics.Metric{Name: MetricLayoutChangeRecommended, Value: change, Unit: metrics.None, Publish: metrics.LogOnly},
		metrics.Metric{Name: MetricLayoutBytesSaved, Value: rec.ExpectedBytesSaved, Unit: metrics.Bytes, Publish: metrics.LogOnly})
	if !onTrial {
		return out, nil, gauges, nil
	}
	reached, err := health.Reached(ctx, tbl, trial.At)
	if err != nil {
		return out, nil, nil, err
	}
	var parts []layouttrial.Partition
	for _, p := range r.Partitions {
		parts = append(parts, layouttrial.Partition{Name: p.Partition, RewrittenAt: reached[p.Partition]})
	}
	v := layouttrial.Judge(trial, parts, days, now(), rules)
	out.LayoutTrial = &v
	verdict := map[string]float64{layouttrial.Pending: 0, layouttrial.Keep: 1, layouttrial.Revert: -1}[v.Decision]
	gauges = append(gauges,
		metrics.Metric{Name: MetricLayoutTrialVerdict, Value: verdict, Unit: metrics.None},
		metrics.Metric{Name: MetricLayoutTrialGain, Value: v.Evidence.Gain, Unit: metrics.None, Publish: metrics.LogOnly})
	if v.Decision == layouttrial.Pending {
		return out, nil, gauges, nil
	}
	return out, &plan.LayoutChange{Layout: trial.Layout, Columns: trial.Columns, Verdict: v.Decision, Trial: props[layouttrial.PropertyTrial], Why: v.Why}, gauges, nil
}

// specTable describes the table for specproposal.Propose: its spec, its
// partitions' sizes and its columns' signals and values.
func specTable(name string, tbl *table.Table, r health.Report, days []signals.Day, now time.Time) specproposal.Table {
	t := specproposal.Table{Name: name, Partitions: len(r.Partitions), DataBytes: r.DataBytes, DataFiles: r.DataFiles, TargetFileSize: r.Thresholds.TargetFileSize}
	schema := tbl.Schema()
	spec := tbl.Spec()
	for _, f := range spec.Fields() {
		src, _ := schema.FindColumnName(f.SourceID())
		t.Fields = append(t.Fields, specproposal.Field{Name: f.Name, Source: src, Transform: f.Transform.String()})
	}
	sizes := make([]int64, 0, len(r.Partitions))
	for _, p := range r.Partitions {
		sizes = append(sizes, p.DataBytes)
	}
	slices.Sort(sizes)
	if len(sizes) > 0 {
		t.MedianPartitionBytes = sizes[len(sizes)/2]
	}
	ranked, queries := signals.Aggregate(days, now, signals.DefaultHalfLife)
	t.Queries = queries
	files := map[string]health.ColumnOverlap{}
	for _, c := range r.Columns {
		files[c.Column] = c
	}
	for _, c := range ranked {
		t.Columns = append(t.Columns, specproposal.Column{Name: c.Column, Queries: c.Queries, PointShare: c.PointShare, BytesScanned: c.BytesScanned,
			Values: files[c.Column].Values, LookupFiles: files[c.Column].PointLookupFiles})
	}
	return t
}

// Orphans lists the table's orphan files older than its safety age, as an
// orphan cleanup would, and says why a cleanup would be refused.
func (h HealthAssessor) Orphans(ctx context.Context, tbl *table.Table) (int, int64, string, error) {
	age, err := optin.OrphanAge(tbl.Properties(), 0)
	if err != nil {
		return 0, 0, "", fmt.Errorf("%w: %w", ErrTableProperties, err)
	}
	now := time.Now
	if h.Now != nil {
		now = h.Now
	}
	found, err := orphans.Find(ctx, tbl, orphans.Prefix{}, now().Add(-age))
	if errors.Is(err, orphans.ErrNotListable) {
		return 0, 0, err.Error(), nil
	}
	if err == nil {
		err = orphans.Shared(ctx, tbl, found.Metadata, h.Catalog)
	}
	files, bytes := orphans.Paths(found.Orphans)
	if errors.Is(err, orphans.ErrRefused) {
		return len(files), bytes, orphans.Why(err), nil
	}
	return len(files), bytes, "", err
}
