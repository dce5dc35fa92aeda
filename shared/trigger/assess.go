package trigger

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/health"
	"github.com/icekeeper/icekeeper/shared/metrics"
	"github.com/icekeeper/icekeeper/shared/optin"
	"github.com/icekeeper/icekeeper/shared/orphans"
	"github.com/icekeeper/icekeeper/shared/plan"
	"github.com/icekeeper/icekeeper/shared/signals"
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
	Layout      *signals.Recommendation `json:"layout,omitempty"`
	LayoutError string                  `json:"layout_error,omitempty"`
}

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
	r, err := health.Assess(ctx, tbl, now(), th, health.WithMemoryBudget(h.MemoryBudget))
	if err != nil {
		return Assessment{}, err
	}
	r.Table = name
	out := reportWithLayout{Report: r}
	gauges := r.Metrics()
	if h.Signals != nil {
		// The layout the last four weeks of query signals recommend
		// (advisory: the owner or icekeeper.layout.auto acts on it).
		days, err := h.Signals.Days(ctx, name, now().AddDate(0, 0, -28), now())
		if err != nil {
			out.LayoutError = err.Error()
		} else {
			ranked, queries := signals.Aggregate(days, now(), signals.DefaultHalfLife)
			lookups := map[string]float64{}
			for _, c := range r.Columns {
				lookups[c.Column] = c.PointLookupFiles
			}
			rec := signals.Recommend(ranked, queries, signals.TableFor(tbl, lookups), signals.DefaultGuard)
			out.Layout = &rec
			change := 0.0
			if rec.Change {
				change = 1
			}
			gauges = append(gauges,
				metrics.Metric{Name: MetricLayoutChangeRecommended, Value: change, Unit: metrics.None, Publish: metrics.LogOnly},
				metrics.Metric{Name: MetricLayoutBytesSaved, Value: rec.ExpectedBytesSaved, Unit: metrics.Bytes, Publish: metrics.LogOnly})
		}
	}
	report, err := json.Marshal(out)
	if err != nil {
		return Assessment{}, fmt.Errorf("encode health report: %w", err)
	}
	a := Assessment{Score: r.Score, Report: report, Gauges: gauges}
	if l := out.Layout; l != nil && l.Change && (l.Layout == signals.LayoutSort || l.Layout == signals.LayoutZOrder) {
		a.Layout = &plan.LayoutChange{Layout: l.Layout, Columns: l.Columns, Why: l.Why}
	}
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
