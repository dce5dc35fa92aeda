// Package plan is the planner: it decides what one job of one table does,
// and starts it.
//
// Every job, whatever its action, goes through the same frame (this file):
//  1. the table's lease is taken BEFORE pinning and scanning (a held lease
//     means skip, counted), so two planners racing for one table make one
//     job (underLease, loadLeased);
//  2. the table is loaded through the catalog and its current snapshot S
//     pinned (metadata location, snapshot id, sequence number);
//  3. the action plans at S;
//  4. the plan is recorded in S3 and the job and its groups in DynamoDB,
//     and one task per group is sent to the task queue (through S3 when a
//     task does not fit in one message), or, for an action that has no
//     groups, the job is handed to the committer (startJob,
//     handToCommitter).
//
// Each action has its file: compaction.go (bin-pack, sort and z-order
// groups with iceberg-go's compaction planner, honouring
// write.target-file-size-bytes, split above the per-rewriter limit, and
// two-stage sorts for runs too large for one rewriter; a busy table's job
// bounded, or backed off, by package throttle; hot partitions scoped by
// package health), deletes.go
// (delete-file rewrite), expiry.go (snapshot expiry, decided by package
// expire), manifests.go (manifest rewrite), orphans.go (orphan cleanup,
// decided by package orphans) and layout.go (a change of sort order or
// z-order the query signals recommend). cleanup.go removes, before a new
// job plans, what earlier failed jobs left; memory.go bounds what one
// planning may hold.
//
// Planning itself has no side effect on the table: the planner never writes
// table files or commits. A failure before any task is sent marks the job
// failed (if its record was written) and releases the lease; a failure
// after tasks may be out asks the committer to end the job, which removes
// whatever its rewriters wrote and releases the lease. So nothing is left
// half-started.
package plan

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"time"

	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/compaction"

	"github.com/icekeeper/icekeeper/shared/expire"
	"github.com/icekeeper/icekeeper/shared/health"
	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/lease"
	"github.com/icekeeper/icekeeper/shared/messages"
	"github.com/icekeeper/icekeeper/shared/optin"
	"github.com/icekeeper/icekeeper/shared/throttle"
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
	// RewriterConcurrency is how many groups the stack rewrites at once,
	// within which package throttle bounds a busy table's compaction (0:
	// throttle.DefaultConcurrency).
	RewriterConcurrency int
}

// Outcome says what planning a table did.
type Outcome string

// Outcomes.
const (
	OutcomePlanned     Outcome = "planned"
	OutcomeLeaseHeld   Outcome = "skipped_lease_held"
	OutcomeNothingToDo Outcome = "nothing_to_do"
	// OutcomeBackedOff: the table's jobs failed the same way in a row; it is
	// left alone until its backoff ends (lease.Backoff), or its jobs were
	// aborted by concurrent commits while its writers stay busy (package
	// throttle).
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
	// the plan did about them (health.ScopeHot, and health.NoteYoung for
	// the files left by the min file age).
	HotPartitions []health.HotPartition `json:"hot_partitions,omitempty"`
	// TrialHeldGroups are the groups a sort or z-order compaction left
	// because the table's new layout is on trial (package layouttrial):
	// until its verdict, only the partitions it already reached are
	// compacted, and TrialHeld says why.
	TrialHeldGroups int    `json:"trial_held_groups,omitempty"`
	TrialHeld       string `json:"trial_held,omitempty"`
	// Throttle is how hard a compaction may press on the table's writers
	// (package throttle): whether it starts, how many groups it takes at
	// once, and why. A back-off is outcome skipped_backoff.
	Throttle *throttle.Decision `json:"throttle,omitempty"`
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
	// NextExpiryDue (snapshot expiry only, planned or nothing to do) is
	// when the table's next snapshot beyond this expiry's comes due
	// (expire.NextDue); absent when none ever does. The dispatcher
	// schedules the table's next visit from it (trigger's wakeForExpiry,
	// package wakeup).
	NextExpiryDue *time.Time `json:"next_expiry_due,omitempty"`
}

// Heat says how much each partition field value of a table was queried
// lately (signals.PartitionHeat).
type Heat interface {
	PartitionHeat(ctx context.Context, table string) (map[string]float64, error)
}

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
	// ignoreBackoff, memoryBudget, heat: see Options.
	ignoreBackoff bool
	memoryBudget  int64
	heat          Heat
}

// Options are a planner's optional settings and collaborators; New
// validates them. The zero value traces nothing, refuses no table for its
// size, plans a bounded compaction's partitions in plan order and skips
// backed-off tables.
type Options struct {
	// Tracer traces the planner's phase (the zero Tracer is off).
	Tracer tracing.Tracer
	// MemoryBudget makes the planner refuse (ErrTooLargeToPlan) a table
	// whose scan planning needs more than this many bytes; 0 refuses none.
	// The functions set it to Go's memory limit.
	MemoryBudget int64
	// Heat lets a bounded sort or z-order compaction rewrite the most
	// queried partitions first.
	Heat Heat
	// IgnoreBackoff plans tables that are backed off after repeated
	// failures (for an operator acting by hand).
	IgnoreBackoff bool
}

// New validates its dependencies and returns a Planner. log and now may be
// nil.
func New(s Settings, cat Catalog, leases Leases, js Jobs, blobs Blobs, tasks Queue, commits Sender, log *slog.Logger, now func() time.Time, opts Options) (*Planner, error) {
	if cat == nil || leases == nil || js == nil || blobs == nil || tasks == nil || commits == nil {
		return nil, errors.New("plan: catalog, leases, jobs, blobs, task queue and commit queue are required")
	}
	if opts.MemoryBudget < 0 {
		return nil, fmt.Errorf("plan: MemoryBudget %d is negative", opts.MemoryBudget)
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
	return &Planner{settings: s, catalog: cat, leases: leases, jobs: js, blobs: blobs, tasks: tasks, commits: commits, log: log, now: now,
		tracer: opts.Tracer, memoryBudget: opts.MemoryBudget, heat: opts.Heat, ignoreBackoff: opts.IgnoreBackoff}, nil
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

// handToCommitter sends the commit request of a job that has no groups
// (an expiry, a manifest rewrite) and marks it running.
func (p *Planner) handToCommitter(ctx context.Context, log *slog.Logger, res Result, job jobs.Job, why string) (Result, bool, error) {
	req, err := messages.Encode(messages.CommitJob(job.ID))
	if err != nil {
		return res, false, err
	}
	if err := p.commits.Send(ctx, string(req)); err != nil {
		return res, true, fmt.Errorf("plan %s of %s: send commit request: %w", job.Kind, job.Table, err)
	}
	if err := p.jobs.Transition(ctx, job.ID, []jobs.State{jobs.Planned}, jobs.Running, "commit request sent"); err != nil && !errors.Is(err, jobs.ErrStateConflict) {
		return res, true, fmt.Errorf("plan %s of %s: %w", job.Kind, job.Table, err)
	}
	res.Outcome, res.JobID, res.Reason = OutcomePlanned, job.ID, why
	log.Info("planned", "kind", job.Kind, "snapshot_id", job.SnapshotID, "why", why, "lease_token", job.Token)
	return res, true, nil
}

// loadLeased starts every kind of planning under the lease: it loads the
// table and cleans up after the lease's past jobs (res.CleanedFiles).
func (p *Planner) loadLeased(ctx context.Context, log *slog.Logger, ident table.Identifier, name string, l lease.Lease, res *Result) (*table.Table, error) {
	tbl, err := p.catalog.LoadTable(ctx, ident)
	if err != nil {
		return nil, fmt.Errorf("load table: %w", err)
	}
	if len(l.PastJobs) > 0 {
		res.CleanedFiles = p.cleanUpAfter(ctx, log, tbl, name, l.PastJobs)
	}
	return tbl, nil
}
