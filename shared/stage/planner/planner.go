// Package planner is the planner function's stage: Dispatcher builds the
// trigger dispatcher (opt-in, cooldowns, health assessments, audit
// events) and, in mode active, the planner from the shared stage and a
// catalog; Handler decodes an EventBridge event (package events) and hands
// the trigger to the dispatcher. It links no code that commits to a
// catalog or rewrites files; the handler knows nothing of AWS clients or
// configuration.
package planner

import (
	"fmt"
	"strings"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/aws/aws-sdk-go-v2/service/athena"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"golang.org/x/sync/semaphore"

	"github.com/icekeeper/icekeeper/shared/audit"
	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/lease"
	"github.com/icekeeper/icekeeper/shared/ledger"
	"github.com/icekeeper/icekeeper/shared/optin"
	"github.com/icekeeper/icekeeper/shared/plan"
	"github.com/icekeeper/icekeeper/shared/signals"
	"github.com/icekeeper/icekeeper/shared/stage"
	"github.com/icekeeper/icekeeper/shared/summary"
	"github.com/icekeeper/icekeeper/shared/trigger"
	"github.com/icekeeper/icekeeper/shared/wakeup"
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
	return PlannerWith(d, cat, func(*plan.Options) {})
}

// PlannerWith builds the planner over cat with its options as the
// function sets them, then adjusted (the operator's local cycle ignores
// backoff; tests set a memory budget).
func PlannerWith(d *stage.Deps, cat catalog.Catalog, adjust func(*plan.Options)) (*plan.Planner, error) {
	opts := plan.Options{Tracer: d.Tracer, MemoryBudget: stage.MemoryLimit()}
	if d.Config.JobsTable != "" && d.Clients != nil && d.Clients.DynamoDB != nil {
		opts.Heat = signals.HeatReader{Signals: signals.Store{DB: d.Clients.DynamoDB, TableName: d.Config.JobsTable}, Now: d.Now}
	}
	adjust(&opts)
	return plan.New(plan.Settings{
		LeaseTTL: d.Config.LeaseTTL, MaxGroupBytes: d.Config.MaxGroupBytes,
		InlineTaskBytes: d.Config.InlineTaskBytes, TargetFileSize: d.Config.TargetFileSize,
		OrphanListFanOutFiles: d.Config.OrphanListFanOutFiles, MaxJobFiles: d.Config.MaxJobFiles,
		RewriterConcurrency: d.Config.RewriterConcurrency,
	}, cat, d.Leases, d.Jobs, d.Blobs, d.Tasks, d.Commits, d.Log.With("stage", "planner"), d.Now, opts)
}

// Dispatcher builds the planner function's trigger dispatcher for the
// configured mode. cat may be nil in mode off.
func Dispatcher(d *stage.Deps, cat catalog.Catalog) (*trigger.Dispatcher, error) {
	return DispatcherWith(d, cat, WakeUpOptions{})
}

// WakeUpOptions adjust the expiry wake-ups the configuration turns on
// (the soak's: it fires the schedules itself, on its scaled clock).
type WakeUpOptions struct {
	// Schedules receives the schedules (nil: EventBridge Scheduler's
	// client).
	Schedules wakeup.Scheduler
	// Lead replaces wakeup.DefaultLead when positive.
	Lead time.Duration
}

// DispatcherWith is Dispatcher with its expiry wake-ups adjusted.
func DispatcherWith(d *stage.Deps, cat catalog.Catalog, wo WakeUpOptions) (*trigger.Dispatcher, error) {
	grants, err := optin.ParseGrants(d.Config.Grants)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", config.EnvGrants, err)
	}
	s := trigger.Settings{Mode: d.Config.Mode, Grants: grants, MinInterval: d.Config.MinInterval,
		SweepMaxJobs: d.Config.SweepMaxJobs, SweepMaxBytes: d.Config.SweepMaxBytes, SweepMaxMetadataJobs: d.Config.SweepMaxMetadataJobs,
		SweepConcurrency: d.Config.SweepConcurrency}
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
	deps.Queries = signals.Athena{API: athena.NewFromConfig(d.Clients.Config), Now: d.Now, WorkGroupClasses: d.Config.AthenaWorkGroupClasses}
	assessor := trigger.HealthAssessor{TargetFileSize: d.Config.TargetFileSize, Now: d.Now, MemoryBudget: stage.MemoryLimit(), Signals: store, Catalog: cat}
	if assessor.MemoryBudget > 0 {
		// The tables a sweep assesses at once share the memory one
		// assessment may use alone (health.WithMemoryGate).
		assessor.MemoryGate = semaphore.NewWeighted(assessor.MemoryBudget)
	}
	deps.Assessor = assessor
	sum := summary.Publisher{Store: d.Blobs, Leases: d.Leases, Events: deps.Auditor, Deployment: Deployment(d.Config), Bucket: d.Config.Bucket}
	if d.Config.Mode == config.ModeActive {
		p, err := Planner(d, cat)
		if err != nil {
			return nil, err
		}
		deps.Planner = p
		book := ledger.Book{Entries: ledger.Store{DB: d.Clients.DynamoDB, TableName: d.Config.JobsTable},
			Signals: store, Prices: ledger.Prices{ScanPerTB: d.Config.ScanPricePerTB}, BackOff: d.Config.LedgerBackOff}
		deps.Ledger, sum.Ledger = book, book
		if d.Config.WakeUps() {
			schedules := wo.Schedules
			if schedules == nil {
				schedules = scheduler.NewFromConfig(d.Clients.Config)
			}
			w, err := wakeup.New(schedules, d.Config.WakeUpGroup, d.Config.EventBusARN, d.Config.WakeUpRoleARN, d.Now)
			if err != nil {
				return nil, err
			}
			if wo.Lead > 0 {
				w.Lead = wo.Lead
			}
			deps.WakeUps = w
		}
	}
	deps.Summarizer = sum
	return trigger.New(s, deps)
}

// Deployment names a deployment in its weekly summary: its bucket and
// prefix (the stack's own, unique to it).
func Deployment(c config.Config) string {
	return strings.TrimSuffix(c.Bucket+"/"+strings.Trim(c.Prefix, "/"), "/")
}
