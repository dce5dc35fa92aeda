// Package trigger decides when and whether a trigger leads to maintenance.
//
// The planner function hands every decoded event (package events) to a
// Dispatcher. For each table the event names (or, for a scheduled sweep,
// every table the operator granted) it:
//
//  1. applies the double key (package optin): tables that are not both
//     opted in by their owner and granted by the operator are never
//     selected; an owner's opt-in without a grant is loud every time it is
//     seen (an audit event on the event bus, an error log, a metric);
//     credential-shaped icekeeper.* properties are rejected;
//  2. coalesces bursts: a per-table cooldown (default ICEKEEPER_MIN_INTERVAL,
//     overridable by icekeeper.compaction.min-interval) claimed with a
//     conditional write, so 100 commit events in a cooldown make at most one
//     planning, whichever planner instance they reach;
//  3. assesses the table's health from its metadata and publishes it
//     (advisory and active modes): EMF metric lines and a JSON report in S3,
//     written only when the table's health changed or the published one is
//     a day old (health.Unchanged);
//  4. in active mode, starts a compaction job (package plan).
//
// A query signal (an "Icekeeper Query Observed" event, or a succeeded
// Athena query looked up through QueryLookup) wakes no planning: in
// advisory and active modes it is recorded for a granted table (package
// signals) and counted; a signal for a table outside the grants is
// dropped and counted.
//
// A sweep visits every granted table, ranks the opted-in ones by health
// score and starts jobs in that order within a budget (jobs and bytes per
// sweep); what it skips, and why, is logged and counted. Events are
// best-effort (Glue's especially), so the sweep catches what they missed.
// A sweep that would outlast its invocation plans from the tables it
// visited and leaves a cursor where the next one starts (sweeptime.go).
//
// Mode off does nothing at all; advisory never writes to a table or its
// location (it only reads metadata and writes reports to icekeeper's own
// bucket).
package trigger

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"log/slog"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/events"
	"github.com/icekeeper/icekeeper/shared/audit"
	"github.com/icekeeper/icekeeper/shared/blob"
	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/health"
	"github.com/icekeeper/icekeeper/shared/lease"
	"github.com/icekeeper/icekeeper/shared/ledger"
	"github.com/icekeeper/icekeeper/shared/messages"
	"github.com/icekeeper/icekeeper/shared/metrics"
	"github.com/icekeeper/icekeeper/shared/optin"
	"github.com/icekeeper/icekeeper/shared/pacing"
	"github.com/icekeeper/icekeeper/shared/plan"
	"github.com/icekeeper/icekeeper/shared/signals"
	"github.com/icekeeper/icekeeper/shared/summary"
	"github.com/icekeeper/icekeeper/shared/workload"
)

// Catalog loads and lists tables.
type Catalog interface {
	LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error)
	ListTables(ctx context.Context, namespace table.Identifier) iter.Seq2[table.Identifier, error]
}

// Planner starts compaction jobs.
type Planner interface {
	PlanTable(ctx context.Context, table, trigger string) (plan.Result, error)
	PlanExpiry(ctx context.Context, table, trigger string) (plan.Result, error)
	PlanManifestRewrite(ctx context.Context, table, trigger string) (plan.Result, error)
	PlanDeleteRewrite(ctx context.Context, table, trigger string) (plan.Result, error)
	PlanOrphanCleanup(ctx context.Context, table, trigger string, olderThan time.Duration) (plan.Result, error)
	PlanLayoutChange(ctx context.Context, table, trigger string, change plan.LayoutChange) (plan.Result, error)
}

// Cooldowns claims per-table slots (planning in active mode, assessing in
// advisory mode).
type Cooldowns interface {
	Claim(ctx context.Context, table string, now time.Time, interval time.Duration) (lease.Slot, error)
	SetNext(ctx context.Context, table string, next time.Time) error
}

// Ledger weighs a table's maintenance cost against what it saved the
// table's queries (package ledger).
type Ledger interface {
	Assess(ctx context.Context, table string, now time.Time) (ledger.Assessment, error)
}

// Signals records query observations (package signals).
type Signals interface {
	Record(ctx context.Context, o signals.Observation) error
}

// QueryLookup turns an Athena query execution into observations
// (signals.Athena).
type QueryLookup interface {
	Observations(ctx context.Context, queryExecutionID string) ([]signals.Observation, error)
}

// Auditor publishes audit events.
type Auditor interface {
	Publish(ctx context.Context, detailType string, detail any) error
}

// Summarizer publishes the weekly summary of the tables (package
// summary): the week's JSON and page in the bucket, and its event.
type Summarizer interface {
	Publish(ctx context.Context, tables []string, at time.Time) (summary.Published, error)
}

// Reports stores health reports (*blob.Store).
type Reports interface {
	// Put writes data at a relative name and returns its full key.
	Put(ctx context.Context, name string, data []byte) (string, error)
	// Key is the full key of a relative name.
	Key(name string) string
	// Get reads the object at a full key; blob.ErrNotFound when there is
	// none.
	Get(ctx context.Context, key string) ([]byte, error)
}

// Metrics emits metric lines.
type Metrics interface {
	Emit(dimensions map[string]string, ms ...metrics.Metric) error
}

// Assessment is what the dispatcher needs from a health assessment.
type Assessment struct {
	// Score ranks tables in a sweep (higher: more debt).
	Score float64
	// CompactionBytes is the input a compaction would rewrite; zero when
	// compaction is not recommended.
	CompactionBytes int64
	// ExpiryDue: snapshots are due for expiry with the table's retention.
	ExpiryDue bool
	// ManifestsDue: the current snapshot has more data manifests than the
	// table wants.
	ManifestsDue bool
	// Report is the JSON report written to S3.
	Report []byte
	// Gauges are the health metrics published per table.
	Gauges []metrics.Metric
	// Layout is a layout change the table's query signals recommend
	// (nil: none); made only for an owner who set icekeeper.layout.auto.
	Layout *plan.LayoutChange
	// Pace is what pacing needs of the table's files (package pacing);
	// the dispatcher adds its writers' rate.
	Pace pacing.Table
}

// ErrTableProperties is what an Assessor wraps when the table's own
// properties make it unassessable (for example a malformed
// write.target-file-size-bytes). It is terminal for the table: the table is
// skipped and the owner is told, not retried.
var ErrTableProperties = errors.New("trigger: table properties cannot be used")

// errSkipped says assess skipped the table (the outcome says why).
var errSkipped = errors.New("trigger: table skipped")

// Assessor assesses one table from its metadata only.
type Assessor interface {
	Assess(ctx context.Context, name string, tbl *table.Table) (Assessment, error)
	// Orphans lists the table's orphan files as an orphan cleanup would
	// (read-only): how many and their bytes, or why a cleanup would be
	// refused.
	Orphans(ctx context.Context, tbl *table.Table) (files int, bytes int64, refused string, err error)
}

// Settings configure the dispatcher.
type Settings struct {
	Mode          config.Mode
	Grants        optin.Grants
	MinInterval   time.Duration
	SweepMaxJobs  int
	SweepMaxBytes int64
	// SweepMaxMetadataJobs bounds the metadata-only jobs (manifest
	// rewrites and snapshot expiries of tables with nothing to compact)
	// one sweep starts, apart from SweepMaxJobs: ranked by score in one
	// budget, they lost to the data jobs of busy tables every sweep.
	SweepMaxMetadataJobs int
	// SweepConcurrency is how many tables a sweep loads and assesses at
	// once (0 or 1: one after another; package config's default is 16).
	SweepConcurrency int
}

// Action says what the dispatcher did with one table.
type Action string

// Actions.
const (
	ActionPlanned  Action = "planned"
	ActionAssessed Action = "assessed" // advisory mode, or active with nothing to plan
	ActionSkipped  Action = "skipped"
	// ActionObserved: a query signal was recorded.
	ActionObserved Action = "observed"
	// ActionSummarized: the weekly summary was written and announced.
	ActionSummarized Action = "summarized"
)

// Skip reasons (also the Reason metric dimension).
const (
	SkipModeOff           = "mode_off"
	SkipNotGranted        = "not_granted"
	SkipOptInWithoutGrant = "opt_in_without_grant"
	SkipNotOptedIn        = "not_opted_in"
	SkipInvalidProperties = "invalid_properties"
	SkipCooldown          = "cooldown"
	SkipNoSuchTable       = "no_such_table"
	// SkipNotIceberg: the catalog has the table, but not as an Iceberg
	// table (a Hive or plain Parquet table of a granted Glue database,
	// made by a crawler or an Athena CTAS; Glue's Iceberg REST endpoint
	// lists those too: "call LoadTable to determine").
	SkipNotIceberg  = "not_iceberg"
	SkipHealthy     = "healthy"
	SkipBudgetJobs  = "budget_max_jobs"
	SkipBudgetBytes = "budget_max_bytes"
	// SkipBudgetMetadataJobs: the sweep's budget of metadata-only jobs
	// (Settings.SweepMaxMetadataJobs) was used.
	SkipBudgetMetadataJobs = "budget_max_metadata_jobs"
	SkipUnresolved         = "unresolved_location"
	SkipBackoff            = "backoff"
	SkipNoTableChange      = "no_table_change"
	SkipOrphansNotEnabled  = "orphans_not_enabled"
	SkipNoSignalStore      = "no_signal_store"
	SkipInvalidSignal      = "invalid_signal"
	// SkipSweepTime: the sweep visited the table but its invocation's
	// time ran short before the table's turn to be planned (sweeptime.go).
	SkipSweepTime = "sweep_time"
)

// TableOutcome reports one table.
type TableOutcome struct {
	Table     string       `json:"table"`
	Action    Action       `json:"action"`
	Skip      string       `json:"skip,omitempty"`
	Reason    string       `json:"reason,omitempty"`
	Score     float64      `json:"score,omitempty"`
	ReportKey string       `json:"report_key,omitempty"`
	Plan      *plan.Result `json:"plan,omitempty"`
	// RevisitAfter, when set, is how soon the table may be planned again
	// if this visit keeps its cooldown slot: shorter than the deployment's
	// interval for a table its writers fill fast (package pacing). The
	// log line "cooldown paced to the writers' rate" says it when used.
	RevisitAfter time.Duration `json:"-"`
}

// Outcome reports one trigger.
type Outcome struct {
	Trigger events.Trigger `json:"trigger"`
	Tables  []TableOutcome `json:"tables,omitempty"`
	Errors  []string       `json:"errors,omitempty"`
	// Deferred counts the granted tables a sweep did not visit for lack of
	// time: the next sweep of its kind starts with them (sweeptime.go).
	Deferred int `json:"deferred,omitempty"`
}

// Dispatcher turns triggers into maintenance.
type Dispatcher struct {
	s         Settings
	catalog   Catalog
	planner   Planner
	cooldowns Cooldowns
	auditor   Auditor
	reports   Reports
	assessor  Assessor
	metrics   Metrics
	signals   Signals
	queries   QueryLookup
	ledger    Ledger
	summary   Summarizer
	wakeups   WakeUps
	log       *slog.Logger
	now       func() time.Time
	remaining func(context.Context) (time.Duration, bool)
	// slotWakes remembers, per table, the slot end this instance last
	// scheduled a visit for (wakeWhenSlotEnds), so that a burst of events
	// within one cooldown asks EventBridge Scheduler once.
	slotWakes slotWakes
}

// Deps are the dispatcher's collaborators. In mode off only Metrics and Log
// are used; in advisory mode Planner and Cooldowns may be nil.
type Deps struct {
	Catalog   Catalog
	Planner   Planner
	Cooldowns Cooldowns
	Auditor   Auditor
	Reports   Reports
	Assessor  Assessor
	Metrics   Metrics
	// Signals and Queries record query signals; without Signals they are
	// dropped (counted), without Queries Athena's are.
	Signals Signals
	Queries QueryLookup
	// Ledger, when set, backs off the compactions and delete-file
	// rewrites of a table whose maintenance keeps costing more than it
	// saves (active mode).
	Ledger Ledger
	// Summarizer, when set, publishes the weekly summary on its
	// schedule's trigger (advisory and active modes).
	Summarizer Summarizer
	// WakeUps, when set, schedules a table's next visit for when its next
	// snapshot comes due for expiry (active mode; wakeForExpiry).
	WakeUps WakeUps
	Log     *slog.Logger
	Now     func() time.Time
	// Remaining, when set, is how long the invocation has left (false:
	// no limit); by default the time to the context's deadline, which
	// Lambda sets to the function's timeout. A sweep plans from what it
	// visited before its time runs short (sweeptime.go).
	Remaining func(context.Context) (time.Duration, bool)
}

// New validates the settings against the mode and returns a Dispatcher.
func New(s Settings, d Deps) (*Dispatcher, error) {
	if d.Log == nil {
		d.Log = slog.Default()
	}
	if d.Now == nil {
		d.Now = time.Now
	}
	if d.Remaining == nil {
		d.Remaining = remainingTime
	}
	if d.Metrics == nil {
		return nil, errors.New("trigger: metrics are required")
	}
	switch s.Mode {
	case config.ModeOff:
	case config.ModeActive:
		if s.Grants.Empty() {
			return nil, fmt.Errorf("trigger: mode active refuses to start without a grant list (%s)", config.EnvGrants)
		}
		if d.Planner == nil {
			return nil, errors.New("trigger: active mode needs a planner")
		}
		fallthrough
	case config.ModeAdvisory:
		if d.Catalog == nil || d.Auditor == nil || d.Reports == nil || d.Assessor == nil || d.Cooldowns == nil {
			return nil, errors.New("trigger: advisory and active modes need a catalog, an auditor, a report store, an assessor and cooldowns")
		}
	default:
		return nil, fmt.Errorf("trigger: unknown mode %q", s.Mode)
	}
	if s.MinInterval < 0 || s.SweepMaxJobs < 0 || s.SweepMaxBytes < 0 || s.SweepMaxMetadataJobs < 0 || s.SweepConcurrency < 0 {
		return nil, errors.New("trigger: intervals and budgets must not be negative")
	}
	return &Dispatcher{s: s, catalog: d.Catalog, planner: d.Planner, cooldowns: d.Cooldowns, auditor: d.Auditor,
		reports: d.Reports, assessor: d.Assessor, metrics: d.Metrics, signals: d.Signals, queries: d.Queries, ledger: d.Ledger, summary: d.Summarizer, wakeups: d.WakeUps, log: d.Log, now: d.Now, remaining: d.Remaining}, nil
}

// Dispatch handles one decoded trigger. The error joins the retryable
// failures (a catalog or AWS error); everything else is in the outcome.
func (d *Dispatcher) Dispatch(ctx context.Context, trig events.Trigger) (Outcome, error) {
	out := Outcome{Trigger: trig}
	log := d.log.With("trigger", trig.Kind, "event_id", trig.ID)
	if d.s.Mode == config.ModeOff {
		d.count("", "TriggersIgnored", SkipModeOff)
		log.Info("mode off: trigger ignored")
		out.Tables = append(out.Tables, TableOutcome{Action: ActionSkipped, Skip: SkipModeOff, Reason: "ICEKEEPER_MODE=off"})
		return out, nil
	}
	var errs []error
	record := func(o TableOutcome, err error) {
		if err != nil {
			errs = append(errs, err)
			out.Errors = append(out.Errors, err.Error())
		}
		if o.Table != "" || o.Action != "" {
			out.Tables = append(out.Tables, o)
		}
	}
	if trig.Ignored != "" {
		d.count("", "TriggersIgnored", SkipNoTableChange)
		log.Info("trigger changes no table's data", "reason", trig.Ignored)
		out.Tables = append(out.Tables, TableOutcome{Action: ActionSkipped, Skip: SkipNoTableChange, Reason: trig.Ignored})
		return out, nil
	}
	if trig.Kind == events.KindQuery || trig.Kind == events.KindAthena {
		outs, err := d.observe(ctx, log, trig)
		out.Tables = append(out.Tables, outs...)
		if err != nil {
			record(TableOutcome{}, err)
		}
		return out, errors.Join(errs...)
	}
	if trig.Kind == events.KindSummarySchedule {
		record(d.summarize(ctx, log))
		return out, errors.Join(errs...)
	}
	if trig.Sweep {
		sweep := d.sweep
		if trig.Kind == events.KindOrphanSchedule {
			sweep = d.orphanSweep
		}
		outs, deferred, err := sweep(ctx, log, trig)
		out.Deferred = deferred
		for _, o := range outs {
			record(o, nil)
		}
		if err != nil {
			record(TableOutcome{}, err)
		}
		return out, errors.Join(errs...)
	}
	names := append([]string(nil), trig.Tables...)
	for _, loc := range trig.Locations {
		name, err := d.resolve(ctx, log, loc)
		if err != nil {
			record(TableOutcome{}, err)
			continue
		}
		if name == "" {
			record(d.skip(log.With("location", loc), TableOutcome{Table: loc}, SkipUnresolved, "no granted table has this location"), nil)
			continue
		}
		names = append(names, name)
	}
	after := ""
	if trig.Kind == events.KindContinue {
		after = trig.ResumeAfter
	}
	for _, name := range names {
		if after != "" {
			record(d.resume(ctx, log.With("table", name, "continues_job", trig.ContinuesJob), name, trig.Kind, after))
			continue
		}
		record(d.visit(ctx, log.With("table", name), name, trig.Kind))
	}
	return out, errors.Join(errs...)
}

// summarize publishes the weekly summary of the granted tables. A failure
// is retryable: the week's keys and its event's id are the same on the
// next attempt.
func (d *Dispatcher) summarize(ctx context.Context, log *slog.Logger) (TableOutcome, error) {
	if d.summary == nil {
		// Not wired (the functions always are): ignored as a trigger that
		// changes no table, without a skip reason of its own (each is a
		// metric dimension value, infra/cost_test.go).
		d.count("", "TriggersIgnored", SkipNoTableChange)
		log.Info("trigger ignored: the weekly summary is not published here")
		return TableOutcome{Action: ActionSkipped, Skip: SkipNoTableChange, Reason: "the weekly summary is not published here"}, nil
	}
	names, err := d.grantedTables(ctx)
	if err != nil {
		return TableOutcome{}, err
	}
	p, err := d.summary.Publish(ctx, names, d.now())
	o := TableOutcome{Table: p.Summary.ID, Action: ActionSummarized, ReportKey: p.Event.JSONKey,
		Reason: fmt.Sprintf("%d tables, %d jobs, $%.4f", p.Summary.Totals.Tables, p.Summary.Totals.Jobs, p.Summary.Totals.CostUSD)}
	if err != nil {
		return o, fmt.Errorf("trigger: weekly summary: %w", err)
	}
	log.Info("weekly summary published", "summary_id", p.Summary.ID, "key", p.Event.JSONKey, "tables", p.Summary.Totals.Tables, "jobs", p.Summary.Totals.Jobs)
	return o, nil
}

// observe records a query signal's observations for the granted tables
// they name. A failed lookup or write is returned (retryable: EventBridge
// invokes the planner again).
func (d *Dispatcher) observe(ctx context.Context, log *slog.Logger, trig events.Trigger) ([]TableOutcome, error) {
	if d.signals == nil || (trig.Kind == events.KindAthena && d.queries == nil) {
		return []TableOutcome{d.skip(log, TableOutcome{Table: strings.Join(trig.Tables, ",")}, SkipNoSignalStore, "query signals are not recorded here")}, nil
	}
	var obs []signals.Observation
	if trig.Kind == events.KindAthena {
		var err error
		obs, err = d.queries.Observations(ctx, trig.AthenaQueryID)
		if errors.Is(err, signals.ErrUnparsable) {
			return []TableOutcome{d.skip(log.With("athena_query_id", trig.AthenaQueryID), TableOutcome{}, SkipInvalidSignal, err.Error())}, nil
		}
		if err != nil {
			return nil, fmt.Errorf("athena query %s: %w", trig.AthenaQueryID, err)
		}
	} else if trig.Query != nil && len(trig.Tables) == 1 {
		o := signals.Observation{Table: trig.Tables[0], BytesScanned: trig.Query.BytesScanned, RowsReturned: trig.Query.RowsReturned, Engine: trig.Query.Engine, QueryID: trig.Query.QueryID, Partitions: trig.Query.Partitions, Class: trig.Query.Class, At: d.now()}
		for _, c := range trig.Query.Columns {
			o.Filters = append(o.Filters, signals.Filter{Column: c.Column, Predicate: signals.Predicate(c.Predicate)})
		}
		obs = append(obs, o)
	}
	var outs []TableOutcome
	var errs []error
	for _, o := range obs {
		tl := log.With("table", o.Table, "query_id", o.QueryID)
		if !d.s.Grants.Granted(o.Table) {
			outs = append(outs, d.skip(tl, TableOutcome{Table: o.Table}, SkipNotGranted, "query signals are recorded for granted tables only"))
			continue
		}
		if o.At.IsZero() {
			o.At = d.now()
		}
		if len(o.Equals) > 0 && len(o.Partitions) == 0 {
			// Literal comparisons on identity partition columns name the
			// partitions the query read (for rewriting the most-queried
			// first); the table's spec says which columns those are.
			if ident, err := messages.TableIdent(o.Table); err == nil {
				if tbl, err := d.catalog.LoadTable(ctx, ident); err == nil {
					o.Partitions = signals.PartitionsOf(o.Equals, tbl.Schema(), tbl.Spec())
				} else {
					tl.Warn("partitions of the query not recorded: table not loaded", "err", err.Error())
				}
			}
		}
		if err := o.Validate(); err != nil {
			outs = append(outs, d.skip(tl, TableOutcome{Table: o.Table}, SkipInvalidSignal, err.Error()))
			continue
		}
		if err := d.signals.Record(ctx, o); err != nil {
			errs = append(errs, err)
			continue
		}
		d.count(o.Table, "QuerySignals", "")
		tl.Info("query signal recorded", "class", workload.Of(o.Class), "columns", len(o.Filters), "bytes_scanned", o.BytesScanned, "engine", o.Engine)
		outs = append(outs, TableOutcome{Table: o.Table, Action: ActionObserved})
	}
	return outs, errors.Join(errs...)
}

// visit handles one table named by an event.
func (d *Dispatcher) visit(ctx context.Context, log *slog.Logger, name, kind string) (TableOutcome, error) {
	o := TableOutcome{Table: name}
	ident, err := messages.TableIdent(name)
	if err != nil {
		return d.skip(log, o, SkipNoSuchTable, err.Error()), nil
	}
	granted := d.s.Grants.Granted(name)
	if granted {
		// Coalesce before any read: a claimed slot costs one conditional
		// write; the rest of a burst costs nothing else.
		slot, err := d.cooldowns.Claim(ctx, name, d.now(), d.s.MinInterval)
		if err != nil {
			return o, err
		}
		if !slot.Claimed {
			d.wakeWhenSlotEnds(ctx, log, name, slot.Ends)
			return d.skip(log, o, SkipCooldown, "visited less than the cooldown ago; the event is coalesced"), nil
		}
		o, err := d.visitClaimed(ctx, log, o, ident, kind, "")
		d.settleSlot(ctx, log, name, o, err)
		return o, err
	}
	return d.visitClaimed(ctx, log, o, ident, kind, "")
}

// resume handles a chain continuation: the committer committed a job of
// kind after on a granted table, and the rest of the visit's maintenance
// chain (plan) runs now. The table's cooldown is neither claimed nor given
// back (the visit that planned the job spent it, and a busy table's
// compactions stay a cooldown apart); only the actions after the committed
// one are planned, each under its own cooldown when the table sets one,
// so the chain only moves forward and a redelivered continuation plans
// at most what is still due.
func (d *Dispatcher) resume(ctx context.Context, log *slog.Logger, name, kind, after string) (TableOutcome, error) {
	o := TableOutcome{Table: name}
	ident, err := messages.TableIdent(name)
	if err != nil {
		return d.skip(log, o, SkipNoSuchTable, err.Error()), nil
	}
	if !d.s.Grants.Granted(name) {
		return d.skip(log, o, SkipNotGranted, "a maintenance chain resumes on granted tables only"), nil
	}
	return d.visitClaimed(ctx, log, o, ident, kind, after)
}

// settleSlot keeps a claimed cooldown slot only when it was spent on a job:
// one planned, or one in flight (its lease was held). An error, a table not
// opted in or invalid, or nothing to compact gives the slot back, so that
// the next event or sweep (a retry, the owner opting in) is not refused as
// "cooldown" for a table that was never planned.
//
// A slot kept for a job planned ends after the deployment's interval, or
// sooner for a table its writers fill fast (o.RevisitAfter, package
// pacing). One kept because another job held the lease ends after
// pacing.Retry, and a visit is scheduled for then (wakeWhenSlotEnds): the
// job in flight is most often the maintenance chain's expiry, which the
// wake-up of the snapshot expiry plans at the moment the compaction's slot
// ends, the same moment a visit for the slot's end comes. Kept for the
// whole interval, such a slot made every visit of a table written once an
// hour find the expiry's lease, and the table went uncompacted for hours
// (the soak's MERGE and CDC tables, docs/PERFORMANCE.md).
func (d *Dispatcher) settleSlot(ctx context.Context, log *slog.Logger, name string, o TableOutcome, err error) {
	switch {
	case err == nil && o.Plan != nil && o.Plan.Outcome == plan.OutcomeLeaseHeld:
		retry := pacing.Retry(d.s.MinInterval)
		if o.RevisitAfter > 0 {
			retry = min(retry, o.RevisitAfter)
		}
		next := d.now().Add(retry)
		if serr := d.cooldowns.SetNext(context.WithoutCancel(ctx), name, next); serr != nil {
			log.Warn("shorten the cooldown slot of a visit that found the lease held", "err", serr.Error())
			return
		}
		log.Info("lease held by a job in flight: the table is visited again shortly", "retry_after", retry.String())
		d.wakeWhenSlotEnds(ctx, log, name, next)
	case err == nil && o.Action == ActionPlanned:
		if o.RevisitAfter > 0 {
			if serr := d.cooldowns.SetNext(context.WithoutCancel(ctx), name, d.now().Add(o.RevisitAfter)); serr != nil {
				log.Warn("pace the cooldown slot", "err", serr.Error())
			} else {
				log.Info("cooldown paced to the writers' rate", "revisit_after", o.RevisitAfter.String(), "interval", d.s.MinInterval.String())
			}
		}
	default:
		if rerr := d.cooldowns.SetNext(context.WithoutCancel(ctx), name, d.now()); rerr != nil {
			log.Warn("give the cooldown slot back", "err", rerr.Error())
		}
	}
}

// visitClaimed reads the table and acts on it; for a granted table the
// caller holds its cooldown slot, or (after, a chain continuation) the
// visit resumes the chain after that kind of job.
func (d *Dispatcher) visitClaimed(ctx context.Context, log *slog.Logger, o TableOutcome, ident table.Identifier, kind, after string) (TableOutcome, error) {
	name := o.Table
	granted := d.s.Grants.Granted(name)
	tbl, err := d.catalog.LoadTable(ctx, ident)
	if err != nil {
		switch {
		case errors.Is(err, catalog.ErrNoSuchTable), errors.Is(err, catalog.ErrNoSuchNamespace):
			return d.skip(log, o, SkipNoSuchTable, err.Error()), nil
		case NotIceberg(err):
			return d.skip(log, o, SkipNotIceberg, err.Error()), nil
		case !granted:
			// Without a grant the functions may not be allowed to read the
			// table at all; that is expected, not an error.
			return d.skip(log, o, SkipNotGranted, "not granted and not readable: "+err.Error()), nil
		}
		return o, fmt.Errorf("trigger: load %s: %w", name, err)
	}
	eligible, o := d.decide(ctx, log, o, tbl, kind)
	if !eligible {
		return o, nil
	}
	if iv := optin.MinInterval(tbl.Properties(), d.s.MinInterval); iv != d.s.MinInterval && after == "" {
		if err := d.cooldowns.SetNext(ctx, name, d.now().Add(iv)); err != nil {
			log.Warn("set table cooldown", "err", err.Error())
		}
	}
	a, o, err := d.assess(ctx, log, o, tbl)
	if errors.Is(err, errSkipped) {
		return o, nil
	}
	if err != nil || d.s.Mode != config.ModeActive {
		return o, err
	}
	return d.plan(ctx, log, o, tbl.Properties(), kind, a.Layout, after)
}

// decide applies the double key and the property rules.
func (d *Dispatcher) decide(ctx context.Context, log *slog.Logger, o TableOutcome, tbl *table.Table, kind string) (bool, TableOutcome) {
	props := tbl.Properties()
	if err := optin.ValidateProperties(props); err != nil {
		d.count(o.Table, "InvalidProperties", "")
		log.Error("table properties rejected; the table is not maintained", "err", err.Error())
		if aerr := d.auditor.Publish(ctx, audit.DetailInvalidProperties, audit.TableEvent{Table: o.Table, Reason: err.Error(), Trigger: kind}); aerr != nil {
			log.Error("audit event not published", "err", aerr.Error())
		}
		return false, d.skip(log, o, SkipInvalidProperties, err.Error())
	}
	dec := optin.Decide(o.Table, props, d.s.Grants)
	if dec.Loud {
		d.count(o.Table, "OptInWithoutGrant", "")
		log.Error("opt-in without grant: the owner enabled maintenance but the operator has not granted the table", "reason", dec.Reason, "metric", "OptInWithoutGrant")
		if err := d.auditor.Publish(ctx, audit.DetailOptInWithoutGrant, audit.TableEvent{Table: o.Table, Reason: dec.Reason, Trigger: kind}); err != nil {
			log.Error("audit event not published", "err", err.Error())
		}
		return false, d.skip(log, o, SkipOptInWithoutGrant, dec.Reason)
	}
	if !dec.Eligible {
		skip := SkipNotOptedIn
		if !d.s.Grants.Granted(o.Table) {
			skip = SkipNotGranted
		}
		return false, d.skip(log, o, skip, dec.Reason)
	}
	return true, o
}

// assess measures the table and publishes its health.
func (d *Dispatcher) assess(ctx context.Context, log *slog.Logger, o TableOutcome, tbl *table.Table) (Assessment, TableOutcome, error) {
	a, err := d.assessor.Assess(ctx, o.Table, tbl)
	if errors.Is(err, ErrTableProperties) {
		d.count(o.Table, "InvalidProperties", "")
		log.Error("table properties rejected; the table is not maintained", "err", err.Error())
		if aerr := d.auditor.Publish(ctx, audit.DetailInvalidProperties, audit.TableEvent{Table: o.Table, Reason: err.Error()}); aerr != nil {
			log.Error("audit event not published", "err", aerr.Error())
		}
		return a, d.skip(log, o, SkipInvalidProperties, err.Error()), errSkipped
	}
	if err != nil {
		return a, o, fmt.Errorf("trigger: assess %s: %w", o.Table, err)
	}
	o.Score = a.Score
	o.Action = ActionAssessed
	o.RevisitAfter = d.revisitAfter(tbl, a)
	if err := d.metrics.Emit(map[string]string{"Table": o.Table, "Function": "planner"}, a.Gauges...); err != nil {
		log.Warn("emit health metrics", "err", err.Error())
	}
	latest := "health/" + o.Table + "/latest.json"
	prev := d.publishedReport(ctx, log, d.reports.Key(latest))
	if prev != nil && health.Unchanged(prev, a.Report, health.RefreshAge) {
		o.ReportKey = d.reports.Key(latest)
		log.Info("health unchanged: report not rewritten", "score", a.Score, "compaction_bytes", a.CompactionBytes, "report", o.ReportKey)
		return a, o, nil
	}
	if health.HistoryDue(prev, a.Report) {
		stamp := d.now().UTC().Format("20060102T150405Z")
		if _, err := d.reports.Put(ctx, "health/"+o.Table+"/"+stamp+".json", a.Report); err != nil {
			return a, o, fmt.Errorf("trigger: store health report of %s: %w", o.Table, err)
		}
	}
	key, err := d.reports.Put(ctx, latest, a.Report)
	if err != nil {
		return a, o, fmt.Errorf("trigger: store health report of %s: %w", o.Table, err)
	}
	o.ReportKey = key
	log.Info("health assessed", "score", a.Score, "compaction_bytes", a.CompactionBytes, "report", key)
	return a, o, nil
}

// revisitAfter is how soon the table may be planned again once this visit
// keeps its slot (package pacing), or 0 to keep the deployment's interval:
// always for a table whose owner set icekeeper.compaction.min-interval
// (theirs stands, shorter or longer).
func (d *Dispatcher) revisitAfter(tbl *table.Table, a Assessment) time.Duration {
	if strings.TrimSpace(tbl.Properties()[optin.PropertyMinInterval]) != "" || d.s.MinInterval <= 0 {
		return 0
	}
	t := a.Pace
	t.FilesPerHour = pacing.WriteRate(tbl.Metadata(), d.now(), d.s.MinInterval)
	if iv := pacing.Next(t, d.s.MinInterval); iv < d.s.MinInterval {
		return iv
	}
	return 0
}

// publishedReport is the table's published latest report (at key), or
// nil when there is none or it cannot be read (with a warning: the visit
// goes on and writes its report). With it the planner skips writing a
// report that says nothing new (health.Unchanged: a sweep assesses every
// table each hour and most have not changed since; S3 charges a GET about
// a twelfth of a PUT, and this one saves two) and copies a changed one
// into the history at most once an hour (health.HistoryDue).
func (d *Dispatcher) publishedReport(ctx context.Context, log *slog.Logger, key string) []byte {
	prev, err := d.reports.Get(ctx, key)
	switch {
	case errors.Is(err, blob.ErrNotFound):
		return nil
	case err != nil:
		log.Warn("previous health report not read; the report is written", "report", key, "err", err.Error())
		return nil
	}
	return prev
}

// plan starts a job for an eligible table, the first that is due of the
// maintenance chain: a layout change (when the owner set
// icekeeper.layout.auto and the query signals recommend one), compaction,
// then a delete-file rewrite (of the
// partitions whose data files were not worth rewriting but whose position
// deletes pile up), then a manifest rewrite (after compaction
// replaced many files' entries), then a snapshot expiry (which frees what
// both replaced; off when the owner set icekeeper.expire.enabled=false).
// One job a visit: each later action runs after the earlier one ended, on
// the chain continuation its committer announces (after, the kind of the
// committed job: only the actions after it are planned) or on a later
// visit.
func (d *Dispatcher) plan(ctx context.Context, log *slog.Logger, o TableOutcome, props map[string]string, kind string, layout *plan.LayoutChange, after string) (TableOutcome, error) {
	start := d.now()
	changeLayout := func(ctx context.Context, table, trigger string) (plan.Result, error) {
		return d.planner.PlanLayoutChange(ctx, table, trigger, *layout)
	}
	chain := []chainStep{
		{"layout change", "change-layout", layout != nil && optin.LayoutAuto(props), "", changeLayout},
		{"compaction", "compaction", optin.OnUnlessFalse(props, optin.PropertyCompactionEnabled), "", d.planner.PlanTable},
		{"delete-file rewrite", "rewrite-deletes", optin.OnUnlessFalse(props, optin.PropertyRewriteDeletesEnabled), optin.PropertyRewriteDeletesMinInterval, d.planner.PlanDeleteRewrite},
		{"manifest rewrite", "rewrite-manifests", optin.OnUnlessFalse(props, optin.PropertyRewriteManifestsEnabled), optin.PropertyRewriteManifestsMinInterval, d.planner.PlanManifestRewrite},
		{"snapshot expiry", "expire", optin.ExpireEnabled(props), optin.PropertyExpireMinInterval, d.planner.PlanExpiry},
	}
	if after != "" {
		i := slices.IndexFunc(chain, func(n chainStep) bool { return n.action == after })
		if i < 0 {
			return d.skip(log, o, SkipNoTableChange, "a maintenance chain does not resume after "+after), nil
		}
		chain = chain[i+1:]
		if len(chain) == 0 {
			o.Plan = &plan.Result{Table: o.Table, Outcome: plan.OutcomeNothingToDo, Reason: "nothing in the maintenance chain comes after " + after}
			o.Reason = o.Plan.Reason
			return o, nil
		}
	}
	book := d.weigh(ctx, log, o.Table)
	res := plan.Result{Table: o.Table, Outcome: plan.OutcomeNothingToDo}
	var reasons []string
	var nextExpiry *time.Time
	for _, n := range chain {
		if !n.on {
			reasons = append(reasons, n.name+" turned off by the table's owner")
			continue
		}
		if book != nil && slices.Contains(ledger.Kinds, n.action) && !book.Allows(d.now()) {
			why := fmt.Sprintf("%s backed off by the ledger until %s: %s", n.name, book.NextAllowed.UTC().Format(time.RFC3339), book.Verdict.Reason)
			log.Info("maintenance backed off by the ledger", "action", n.action, "next_allowed", book.NextAllowed, "reason", book.Verdict.Reason)
			d.count(o.Table, "LedgerBackOffs", "")
			reasons = append(reasons, why)
			continue
		}
		settle, ok, err := d.claimAction(ctx, o.Table, n.action, props, n.cooldown)
		if err != nil {
			return o, err
		}
		if !ok {
			reasons = append(reasons, n.name+" planned less than its "+n.cooldown+" ago")
			continue
		}
		r, err := n.plan(ctx, o.Table, kind)
		settle(err == nil && r.Outcome == plan.OutcomePlanned)
		if err == nil && n.action == "expire" {
			d.wakeForExpiry(ctx, log, o.Table, r, props, n.cooldown)
			nextExpiry = r.NextExpiryDue
		}
		switch {
		case err != nil && (n.action == "change-layout" || n.action == "compaction"):
			// The trigger is retried: a failure of the layout change or
			// of compaction (the chain's first before the layout change
			// came) is returned; a later action's is only a reason.
			return o, err
		case err != nil:
			log.Error("plan "+n.name, "err", err.Error())
			reasons = append(reasons, n.name+": "+err.Error())
			continue
		case r.Outcome == plan.OutcomeNothingToDo:
			reasons = append(reasons, r.Reason)
			continue
		}
		res = r
		break
	}
	if res.Outcome == plan.OutcomeNothingToDo {
		res.Reason = strings.Join(reasons, "; ")
		res.NextExpiryDue = nextExpiry
	}
	if eerr := d.metrics.Emit(map[string]string{"Table": o.Table, "Function": "planner"},
		metrics.Metric{Name: "PlanDuration", Value: float64(d.now().Sub(start).Milliseconds()), Unit: metrics.Milliseconds}); eerr != nil {
		log.Warn("emit metric", "metric", "PlanDuration", "err", eerr.Error())
	}
	o.Plan = &res
	switch res.Outcome {
	case plan.OutcomePlanned:
		o.Action = ActionPlanned
		d.count(o.Table, "JobsPlanned", "")
	case plan.OutcomeLeaseHeld:
		d.count(o.Table, "LeaseSkips", "")
		o.Reason = res.Reason
	case plan.OutcomeBackedOff:
		return d.skip(log, o, SkipBackoff, res.Reason), nil
	default:
		o.Reason = res.Reason
	}
	return o, nil
}

// chainStep is one action of the maintenance chain (plan).
type chainStep struct {
	name, action string
	on           bool
	cooldown     string // the action's own cooldown property, if any
	plan         func(ctx context.Context, table, trigger string) (plan.Result, error)
}

// weigh reads the table's ledger and logs its last weighed week (values
// of the EMF record only, not CloudWatch metrics: the dashboard's ledger
// table reads them from the planner's log);
// nil when there is no ledger or it cannot be read (maintenance then
// goes on as usual: the ledger only ever slows it down).
func (d *Dispatcher) weigh(ctx context.Context, log *slog.Logger, table string) *ledger.Assessment {
	if d.ledger == nil {
		return nil
	}
	a, err := d.ledger.Assess(ctx, table, d.now())
	if err != nil {
		log.Warn("ledger not read; maintenance is not backed off", "err", err.Error())
		return nil
	}
	if len(a.Verdict.Weighed) > 0 {
		w := a.Verdict.Weighed[0]
		backedOff := 0.0
		if a.Verdict.BackOff {
			backedOff = 1
		}
		if err := d.metrics.Emit(map[string]string{"Table": table, "Function": "planner"},
			metrics.Metric{Name: "MaintenanceCostWeekUSD", Value: w.CostUSD, Unit: metrics.None, Publish: metrics.LogOnly},
			metrics.Metric{Name: "QueryCostSavedWeekUSD", Value: w.SavedUSD, Unit: metrics.None, Publish: metrics.LogOnly},
			metrics.Metric{Name: "MaintenanceBackedOff", Value: backedOff, Unit: metrics.None, Publish: metrics.LogOnly}); err != nil {
			log.Warn("emit ledger metrics", "err", err.Error())
		}
	}
	return &a
}

// lastDataAction is the last action of the maintenance chain (plan) that
// writes data files; the actions after it (manifest rewrite, snapshot
// expiry) write only metadata.
const lastDataAction = "rewrite-deletes"

// claimAction takes an action's own cooldown slot on the table when the
// table sets one (the property prop, a duration): ok is false while the
// action cools down. settle(planned) gives the slot back unless a job was
// planned: only a planned job spends a cooldown.
func (d *Dispatcher) claimAction(ctx context.Context, table, action string, props map[string]string, prop string) (settle func(planned bool), ok bool, err error) {
	none := func(bool) {}
	iv, set := actionInterval(props, prop)
	if !set {
		return none, true, nil
	}
	key := table + "#" + action
	now := d.now()
	slot, err := d.cooldowns.Claim(ctx, key, now, iv)
	if err != nil || !slot.Claimed {
		return none, slot.Claimed, err
	}
	return func(planned bool) {
		if planned {
			return
		}
		if err := d.cooldowns.SetNext(context.WithoutCancel(ctx), key, now); err != nil {
			d.log.Warn("give back an action's cooldown", "table", table, "action", action, "err", err.Error())
		}
	}, true, nil
}

// actionInterval is an action's own cooldown when the table sets it (the
// property prop, a positive duration).
func actionInterval(props map[string]string, prop string) (time.Duration, bool) {
	if prop == "" {
		return 0, false
	}
	if v, err := time.ParseDuration(strings.TrimSpace(props[prop])); err == nil && v > 0 {
		return v, true
	}
	return 0, false
}

// grantedTables lists the granted tables: every table of every granted
// namespace, plus the individually granted ones.
func (d *Dispatcher) grantedTables(ctx context.Context) ([]string, error) {
	seen := map[string]bool{}
	var out []string
	for _, ns := range d.s.Grants.Namespaces() {
		for ident, err := range d.catalog.ListTables(ctx, strings.Split(ns, ".")) {
			if err != nil {
				if errors.Is(err, catalog.ErrNoSuchNamespace) {
					break
				}
				return nil, fmt.Errorf("trigger: list tables of %s: %w", ns, err)
			}
			name := messages.TableName(ident)
			if !seen[name] {
				seen[name] = true
				out = append(out, name)
			}
		}
	}
	for _, t := range d.s.Grants.Tables() {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	sort.Strings(out)
	return out, nil
}

func (d *Dispatcher) skip(log *slog.Logger, o TableOutcome, reason, detail string) TableOutcome {
	o.Action, o.Skip, o.Reason = ActionSkipped, reason, detail
	d.count(o.Table, "TablesSkipped", reason)
	log.Info("table skipped", "skip", reason, "reason", detail)
	return o
}

// count emits a count of one, with the table and reason as dimensions
// when given.
func (d *Dispatcher) count(tableName, name, reason string) {
	dims := map[string]string{"Function": "planner"}
	if tableName != "" {
		dims["Table"] = tableName
	}
	if reason != "" {
		dims["Reason"] = reason
	}
	if err := d.metrics.Emit(dims, metrics.Metric{Name: name, Value: 1, Unit: metrics.Count}); err != nil {
		d.log.Warn("emit metric", "metric", name, "err", err.Error())
	}
}

// NotIceberg reports a load error that says the table is not an Iceberg
// table. iceberg-go's glue catalog has no sentinel for it, only its
// message ("table %s.%s is not an iceberg table", catalog/glue/glue.go,
// when the Glue table's table_type parameter is not ICEBERG).
func NotIceberg(err error) bool {
	return err != nil && strings.Contains(strings.ToLower(err.Error()), "is not an iceberg table")
}
