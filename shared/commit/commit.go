// Package commit is the committer: the one place that decides a job's fate.
// Workers act; the committer decides.
//
// Every job, whatever its action, goes through the same frame (this file):
// a commit request is decoded to its kind (messages.RequestKind) and
// dispatched by one switch; a job whose groups are all done enters the
// committing state under its lease (renewed under the exact term), or a
// committer gone silent for CommitTakeover is taken over; the job's action
// commits; a failure the action cannot retry ends the job (abort), after
// looking for the job's commit in the table; a committed job is recorded,
// its losing attempts' files removed and its lease released (finish).
//
// Each action has its file:
//   - compaction.go: a rewrite of data files (bin-pack, sort, z-order):
//     gather every winning descriptor, check the whole job (every planned
//     input accounted for exactly once, rows written equal rows scanned),
//     examine what was committed since the pinned snapshot S
//     (concurrency.go), rebase concurrent position deletes (rebase.go) and
//     commit one RewriteFiles snapshot at S's data sequence number, stamped
//     with the job id; on a conflict reload, re-validate and rebuild, a
//     bounded number of times;
//   - deletes.go: a delete-file rewrite (the same frame, delete files in
//     and out); applied.go: which deletes the rewriters applied;
//   - batches.go: partial progress, a job committed batch by batch;
//     continuation.go: asking for the next compaction of a hot table;
//   - exchange.go: starting a two-stage sort's reduces once its maps are
//     done;
//   - expiry.go (leftovers.go): snapshot expiry and the deletion of what
//     it freed; manifests.go: manifest rewrite; orphans.go: orphan
//     cleanup; layout.go: a change of the table's sort order or z-order;
//   - record.go: the maintenance log record of every run.
//
// Invariants:
//   - At most one snapshot per job (per batch): before every commit
//     attempt, and when a retried committer finds the job already
//     committing, it looks for a snapshot stamped with the job id and, if
//     found, only finishes the bookkeeping.
//   - Nothing a job wrote is deleted once it may be referenced by a committed
//     snapshot: the abort path runs only after checking that the job's
//     snapshot is not in the table (and asking the action whether its
//     commit landed otherwise, as an expiry's does), and only the committer
//     that owns the committing state (or one taking over after
//     CommitTakeover) may abort a committing job.
//   - On any failure nothing is committed, the job's written files are
//     deleted, the job is marked failed or aborted with its reason, and the
//     lease is released.
//   - No file anyone still needs is deleted: expiry and orphan cleanup
//     delete only what package expire and package orphans decide, checked
//     again against the table as its catalog has it right before deleting
//     (docs/DESIGN.md §28).
package commit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/lease"
	"github.com/icekeeper/icekeeper/shared/messages"
	"github.com/icekeeper/icekeeper/shared/metrics"
	"github.com/icekeeper/icekeeper/shared/outputs"
	"github.com/icekeeper/icekeeper/shared/tracing"
)

// SummaryJobID is the snapshot summary property that names the job that
// made a rewrite snapshot.
const SummaryJobID = messages.SummaryJobID

// Sentinel errors.
var (
	// ErrAborted: a safety check ended the job (terminal).
	ErrAborted = errors.New("commit: job aborted")
	// ErrInvariant: the job's outputs do not add up (terminal).
	ErrInvariant = errors.New("commit: invariant violated")
	// ErrConcurrent: a change committed since S conflicts with the job
	// (always with ErrAborted). Not the table's failure: no backoff.
	ErrConcurrent = errors.New("commit: concurrent change")
	// ErrBusy: another committer is working on the job; retry later.
	ErrBusy = errors.New("commit: another committer holds the job")
	// errLeaseLost: another planner took the table over (terminal; the job
	// is recorded failed, as when the lease is found lost before committing).
	errLeaseLost = errors.New("commit: lease lost")
)

// Catalog loads the current table, and commits an expiry's metadata
// updates (compactions commit through the table's transaction).
type Catalog interface {
	LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error)
	CommitTable(ctx context.Context, ident table.Identifier, reqs []table.Requirement, updates []table.Update) (table.Metadata, string, error)
}

// Jobs reads and settles job records.
type Jobs interface {
	Get(ctx context.Context, id string) (jobs.Job, error)
	Groups(ctx context.Context, id string) ([]jobs.Group, error)
	Transition(ctx context.Context, id string, from []jobs.State, to jobs.State, reason string) error
	BeginCommit(ctx context.Context, id string, from []jobs.State, committer string) error
	TakeOver(ctx context.Context, id, committer string, staleBefore time.Time) error
	Heartbeat(ctx context.Context, id, committer string) error
	EndCommitting(ctx context.Context, id, committer string, to jobs.State, reason string) error
	MarkCommitted(ctx context.Context, id string, snapshotID int64, reason string) error
	// An expiry that ends with deletions left (leftovers.go).
	MarkCommittedLeavingDeletions(ctx context.Context, id string, snapshotID int64, reason string) error
	ClearDeletionsLeft(ctx context.Context, id string) error
	// A batched job's batches (partial progress, batches.go).
	BeginBatch(ctx context.Context, id string, batch int, committer string) error
	EndBatch(ctx context.Context, id, committer string, e jobs.BatchEnd) error
	FailGroup(ctx context.Context, jobID string, group int, reason string) error
}

// Leases renews and releases the job's lease, and keeps the table's
// failure record.
type Leases interface {
	Renew(ctx context.Context, l lease.Lease, ttl time.Duration) (lease.Lease, error)
	Release(ctx context.Context, l lease.Lease) error
	RecordFailure(ctx context.Context, table, class string) (lease.Backoff, error)
	RecordSuccess(ctx context.Context, table string) error
}

// Blobs reads plans and descriptors, and keeps an expiry's record of the
// files it frees.
type Blobs interface {
	Get(ctx context.Context, key string) ([]byte, error)
	Put(ctx context.Context, name string, data []byte) (string, error)
	Delete(ctx context.Context, key string) error
	List(ctx context.Context, prefix string) ([]string, error)
}

// Metrics receives the committer's metrics (EMF lines).
type Metrics interface {
	Emit(dimensions map[string]string, ms ...metrics.Metric) error
}

// TableOpener opens a table at a pinned snapshot.
type TableOpener interface {
	Open(ctx context.Context, ident table.Identifier, p messages.Pin) (*table.Table, error)
	OpenMetadata(ctx context.Context, ident table.Identifier, metadataLocation string) (*table.Table, error)
}

// Settings tune committing.
type Settings struct {
	LeaseTTL time.Duration
	// MaxRetries bounds reload-revalidate-rebuild rounds on conflicts.
	MaxRetries int
	// Backoff is the base of the capped, jittered backoff between rounds
	// (0: 50 ms, doubling, at most 2 s). Short: under the lease the other
	// side of a conflict is a writer, not another committer, and waiting
	// longer only lets it commit again.
	Backoff time.Duration
	// CommitTakeover is how long a job may sit in committing before another
	// committer may take it over (longer than the function timeout).
	CommitTakeover time.Duration
	// CommitDeadline bounds every catalog commit: the committer refreshes
	// its ownership of the job (a conditional heartbeat) right before the
	// catalog call and gives the call at most CommitDeadline, which must be
	// shorter than CommitTakeover, so no taker can act on the job while the
	// call may still land (0: CommitTakeover / 2).
	CommitDeadline time.Duration
	// MaxAttempts is the delivery count at which a failing commit request
	// gives up and aborts the job.
	MaxAttempts int
	// NoRebase: a position delete or deletion vector committed during a
	// compaction on a rewritten file aborts the job instead of being
	// rebased onto the new files (ICEKEEPER_REBASE_DELETES=false).
	NoRebase bool
	// DeletionPartFiles is the most files one part of an expiry's or
	// orphan cleanup's deletions record lists (0: 10,000).
	DeletionPartFiles int
}

// Outcome says what handling a request did.
type Outcome string

// Outcomes.
const (
	OutcomeCommitted Outcome = "committed"
	OutcomeAborted   Outcome = "aborted"
	OutcomeFailed    Outcome = "failed"
	// OutcomeAlready: the job was already finished; nothing was done.
	OutcomeAlready Outcome = "already_finished"
	// OutcomeWaiting: not every group is done yet; nothing was done.
	OutcomeWaiting Outcome = "waiting"
)

// Result reports one commit request.
type Result struct {
	JobID      string  `json:"job_id"`
	Table      string  `json:"table"`
	Outcome    Outcome `json:"outcome"`
	SnapshotID int64   `json:"snapshot_id,string,omitempty"`
	Reason     string  `json:"reason,omitempty"`
	// Conflicts is the number of catalog commit conflicts met; Retries the
	// number of reload-revalidate-rebuild rounds that followed.
	Conflicts      int   `json:"conflicts,omitempty"`
	Retries        int   `json:"retries,omitempty"`
	FilesRemoved   int   `json:"files_removed,omitempty"`
	FilesAdded     int   `json:"files_added,omitempty"`
	DeletesRemoved int   `json:"delete_files_removed,omitempty"`
	RowsWritten    int64 `json:"rows_written,omitempty"`
	// An expiry's snapshots expired, files deleted and their bytes (what
	// this run deleted, when it finished an earlier one's deletions).
	SnapshotsExpired int   `json:"snapshots_expired,omitempty"`
	FilesDeleted     int   `json:"files_deleted,omitempty"`
	BytesFreed       int64 `json:"bytes_freed,omitempty"`
	// A manifest rewrite's data manifests replaced and written.
	ManifestsRewritten int `json:"manifests_rewritten,omitempty"`
	ManifestsAdded     int `json:"manifests_added,omitempty"`
	// An orphan cleanup's files removed.
	OrphansRemoved int `json:"orphans_removed,omitempty"`
	// DeletesRebased is the number of delete files committed during a
	// compaction that its commit rebased onto the new files.
	DeletesRebased int `json:"deletes_rebased,omitempty"`
	// BackoffUntil is set when this failure backed the table off.
	BackoffUntil *time.Time `json:"backoff_until,omitempty"`
	// ConflictAbort: the job was aborted by a concurrent commit.
	ConflictAbort bool `json:"conflict_abort,omitempty"`
	// Continued: the job left groups of its compaction for a next one, and
	// the committer announced it (continuation.go).
	Continued bool `json:"continued,omitempty"`
	// ChainResumed: the committer announced that the table's maintenance
	// chain resumes after this job (a compaction's expiry is planned
	// without waiting for the next visit).
	ChainResumed bool `json:"chain_resumed,omitempty"`
	// Batch is the batch of a batched job this result is about (partial
	// progress; 0: the whole job).
	Batch int `json:"batch,omitempty"`
	// batchOnly: a batch ended and the job goes on (no job-level metrics,
	// no maintenance log record yet); nextBatch is a settled batch to
	// commit next in the same call.
	batchOnly bool
	nextBatch int
}

// Committer commits jobs.
type Committer struct {
	settings Settings
	catalog  Catalog
	jobs     Jobs
	leases   Leases
	blobs    Blobs
	tables   TableOpener
	log      *slog.Logger
	now      func() time.Time
	metrics  Metrics
	tracer   tracing.Tracer
	// recorder writes the maintenance log (see record.go).
	recorder                  Recorder
	rewriterMB, coordinatorMB int
	// fanOut sends deletion tasks (the task queue) when a deletions record
	// has at least fanOutParts parts; nil: the committer deletes itself.
	fanOut      Sender
	fanOutParts int
	// cooldowns and announcer start a compaction's next job at once
	// (continuation.go); nil: it waits for the planner's next visit.
	cooldowns Cooldowns
	announcer Announcer
	// afterCatalogCommit runs right after the catalog accepted the commit
	// (tests use it to simulate a crash before the bookkeeping).
	afterCatalogCommit func(jobID string) error
}

// Options are a committer's optional collaborators; New validates them.
// The zero value is a committer that emits no metrics, traces nothing,
// writes no maintenance log, deletes every deletions record itself and
// leaves a hot table's next compaction to the planner's next visit.
type Options struct {
	// Metrics receives the committer's metrics (EMF lines).
	Metrics Metrics
	// Tracer traces the commit phase (the zero Tracer is off).
	Tracer tracing.Tracer
	// Recorder writes one maintenance log record per run (record.go);
	// RewriterMB and CoordinatorMB are the functions' memory sizes it
	// prices the run's compute with.
	Recorder                  Recorder
	RewriterMB, CoordinatorMB int
	// DeletionTasks, when set, receives one deletion task per part (the
	// rewriters run them, package deletions) of a deletions record of at
	// least DeletionFanOutParts parts (0: 1), instead of the committer
	// deleting every part itself.
	DeletionTasks       Sender
	DeletionFanOutParts int
	// Cooldowns and Announcer, set together, start a compaction's next job
	// at once when it left groups for later (continuation.go).
	Cooldowns Cooldowns
	Announcer Announcer
}

func (o Options) validate() error {
	var errs []error
	if (o.Cooldowns == nil) != (o.Announcer == nil) {
		errs = append(errs, errors.New("commit: Cooldowns and Announcer go together (a continuation needs both)"))
	}
	if o.DeletionFanOutParts < 0 {
		errs = append(errs, fmt.Errorf("commit: DeletionFanOutParts %d is negative", o.DeletionFanOutParts))
	}
	if o.DeletionTasks == nil && o.DeletionFanOutParts > 0 {
		errs = append(errs, errors.New("commit: DeletionFanOutParts without DeletionTasks"))
	}
	if o.RewriterMB < 0 || o.CoordinatorMB < 0 {
		errs = append(errs, errors.New("commit: memory sizes must not be negative"))
	}
	if o.Recorder == nil && (o.RewriterMB > 0 || o.CoordinatorMB > 0) {
		errs = append(errs, errors.New("commit: memory sizes without a Recorder"))
	}
	return errors.Join(errs...)
}

// New validates its dependencies and options and returns a Committer.
func New(s Settings, cat Catalog, js Jobs, leases Leases, blobs Blobs, tables TableOpener, log *slog.Logger, now func() time.Time, opts Options) (*Committer, error) {
	if cat == nil || js == nil || leases == nil || blobs == nil || tables == nil {
		return nil, errors.New("commit: catalog, jobs, leases, blobs and table opener are required")
	}
	if err := opts.validate(); err != nil {
		return nil, err
	}
	if s.LeaseTTL <= 0 {
		return nil, errors.New("commit: LeaseTTL must be positive (ICEKEEPER_LEASE_TTL)")
	}
	if s.MaxRetries < 0 {
		return nil, errors.New("commit: MaxRetries must not be negative (ICEKEEPER_COMMIT_RETRIES)")
	}
	if s.Backoff <= 0 {
		s.Backoff = 50 * time.Millisecond
	}
	if s.MaxAttempts < 1 {
		s.MaxAttempts = 3
	}
	if s.CommitTakeover <= 0 {
		return nil, errors.New("commit: CommitTakeover must be positive (ICEKEEPER_COMMIT_TAKEOVER)")
	}
	if s.CommitDeadline == 0 {
		s.CommitDeadline = s.CommitTakeover / 2
	}
	if s.CommitDeadline <= 0 || s.CommitDeadline >= s.CommitTakeover {
		return nil, fmt.Errorf("commit: the commit deadline (%s) must be positive and shorter than the takeover window ICEKEEPER_COMMIT_TAKEOVER (%s)", s.CommitDeadline, s.CommitTakeover)
	}
	if log == nil {
		log = slog.Default()
	}
	if now == nil {
		now = time.Now
	}
	return &Committer{settings: s, catalog: cat, jobs: js, leases: leases, blobs: blobs, tables: tables, log: log, now: now,
		metrics: opts.Metrics, tracer: opts.Tracer,
		recorder: opts.Recorder, rewriterMB: opts.RewriterMB, coordinatorMB: opts.CoordinatorMB,
		fanOut: opts.DeletionTasks, fanOutParts: max(opts.DeletionFanOutParts, 1),
		cooldowns: opts.Cooldowns, announcer: opts.Announcer}, nil
}

// SetAfterCatalogCommit installs a hook that runs right after the catalog
// accepts the commit and before any bookkeeping; an error from it stops the
// committer there, as a crash would. For tests.
func (c *Committer) SetAfterCatalogCommit(f func(jobID string) error) { c.afterCatalogCommit = f }

// Sender sends one message.
type Sender interface {
	Send(ctx context.Context, body string) error
}

func (c *Committer) emit(res Result, took time.Duration) {
	if c.metrics == nil || res.Table == "" {
		return
	}
	dims := map[string]string{"Table": res.Table, "Function": "committer"}
	ms := []metrics.Metric{{Name: "CommitDuration", Value: float64(took.Milliseconds()), Unit: metrics.Milliseconds}}
	if res.Conflicts > 0 {
		ms = append(ms, metrics.Metric{Name: "CommitConflicts", Value: float64(res.Conflicts), Unit: metrics.Count},
			metrics.Metric{Name: "CommitRetries", Value: float64(res.Retries), Unit: metrics.Count})
	}
	if res.Batch > 0 {
		switch res.Outcome {
		case OutcomeCommitted:
			ms = append(ms, metrics.Metric{Name: "BatchesCommitted", Value: 1, Unit: metrics.Count})
		case OutcomeFailed, OutcomeAborted:
			ms = append(ms, metrics.Metric{Name: "BatchesFailed", Value: 1, Unit: metrics.Count})
		}
	}
	switch res.Outcome {
	case OutcomeCommitted:
		if !res.batchOnly {
			ms = append(ms, metrics.Metric{Name: "JobsCommitted", Value: 1, Unit: metrics.Count})
		}
		switch {
		case res.ManifestsRewritten > 0:
			ms = append(ms, metrics.Metric{Name: "ManifestsRewritten", Value: float64(res.ManifestsRewritten), Unit: metrics.Count})
		case res.OrphansRemoved > 0:
			ms = append(ms, metrics.Metric{Name: "OrphanFilesRemoved", Value: float64(res.OrphansRemoved), Unit: metrics.Count})
		case res.SnapshotsExpired > 0:
			ms = append(ms, metrics.Metric{Name: "SnapshotsExpired", Value: float64(res.SnapshotsExpired), Unit: metrics.Count},
				metrics.Metric{Name: "ExpiredFilesDeleted", Value: float64(res.FilesDeleted), Unit: metrics.Count},
				metrics.Metric{Name: "BytesFreed", Value: float64(res.BytesFreed), Unit: metrics.Bytes})
		default:
			ms = append(ms, metrics.Metric{Name: "DataFilesRemoved", Value: float64(res.FilesRemoved), Unit: metrics.Count},
				metrics.Metric{Name: "DataFilesAdded", Value: float64(res.FilesAdded), Unit: metrics.Count},
				metrics.Metric{Name: "DeleteFilesRemoved", Value: float64(res.DeletesRemoved), Unit: metrics.Count})
			if res.DeletesRebased > 0 {
				ms = append(ms, metrics.Metric{Name: "DeletesRebased", Value: float64(res.DeletesRebased), Unit: metrics.Count})
			}
		}
	case OutcomeFailed:
		if !res.batchOnly {
			ms = append(ms, metrics.Metric{Name: "JobsFailed", Value: 1, Unit: metrics.Count})
		}
	case OutcomeAborted:
		if !res.batchOnly {
			ms = append(ms, metrics.Metric{Name: "JobsAborted", Value: 1, Unit: metrics.Count})
		}
	}
	if res.ConflictAbort {
		// Per table: the ConflictAbortsPerTable alarm groups it by table.
		ms = append(ms, metrics.Metric{Name: "ConflictAborts", Value: 1, Unit: metrics.Count, Publish: metrics.PerTable})
	}
	if res.BackoffUntil != nil {
		ms = append(ms, metrics.Metric{Name: "TablesBackedOff", Value: 1, Unit: metrics.Count})
	}
	if err := c.metrics.Emit(dims, ms...); err != nil {
		c.log.Warn("emit metrics", "err", err.Error())
	}
}

// Handle processes one commit request delivered for the receiveCount-th
// time. A nil error means the message can be deleted; an error means it must
// be redelivered.
func (c *Committer) Handle(ctx context.Context, req messages.CommitRequest, receiveCount int) (Result, error) {
	log := c.log.With("job_id", req.JobID, "trace_id", c.tracer.TraceID(ctx))
	for {
		start := c.now()
		var res Result
		err := c.tracer.Phase(ctx, tracing.PhaseCommit, func(ctx context.Context) error {
			c.tracer.Annotate(ctx, "job_id", req.JobID)
			var herr error
			res, herr = c.handle(ctx, log, req, receiveCount)
			return herr
		})
		took := c.now().Sub(start)
		c.emit(res, took)
		c.record(ctx, res, took)
		if err != nil {
			log.Error("commit request failed", "err", err.Error(), "receive_count", receiveCount, "batch", req.Batch)
		} else {
			log.Info("commit request done", "outcome", res.Outcome, "snapshot_id", res.SnapshotID, "reason", res.Reason, "retries", res.Retries, "batch", res.Batch)
		}
		if err != nil || res.nextBatch == 0 {
			return res, err
		}
		// A batch ended and another is settled: commit it now rather than
		// wait for its request, which may have met this one's committing
		// state and be waiting for a redelivery. It is that batch's first
		// try, whatever delivery this request is on.
		req = messages.CommitBatch(req.JobID, res.nextBatch)
		receiveCount = 1
	}
}

func (c *Committer) handle(ctx context.Context, log *slog.Logger, req messages.CommitRequest, receiveCount int) (Result, error) {
	job, err := c.jobs.Get(ctx, req.JobID)
	if errors.Is(err, jobs.ErrNotFound) {
		log.Warn("commit request for unknown job dropped")
		return Result{JobID: req.JobID, Outcome: OutcomeAlready, Reason: "job not found"}, nil
	}
	if err != nil {
		return Result{JobID: req.JobID}, err
	}
	res := Result{JobID: job.ID, Table: job.Table}
	log = log.With("table", job.Table, "snapshot_id", job.SnapshotID)
	if job.State.Terminal() {
		res.Outcome, res.Reason, res.SnapshotID = OutcomeAlready, string(job.State)+": "+job.Reason, job.CommittedSnapshotID
		return res, nil
	}
	ident, err := messages.TableIdent(job.Table)
	if err != nil {
		return c.abort(ctx, log, job, jobs.Failed, err.Error(), "", messages.FailInvariant)
	}
	term := lease.Lease{Table: job.Table, Owner: job.ID, Token: job.Token}

	me := uuid.NewString()
	log = log.With("committer", me)
	switch kind := req.Kind(); kind {
	case messages.RequestDeletionsDone:
		return c.finishDeletions(ctx, log, job, ident, term)
	case messages.RequestListingDone:
		if job.State != jobs.Committing || job.Kind != jobs.KindRemoveOrphans {
			res.Outcome, res.Reason = OutcomeAlready, string(job.State)+": "+job.Reason
			return res, nil
		}
		res, err := c.removeOrphans(ctx, log, job, ident, term, true)
		if errors.Is(err, ErrAborted) || errors.Is(err, ErrInvariant) {
			// The cleanup refused, or cannot go on: every delivery would
			// end alike, so the job ends now, as its committing state's
			// owner (the committer that fanned the listing out), as a
			// commit request's would.
			state := jobs.Failed
			if errors.Is(err, ErrAborted) {
				state = jobs.Aborted
			}
			return c.abort(ctx, log, job, state, err.Error(), job.CommitterID, failClass(err))
		}
		return res, err
	case messages.RequestExchangeReady:
		return c.startReduces(ctx, log, job, ident, term, req.Exchange)
	case messages.RequestAbort:
		return c.abortRequested(ctx, log, job, me, req)
	case messages.RequestCommit, messages.RequestBatch:
		if job.Batched() {
			return c.handleBatch(ctx, log, job, ident, term, me, req.Batch, receiveCount)
		}
		return c.commitRequested(ctx, log, job, ident, term, me, receiveCount)
	default:
		return res, fmt.Errorf("%w: commit request kind %q", ErrInvariant, kind)
	}
}

// abortRequested ends a job a planner or a rewriter asked to end. A job
// another committer is committing is left to it until it goes silent
// (ErrBusy: the request is redelivered): its commit may land.
func (c *Committer) abortRequested(ctx context.Context, log *slog.Logger, job jobs.Job, me string, req messages.CommitRequest) (Result, error) {
	if job.State != jobs.Committing {
		return c.abort(ctx, log, job, jobs.Failed, req.Reason, "", req.Class)
	}
	if err := c.takeOverSilent(ctx, job, me); err != nil {
		return Result{JobID: job.ID, Table: job.Table}, err
	}
	log.Warn("took over a committing job whose committer went silent", "previous_committer", job.CommitterID)
	return c.abort(ctx, log, job, jobs.Failed, req.Reason, me, req.Class)
}

// commitRequested commits a job that is not batched once every group is
// done: it enters the committing state (or takes over a committer gone
// silent) and runs the job's action's commit; a failure the action cannot
// retry ends the job.
func (c *Committer) commitRequested(ctx context.Context, log *slog.Logger, job jobs.Job, ident table.Identifier, term lease.Lease, me string, receiveCount int) (Result, error) {
	res := Result{JobID: job.ID, Table: job.Table}
	switch job.State {
	case jobs.Planned, jobs.Running:
		if len(job.DoneGroups) < job.Groups {
			res.Outcome = OutcomeWaiting
			res.Reason = fmt.Sprintf("%d of %d groups done", len(job.DoneGroups), job.Groups)
			return res, nil
		}
		err := c.renewThenBegin(ctx, job, term, func() error {
			return c.jobs.BeginCommit(ctx, job.ID, []jobs.State{jobs.Planned, jobs.Running}, me)
		})
		if errors.Is(err, lease.ErrLost) {
			return c.abort(ctx, log, job, jobs.Failed, "lease lost before commit", "", "")
		}
		if err != nil {
			return res, err
		}
	case jobs.Committing:
		// Another committer owns the job. It may be working (leave it
		// alone) or dead (take over once it cannot be alive any more).
		if err := c.takeOverSilent(ctx, job, me); err != nil {
			return res, err
		}
		log.Warn("took over a committing job whose committer went silent", "previous_committer", job.CommitterID)
	}

	var err error
	switch job.Kind {
	case jobs.KindExpire:
		res, err = c.expire(ctx, log, job, ident, term, me)
	case jobs.KindRewriteManifests:
		res, err = c.rewriteManifests(ctx, log, job, ident, term, me)
	case jobs.KindRemoveOrphans:
		res, err = c.removeOrphans(ctx, log, job, ident, term, false)
	case jobs.KindChangeLayout:
		res, err = c.changeLayout(ctx, log, job, ident, term, me)
	default:
		res, err = c.commit(ctx, log, job, ident, term, me, job.State == jobs.Committing)
	}
	if err == nil || errors.Is(err, ErrBusy) {
		return res, err
	}
	if errors.Is(err, ErrAborted) || errors.Is(err, ErrInvariant) || errors.Is(err, errLeaseLost) || receiveCount >= c.settings.MaxAttempts {
		state := jobs.Failed
		if errors.Is(err, ErrAborted) {
			state = jobs.Aborted
		}
		out, aerr := c.abort(ctx, log, job, state, err.Error(), me, failClass(err))
		out.Conflicts, out.Retries = res.Conflicts, res.Retries
		return out, aerr
	}
	return res, err
}

// renewThenBegin renews the job's lease (lease.ErrLost when it is gone)
// and enters the committing state with begin; ErrBusy when another
// committer entered it first.
func (c *Committer) renewThenBegin(ctx context.Context, job jobs.Job, term lease.Lease, begin func() error) error {
	if _, err := c.leases.Renew(ctx, term, c.settings.LeaseTTL); err != nil {
		return err
	}
	if err := begin(); err != nil {
		if errors.Is(err, jobs.ErrStateConflict) {
			return fmt.Errorf("%w: job %s changed state concurrently", ErrBusy, job.ID)
		}
		return err
	}
	return nil
}

// takeOverSilent takes a committing job over for me once its owner has
// been silent for the takeover window; ErrBusy before that, or when
// another committer took it over first.
func (c *Committer) takeOverSilent(ctx context.Context, job jobs.Job, me string) error {
	staleBefore := c.now().Add(-c.settings.CommitTakeover)
	if !job.UpdatedAt.Before(staleBefore) {
		return fmt.Errorf("%w: job %s committing (batch %d) since %s", ErrBusy, job.ID, job.CommittingBatch, job.UpdatedAt.UTC().Format(time.RFC3339))
	}
	if err := c.jobs.TakeOver(ctx, job.ID, me, staleBefore); err != nil {
		if errors.Is(err, jobs.ErrStateConflict) {
			return fmt.Errorf("%w: job %s was taken over concurrently", ErrBusy, job.ID)
		}
		return err
	}
	return nil
}

// finish records a committed job, removes losing attempts' files and
// releases the lease.
func (c *Committer) finish(ctx context.Context, log *slog.Logger, job jobs.Job, term lease.Lease, snapshotID int64, why string) (Result, error) {
	res := Result{JobID: job.ID, Table: job.Table, Outcome: OutcomeCommitted, SnapshotID: snapshotID, Reason: why}
	if err := c.jobs.MarkCommitted(ctx, job.ID, snapshotID, why); err != nil && !errors.Is(err, jobs.ErrStateConflict) {
		return res, err
	}
	job.State = jobs.Committed
	if _, err := c.removeUnkept(ctx, job, 0); err != nil {
		log.Warn("remove losing attempts' files", "err", err.Error())
	}
	if err := c.leases.RecordSuccess(ctx, job.Table); err != nil {
		log.Warn("clear failure record", "err", err.Error())
	}
	if err := c.leases.Release(ctx, term); err != nil && !errors.Is(err, lease.ErrLost) {
		log.Warn("release lease", "err", err.Error())
	}
	log.Info("job committed", "committed_snapshot_id", snapshotID, "why", why)
	c.continueCompaction(ctx, log, job, &res)
	return res, nil
}

// failClass is the kind of failure a commit run ended with, for the table's
// backoff: lease.ClassConflict when a concurrent change conflicted (a
// shorter backoff), "" when another job took the table over.
func failClass(err error) string {
	switch {
	case errors.Is(err, errLeaseLost):
		return ""
	case errors.Is(err, ErrConcurrent):
		return lease.ClassConflict
	case errors.Is(err, ErrInvariant):
		return messages.FailInvariant
	case errors.Is(err, ErrAborted):
		return messages.FailTerminal
	}
	return messages.FailRetries
}

// abort ends a job without committing: it marks the job, deletes every file
// any of its attempts wrote, and releases the lease. owner is the committer
// that owns the committing state, or "" for a job that is not committing;
// for a committing job the job's snapshot is looked for first, and found
// means committed, not aborted.
//
// class is the kind of failure (messages.Fail*), recorded on the table's
// lease item so that a table whose jobs fail the same way twice in a row is
// backed off; "" records nothing.
func (c *Committer) abort(ctx context.Context, log *slog.Logger, job jobs.Job, state jobs.State, reason string, owner, class string) (Result, error) {
	ctx = context.WithoutCancel(ctx)
	res := Result{JobID: job.ID, Table: job.Table, Outcome: OutcomeFailed, Reason: reason}
	if state == jobs.Aborted {
		res.Outcome = OutcomeAborted
	}
	if job.Batched() {
		var err error
		if job, owner, err = c.holdBatchedForEnd(ctx, job, owner); err != nil {
			return res, err
		}
	}
	committing := owner != ""
	ident, ierr := messages.TableIdent(job.Table)
	term := lease.Lease{Table: job.Table, Owner: job.ID, Token: job.Token}
	from := []jobs.State{jobs.Planned, jobs.Running}
	if committing {
		if ierr == nil {
			cur, err := c.catalog.LoadTable(ctx, ident)
			if err != nil {
				// Cannot prove the commit did not land: keep everything.
				return res, fmt.Errorf("abort %s: cannot check the table: %w", job.ID, err)
			}
			if snap := FindBatchSnapshot(cur, job.ID, job.CommittingBatch); snap != nil {
				// Only a batch in flight (or the job's one commit) is
				// looked for: a batch ending found committed goes on as
				// committed, and the job's end is asked for again.
				out, err := c.finishAny(ctx, log, job, term, owner, snap.SnapshotID, "found the job's snapshot while aborting")
				if err == nil && out.batchOnly {
					return out, fmt.Errorf("%w: batch %d of job %s was committed while ending the job; ending it again", ErrBusy, job.CommittingBatch, job.ID)
				}
				return out, err
			}
			// The action says whether its commit landed in another way
			// than a snapshot stamped with the job, and ends it then.
			var landedEnd func(context.Context, *slog.Logger, jobs.Job, lease.Lease, string, *table.Table) (Result, bool, error)
			switch job.Kind {
			case jobs.KindExpire:
				landedEnd = c.endLandedExpiry
			}
			if landedEnd != nil {
				out, ended, err := landedEnd(ctx, log, job, term, owner, cur)
				if ended {
					return out, err
				}
				if err != nil {
					return res, fmt.Errorf("abort %s: %w", job.ID, err)
				}
			}
		}
	}
	if len(job.CommittedBatches) > 0 {
		// Its committed batches are in the table: the job committed part
		// of its work, and keeps it.
		reason = fmt.Sprintf("%d of %d batches committed; the job then ended: %s", len(job.CommittedBatches), job.Batches(), reason)
		state, class = jobs.Committed, ""
		res.Outcome, res.Reason = OutcomeCommitted, reason
	}
	end := func() error { return c.jobs.Transition(ctx, job.ID, from, state, reason) }
	if committing {
		end = func() error { return c.jobs.EndCommitting(ctx, job.ID, owner, state, reason) }
	}
	if err := end(); err != nil {
		if errors.Is(err, jobs.ErrStateConflict) {
			res.Outcome, res.Reason = OutcomeAlready, "job already moved on"
			return res, nil
		}
		return res, err
	}
	log.Warn("job ended without commit", "state", state, "reason", reason, "class", class)
	res.ConflictAbort = class == lease.ClassConflict
	if class != "" {
		if b, err := c.leases.RecordFailure(ctx, job.Table, class); err != nil {
			log.Warn("record failure", "err", err.Error())
		} else if b.Active(c.now()) && res.ConflictAbort {
			// Not the table's failure: no TablesBackedOff (it alarms);
			// ConflictAborts has its own alarm, per table.
			log.Warn("table waits after jobs aborted by concurrent commits in a row", "streak", b.Streak, "wait_until", b.Until.UTC().Format(time.RFC3339))
		} else if b.Active(c.now()) {
			res.BackoffUntil = &b.Until
			log.Error("table backed off: its jobs failed the same way in a row", "class", class, "streak", b.Streak, "backoff_until", b.Until.UTC().Format(time.RFC3339))
		}
	}
	if ierr == nil {
		job.State = state
		if n, err := c.removeUnkept(ctx, job, 0); err != nil {
			log.Warn("remove job outputs", "err", err.Error())
		} else {
			res.FilesRemoved = n
		}
	}
	if err := c.leases.Release(ctx, term); err != nil && !errors.Is(err, lease.ErrLost) {
		log.Warn("release lease", "err", err.Error())
	}
	return res, nil
}

// FindJobSnapshot returns the snapshot of a job's one commit, or nil.
func FindJobSnapshot(tbl *table.Table, jobID string) *table.Snapshot {
	return FindBatchSnapshot(tbl, jobID, 0)
}

// FindBatchSnapshot returns the snapshot stamped with jobID and batch (0:
// the job's one commit, which carries no batch), or nil. A batch's
// snapshot is never taken for another batch's, nor for the whole job's.
func FindBatchSnapshot(tbl *table.Table, jobID string, batch int) *table.Snapshot {
	want := ""
	if batch > 0 {
		want = strconv.Itoa(batch)
	}
	snaps := tbl.Metadata().Snapshots()
	for i := len(snaps) - 1; i >= 0; i-- {
		s := snaps[i]
		if s.Summary != nil && s.Summary.Properties[SummaryJobID] == jobID && s.Summary.Properties[messages.SummaryBatch] == want {
			return &snaps[i]
		}
	}
	return nil
}

// IsConflict reports whether err is a catalog commit conflict (a stale
// base), which a reload and rebuild may fix. The sql, glue and hive catalogs
// report a stale base as a plain "requirement failed" error.
func IsConflict(err error) bool {
	if err == nil {
		return false
	}
	if errors.Is(err, table.ErrCommitFailed) {
		return true
	}
	return strings.Contains(err.Error(), "requirement failed")
}

// classify marks errors that cannot succeed on retry as ErrAborted: iceberg-go
// refusing the operation (ErrInvalidOperation, or its plain "... do not
// belong to the table" when a file to remove is gone), the table dropped,
// or metadata iceberg-go cannot accept. Anything else (I/O, throttling,
// timeouts, the catalog unreachable) stays retryable.
func classify(err error) error {
	if err == nil || errors.Is(err, ErrAborted) {
		return err
	}
	msg := err.Error()
	switch {
	case errors.Is(err, table.ErrInvalidOperation),
		errors.Is(err, catalog.ErrNoSuchTable),
		errors.Is(err, catalog.ErrNoSuchNamespace),
		errors.Is(err, iceberg.ErrInvalidSchema),
		errors.Is(err, table.ErrInvalidMetadata),
		strings.Contains(msg, "do not belong to the table"),
		strings.Contains(msg, "does not belong to the table"):
		return fmt.Errorf("%w: %w", ErrAborted, err)
	}
	return err
}

func backoff(base time.Duration, attempt int) time.Duration {
	d := base << min(attempt, 6)
	if d > 2*time.Second {
		d = 2 * time.Second
	}
	return d/2 + time.Duration(rand.Int64N(int64(d/2)+1))
}

func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// finishAny records a committed job, or a committed batch of a batched one.
func (c *Committer) finishAny(ctx context.Context, log *slog.Logger, job jobs.Job, term lease.Lease, me string, snapshotID int64, why string) (Result, error) {
	if job.Batched() && job.CommittingBatch > 0 {
		return c.endBatch(ctx, log, job, term, me, snapshotID, jobs.Committed, why, "")
	}
	return c.finish(ctx, log, job, term, snapshotID, why)
}

// removeUnkept removes what the job (or, for batch > 0, that batch of it)
// wrote that no committed snapshot references: every attempt of a group
// whose winner is not committed (jobs.Job.WinnerCommitted), the losing
// attempts of the others, and the rebase files of uncommitted commits.
// job must be read after its last change (a batch's end, or the job's).
func (c *Committer) removeUnkept(ctx context.Context, job jobs.Job, batch int) (int, error) {
	if batch == 0 {
		// A two-stage sort's scratch pages: none is kept, whatever the
		// job's end.
		if err := c.removeScratch(ctx, job); err != nil {
			return 0, fmt.Errorf("remove the exchange's scratch pages: %w", err)
		}
	}
	groups, err := c.jobs.Groups(ctx, job.ID)
	if err != nil {
		return 0, err
	}
	var attempts []string
	for _, g := range groups {
		if batch > 0 && job.BatchOf(g.Index) != batch {
			continue
		}
		attempts = append(attempts, job.Unreferenced(g)...)
	}
	attempts = append(attempts, job.UnreferencedRebases(batch)...)
	if len(attempts) == 0 {
		return 0, nil
	}
	ident, err := messages.TableIdent(job.Table)
	if err != nil {
		return 0, err
	}
	tbl, err := c.tables.Open(ctx, ident, job.Pin())
	if err != nil {
		return 0, err
	}
	return outputs.RemoveAttempts(ctx, tbl, attempts)
}
