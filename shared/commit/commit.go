// Package commit is the committer: the one place that decides a job's fate.
// Workers act; the committer decides.
//
// For a job whose groups are all done, the committer:
//  1. verifies it still holds the table's lease (renewing it under the exact
//     term) and moves the job to committing, which stops any further claims;
//  2. reads every winning descriptor and checks the invariants over the whole
//     job: every planned input file is accounted for exactly once, and rows
//     written equal the rows the scan produced, per group and in total;
//  3. loads the current table and examines every snapshot committed since
//     the pinned snapshot S: concurrent appends are fine; concurrent equality
//     deletes are fine because the new files carry S's data sequence number,
//     so those deletes still apply to them; a concurrent position delete or
//     deletion vector that may target a rewritten file is rebased onto the
//     new files; a concurrent removal of an input file, or of any delete
//     file the rewriters applied to the inputs (dead for the job or not),
//     aborts the job (terminal, reason recorded) unless the rebase shows
//     every row it deleted of a rewritten file deleted again;
//  4. commits exactly one RewriteFiles snapshot: removes the input files and
//     the delete files the rewrite fully applied (including dead equality
//     deletes), adds the new files pinned to S's data sequence number, and
//     stamps the snapshot summary with the job id;
//  5. on a catalog commit conflict, reloads, re-validates and rebuilds, a
//     bounded number of times.
//
// Invariants:
//   - At most one snapshot per job: before every commit attempt, and when a
//     retried committer finds the job already committing, it looks for a
//     snapshot stamped with the job id and, if found, only finishes the
//     bookkeeping.
//   - Nothing a job wrote is deleted once it may be referenced by a committed
//     snapshot: the abort path runs only after checking that the job's
//     snapshot is not in the table, and only the committer that owns the
//     committing state (or one taking over after CommitTakeover) may abort a
//     committing job.
//   - On any failure nothing is committed, the job's written files are
//     deleted, the job is marked failed or aborted with its reason, and the
//     lease is released.
package commit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/compaction"
	"github.com/google/uuid"

	"github.com/icekeeper/icekeeper/shared/deletefiles"
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

// New validates its dependencies and returns a Committer.
func New(s Settings, cat Catalog, js Jobs, leases Leases, blobs Blobs, tables TableOpener, log *slog.Logger, now func() time.Time) (*Committer, error) {
	if cat == nil || js == nil || leases == nil || blobs == nil || tables == nil {
		return nil, errors.New("commit: catalog, jobs, leases, blobs and table opener are required")
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
	return &Committer{settings: s, catalog: cat, jobs: js, leases: leases, blobs: blobs, tables: tables, log: log, now: now}, nil
}

// SetAfterCatalogCommit installs a hook that runs right after the catalog
// accepts the commit and before any bookkeeping; an error from it stops the
// committer there, as a crash would. For tests.
func (c *Committer) SetAfterCatalogCommit(f func(jobID string) error) { c.afterCatalogCommit = f }

// Sender sends one message.
type Sender interface {
	Send(ctx context.Context, body string) error
}

// SetDeletionFanOut makes the committer send one deletion task per part
// to tasks (rewriters run them, package deletions) when a deletions record
// has at least minParts parts, instead of deleting itself.
func (c *Committer) SetDeletionFanOut(tasks Sender, minParts int) {
	c.fanOut, c.fanOutParts = tasks, max(minParts, 1)
}

// SetTracer traces the committer's phase (off by default).
func (c *Committer) SetTracer(t tracing.Tracer) { c.tracer = t }

// SetMetrics sends the committer's metrics to m (none by default).
func (c *Committer) SetMetrics(m Metrics) { c.metrics = m }

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
		req = messages.CommitRequest{Version: messages.FormatVersion, JobID: req.JobID, Batch: res.nextBatch}
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
	if req.DeletionsDone {
		return c.finishDeletions(ctx, log, job, ident, term)
	}
	if req.ListingDone {
		if job.State != jobs.Committing || job.Kind != jobs.KindRemoveOrphans {
			res.Outcome, res.Reason = OutcomeAlready, string(job.State)+": "+job.Reason
			return res, nil
		}
		return c.removeOrphans(ctx, log, job, ident, term, true)
	}
	if req.ExchangeReady {
		return c.startReduces(ctx, log, job, ident, term, req.Exchange)
	}
	if job.Batched() && !req.Abort {
		return c.handleBatch(ctx, log, job, ident, term, me, req.Batch, receiveCount)
	}
	switch job.State {
	case jobs.Planned, jobs.Running:
		if req.Abort {
			return c.abort(ctx, log, job, jobs.Failed, req.Reason, "", req.Class)
		}
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
		// alone) or dead (take over once it cannot be alive any more). An
		// abort request waits too (redelivered later): its committer may
		// finish, or go silent and be taken over.
		if err := c.takeOverSilent(ctx, job, me); err != nil {
			return res, err
		}
		log.Warn("took over a committing job whose committer went silent", "previous_committer", job.CommitterID)
		if req.Abort {
			return c.abort(ctx, log, job, jobs.Failed, req.Reason, me, req.Class)
		}
	}

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

// commit runs steps 2 to 5 for a job in the committing state; tookOver
// says this committer took the job over from one that went silent.
func (c *Committer) commit(ctx context.Context, log *slog.Logger, job jobs.Job, ident table.Identifier, term lease.Lease, me string, tookOver bool) (Result, error) {
	batch := job.CommittingBatch
	res := Result{JobID: job.ID, Table: job.Table, Batch: batch}
	cur, err := c.catalog.LoadTable(ctx, ident)
	if err != nil {
		return res, fmt.Errorf("load table %s: %w", job.Table, classify(err))
	}
	if snap := FindBatchSnapshot(cur, job.ID, batch); snap != nil {
		return c.finishAny(ctx, log, job, term, me, snap.SnapshotID, "found the job's snapshot in the table")
	}
	if _, err := c.leases.Renew(ctx, term, c.settings.LeaseTTL); err != nil {
		if errors.Is(err, lease.ErrLost) {
			return res, fmt.Errorf("%w before commit", errLeaseLost)
		}
		return res, err
	}

	pin := messages.Pin{MetadataLocation: job.MetadataLocation, SnapshotID: job.SnapshotID, SequenceNumber: job.SequenceNumber}
	pinned, err := c.tables.Open(ctx, ident, pin)
	if err != nil {
		return res, fmt.Errorf("open pinned table: %w", err)
	}
	if tookOver && job.Kind == jobs.KindCompaction {
		// The silent committer may have written a rebase round's delete
		// files: the job's snapshot is not in the table and its catalog
		// call can no longer land (CommitDeadline), so nothing references
		// them.
		if n, err := outputs.RemoveAttempts(ctx, pinned, []string{jobs.RebaseAttempt(job.ID, batch)}); err != nil {
			log.Warn("remove the previous committer's rebased deletes", "err", err.Error())
		} else if n > 0 {
			log.Info("removed the previous committer's rebased deletes", "files", n)
		}
	}
	gather := c.gather
	if job.Kind == jobs.KindRewriteDeletes {
		gather = c.gatherDeletes
	}
	staged, err := gather(ctx, job, pinned)
	if err != nil {
		return res, err
	}
	if batch > 0 {
		if staged, err = withoutEarlierBatchRemovals(ctx, cur, job, staged); err != nil {
			return res, err
		}
	}
	res.FilesRemoved, res.FilesAdded, res.DeletesRemoved, res.RowsWritten = len(staged.oldFiles), len(staged.newFiles), len(staged.deadDeletes), staged.rowsWritten
	if job.Kind == jobs.KindRewriteDeletes {
		// Its new files are delete files (DataFilesAdded counts data files).
		res.FilesAdded, res.RowsWritten = 0, 0
	}

	cache, validated := newRebaseCache(), map[int64]Concurrent{}
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			cur, err = c.catalog.LoadTable(ctx, ident)
			if err != nil {
				return res, fmt.Errorf("reload table %s: %w", job.Table, classify(err))
			}
			if snap := FindBatchSnapshot(cur, job.ID, batch); snap != nil {
				res2, err := c.finishAny(ctx, log, job, term, me, snap.SnapshotID, "found the job's snapshot after a conflict")
				res2.Retries = attempt
				return res2, err
			}
		}
		var conc Concurrent
		if err := validateSince(ctx, cur, pin, staged.scope, &conc, validated); err != nil {
			return res, err
		}
		if err := CheckStillValid(cur, pinned, staged.newFiles); err != nil {
			return res, err
		}
		round := staged
		if !conc.Empty() {
			if round, err = c.rebase(ctx, log, cur, pinned, job, pin, staged, conc, cache); err != nil {
				return res, err
			}
			res.DeletesRebased = len(round.rebaseRemoves)
		}
		committed, err := c.commitOnce(ctx, cur, job, me, pin, round)
		if err != nil && IsConflict(err) {
			// Not committed: this round's rebased deletes are unused.
			c.removeRebased(ctx, log, cur, round)
		}
		if err == nil {
			if c.afterCatalogCommit != nil {
				if herr := c.afterCatalogCommit(job.ID); herr != nil {
					return res, herr
				}
			}
			snap := FindBatchSnapshot(committed, job.ID, batch)
			if snap == nil {
				return res, fmt.Errorf("%w: committed table has no snapshot stamped %s", ErrInvariant, job.ID)
			}
			out, ferr := c.finishAny(ctx, log, job, term, me, snap.SnapshotID, "committed")
			out.Retries, out.Conflicts = attempt, res.Conflicts
			out.FilesRemoved, out.FilesAdded, out.DeletesRemoved, out.RowsWritten = res.FilesRemoved, res.FilesAdded, res.DeletesRemoved, res.RowsWritten
			out.DeletesRebased = res.DeletesRebased
			return out, ferr
		}
		if errors.Is(err, ErrBusy) {
			return res, err
		}
		if !IsConflict(err) {
			// The outcome may be unknown (the catalog may have accepted it):
			// look before deciding anything.
			if again, lerr := c.catalog.LoadTable(ctx, ident); lerr == nil {
				if snap := FindBatchSnapshot(again, job.ID, batch); snap != nil {
					return c.finishAny(ctx, log, job, term, me, snap.SnapshotID, "found the job's snapshot after an error")
				}
			}
			return res, fmt.Errorf("commit: %w", classify(err))
		}
		res.Conflicts++
		if attempt >= c.settings.MaxRetries {
			return res, fmt.Errorf("%w: %w: %d commit conflicts, retries exhausted: %w", ErrAborted, ErrConcurrent, attempt+1, err)
		}
		log.Warn("commit conflict; reloading", "attempt", attempt+1, "err", err.Error())
		res.Retries = attempt + 1
		if err := sleep(ctx, backoff(c.settings.Backoff, attempt)); err != nil {
			return res, err
		}
	}
}

type stagedRewrite struct {
	oldFiles    []iceberg.DataFile
	newFiles    []iceberg.DataFile
	deadDeletes []iceberg.DataFile
	scope       Scope
	rowsWritten int64
	// addFirst: the new files are delete files that replace equality
	// deletes (a delete-file rewrite that converts them). iceberg-go's
	// RewriteFiles cannot swap the two kinds in one snapshot, so one
	// transaction stages two: a row delta that adds the new deletes (and
	// removes the deletion vectors they supersede), then a rewrite that
	// removes the rest of the inputs (see commitOnce).
	addFirst bool
	// groups are the descriptors' row maps and new files, and groupOf the
	// group of each input file (a compaction's; see rebase.go).
	groups  []groupOutput
	groupOf map[string]int
	// rebaseRemoves are the concurrent delete files a rebase replaces
	// (removed explicitly), rebaseAdds what replaces them, each with the
	// data sequence number it keeps.
	rebaseRemoves []iceberg.DataFile
	rebaseAdds    []rebasedDelete
	// batch is the batch of a batched job being committed (0: the job).
	batch int
}

// Scope is what a job rewrites, as ValidateSince needs it.
type Scope struct {
	// Rewritten are the input data files' paths.
	Rewritten map[string]struct{}
	// RewrittenPartitions are the input files' partitions (partitionKey).
	RewrittenPartitions map[string]struct{}
	// MovedPartitions are the partitions, before and after, of rows that
	// the job moves to another partition spec: an equality delete scoped to
	// one of them may apply differently once the rows moved.
	MovedPartitions map[string]struct{}
	// Removing are the delete files the job removes as dead (fileKey).
	Removing map[string]struct{}
	// Applied are the delete files live at S that apply to an input file
	// (fileKey; a compaction's): the rewriters applied them, so the new
	// files lack the rows they delete, whether or not they also apply to
	// files the job leaves alone (and so stay in the table).
	Applied map[string]struct{}
	// Rebase: position deletes and deletion vectors committed since S on
	// rewritten files are left to the rebase (Concurrent), not aborted for.
	Rebase bool
	// EqualityRemoved holds, per partition (partitionKey, or "" for
	// equality deletes of an unpartitioned spec, which apply to every
	// partition), the largest data sequence number of the equality deletes
	// a delete-file rewrite converts and removes.
	EqualityRemoved map[string]int64
}

// gather reads the plan and the winning descriptors, checks the job's
// invariants and collects the files to swap.
func (c *Committer) gather(ctx context.Context, job jobs.Job, pinned *table.Table) (stagedRewrite, error) {
	var st stagedRewrite
	plan, groups, err := c.readPlan(ctx, job)
	if err != nil {
		return st, err
	}
	st.batch = job.CommittingBatch
	planned := job.InputFiles
	if st.batch > 0 {
		groups, planned = batchGroups(job, groups, plan)
	}
	st.scope = Scope{Rewritten: map[string]struct{}{}, MovedPartitions: map[string]struct{}{}, Removing: map[string]struct{}{}, Rebase: !c.settings.NoRebase}
	st.groupOf = map[string]int{}
	movedInputs := map[string]struct{}{}
	newPaths := map[string]struct{}{}
	schemaID := pinned.Schema().ID
	// A descriptor may only name files its attempt wrote under the table's
	// data location: a descriptor that names anything else (another table's
	// file, a path outside the location) is refused, whatever wrote it.
	dataRoots := outputs.DataRoots(pinned)
	var totalScanned int64
	exchanged := exchangeCounts{}
	for _, g := range groups {
		pg := plan.Groups[g.Index]
		d, err := c.readDescriptor(ctx, job, g, pg)
		if err != nil {
			return st, err
		}
		// A two-stage sort's map writes pages, not files; its reduce
		// reads pages, not table files (package exchange).
		isMap := pg.Exchange != nil && pg.Exchange.Role == messages.ExchangeMap
		isReduce := pg.Exchange != nil && pg.Exchange.Role == messages.ExchangeReduce
		switch {
		case isMap && (d.Exchange == nil || d.Exchange.ID != pg.Exchange.ID || len(d.NewFiles) > 0 || d.Exchange.Index.Rows != d.Counters.RowsWritten):
			return st, fmt.Errorf("%w: group %d is a map of exchange %d, its descriptor is not", ErrInvariant, g.Index, pg.Exchange.ID)
		case isMap:
			exchanged.add(pg.Exchange.ID, d.Exchange.Index.Rows, 0)
		case isReduce:
			exchanged.add(pg.Exchange.ID, 0, d.Counters.RowsWritten)
		case d.Exchange != nil:
			return st, fmt.Errorf("%w: group %d wrote exchange pages, the plan has no exchange for it", ErrInvariant, g.Index)
		}
		if d.SchemaID != schemaID {
			return st, fmt.Errorf("%w: group %d was written with schema %d, the pinned metadata's current schema is %d", ErrInvariant, g.Index, d.SchemaID, schemaID)
		}
		if len(d.NewFiles) > 0 && d.SpecID != pg.OutputSpecID {
			return st, fmt.Errorf("%w: group %d wrote spec %d, the plan asked for spec %d", ErrInvariant, g.Index, d.SpecID, pg.OutputSpecID)
		}
		moved := d.SpecID != pg.SpecID
		for _, p := range d.InputPaths {
			if _, dup := st.scope.Rewritten[p]; dup {
				return st, fmt.Errorf("%w: input %s is in more than one group", ErrInvariant, p)
			}
			st.scope.Rewritten[p] = struct{}{}
			if moved {
				movedInputs[p] = struct{}{}
			}
		}
		cnt := d.Counters
		if cnt.RowsBeforeDeletes != pg.InputRows {
			return st, fmt.Errorf("%w: group %d read %d rows before deletes, the plan has %d", ErrInvariant, g.Index, cnt.RowsBeforeDeletes, pg.InputRows)
		}
		if cnt.RowsWritten != cnt.RowsScanned || (cnt.RowsScanned > cnt.RowsBeforeDeletes && !isReduce) {
			return st, fmt.Errorf("%w: group %d wrote %d rows, scanned %d, of %d before deletes", ErrInvariant, g.Index, cnt.RowsWritten, cnt.RowsScanned, cnt.RowsBeforeDeletes)
		}
		files, err := messages.DecodeDataFiles(pinned.Metadata(), d.SpecID, d.NewFiles)
		if err != nil {
			return st, fmt.Errorf("%w: group %d: %w", ErrInvariant, g.Index, err)
		}
		var rows int64
		for _, f := range files {
			if _, dup := newPaths[f.FilePath()]; dup {
				return st, fmt.Errorf("%w: new file %s written twice", ErrInvariant, f.FilePath())
			}
			if !outputs.OfAttempt(f.FilePath(), d.Attempt) {
				return st, fmt.Errorf("%w: new file %s is not named for attempt %s", ErrInvariant, f.FilePath(), d.Attempt)
			}
			if !underAny(f.FilePath(), dataRoots) {
				return st, fmt.Errorf("%w: new file %s is outside the table's data location (%s)", ErrInvariant, f.FilePath(), strings.Join(dataRoots, ", "))
			}
			newPaths[f.FilePath()] = struct{}{}
			rows += f.Count()
			if moved {
				st.scope.MovedPartitions[partitionKey(f)] = struct{}{}
			}
		}
		if tableRows := cnt.RowsWritten; rows != tableRows && !(isMap && rows == 0) {
			return st, fmt.Errorf("%w: group %d: new files hold %d rows, descriptor says %d", ErrInvariant, g.Index, rows, tableRows)
		}
		st.newFiles = append(st.newFiles, files...)
		st.rowsWritten += rows
		st.groups = append(st.groups, groupOutput{desc: d, files: files})
		for _, p := range d.InputPaths {
			st.groupOf[p] = len(st.groups) - 1
		}
		if !isReduce {
			// Rows read from the table (a reduce's came from the maps).
			totalScanned += cnt.RowsScanned
		}
	}
	if err := exchanged.check(); err != nil {
		return st, err
	}
	if int64(len(st.scope.Rewritten)) != planned {
		return st, fmt.Errorf("%w: %d input files accounted for, the job planned %d", ErrInvariant, len(st.scope.Rewritten), planned)
	}
	if st.rowsWritten != totalScanned {
		return st, fmt.Errorf("%w: wrote %d rows in total, scanned %d", ErrInvariant, st.rowsWritten, totalScanned)
	}

	fs, err := pinned.FS(ctx)
	if err != nil {
		return st, fmt.Errorf("open table IO: %w", err)
	}
	snapS := pinned.CurrentSnapshot()
	var inputSeqs map[string]int64
	st.oldFiles, st.scope.RewrittenPartitions, inputSeqs, err = liveFiles(ctx, fs, pinned, snapS, st.scope.Rewritten)
	if err != nil {
		return st, err
	}
	if len(st.oldFiles) != len(st.scope.Rewritten) {
		return st, fmt.Errorf("%w: %d of %d input files are live at the pinned snapshot", ErrInvariant, len(st.oldFiles), len(st.scope.Rewritten))
	}
	for _, f := range st.oldFiles {
		if _, ok := movedInputs[f.FilePath()]; ok {
			st.scope.MovedPartitions[partitionKey(f)] = struct{}{}
		}
	}
	deadPos, err := compaction.CollectDeadPositionDeletes(ctx, fs, snapS, st.scope.Rewritten)
	if err != nil {
		return st, fmt.Errorf("collect dead position deletes: %w", err)
	}
	deadEq, err := compaction.CollectDeadEqualityDeletesWithSpecs(ctx, fs, pinned.Metadata(), snapS, st.scope.Rewritten)
	if err != nil {
		return st, fmt.Errorf("collect dead equality deletes: %w", err)
	}
	// Every delete file the rewriters applied, dead or not: a concurrent
	// removal of any of them aborts (or, a position delete or DV, goes to
	// the rebase's check; see ValidateSince).
	var dvs []iceberg.DataFile
	if st.scope.Applied, dvs, err = appliedDeletes(ctx, fs, pinned.Metadata(), snapS, st.oldFiles, inputSeqs); err != nil {
		return st, err
	}
	for _, d := range append(append(deadPos, deadEq...), dvs...) {
		if _, ok := st.scope.Removing[fileKey(d)]; ok {
			continue
		}
		st.scope.Removing[fileKey(d)] = struct{}{}
		st.deadDeletes = append(st.deadDeletes, d)
	}
	return st, nil
}

// readPlan reads the job's plan and group records and checks that they
// agree with the job on the number of groups.
func (c *Committer) readPlan(ctx context.Context, job jobs.Job) (messages.Plan, []jobs.Group, error) {
	var plan messages.Plan
	planBytes, err := c.blobs.Get(ctx, job.PlanKey)
	if err != nil {
		return plan, nil, fmt.Errorf("read plan: %w", err)
	}
	if err := messages.Decode(planBytes, &plan); err != nil {
		return plan, nil, fmt.Errorf("%w: %w", ErrInvariant, err)
	}
	groups, err := c.jobs.Groups(ctx, job.ID)
	if err != nil {
		return plan, nil, err
	}
	if len(plan.Groups) != job.Groups || len(groups) != job.Groups {
		return plan, nil, fmt.Errorf("%w: plan has %d groups, job %d, records %d", ErrInvariant, len(plan.Groups), job.Groups, len(groups))
	}
	return plan, groups, nil
}

// readDescriptor reads a done group's winning descriptor and checks that it
// is the winner's, for this job and group, and that it read exactly the
// plan group's data files.
func (c *Committer) readDescriptor(ctx context.Context, job jobs.Job, g jobs.Group, pg messages.PlanGroup) (messages.Descriptor, error) {
	var d messages.Descriptor
	if g.Index != pg.Index || g.State != jobs.GroupDone || g.DescriptorKey == "" {
		return d, fmt.Errorf("%w: group %d is %s", ErrInvariant, g.Index, g.State)
	}
	data, err := c.blobs.Get(ctx, g.DescriptorKey)
	if err != nil {
		return d, fmt.Errorf("read descriptor of group %d: %w", g.Index, err)
	}
	if err := messages.Decode(data, &d); err != nil {
		return d, fmt.Errorf("%w: group %d: %w", ErrInvariant, g.Index, err)
	}
	if d.JobID != job.ID || d.Group != g.Index || d.Attempt != g.Winner {
		return d, fmt.Errorf("%w: group %d: descriptor is for job %s group %d attempt %s, winner is %s", ErrInvariant, g.Index, d.JobID, d.Group, d.Attempt, g.Winner)
	}
	if !equalStrings(messages.SortedCopy(d.InputPaths), pg.InputPaths) {
		return d, fmt.Errorf("%w: group %d read %d files, the plan has %d (or different ones)", ErrInvariant, g.Index, len(d.InputPaths), len(pg.InputPaths))
	}
	return d, nil
}

// commitOnce stages the rewrite on top of cur, fences it, and commits it.
//
// The fence: right before the catalog call the committer refreshes its
// ownership of the committing job (a heartbeat conditional on the job being
// committing under its id); losing it is ErrBusy, and nothing is sent. The
// call then gets at most CommitDeadline, shorter than the takeover window
// that the heartbeat restarted, so no other committer can take the job over
// (and abort it, deleting its files) while this call may still land.
func (c *Committer) commitOnce(ctx context.Context, cur *table.Table, job jobs.Job, me string, pin messages.Pin, st stagedRewrite) (*table.Table, error) {
	txn := cur.NewTransaction()
	props := iceberg.Properties{
		SummaryJobID:                job.ID,
		"icekeeper.pinned-snapshot": fmt.Sprint(pin.SnapshotID),
	}
	if st.batch > 0 {
		props[messages.SummaryBatch] = strconv.Itoa(st.batch)
	}
	if st.addFirst && len(st.newFiles) > 0 {
		var err error
		if st, err = stageAddedDeletes(ctx, txn, props, st); err != nil {
			return nil, err
		}
	}
	rw := txn.NewRewrite(props)
	rw.DataSequenceNumber(pin.SequenceNumber)
	for _, f := range st.oldFiles {
		rw.DeleteFile(f)
	}
	for _, f := range st.newFiles {
		rw.AddFile(f) // data files, or a delete rewrite's delete files
	}
	if len(st.rebaseRemoves) == 0 {
		for _, d := range st.deadDeletes {
			rw.DeleteFile(d)
		}
	} else {
		// iceberg-go gives an added delete file one of the data sequence
		// numbers of the delete files removed explicitly, all of one
		// content: those are the concurrent deletes the rebase replaces.
		// The dead deletes (equality ones among them) go as automatic
		// removals, which ApplyResult routes by content.
		var dead table.CompactionGroupResult
		for _, d := range st.deadDeletes {
			if table.IsDeletionVector(d) {
				dead.SafeDeletionVectors = append(dead.SafeDeletionVectors, d)
			} else {
				dead.SafePosDeletes = append(dead.SafePosDeletes, d)
			}
		}
		rw.ApplyResult(dead)
		for _, d := range st.rebaseRemoves {
			rw.DeleteFile(d)
		}
		for _, a := range st.rebaseAdds {
			rw.AddDeleteFileWithDataSequenceNumber(a.file, a.seq)
		}
	}
	if err := rw.Commit(ctx); err != nil {
		return nil, fmt.Errorf("stage rewrite: %w", err)
	}
	if err := c.jobs.Heartbeat(ctx, job.ID, me); err != nil {
		if errors.Is(err, jobs.ErrStateConflict) {
			return nil, fmt.Errorf("%w: lost the committing job before the catalog commit: %v", ErrBusy, err)
		}
		return nil, fmt.Errorf("fence before the catalog commit: %w", err)
	}
	cctx, cancel := context.WithTimeout(ctx, c.settings.CommitDeadline)
	defer cancel()
	return txn.Commit(cctx)
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
	if job.Batched() && owner == "" {
		// A batched job ends through the committing state, which no batch
		// commit then holds: what it reads of the committed batches stays
		// true until it ends the job.
		owner = uuid.NewString()
		if err := c.jobs.BeginCommit(ctx, job.ID, []jobs.State{jobs.Planned, jobs.Running}, owner); err != nil {
			if errors.Is(err, jobs.ErrStateConflict) {
				return res, fmt.Errorf("%w: job %s changed state while ending it", ErrBusy, job.ID)
			}
			return res, err
		}
		job.CommittingBatch = 0
	}
	if job.Batched() {
		now, err := c.jobs.Get(ctx, job.ID)
		if err != nil {
			return res, err
		}
		now.CommittingBatch = job.CommittingBatch
		job = now
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
			if job.Kind == jobs.KindExpire {
				// A committed expiry is finished, never aborted: its
				// snapshots are gone, its files must go too.
				rec, found, err := c.readDeletions(ctx, job)
				if err != nil {
					return res, fmt.Errorf("abort %s: %w", job.ID, err)
				}
				if found && landed(cur.Metadata(), rec) {
					// Not fanned out: an abort comes when another job took
					// the table, and fanned-out tasks would be dropped;
					// without the lease the job ends with its deletions
					// left for the next expiry (leftovers.go).
					return c.deleteAndFinish(ctx, log, job, term, owner, cur, rec, "the expiry was committed before the abort request", false)
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

// ValidateSince examines every snapshot committed on top of the pinned one
// and returns ErrAborted when committing the rewrite could lose a delete or
// a removal, or resurrect or hide a row:
//   - a position delete or deletion vector that may target a rewritten file
//     (its rows would come back in the new files);
//   - the removal of an input file (its rows would come back, or twice);
//   - a partition-scoped equality delete in a partition that rows move out
//     of or into (the job moved them to another spec): the Iceberg spec
//     applies such a delete only to data files of its own spec and
//     partition, so it would stop applying to rows it applied to, or start
//     applying to rows it did not;
//   - the removal of any delete file the rewriters applied (Scope.Applied,
//     Scope.Removing), whether the job removes it as dead or it also
//     applies to files the job leaves alone: whoever removed it meant its
//     rows to be seen again (or replaced it with other deletes, which the
//     rules above examine); the new files, which have it applied, would
//     hide them. A position delete or deletion vector goes to the rebase
//     instead (Concurrent.Removed), which lets it go only when every row it
//     deleted of a rewritten file is deleted again since S. Removing a dead
//     one twice would also fail ("cannot remove delete files that do not
//     belong to the table"), on every retry.
//
// Appends pass, and so do global equality deletes and equality deletes of
// partitions no row moves across: the pinned data sequence number keeps
// them applying to the new files exactly as to the inputs.
func ValidateSince(ctx context.Context, cur *table.Table, pin messages.Pin, scope Scope) (Concurrent, error) {
	var conc Concurrent
	err := validateSince(ctx, cur, pin, scope, &conc, nil)
	return conc, err
}

// Concurrent is what a snapshot committed since S did that the job rebases
// rather than aborts for (Scope.Rebase; see rebase.go).
type Concurrent struct {
	// Added are position delete files and deletion vectors added since S
	// that may target a rewritten file.
	Added []iceberg.DataFile
	// Removed are position delete files and deletion vectors the
	// rewriters applied (the job removes them as dead, or they also apply
	// to files it leaves alone) that a snapshot since S removed (a writer
	// merged a deletion vector, rewrote its position deletes, or undid
	// them).
	Removed []iceberg.DataFile
}

// Empty reports whether there is nothing to rebase.
func (c Concurrent) Empty() bool { return len(c.Added) == 0 && len(c.Removed) == 0 }

// validateSince is ValidateSince; seen, when not nil, keeps each
// snapshot's outcome across a commit's rounds (a snapshot never changes, nor
// does the job's scope), so a round examines only the snapshots new to it.
func validateSince(ctx context.Context, cur *table.Table, pin messages.Pin, scope Scope, conc *Concurrent, seen map[int64]Concurrent) error {
	head := cur.CurrentSnapshot()
	var since []*table.Snapshot
	for s := head; ; {
		if s == nil {
			return fmt.Errorf("%w: %w: pinned snapshot %d is no longer an ancestor of the table's current snapshot", ErrAborted, ErrConcurrent, pin.SnapshotID)
		}
		if s.SnapshotID == pin.SnapshotID {
			break
		}
		since = append(since, s)
		if s.ParentSnapshotID == nil {
			s = nil
			continue
		}
		s = cur.SnapshotByID(*s.ParentSnapshotID)
	}
	if len(since) == 0 {
		return nil
	}
	fs, err := cur.FS(ctx)
	if err != nil {
		return fmt.Errorf("open table IO: %w", err)
	}
	for _, s := range since {
		got, ok := seen[s.SnapshotID]
		if !ok {
			var err error
			if got, err = validateSnapshot(ctx, fs, s, scope); err != nil {
				return err
			}
			if seen != nil {
				seen[s.SnapshotID] = got
			}
		}
		conc.Added = append(conc.Added, got.Added...)
		conc.Removed = append(conc.Removed, got.Removed...)
	}
	return nil
}

// validateSnapshot examines the entries snapshot s wrote (see
// ValidateSince).
func validateSnapshot(ctx context.Context, fs icebergio.IO, s *table.Snapshot, scope Scope) (Concurrent, error) {
	var out Concurrent
	manifests, err := s.Manifests(fs)
	if err != nil {
		return out, fmt.Errorf("read manifests of snapshot %d: %w", s.SnapshotID, err)
	}
	for _, m := range manifests {
		if m.SnapshotID() != s.SnapshotID {
			continue // written by an earlier snapshot
		}
		for e, err := range m.Entries(fs, false) {
			if err != nil {
				return out, fmt.Errorf("read manifest %s: %w", m.FilePath(), err)
			}
			if e.SnapshotID() != s.SnapshotID {
				continue
			}
			df := e.DataFile()
			switch {
			case e.Status() == iceberg.EntryStatusDELETED && df.ContentType() == iceberg.EntryContentData:
				if _, ok := scope.Rewritten[df.FilePath()]; ok {
					return out, fmt.Errorf("%w: %w: snapshot %d removed input file %s", ErrAborted, ErrConcurrent, s.SnapshotID, df.FilePath())
				}
			case e.Status() == iceberg.EntryStatusADDED && df.ContentType() == iceberg.EntryContentData:
				if eq, ok := equalityBelow(scope.EqualityRemoved, partitionKey(df), e.SequenceNum()); ok {
					return out, fmt.Errorf("%w: %w: snapshot %d added data file %s with data sequence number %d, below that of an equality delete the job converts and removes (%d): the delete applies to it, its conversion does not", ErrAborted, ErrConcurrent, s.SnapshotID, df.FilePath(), e.SequenceNum(), eq)
				}
			case e.Status() == iceberg.EntryStatusDELETED:
				_, removing := scope.Removing[fileKey(df)]
				_, applied := scope.Applied[fileKey(df)]
				switch {
				case (removing || applied) && scope.Rebase && df.ContentType() == iceberg.EntryContentPosDeletes:
					// The rebase checks that every row it deleted of a
					// rewritten file is deleted again, or aborts.
					out.Removed = append(out.Removed, df)
				case removing:
					return out, fmt.Errorf("%w: %w: snapshot %d removed delete file %s, which applies to this job's inputs and which the job removes too", ErrAborted, ErrConcurrent, s.SnapshotID, df.FilePath())
				case applied:
					return out, fmt.Errorf("%w: %w: snapshot %d removed delete file %s, which the rewriters applied to this job's inputs: the rows it deleted are live again, and the new files would keep them deleted", ErrAborted, ErrConcurrent, s.SnapshotID, df.FilePath())
				}
			case e.Status() == iceberg.EntryStatusADDED && df.ContentType() == iceberg.EntryContentEqDeletes:
				if _, ok := scope.MovedPartitions[partitionKey(df)]; ok && len(df.Partition()) > 0 {
					return out, fmt.Errorf("%w: %w: snapshot %d added equality delete %s scoped to partition %s, which rows of this job move across (partition spec change)", ErrAborted, ErrConcurrent, s.SnapshotID, df.FilePath(), partitionKey(df))
				}
			case e.Status() == iceberg.EntryStatusADDED && df.ContentType() == iceberg.EntryContentPosDeletes:
				target, ok := mayTarget(df, deletefiles.PathFieldID, scope)
				switch {
				case !ok:
				case scope.Rebase:
					out.Added = append(out.Added, df)
				case target != "":
					return out, fmt.Errorf("%w: %w: snapshot %d added a position delete or deletion vector (%s) that may delete rows of rewritten file %s", ErrAborted, ErrConcurrent, s.SnapshotID, df.FilePath(), target)
				default:
					return out, fmt.Errorf("%w: %w: snapshot %d added partition-scoped position delete %s in a rewritten partition", ErrAborted, ErrConcurrent, s.SnapshotID, df.FilePath())
				}
			}
		}
	}
	return out, nil
}

// CheckStillValid decides whether the files the job wrote are still valid
// data files of the table as it is now (cur), with a reason when not
// (ErrAborted). They were written with the pinned metadata's current schema
// and the groups' output specs. Iceberg reads data files by field id, so
// files written at an older schema stay valid under every change Iceberg
// allows: a column added since reads as null or its initial default, a
// dropped one is ignored, a renamed or moved one is found by its id, a
// promoted one is widened on read. What cannot be right is a field id whose
// type changed other than by a promotion, a required column the files lack
// and that has no initial default, or a spec that is no longer in the
// table's metadata.
func CheckStillValid(cur, pinned *table.Table, newFiles []iceberg.DataFile) error {
	if written, now := pinned.Schema(), cur.Schema(); written.ID != now.ID {
		if err := checkSchemaStillValid(written, now); err != nil {
			return err
		}
	}
	specs := map[int]bool{}
	for _, f := range newFiles {
		specs[int(f.SpecID())] = true
	}
	for id := range specs {
		if cur.Metadata().PartitionSpecByID(id) == nil {
			return fmt.Errorf("%w: partition spec %d of the new files was removed from the table since planning", ErrAborted, id)
		}
	}
	return nil
}

// checkSchemaStillValid checks files written at schema written against
// schema now (see CheckStillValid).
func checkSchemaStillValid(written, now *iceberg.Schema) error {
	for _, f := range written.Fields() {
		if err := stillValidField(f, now); err != nil {
			return fmt.Errorf("%w: the schema changed since planning (schema %d, now %d) and the new files no longer fit it: %v", ErrAborted, written.ID, now.ID, err)
		}
	}
	for _, f := range now.Fields() {
		if _, ok := written.FindFieldByID(f.ID); !ok && f.Required && f.InitialDefault == nil {
			return fmt.Errorf("%w: the schema changed since planning (schema %d, now %d): required column %q (id %d) is missing from the new files and has no initial default", ErrAborted, written.ID, now.ID, f.Name, f.ID)
		}
	}
	return nil
}

// stillValidField checks one written field, and its nested fields, against
// the current schema.
func stillValidField(f iceberg.NestedField, now *iceberg.Schema) error {
	cur, ok := now.FindFieldByID(f.ID)
	if !ok {
		return nil // dropped since: ignored on read
	}
	wp, wPrim := f.Type.(iceberg.PrimitiveType)
	cp, cPrim := cur.Type.(iceberg.PrimitiveType)
	switch {
	case wPrim && cPrim:
		if !promotes(wp, cp) {
			return fmt.Errorf("column %q (id %d) is %s in the new files and %s now", cur.Name, f.ID, f.Type, cur.Type)
		}
		return nil
	case wPrim != cPrim:
		return fmt.Errorf("column %q (id %d) is %s in the new files and %s now", cur.Name, f.ID, f.Type, cur.Type)
	}
	if nested, ok := f.Type.(iceberg.NestedType); ok {
		for _, child := range nested.Fields() {
			if err := stillValidField(child, now); err != nil {
				return err
			}
		}
	}
	return nil
}

// promotes reports whether a column written as from reads as to: equal
// types or an Iceberg type promotion (spec, "Schema Evolution": int to
// long, float to double, decimal(P,S) to decimal(P',S) with P' >= P, and in
// v3 date to timestamp or timestamp_ns).
func promotes(from, to iceberg.PrimitiveType) bool {
	if from.Equals(to) {
		return true
	}
	switch f := from.(type) {
	case iceberg.Int32Type:
		_, ok := to.(iceberg.Int64Type)
		return ok
	case iceberg.Float32Type:
		_, ok := to.(iceberg.Float64Type)
		return ok
	case iceberg.DecimalType:
		t, ok := to.(iceberg.DecimalType)
		return ok && t.Scale() == f.Scale() && t.Precision() >= f.Precision()
	case iceberg.DateType:
		switch to.(type) {
		case iceberg.TimestampType, iceberg.TimestampNsType:
			return true
		}
	}
	return false
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

// underAny reports whether path lies under one of the roots.
func underAny(path string, roots []string) bool {
	for _, r := range roots {
		if strings.HasPrefix(path, strings.TrimSuffix(r, "/")+"/") {
			return true
		}
	}
	return false
}

// fileKey identifies a content file within the table: its path, and for a
// deletion vector its offset in the Puffin file (several DVs share one).
func fileKey(df iceberg.DataFile) string { return messages.DeleteFileKey(df) }

// liveFiles returns the live data files of snap whose paths are in paths,
// the partitions they are in, and their data sequence numbers by path.
func liveFiles(ctx context.Context, fs icebergio.IO, tbl *table.Table, snap *table.Snapshot, paths map[string]struct{}) ([]iceberg.DataFile, map[string]struct{}, map[string]int64, error) {
	manifests, err := snap.Manifests(fs)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("read manifests of snapshot %d: %w", snap.SnapshotID, err)
	}
	var out []iceberg.DataFile
	parts := map[string]struct{}{}
	seqs := map[string]int64{}
	for _, m := range manifests {
		if err := ctx.Err(); err != nil {
			return nil, nil, nil, err
		}
		if m.ManifestContent() != iceberg.ManifestContentData {
			continue
		}
		for e, err := range m.Entries(fs, true) {
			if err != nil {
				return nil, nil, nil, fmt.Errorf("read manifest %s: %w", m.FilePath(), err)
			}
			if _, ok := paths[e.DataFile().FilePath()]; ok {
				out = append(out, e.DataFile())
				parts[partitionKey(e.DataFile())] = struct{}{}
				seqs[e.DataFile().FilePath()] = e.SequenceNum()
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].FilePath() < out[j].FilePath() })
	return out, parts, seqs, nil
}

func referencedPath(df iceberg.DataFile, pathField int) string {
	if ref := df.ReferencedDataFile(); ref != nil && *ref != "" {
		return *ref
	}
	if lower, upper, ok := pathBounds(df, pathField); ok && lower == upper {
		return lower
	}
	return ""
}

func pathBounds(df iceberg.DataFile, pathField int) (string, string, bool) {
	lo, hi := df.LowerBoundValues()[pathField], df.UpperBoundValues()[pathField]
	if len(lo) == 0 || len(hi) == 0 {
		return "", "", false
	}
	return string(lo), string(hi), true
}

func partitionKey(df iceberg.DataFile) string { return messages.PartitionKey(df) }

// equalityBelow reports whether a data file of partition part with data
// sequence number seq is one that a removed equality delete (removed, see
// Scope.EqualityRemoved) applies to, and that delete's sequence number. An
// equality delete applies to data files whose data sequence number is
// strictly lower (spec, "Scan Planning"): an append after S has a higher
// one; only a rewrite that kept older sequence numbers has a lower one.
func equalityBelow(removed map[string]int64, part string, seq int64) (int64, bool) {
	for _, k := range []string{part, ""} {
		if eq, ok := removed[k]; ok && seq < eq {
			return eq, true
		}
	}
	return 0, false
}

func equalStrings(a, b []string) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
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
