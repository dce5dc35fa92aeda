// Package plan is the planner: it decides what one compaction job of one
// table rewrites, and starts it.
//
// For each table it:
//  1. takes the table's lease BEFORE pinning and scanning (a held lease means
//     skip, counted), so two planners racing for one table make one job;
//  2. loads the table through the catalog and pins its current snapshot S
//     (metadata location, snapshot id, sequence number);
//  3. plans file groups at S with iceberg-go's compaction planner, honouring
//     the table's write.target-file-size-bytes, and splits groups larger than
//     the per-rewriter limit;
//  4. records the plan in S3 and the job and its groups in DynamoDB;
//  5. sends one task per group to the task queue (through S3 when a task does
//     not fit in one message) and marks the job running.
//
// Planning itself has no side effect on the table: the planner never writes
// table files or commits. A failure before any task is sent marks the job
// failed (if its record was written) and releases the lease; a failure
// after tasks may be out asks the committer to end the job, which removes
// whatever its rewriters wrote and releases the lease. So nothing is left
// half-started.
package plan

import (
	"cmp"
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"sort"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/compaction"

	"github.com/icekeeper/icekeeper/shared/binpack"
	"github.com/icekeeper/icekeeper/shared/bounds"
	"github.com/icekeeper/icekeeper/shared/expire"
	"github.com/icekeeper/icekeeper/shared/filescan"
	"github.com/icekeeper/icekeeper/shared/health"
	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/lease"
	"github.com/icekeeper/icekeeper/shared/messages"
	"github.com/icekeeper/icekeeper/shared/optin"
	"github.com/icekeeper/icekeeper/shared/pruning"
	"github.com/icekeeper/icekeeper/shared/signals"
	"github.com/icekeeper/icekeeper/shared/tracing"
)

// Catalog loads tables.
type Catalog interface {
	LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error)
}

// Leases takes and releases table leases, and keeps the table's failure
// record.
type Leases interface {
	Acquire(ctx context.Context, table, owner string, ttl time.Duration) (lease.Lease, error)
	Release(ctx context.Context, l lease.Lease) error
	RecordFailure(ctx context.Context, table, class string) (lease.Backoff, error)
	ForgetJobs(ctx context.Context, table string, jobIDs []string) error
}

// Jobs records jobs, and reads earlier ones to clean up after them.
type Jobs interface {
	Create(ctx context.Context, j jobs.Job, groups []jobs.Group) error
	Transition(ctx context.Context, id string, from []jobs.State, to jobs.State, reason string) error
	Get(ctx context.Context, id string) (jobs.Job, error)
	Groups(ctx context.Context, id string) ([]jobs.Group, error)
}

// Blobs stores plan and task objects.
type Blobs interface {
	Put(ctx context.Context, name string, data []byte) (string, error)
}

// Queue sends task messages.
type Queue interface {
	SendAll(ctx context.Context, bodies []string) error
}

// Sender sends one message (the commit queue, for abort requests).
type Sender interface {
	Send(ctx context.Context, body string) error
}

// Settings tune planning.
type Settings struct {
	LeaseTTL        time.Duration
	MaxGroupBytes   int64
	InlineTaskBytes int
	// TargetFileSize overrides the table's write.target-file-size-bytes.
	TargetFileSize int64
	// OrphanListFanOutFiles: see config.Config; 0 never fans out.
	OrphanListFanOutFiles int64
	// MaxJobFiles caps a compaction job's input files (what one committer
	// can commit; see config.Config); 0: no cap.
	MaxJobFiles int64
}

// Outcome says what planning a table did.
type Outcome string

// Outcomes.
const (
	OutcomePlanned     Outcome = "planned"
	OutcomeLeaseHeld   Outcome = "skipped_lease_held"
	OutcomeNothingToDo Outcome = "nothing_to_do"
	// OutcomeBackedOff: the table's jobs failed the same way in a row; it is
	// left alone until its backoff ends (lease.Backoff).
	OutcomeBackedOff Outcome = "skipped_backoff"
)

// Result reports one table's planning.
type Result struct {
	Table      string  `json:"table"`
	Outcome    Outcome `json:"outcome"`
	JobID      string  `json:"job_id,omitempty"`
	SnapshotID int64   `json:"snapshot_id,string,omitempty"`
	Groups     int     `json:"groups,omitempty"`
	// Batches is the number of commits a batched compaction (partial
	// progress) makes; absent: one.
	Batches    int   `json:"batches,omitempty"`
	InputFiles int64 `json:"input_files,omitempty"`
	InputBytes int64 `json:"input_bytes,omitempty"`
	// SkippedFiles are files the compaction planner left alone.
	SkippedFiles int `json:"skipped_files,omitempty"`
	// CleanedFiles are files of earlier jobs, referenced by no snapshot,
	// that planning removed (see cleanUpAfter).
	CleanedFiles int    `json:"cleaned_files,omitempty"`
	Reason       string `json:"reason,omitempty"`
	// HotPartitions are the partitions with files to compact that a writer
	// committed to within the table's hot-partition idle time, and what
	// the plan did about them (health.ScopeHot).
	HotPartitions []health.HotPartition `json:"hot_partitions,omitempty"`
	// Strategy is the compaction strategy planned (compaction jobs only),
	// and ZOrderColumns a z-order's columns.
	Strategy      optin.Strategy `json:"strategy,omitempty"`
	ZOrderColumns []string       `json:"z_order_columns,omitempty"`
	// OverlappingSortRuns (sort strategy) counts runs of overlapping files
	// too large for one rewriter: only their candidates are rewritten, and
	// they stay overlapping (binpack.PlanSorted).
	OverlappingSortRuns int `json:"overlapping_sort_runs,omitempty"`
	// DeferredGroups and DeferredBytes are what a compaction left for
	// later jobs to stay within ICEKEEPER_MAX_JOB_FILES, or a sort or
	// z-order compaction within icekeeper.compaction.max-bytes-per-job
	// (the least queried partitions' groups).
	DeferredGroups int   `json:"deferred_groups,omitempty"`
	DeferredBytes  int64 `json:"deferred_bytes,omitempty"`
	// Continues: only ICEKEEPER_MAX_JOB_FILES (what one committer can
	// commit, a technical bound) left the deferred groups, so the next job
	// starts as soon as this one commits (the committer announces it).
	// When the owner's max-bytes-per-job bound them, a layout rolling out
	// gradually, they wait for the planner's later visits.
	Continues bool `json:"continues,omitempty"`
}

// Heat says how much each partition field value of a table was queried
// lately (signals.PartitionHeat).
type Heat interface {
	PartitionHeat(ctx context.Context, table string) (map[string]float64, error)
}

// SetHeat lets a bounded sort or z-order compaction rewrite the most
// queried partitions first (none: in plan order).
func (p *Planner) SetHeat(h Heat) { p.heat = h }

// Planner plans compaction jobs.
type Planner struct {
	settings Settings
	catalog  Catalog
	leases   Leases
	jobs     Jobs
	blobs    Blobs
	tasks    Queue
	commits  Sender
	log      *slog.Logger
	now      func() time.Time
	tracer   tracing.Tracer
	// ignoreBackoff plans backed-off tables too (an operator by hand).
	ignoreBackoff bool
	// memoryBudget: see SetMemoryBudget.
	memoryBudget int64
	heat         Heat
}

// IgnoreBackoff makes the planner plan tables that are backed off after
// repeated failures (for an operator acting by hand).
func (p *Planner) IgnoreBackoff() { p.ignoreBackoff = true }

// SetTracer traces the planner's phase (off by default).
func (p *Planner) SetTracer(t tracing.Tracer) { p.tracer = t }

// New validates its dependencies and returns a Planner. log and now may be
// nil.
func New(s Settings, cat Catalog, leases Leases, js Jobs, blobs Blobs, tasks Queue, commits Sender, log *slog.Logger, now func() time.Time) (*Planner, error) {
	if cat == nil || leases == nil || js == nil || blobs == nil || tasks == nil || commits == nil {
		return nil, errors.New("plan: catalog, leases, jobs, blobs, task queue and commit queue are required")
	}
	if s.LeaseTTL <= 0 {
		return nil, errors.New("plan: LeaseTTL must be positive (ICEKEEPER_LEASE_TTL)")
	}
	if s.MaxGroupBytes <= 0 {
		return nil, errors.New("plan: MaxGroupBytes must be positive (ICEKEEPER_MAX_GROUP_BYTES)")
	}
	if s.InlineTaskBytes <= 0 {
		s.InlineTaskBytes = 192 << 10
	}
	if log == nil {
		log = slog.Default()
	}
	if now == nil {
		now = time.Now
	}
	return &Planner{settings: s, catalog: cat, leases: leases, jobs: js, blobs: blobs, tasks: tasks, commits: commits, log: log, now: now}, nil
}

// PlanTable plans one compaction job for the named table ("ns.table"),
// with the table's strategy (optin.PropertyCompactionStrategy).
func (p *Planner) PlanTable(ctx context.Context, name, trigger string) (Result, error) {
	return p.underLease(ctx, name, trigger, p.planLeased)
}

// Layout overrides a table's compaction strategy for one job: the CLI's
// compact --sort and --z-order.
type Layout struct {
	Strategy optin.Strategy
	// ZOrderColumns are the z-order's columns (strategy z-order; nil: the
	// table's optin.PropertyZOrderColumns).
	ZOrderColumns []string
}

// PlanLayout plans one compaction job for the named table with the given
// strategy, whatever its strategy property says. An operator's z-order
// rewrites every run of overlapping files, where the table's own z-order
// strategy only rewrites runs that hold files to compact (see
// planCompaction).
func (p *Planner) PlanLayout(ctx context.Context, name, trigger string, layout Layout) (Result, error) {
	return p.underLease(ctx, name, trigger, func(ctx context.Context, log *slog.Logger, ident table.Identifier, name, jobID, trigger string, l lease.Lease) (Result, bool, error) {
		return p.planCompaction(ctx, log, ident, name, jobID, trigger, l, layout, true)
	})
}

// PlanExpiry plans one snapshot expiry job for the named table (see
// package expire and planExpiryLeased).
func (p *Planner) PlanExpiry(ctx context.Context, name, trigger string) (Result, error) {
	return p.underLease(ctx, name, trigger, p.planExpiryLeased)
}

// leasedPlanning plans one job of a kind under the table's lease; started
// reports whether any message may have been sent.
type leasedPlanning func(ctx context.Context, log *slog.Logger, ident table.Identifier, name, jobID, trigger string, l lease.Lease) (res Result, started bool, err error)

// underLease takes the table's lease, ends a superseded job, honours the
// table's backoff, runs planning and, unless a job was planned, releases
// the lease again. A failed planning is recorded on the job and, when no
// retry can fix it, on the table's failure record.
func (p *Planner) underLease(ctx context.Context, name, trigger string, planLeased leasedPlanning) (Result, error) {
	ident, err := messages.TableIdent(name)
	if err != nil {
		return Result{Table: name}, err
	}
	name = messages.TableName(ident)
	res := Result{Table: name}
	jobID := newJobID(p.now())
	log := p.log.With("table", name, "job_id", jobID, "trigger", trigger)

	l, err := p.leases.Acquire(ctx, name, jobID, p.settings.LeaseTTL)
	if errors.Is(err, lease.ErrHeld) {
		res.Outcome = OutcomeLeaseHeld
		res.Reason = "another job holds the table's lease"
		log.Info("skip: lease held")
		return res, nil
	}
	if err != nil {
		return res, fmt.Errorf("plan %s: %w", name, err)
	}
	if l.Superseded != "" {
		// The previous job's term expired without being released (it
		// crashed or stalled): ask the committer to end it and remove
		// what it wrote. Its rewriters drop their tasks once they see the
		// lease moved on, and it can no longer commit (its renewal fails).
		p.requestAbort(ctx, log, l.Superseded, "lease expired and was taken over by job "+jobID, messages.FailStalled)
	}
	release := func(why string) {
		if rerr := p.leases.Release(context.WithoutCancel(ctx), l); rerr != nil {
			log.Warn("release lease", "err", rerr.Error(), "why", why)
		}
	}
	if b := l.Backoff; b.Active(p.now()) && !p.ignoreBackoff {
		release("backoff")
		res.Outcome = OutcomeBackedOff
		res.Reason = fmt.Sprintf("the table's last %d jobs failed the same way (%s); left alone until %s", b.Streak, b.Class, b.Until.UTC().Format(time.RFC3339))
		if b.Class == lease.ClassConflict {
			res.Reason = fmt.Sprintf("the table's last %d jobs were aborted by concurrent commits (%s); waiting until %s before the next attempt", b.Streak, b.Class, b.Until.UTC().Format(time.RFC3339))
		}
		log.Warn("skip: table backed off after repeated failures", "class", b.Class, "streak", b.Streak, "backoff_until", b.Until.UTC().Format(time.RFC3339))
		return res, nil
	}

	var started bool
	err = p.tracer.Phase(ctx, tracing.PhasePlan, func(ctx context.Context) error {
		p.tracer.Annotate(ctx, "table", name)
		var perr error
		res, started, perr = planLeased(ctx, log.With("trace_id", p.tracer.TraceID(ctx)), ident, name, jobID, trigger, l)
		return perr
	})
	if err != nil {
		if started {
			// Tasks may be out and groups may have written files: the
			// committer ends the job, removes them and releases the lease.
			if p.requestAbort(ctx, log, jobID, "planning failed: "+err.Error(), messages.FailPlanning) {
				return res, err
			}
		}
		// Nothing was sent (or the abort request could not be): end the
		// job record, if it was written, and free the table.
		if terr := p.jobs.Transition(context.WithoutCancel(ctx), jobID, []jobs.State{jobs.Planned}, jobs.Failed, err.Error()); terr != nil && !errors.Is(terr, jobs.ErrStateConflict) {
			log.Warn("mark job failed", "err", terr.Error())
		}
		// Only a failure no retry can fix counts towards the backoff: a
		// malformed table property or threshold, a plan that cannot be
		// encoded, a table too large for the planner's memory. A catalog or AWS hiccup is retried by the trigger.
		if errors.Is(err, optin.ErrBadProperty) || errors.Is(err, health.ErrInvalidThresholds) || errors.Is(err, messages.ErrMalformed) || errors.Is(err, expire.ErrRetention) || errors.Is(err, ErrTooLargeToPlan) {
			if _, ferr := p.leases.RecordFailure(context.WithoutCancel(ctx), name, messages.FailPlanning); ferr != nil {
				log.Warn("record failure", "err", ferr.Error())
			}
		}
		release("planning failed")
		return res, err
	}
	if res.Outcome != OutcomePlanned {
		release(string(res.Outcome))
	}
	return res, nil
}

// planLeased does the planning under the lease. started reports whether
// any task may have been sent.
func (p *Planner) planLeased(ctx context.Context, log *slog.Logger, ident table.Identifier, name, jobID, trigger string, l lease.Lease) (res Result, started bool, err error) {
	return p.planCompaction(ctx, log, ident, name, jobID, trigger, l, Layout{}, false)
}

// planCompaction plans a compaction with the given layout (a zero Layout:
// the table's strategy). operator is true when an operator asked for the
// layout (PlanLayout).
//
// A z-order's files overlap one another on each of its columns (that is
// what interleaving does), so its runs (binpack.PlanSorted, on the first
// column) would never come out disjoint: the table's own z-order strategy
// only rewrites runs that hold a file to compact, which brings new files
// into the clustering without rewriting a clustered partition again for
// nothing; an operator's z-order rewrites every run of two or more files.
func (p *Planner) planCompaction(ctx context.Context, log *slog.Logger, ident table.Identifier, name, jobID, trigger string, l lease.Lease, layout Layout, operator bool) (res Result, started bool, err error) {
	strategy := layout.Strategy
	res = Result{Table: name}
	planStart := p.now()
	tbl, err := p.loadLeased(ctx, log, ident, name, l, &res)
	if err != nil {
		return res, false, fmt.Errorf("plan %s: %w", name, err)
	}
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		res.Outcome, res.Reason = OutcomeNothingToDo, "table has no snapshot"
		return res, false, nil
	}
	pin := messages.Pin{MetadataLocation: tbl.MetadataLocation(), SnapshotID: snap.SnapshotID, SequenceNumber: snap.SequenceNumber}
	res.SnapshotID = pin.SnapshotID
	log = log.With("snapshot_id", pin.SnapshotID)

	cfg, err := CompactionConfig(tbl.Properties(), p.settings.TargetFileSize)
	if err != nil {
		return res, false, fmt.Errorf("plan %s: %w", name, err)
	}
	if strategy == "" {
		if strategy, err = optin.CompactionStrategy(tbl.Properties()); err != nil {
			return res, false, fmt.Errorf("plan %s: %w", name, err)
		}
	}
	res.Strategy = strategy
	log = log.With("strategy", strategy)
	// binpack.Plan decides as cfg.PlanCompaction would, without copying
	// the tasks; the tasks no group holds are dropped at once (a million
	// files: see docs/PERFORMANCE.md).
	maxCommits, err := optin.PartialProgress(tbl.Properties())
	if err != nil {
		return res, false, fmt.Errorf("plan %s: %w", name, err)
	}
	var cp compaction.Plan
	var grouped int // the plan's tasks, first in scanTasks
	var exchangeGroups []compaction.Group
	var sortOrderID *int
	var zOrderIDs []int
	var key binpack.SortKey
	var boundsFor []int // the columns whose bounds planning reads
	if strategy == optin.StrategySort || strategy == optin.StrategyZOrder {
		var kerr error
		if strategy == optin.StrategySort {
			var orderID int
			key, orderID, kerr = sortKey(tbl)
			sortOrderID = &orderID
			boundsFor = []int{key.FieldID}
		} else {
			cols := layout.ZOrderColumns
			if cols == nil {
				cols, kerr = optin.ZOrderColumns(tbl.Properties())
			}
			if kerr == nil {
				key, zOrderIDs, kerr = zOrderKey(tbl, cols)
			}
			boundsFor = zOrderIDs
			res.ZOrderColumns = cols
		}
		if kerr != nil {
			return res, false, fmt.Errorf("plan %s: %w", name, kerr)
		}
	}
	if err := p.checkPlanningMemory(ctx, tbl, snap, len(boundsFor)); err != nil {
		return res, false, fmt.Errorf("plan %s: %w", name, err)
	}
	// Scan planning that keeps per file only what planning reads (package
	// filescan): a million files fit a 1 GB planner.
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return res, false, fmt.Errorf("plan %s: open table IO: %w", name, err)
	}
	scanTasks, err := filescan.Plan(ctx, tbl.Metadata(), snap, fsys, filescan.Options{Bounds: boundsFor})
	if err != nil {
		return res, false, fmt.Errorf("plan %s: plan files at snapshot %d: %w", name, pin.SnapshotID, err)
	}
	if strategy == optin.StrategySort || strategy == optin.StrategyZOrder {
		if strategy == optin.StrategyZOrder && operator {
			key = deepestOverlap(tbl.Schema(), zOrderIDs, scanTasks, key)
		}
		onlyCandidates := strategy == optin.StrategyZOrder && !operator
		var sp binpack.SortedPlan
		if (strategy == optin.StrategySort || strategy == optin.StrategyZOrder && operator) && maxCommits == 0 {
			// A run too large for one rewriter is sorted in two stages
			// (package exchange), so it comes out disjoint too. Not in
			// batches: a batch commits on its own, an exchange's maps
			// and reduces only together. Not for the table's own z-order,
			// which rewrites only a run's candidates: its clustered
			// partitions would be rewritten whole for every new file.
			sp, err = binpack.PlanSortedExchanging(cfg, key, scanTasks, p.settings.MaxGroupBytes)
		} else {
			sp, err = binpack.PlanSorted(cfg, key, scanTasks, p.settings.MaxGroupBytes, onlyCandidates)
		}
		if err != nil {
			return res, false, fmt.Errorf("plan %s: %s compaction plan: %w", name, strategy, err)
		}
		grouped = binpack.Grouped(sp.Plan)
		cp, exchangeGroups = splitExchanges(sp)
		if res.OverlappingSortRuns = sp.Oversized; sp.Oversized > 0 {
			log.Warn("runs of overlapping files are larger than one rewriter's group: only their candidates are rewritten and they stay overlapping", "runs", sp.Oversized, "max_group_bytes", p.settings.MaxGroupBytes)
		}
	} else if cp, err = binpack.Plan(cfg, scanTasks); err != nil {
		return res, false, fmt.Errorf("plan %s: compaction plan: %w", name, err)
	} else {
		grouped = binpack.Grouped(cp)
	}
	clear(scanTasks[grouped:])
	files := cp.TotalInputFiles
	idle, hotMinFiles, err := optin.HotPartitions(tbl.Properties())
	if err != nil {
		return res, false, fmt.Errorf("plan %s: %w", name, err)
	}
	hotGroups := len(cp.Groups)
	if idle > 0 && len(cp.Groups) > 0 {
		writes, err := health.RecentWrites(ctx, tbl, p.now(), idle)
		if err != nil {
			return res, false, fmt.Errorf("plan %s: %w", name, err)
		}
		cp.Groups, res.HotPartitions = health.ScopeHot(cp.Groups, writes, p.now(), idle, hotMinFiles, health.PartitionNamer(tbl.Metadata()))
		var hot []health.HotPartition
		exchangeGroups, hot = health.ScopeHot(exchangeGroups, writes, p.now(), idle, hotMinFiles, health.PartitionNamer(tbl.Metadata()))
		res.HotPartitions = append(res.HotPartitions, hot...)
		for _, h := range res.HotPartitions {
			log.Info("hot partition", "partition", h.Partition, "skipped", h.Skipped, "why", h.Why)
		}
	}
	groups := SplitGroups(cp.Groups, p.settings.MaxGroupBytes)
	regular := len(groups)
	var exchanges []exchangePlan
	for _, xg := range exchangeGroups {
		x := exchangePlan{maps: SplitGroups([]compaction.Group{xg}, p.settings.MaxGroupBytes)}
		x.reduces = max(2, int((xg.TotalSizeBytes+p.settings.MaxGroupBytes-1)/p.settings.MaxGroupBytes))
		exchanges = append(exchanges, x)
		groups = append(groups, x.maps...)
	}
	var budget int64
	layoutJob := strategy == optin.StrategySort || strategy == optin.StrategyZOrder
	if layoutJob {
		if budget, err = optin.MaxBytesPerJob(tbl.Properties(), p.settings.MaxGroupBytes); err != nil {
			return res, false, fmt.Errorf("plan %s: %w", name, err)
		}
	}
	if budget > 0 || p.settings.MaxJobFiles > 0 {
		var regularGroups []compaction.Group
		var paced bool
		regularGroups, exchanges, res.DeferredGroups, res.DeferredBytes, paced = p.withinBudget(ctx, log, name, tbl.Metadata(), groups[:regular], exchanges, budget, p.settings.MaxJobFiles, layoutJob)
		res.Continues = res.DeferredGroups > 0 && !paced
		groups, regular = regularGroups, len(regularGroups)
		for _, x := range exchanges {
			groups = append(groups, x.maps...)
		}
	}
	res.SkippedFiles = cp.SkippedFiles
	if len(groups) == 0 && hotGroups > 0 {
		res.Outcome = OutcomeNothingToDo
		res.Reason = fmt.Sprintf("every partition with files to compact is being written (hot, written within %s) and has fewer than %d candidate files: left until writes pause", idle, hotMinFiles)
		log.Info("nothing to do: hot partitions only", "hot_partitions", len(res.HotPartitions))
		return res, false, nil
	}
	if len(groups) == 0 {
		res.Outcome = OutcomeNothingToDo
		res.Reason = fmt.Sprintf("no file group worth rewriting (%d files, %d left alone)", files, cp.SkippedFiles)
		log.Info("nothing to do", "files", files)
		return res, false, nil
	}

	outSpec, err := optin.ParseOutputSpec(tbl.Properties()[optin.PropertyOutputSpec])
	if err != nil {
		return res, false, fmt.Errorf("plan %s: %w", name, err)
	}
	if outSpec >= 0 && tbl.Metadata().PartitionSpecByID(outSpec) == nil {
		return res, false, fmt.Errorf("plan %s: %w: %s=%d: the table has no such partition spec", name, optin.ErrBadProperty, optin.PropertyOutputSpec, outSpec)
	}
	planObj := messages.Plan{Version: messages.FormatVersion, JobID: jobID, Table: name, Pin: pin}
	job := jobs.Job{
		ID: jobID, Table: name, Kind: jobs.KindCompaction, Trigger: trigger, Token: l.Token,
		MetadataLocation: pin.MetadataLocation, SnapshotID: pin.SnapshotID, SequenceNumber: pin.SequenceNumber,
		DeferredGroups: res.DeferredGroups, DeferredBytes: res.DeferredBytes, Continues: res.Continues,
	}
	jobGroups := make([]jobs.Group, 0, len(groups))
	outputSpec := func(specID int) int {
		switch outSpec {
		case optin.OutputSpecCurrent:
			return tbl.Metadata().DefaultPartitionSpec()
		case optin.OutputSpecInput:
			return specID
		}
		return outSpec
	}
	for i, g := range groups {
		pg := messages.PlanGroup{Index: i, SpecID: int(g.Tasks[0].File.SpecID()), Partition: PartitionString(g.Tasks[0]), InputBytes: g.TotalSizeBytes}
		pg.OutputSpecID = outputSpec(pg.SpecID)
		for _, t := range g.Tasks {
			pg.InputPaths = append(pg.InputPaths, t.File.FilePath())
			pg.InputRows += t.File.Count()
		}
		sort.Strings(pg.InputPaths)
		planObj.Groups = append(planObj.Groups, pg)
		job.InputFiles += int64(len(g.Tasks))
		job.InputBytes += g.TotalSizeBytes
		job.InputRows += pg.InputRows
		jobGroups = append(jobGroups, jobs.Group{Index: i, InputFiles: int64(len(g.Tasks)), InputBytes: g.TotalSizeBytes})
	}
	// Each exchange's groups: its maps (planned above, after the regular
	// groups), then its reduces, which read no table file and whose tasks
	// the committer sends once the maps are done.
	mapAt, reduceAt := regular, len(groups)
	for id, x := range exchanges {
		ex := messages.Exchange{ID: id, SortOrderID: sortOrderID, ZOrderFieldIDs: zOrderIDs}
		if len(zOrderIDs) > 0 {
			ex.ZOrderLower, ex.ZOrderUpper = zOrderSpan(tbl.Schema(), zOrderIDs, x.maps)
		}
		for j := range x.maps {
			ex.Maps = append(ex.Maps, mapAt+j)
		}
		for j := range x.reduces {
			ex.Reduces = append(ex.Reduces, reduceAt+j)
		}
		for j := range x.maps {
			m := ex
			m.Role = messages.ExchangeMap
			planObj.Groups[mapAt+j].Exchange = &m
		}
		first := planObj.Groups[mapAt]
		for j := range x.reduces {
			r := ex
			r.Role, r.Range = messages.ExchangeReduce, j
			planObj.Groups = append(planObj.Groups, messages.PlanGroup{Index: reduceAt + j, SpecID: first.SpecID, Partition: first.Partition, OutputSpecID: first.OutputSpecID, Exchange: &r})
			jobGroups = append(jobGroups, jobs.Group{Index: reduceAt + j})
		}
		log.Info("a run too large for one rewriter is sorted in two stages", "exchange", id, "maps", len(x.maps), "reduces", x.reduces, "partition", first.Partition)
		mapAt += len(x.maps)
		reduceAt += x.reduces
	}
	job.TargetFileSize = cfg.TargetFileSizeBytes
	if maxCommits > 0 {
		// Partial progress: groups commit in batches of this many (jobs,
		// batches.go); one batch is one commit, as without it.
		if n := jobs.GroupsPerCommit(len(groups), maxCommits); n < len(groups) {
			job.BatchSize = n
		}
	}
	return p.startJob(ctx, log, res, tbl.Metadata(), planObj, job, jobGroups, groups, planStart, func(t *messages.Task, pg messages.PlanGroup) {
		t.TargetFileSize = cfg.TargetFileSizeBytes
		t.SortOrderID = sortOrderID
		t.ZOrderFieldIDs = zOrderIDs
		t.Exchange = pg.Exchange
	})
}

// zOrderSpan is, per z-order column, the smallest lower bound and the
// largest upper bound of the groups' files, as the manifests hold them
// (nil for a column some file has no bound of).
func zOrderSpan(schema *iceberg.Schema, ids []int, groups []compaction.Group) (lower, upper [][]byte) {
	lower, upper = make([][]byte, len(ids)), make([][]byte, len(ids))
	for i, id := range ids {
		f, ok := schema.FindFieldByID(id)
		k := bounds.KindOf(f.Type)
		if !ok || k == 0 {
			continue
		}
		var lo, hi bounds.Value
		var loRaw, hiRaw []byte
		complete, first := true, true
		for _, g := range groups {
			for _, t := range g.Tasks {
				r, ok := bounds.Of(t.File, id, k, f.Type)
				if !ok {
					complete = false
					break
				}
				if first || bounds.Compare(k, r.Lo, lo) < 0 {
					lo, loRaw = r.Lo, t.File.LowerBoundValues()[id]
				}
				if first || bounds.Compare(k, r.Hi, hi) > 0 {
					hi, hiRaw = r.Hi, t.File.UpperBoundValues()[id]
				}
				first = false
			}
		}
		if complete && !first {
			lower[i], upper[i] = loRaw, hiRaw
		}
	}
	return lower, upper
}

// withinBudget keeps, of a compaction's groups and exchanges, those that
// fit budget input bytes (a sort or z-order compaction's
// icekeeper.compaction.max-bytes-per-job; 0: any) and maxFiles input files
// (ICEKEEPER_MAX_JOB_FILES, what one committer can commit; 0: any), and at
// least one. With byHeat the most queried partitions' come first
// (signals.Heat of each group's partition; plan order among equals): a new
// layout rolls out a job at a time, hottest first. Otherwise plan order.
// It returns what it kept, how many groups (an exchange counts its maps)
// and bytes it left for later jobs, and whether the byte budget bound
// (paced: the rest waits for later visits, not for the next job at once).
func (p *Planner) withinBudget(ctx context.Context, log *slog.Logger, table string, meta table.Metadata, groups []compaction.Group, exchanges []exchangePlan, budget, maxFiles int64, byHeat bool) (kept []compaction.Group, keptX []exchangePlan, deferredGroups int, deferredBytes int64, paced bool) {
	type unit struct {
		group    *compaction.Group
		exchange *exchangePlan
		bytes    int64
		files    int64
		heat     float64
	}
	var units []unit
	var total, totalFiles int64
	for i := range groups {
		units = append(units, unit{group: &groups[i], bytes: groups[i].TotalSizeBytes, files: int64(len(groups[i].Tasks))})
		total += groups[i].TotalSizeBytes
		totalFiles += int64(len(groups[i].Tasks))
	}
	for i := range exchanges {
		u := unit{exchange: &exchanges[i]}
		for _, m := range exchanges[i].maps {
			u.bytes += m.TotalSizeBytes
			u.files += int64(len(m.Tasks))
		}
		units = append(units, u)
		total += u.bytes
		totalFiles += u.files
	}
	over := func(bytes, files int64) bool {
		return budget > 0 && bytes > budget || maxFiles > 0 && files > maxFiles
	}
	if !over(total, totalFiles) {
		return groups, exchanges, 0, 0, false
	}
	paced = budget > 0 && total > budget
	if byHeat && p.heat != nil && budget > 0 {
		heat, err := p.heat.PartitionHeat(ctx, table)
		if err != nil {
			log.Warn("partition heat not read: the budget takes groups in plan order", "err", err.Error())
		}
		name := health.PartitionNamer(meta)
		for i := range units {
			first := units[i].group
			if first == nil {
				first = &units[i].exchange.maps[0]
			}
			units[i].heat = signals.Heat(heat, name(first.Tasks[0].File))
		}
		slices.SortStableFunc(units, func(a, b unit) int { return cmp.Compare(b.heat, a.heat) })
	}
	var used, usedFiles int64
	for _, u := range units {
		if usedFiles > 0 && over(used+u.bytes, usedFiles+u.files) {
			deferredBytes += u.bytes
			if u.group != nil {
				deferredGroups++
			} else {
				deferredGroups += len(u.exchange.maps)
			}
			continue
		}
		used += u.bytes
		usedFiles += u.files
		if u.group != nil {
			kept = append(kept, *u.group)
		} else {
			keptX = append(keptX, *u.exchange)
		}
	}
	log.Info("compaction bounded: the rest is left for later jobs", "max_bytes_per_job", budget, "max_job_files", maxFiles, "kept_bytes", used, "kept_files", usedFiles, "deferred_groups", deferredGroups, "deferred_bytes", deferredBytes, "paced", paced)
	return kept, keptX, deferredGroups, deferredBytes, paced
}

// exchangePlan is one two-stage sort: its map groups (chunks of the run's
// files, in key order) and its number of reduces (key ranges).
type exchangePlan struct {
	maps    []compaction.Group
	reduces int
}

// splitExchanges takes a sorted plan's exchange groups out of its groups.
func splitExchanges(sp binpack.SortedPlan) (compaction.Plan, []compaction.Group) {
	if len(sp.Exchanges) == 0 {
		return sp.Plan, nil
	}
	cp := sp.Plan
	var regular, exchanges []compaction.Group
	for i, g := range sp.Groups {
		if slices.Contains(sp.Exchanges, i) {
			exchanges = append(exchanges, g)
		} else {
			regular = append(regular, g)
		}
	}
	cp.Groups = regular
	return cp, exchanges
}

// deepestOverlap is the run key of an operator's z-order: the z column
// along which the files overlap the most (pruning.Overlap's depth over
// the table's files), so that a table already sorted on the first column
// (its files disjoint there, one file per run) is still z-ordered. Ties
// and files without bounds keep def.
func deepestOverlap(schema *iceberg.Schema, ids []int, tasks []table.FileScanTask, def binpack.SortKey) binpack.SortKey {
	best, bestDepth := def, 0
	for _, id := range ids {
		f, ok := schema.FindFieldByID(id)
		k := bounds.KindOf(f.Type)
		if !ok || k == 0 {
			continue
		}
		ranges := make([]bounds.Range, 0, len(tasks))
		for _, t := range tasks {
			if r, ok := bounds.Of(t.File, id, k, f.Type); ok {
				ranges = append(ranges, r)
			}
		}
		if depth, _ := pruning.Overlap(k, ranges); depth > bestDepth {
			best, bestDepth = binpack.SortKey{FieldID: id, Type: f.Type}, depth
		}
	}
	return best
}

// zOrderKey resolves a z-order's columns in tbl's current schema: their
// field ids, and the first column's key for grouping files into runs.
// Each must be a top-level column of a type zorder keys, and not the
// source of an identity partition field (one value per partition: it
// would only dilute the others' bits). Anything else is the owner's
// mistake (optin.ErrBadProperty).
func zOrderKey(tbl *table.Table, cols []string) (binpack.SortKey, []int, error) {
	var key binpack.SortKey
	var ids []int
	spec := tbl.Spec()
	for i, name := range cols {
		f, found := topLevelField(tbl.Schema(), func(c iceberg.NestedField) bool { return c.Name == name })
		if !found || bounds.KindOf(f.Type) == 0 {
			return key, nil, fmt.Errorf("%w: %s: %q is not a top-level column of a primitive type in the current schema", optin.ErrBadProperty, optin.PropertyZOrderColumns, name)
		}
		if _, decimal := f.Type.(iceberg.DecimalType); decimal {
			return key, nil, fmt.Errorf("%w: %s: %q is a decimal, which icekeeper cannot z-order yet", optin.ErrBadProperty, optin.PropertyZOrderColumns, name)
		}
		for _, pf := range spec.Fields() {
			if pf.SourceID() == f.ID && pf.Transform.Equals(iceberg.IdentityTransform{}) {
				return key, nil, fmt.Errorf("%w: %s: %q is the source of partition field %q, so it holds one value per partition: z-order the other columns", optin.ErrBadProperty, optin.PropertyZOrderColumns, name, pf.Name)
			}
		}
		if i == 0 {
			key = binpack.SortKey{FieldID: f.ID, Type: f.Type}
		}
		ids = append(ids, f.ID)
	}
	return key, ids, nil
}

// topLevelField is the first top-level column of schema that match
// accepts.
func topLevelField(schema *iceberg.Schema, match func(iceberg.NestedField) bool) (iceberg.NestedField, bool) {
	for _, c := range schema.Fields() {
		if match(c) {
			return c, true
		}
	}
	return iceberg.NestedField{}, false
}

// sortKey is what a sort compaction of tbl sorts by: its default sort
// order, grouped by the order's first column. A table without a sort
// order, or whose first sort column has no usable bounds, is refused
// (optin.ErrBadProperty: the owner asked for a sort the table cannot do).
func sortKey(tbl *table.Table) (binpack.SortKey, int, error) {
	order := tbl.SortOrder()
	if order.IsUnsorted() {
		return binpack.SortKey{}, 0, fmt.Errorf("%w: %s=%s: the table has no sort order; set one (Spark: ALTER TABLE ... WRITE ORDERED BY col) or use binpack", optin.ErrBadProperty, optin.PropertyCompactionStrategy, optin.StrategySort)
	}
	var key binpack.SortKey
	for i, sf := range order.Fields() {
		id := sf.SourceID()
		f, top := topLevelField(tbl.Schema(), func(c iceberg.NestedField) bool { return c.ID == id })
		if !top || bounds.KindOf(f.Type) == 0 {
			return key, 0, fmt.Errorf("%w: %s=%s: sort order %d sorts by field %d, which is not a top-level column of a primitive type in the current schema: icekeeper cannot sort by it", optin.ErrBadProperty, optin.PropertyCompactionStrategy, optin.StrategySort, order.OrderID(), id)
		}
		if i == 0 {
			key = binpack.SortKey{FieldID: id, Type: f.Type}
		}
	}
	return key, order.OrderID(), nil
}

// startJob records a job of rewriter groups (its plan in S3, the job and
// its groups in DynamoDB), sends one task per group and marks the job
// running. groups[i] holds plan group i's scan tasks (cleared once its
// task is encoded); decorate completes each group's task. started reports whether any task may have been sent.
func (p *Planner) startJob(ctx context.Context, log *slog.Logger, res Result, meta table.Metadata, planObj messages.Plan, job jobs.Job, jobGroups []jobs.Group, groups []compaction.Group, planStart time.Time, decorate func(*messages.Task, messages.PlanGroup)) (Result, bool, error) {
	name, jobID := job.Table, job.ID
	planBytes, err := messages.Encode(planObj)
	if err != nil {
		return res, false, err
	}
	if job.PlanKey, err = p.blobs.Put(ctx, "jobs/"+jobID+"/plan.json", planBytes); err != nil {
		return res, false, fmt.Errorf("plan %s: %w", name, err)
	}
	job.PlanMillis = p.now().Sub(planStart).Milliseconds()
	if err := p.jobs.Create(ctx, job, jobGroups); err != nil {
		return res, false, fmt.Errorf("plan %s: %w", name, err)
	}

	// Tasks are encoded and sent ten at a time (one SQS batch): a job of
	// a million files never holds every encoded task at once.
	bodies := make([]string, 0, 10)
	sent := false
	for i, g := range groups {
		body, err := p.taskBody(ctx, meta, planObj.Groups[i], job, g, decorate)
		if err != nil {
			return res, sent, fmt.Errorf("plan %s: group %d: %w", name, i, err)
		}
		// The group's scan tasks are in its message now: let them go, so
		// memory falls as tasks are sent.
		clear(g.Tasks)
		if bodies = append(bodies, body); len(bodies) == cap(bodies) || i == len(groups)-1 {
			sent = true
			if err := p.tasks.SendAll(ctx, bodies); err != nil {
				return res, true, fmt.Errorf("plan %s: send tasks: %w", name, err)
			}
			bodies = bodies[:0]
		}
	}
	if err := p.jobs.Transition(ctx, jobID, []jobs.State{jobs.Planned}, jobs.Running, "tasks sent"); err != nil {
		// Every group may already be done and the committer may have taken
		// the job (planned -> committing): that is success, not failure.
		if !errors.Is(err, jobs.ErrStateConflict) {
			return res, true, fmt.Errorf("plan %s: %w", name, err)
		}
		log.Info("job moved on before it was marked running", "err", err.Error())
	}
	res.Outcome, res.JobID, res.Groups = OutcomePlanned, jobID, len(groups)
	if job.Groups = len(groups); job.Batched() {
		res.Batches = job.Batches()
	}
	res.InputFiles, res.InputBytes = job.InputFiles, job.InputBytes
	log.Info("planned", "kind", job.Kind, "groups", len(groups), "input_files", job.InputFiles, "input_bytes", job.InputBytes, "lease_token", job.Token)
	return res, true, nil
}

// requestAbort asks the committer to end a job; it reports whether the
// request was sent.
func (p *Planner) requestAbort(ctx context.Context, log *slog.Logger, jobID, reason, class string) bool {
	body, err := messages.Encode(messages.AbortJob(jobID, reason, class))
	if err == nil {
		err = p.commits.Send(context.WithoutCancel(ctx), string(body))
	}
	if err != nil {
		log.Warn("request abort", "abort_job", jobID, "err", err.Error())
		return false
	}
	log.Warn("asked the committer to end a job", "abort_job", jobID, "reason", reason)
	return true
}

func (p *Planner) taskBody(ctx context.Context, meta table.Metadata, pg messages.PlanGroup, job jobs.Job, g compaction.Group, decorate func(*messages.Task, messages.PlanGroup)) (string, error) {
	encoded, err := messages.EncodeScanTasks(meta, g.Tasks)
	if err != nil {
		return "", err
	}
	task := messages.Task{
		Version: messages.FormatVersion, JobID: job.ID, Table: job.Table, Group: pg.Index, Token: job.Token,
		Pin:    messages.Pin{MetadataLocation: job.MetadataLocation, SnapshotID: job.SnapshotID, SequenceNumber: job.SequenceNumber},
		SpecID: pg.SpecID, OutputSpecID: &pg.OutputSpecID, Partition: pg.Partition, ScanTasks: encoded,
		InputFiles: len(g.Tasks), InputBytes: g.TotalSizeBytes,
	}
	if decorate != nil {
		decorate(&task, pg)
	}
	body, err := messages.Encode(task)
	if err != nil {
		return "", err
	}
	if len(body) <= p.settings.InlineTaskBytes {
		return string(body), nil
	}
	// Too large for one message: the scan tasks travel through S3.
	payload, err := messages.Encode(messages.ScanTaskList{Version: messages.FormatVersion, ScanTasks: encoded})
	if err != nil {
		return "", err
	}
	key, err := p.blobs.Put(ctx, fmt.Sprintf("jobs/%s/tasks/%05d.json", job.ID, pg.Index), payload)
	if err != nil {
		return "", err
	}
	task.ScanTasks, task.ScanTasksKey = nil, key
	body, err = messages.Encode(task)
	if err != nil {
		return "", err
	}
	return string(body), nil
}

// CompactionConfig derives iceberg-go's compaction planner settings from the
// table's properties, through the same thresholds the health report uses
// (package health), so that what health recommends is what the planner
// plans: write.target-file-size-bytes sets the target (unless override is
// positive), small files are below 75% of it, large ones above 180%.
func CompactionConfig(props map[string]string, override int64) (compaction.Config, error) {
	th, err := health.ThresholdsFor(props, override)
	if err != nil {
		return compaction.Config{}, err
	}
	cfg := th.CompactionConfig()
	if err := cfg.Validate(); err != nil {
		return cfg, fmt.Errorf("compaction config: %w", err)
	}
	return cfg, nil
}

// SplitGroups splits groups whose input exceeds maxBytes into consecutive
// chunks of at most maxBytes (a single file larger than maxBytes is a chunk
// of its own). Groups stay within one partition.
func SplitGroups(groups []compaction.Group, maxBytes int64) []compaction.Group {
	var out []compaction.Group
	for _, g := range groups {
		if g.TotalSizeBytes <= maxBytes {
			out = append(out, g)
			continue
		}
		// Chunks are sub-slices of the group's tasks: nothing is copied.
		start := 0
		cur := compaction.Group{PartitionKey: g.PartitionKey}
		for i, t := range g.Tasks {
			size := t.File.FileSizeBytes()
			if i > start && cur.TotalSizeBytes+size > maxBytes {
				cur.Tasks = g.Tasks[start:i:i]
				out = append(out, cur)
				start, cur = i, compaction.Group{PartitionKey: g.PartitionKey}
			}
			cur.TotalSizeBytes += size
			cur.DeleteFileCount += len(t.DeleteFiles) + len(t.EqualityDeleteFiles) + len(t.DeletionVectorFiles)
		}
		if start < len(g.Tasks) {
			cur.Tasks = g.Tasks[start:len(g.Tasks):len(g.Tasks)]
			out = append(out, cur)
		}
	}
	return out
}

// PartitionString renders a task's partition for logs and reports.
func PartitionString(t table.FileScanTask) string {
	part := t.File.Partition()
	if len(part) == 0 {
		return "unpartitioned"
	}
	keys := make([]int, 0, len(part))
	for k := range part {
		keys = append(keys, k)
	}
	sort.Ints(keys)
	s := ""
	for i, k := range keys {
		if i > 0 {
			s += ","
		}
		s += fmt.Sprintf("%d=%v", k, part[k])
	}
	return s
}

func newJobID(now time.Time) string {
	var b [4]byte
	_, _ = rand.Read(b[:])
	return now.UTC().Format("20060102T150405Z") + "-" + hex.EncodeToString(b[:])
}
