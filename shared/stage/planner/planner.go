// Package planner is the planner function's stage: Dispatcher builds the
// trigger dispatcher (opt-in, cooldowns, health assessments, audit
// events) and, in mode active, the planner from the shared stage and a
// catalog; Handler decodes an EventBridge event (package events) and hands
// the trigger to the dispatcher. It links no code that commits to a
// catalog or rewrites files; the handler knows nothing of AWS clients or
// configuration.
package planner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/service/athena"

	"github.com/icekeeper/icekeeper/shared/audit"
	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/health"
	"github.com/icekeeper/icekeeper/shared/lease"
	"github.com/icekeeper/icekeeper/shared/ledger"
	"github.com/icekeeper/icekeeper/shared/metrics"
	"github.com/icekeeper/icekeeper/shared/optin"
	"github.com/icekeeper/icekeeper/shared/orphans"
	"github.com/icekeeper/icekeeper/shared/plan"
	"github.com/icekeeper/icekeeper/shared/signals"
	"github.com/icekeeper/icekeeper/shared/stage"
	"github.com/icekeeper/icekeeper/shared/trigger"
)

// Needs lists the planner's resources in mode active: the pipeline's.
var Needs = []config.Need{config.NeedCatalog, config.NeedLeases, config.NeedJobs, config.NeedBucket, config.NeedTaskQueue, config.NeedCommitQueue}

// NeedsFor lists the planner function's resources in a mode: none when
// off; the catalog, the lease table (cooldowns) and the bucket (reports)
// when advisory; everything the pipeline needs when active.
func NeedsFor(mode config.Mode) []config.Need {
	switch mode {
	case config.ModeAdvisory:
		return []config.Need{config.NeedCatalog, config.NeedLeases, config.NeedBucket}
	case config.ModeActive:
		return Needs
	}
	return nil
}

// Planner builds the planner over cat.
func Planner(d *stage.Deps, cat catalog.Catalog) (*plan.Planner, error) {
	p, err := plan.New(plan.Settings{
		LeaseTTL: d.Config.LeaseTTL, MaxGroupBytes: d.Config.MaxGroupBytes,
		InlineTaskBytes: d.Config.InlineTaskBytes, TargetFileSize: d.Config.TargetFileSize,
		OrphanListFanOutFiles: d.Config.OrphanListFanOutFiles, MaxJobFiles: d.Config.MaxJobFiles,
	}, cat, d.Leases, d.Jobs, d.Blobs, d.Tasks, d.Commits, d.Log.With("stage", "planner"), d.Now)
	if err == nil {
		p.SetTracer(d.Tracer)
		p.SetMemoryBudget(stage.MemoryLimit())
		if d.Config.JobsTable != "" && d.Clients != nil && d.Clients.DynamoDB != nil {
			p.SetHeat(PartitionHeat{Signals: signals.Store{DB: d.Clients.DynamoDB, TableName: d.Config.JobsTable}, Now: d.Now})
		}
	}
	return p, err
}

// PartitionHeat adapts the query signals to the planner: the last four
// weeks' partition counts, decayed (signals.PartitionHeat).
type PartitionHeat struct {
	Signals SignalDays
	Now     func() time.Time
}

// PartitionHeat implements plan.Heat.
func (h PartitionHeat) PartitionHeat(ctx context.Context, table string) (map[string]float64, error) {
	now := time.Now
	if h.Now != nil {
		now = h.Now
	}
	days, err := h.Signals.Days(ctx, table, now().AddDate(0, 0, -28), now())
	if err != nil {
		return nil, err
	}
	return signals.PartitionHeat(days, now(), signals.DefaultHalfLife), nil
}

// Dispatcher builds the planner function's trigger dispatcher for the
// configured mode. cat may be nil in mode off.
func Dispatcher(d *stage.Deps, cat catalog.Catalog) (*trigger.Dispatcher, error) {
	grants, err := optin.ParseGrants(d.Config.Grants)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", config.EnvGrants, err)
	}
	s := trigger.Settings{Mode: d.Config.Mode, Grants: grants, MinInterval: d.Config.MinInterval,
		SweepMaxJobs: d.Config.SweepMaxJobs, SweepMaxBytes: d.Config.SweepMaxBytes}
	deps := trigger.Deps{Metrics: d.Metrics, Log: d.Log.With("stage", "planner"), Now: d.Now}
	if d.Config.Mode == config.ModeOff {
		return trigger.New(s, deps)
	}
	deps.Catalog = cat
	if deps.Cooldowns, err = lease.NewCooldownStore(d.Clients.DynamoDB, d.Config.LeaseTable); err != nil {
		return nil, err
	}
	if deps.Auditor, err = audit.NewPublisher(d.Events, d.Config.EventBus); err != nil {
		return nil, err
	}
	deps.Reports = d.Blobs
	// Query signals: counters in the jobs table; Athena's queries read
	// back with athena:GetQueryExecution.
	store := signals.Store{DB: d.Clients.DynamoDB, TableName: d.Config.JobsTable}
	deps.Signals = store
	deps.Queries = signals.Athena{API: athena.NewFromConfig(d.Clients.Config), Now: d.Now}
	deps.Assessor = HealthAssessor{TargetFileSize: d.Config.TargetFileSize, Now: d.Now, MemoryBudget: stage.MemoryLimit(), Signals: store, Catalog: cat}
	if d.Config.Mode == config.ModeActive {
		p, err := Planner(d, cat)
		if err != nil {
			return nil, err
		}
		deps.Planner = p
		deps.Ledger = ledger.Book{Entries: ledger.Store{DB: d.Clients.DynamoDB, TableName: d.Config.JobsTable},
			Signals: store, Prices: ledger.Prices{ScanPerTB: d.Config.ScanPricePerTB}, BackOff: d.Config.LedgerBackOff}
	}
	return trigger.New(s, deps)
}

// HealthAssessor adapts package health to the dispatcher.
type HealthAssessor struct {
	// TargetFileSize overrides write.target-file-size-bytes (0: the table's).
	TargetFileSize int64
	Now            func() time.Time
	// MemoryBudget: see health.WithMemoryBudget (0: none).
	MemoryBudget int64
	// Signals, when set, adds the layout the table's query signals
	// recommend to the report (package signals).
	Signals SignalDays
	// Catalog lists the catalog's tables, so that a report says an
	// orphan cleanup would be refused for another table inside the
	// location (nil: it says the cleanup would be refused).
	Catalog orphans.Catalog
}

// SignalDays reads a table's recorded query signals.
type SignalDays interface {
	Days(ctx context.Context, table string, since, now time.Time) ([]signals.Day, error)
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
func (h HealthAssessor) Assess(ctx context.Context, name string, tbl *table.Table) (trigger.Assessment, error) {
	th, err := health.ThresholdsFor(tbl.Properties(), h.TargetFileSize)
	if err != nil {
		return trigger.Assessment{}, fmt.Errorf("%w: %w", trigger.ErrTableProperties, err)
	}
	now := time.Now
	if h.Now != nil {
		now = h.Now
	}
	r, err := health.Assess(ctx, tbl, now(), th, health.WithMemoryBudget(h.MemoryBudget))
	if err != nil {
		return trigger.Assessment{}, err
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
		return trigger.Assessment{}, fmt.Errorf("encode health report: %w", err)
	}
	a := trigger.Assessment{Score: r.Score, Report: report, Gauges: gauges}
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
		return 0, 0, "", fmt.Errorf("%w: %w", trigger.ErrTableProperties, err)
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
