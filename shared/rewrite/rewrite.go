// Package rewrite is the rewriter: it rewrites one file group of one job.
//
// A rewriter opens the table pinned at the job's snapshot S from its metadata
// file (never through the catalog), reads the group's files with position
// deletes, deletion vectors and equality deletes applied exactly as a scan at
// S would (iceberg-go's ReadTasks), and streams the rows into Parquet files
// at the target size directly under the table's data location. It then puts
// a descriptor of what it wrote in S3 and claims the group.
//
// The frame every task shares is this file: the task's kind
// (messages.TaskKind) picks the action, an attempt is registered, the
// action writes, the descriptor is put and the group claimed, and the last
// group hands the job to the committer. Each action has its file:
// compaction.go (a group's data files rewritten, bin-packed, sorted or
// z-ordered, and a two-stage sort's map side), exchange.go (a two-stage
// sort's reduce side, and asking for the reduces once the maps are done),
// deletes.go (a group's delete files carried over to new ones); write.go
// writes the Parquet files for all of them.
//
// Invariants:
//   - Idempotent. Each attempt registers a fresh attempt id before writing
//     and names every file it writes with it. The first attempt to claim the
//     group wins; a losing attempt removes its own files and descriptor. So a
//     redelivered or retried task never double-counts, and only one
//     attempt's outputs can reach the commit.
//   - Nothing a rewriter writes is visible in the table: only the committer
//     commits.
//   - A task whose job is gone, no longer running, or planned under an older
//     lease token is dropped with a log line (ErrStale), not retried.
//   - A task that cannot succeed (ErrTerminal, or its last allowed delivery
//     failed) fails its group, asks the committer to abort the job, and is
//     reported failed so SQS moves it to the dead-letter queue.
//   - The last group to finish hands the job to the committer.
package rewrite

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"log/slog"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/deletefiles"
	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/lease"
	"github.com/icekeeper/icekeeper/shared/messages"
	"github.com/icekeeper/icekeeper/shared/metrics"
	"github.com/icekeeper/icekeeper/shared/outputs"
	"github.com/icekeeper/icekeeper/shared/pin"
	"github.com/icekeeper/icekeeper/shared/tracing"
)

// Sentinel errors.
var (
	// ErrStale: the task belongs to a job that is gone, finished, or was
	// planned under an older lease. Drop the message; do not retry.
	ErrStale = errors.New("rewrite: stale task")
	// ErrTerminal: the task can never succeed. Fail the job; the message
	// goes to the dead-letter queue.
	ErrTerminal = errors.New("rewrite: task cannot succeed")
)

// Jobs reads and settles job and group records.
type Jobs interface {
	Get(ctx context.Context, id string) (jobs.Job, error)
	Group(ctx context.Context, id string, index int) (jobs.Group, error)
	RegisterAttempt(ctx context.Context, jobID string, token int64, group int, attempt string) error
	Claim(ctx context.Context, jobID string, token int64, group int, attempt, descriptorKey string, rowsWritten int64) error
	FailGroup(ctx context.Context, jobID string, group int, reason string) error
}

// Leases renews a job's lease on its table: the work in progress keeps it
// (lease.ErrLost when another job took the table over or it was released).
type Leases interface {
	Renew(ctx context.Context, l lease.Lease, ttl time.Duration) (lease.Lease, error)
}

// Blobs stores descriptors and reads oversized task payloads.
type Blobs interface {
	Put(ctx context.Context, name string, data []byte) (string, error)
	Get(ctx context.Context, key string) ([]byte, error)
	Delete(ctx context.Context, key string) error
}

// Queue sends commit requests.
type Queue interface {
	Send(ctx context.Context, body string) error
}

// Metrics receives the rewriter's metrics (EMF lines).
type Metrics interface {
	Emit(dimensions map[string]string, ms ...metrics.Metric) error
}

// TableOpener opens a table at a pinned snapshot.
type TableOpener interface {
	Open(ctx context.Context, ident table.Identifier, p messages.Pin) (*table.Table, error)
}

// Streaming bounds of one rewrite (see rewrite).
const (
	ArrowBatchRows     = 64 << 10
	WriteBufferBatches = 2
)

// Settings tune rewriting.
type Settings struct {
	// MaxAttempts is the delivery count at which a failing task fails its
	// group (the task queue's maxReceiveCount).
	MaxAttempts int
	// ScanConcurrency is the read concurrency (0: GOMAXPROCS).
	ScanConcurrency int
	// RepartitionWindowBytes bounds the rows held by one write run of a
	// group whose rows move to another partition spec (0: the default,
	// DefaultRepartitionWindowBytes).
	RepartitionWindowBytes int64
	// LeaseTTL is how long each task's renewal extends the job's lease
	// (ICEKEEPER_LEASE_TTL; 0: 30 minutes).
	LeaseTTL time.Duration
	// SortWindowBytes bounds the rows a sort compaction's group holds in
	// memory at once; a larger group is sorted in runs spilled to
	// SpillDir and merged (0: sortrows.DefaultWindowBytes).
	SortWindowBytes int64
	// SpillDir is where sorted runs go ("": the system's temporary
	// directory, /tmp on Lambda).
	SpillDir string
	// ExchangePageBytes is the Arrow size of a two-stage sort's scratch
	// pages (0: exchange.DefaultPageBytes).
	ExchangePageBytes int64
	// InlineRowMapBytes is the largest row map written into the
	// descriptor itself; a larger one is an object of its own (0:
	// messages.DefaultInlineRowMapBytes).
	InlineRowMapBytes int
}

// RetryDelay is how long a task that failed on its n-th delivery waits
// before SQS delivers it again: at once for a terminal failure (it only
// has to reach the dead-letter queue), else 20 s doubling, at most 5
// minutes, well inside the lease that the task's renewal extended. Without
// it a failed task would wait for the queue's visibility timeout (six
// rewriter timeouts).
func RetryDelay(n int, err error) time.Duration {
	if errors.Is(err, ErrTerminal) {
		return 0
	}
	return min(20*time.Second<<min(max(n-1, 0), 8), 5*time.Minute)
}

// Outcome says what handling a task did.
type Outcome string

// Outcomes.
const (
	OutcomeRewritten Outcome = "rewritten"
	// OutcomeDuplicate: another attempt already settled the group.
	OutcomeDuplicate Outcome = "duplicate"
	OutcomeDropped   Outcome = "dropped_stale"
)

// Result reports one task.
type Result struct {
	Outcome  Outcome
	Attempt  string
	Counters messages.Counters
	// HandedOff is true when this task sent the job to the committer.
	HandedOff bool
}

// Rewriter rewrites file groups.
type Rewriter struct {
	settings Settings
	jobs     Jobs
	leases   Leases
	blobs    Blobs
	commits  Queue
	tables   TableOpener
	log      *slog.Logger
	now      func() time.Time
	metrics  Metrics
	tracer   tracing.Tracer
	// newAttempt makes attempt ids (replaceable in tests).
	newAttempt func() string
}

// New validates its dependencies and returns a Rewriter.
func New(s Settings, js Jobs, leases Leases, blobs Blobs, commits Queue, tables TableOpener, log *slog.Logger, now func() time.Time, opts Options) (*Rewriter, error) {
	if js == nil || leases == nil || blobs == nil || commits == nil || tables == nil {
		return nil, errors.New("rewrite: jobs, leases, blobs, commit queue and table opener are required")
	}
	if s.MaxAttempts < 1 {
		return nil, errors.New("rewrite: MaxAttempts must be at least 1 (ICEKEEPER_MAX_TASK_ATTEMPTS)")
	}
	if s.LeaseTTL <= 0 {
		s.LeaseTTL = 30 * time.Minute
	}
	if log == nil {
		log = slog.Default()
	}
	if now == nil {
		now = time.Now
	}
	return &Rewriter{settings: s, jobs: js, leases: leases, blobs: blobs, commits: commits, tables: tables, log: log, now: now,
		metrics: opts.Metrics, tracer: opts.Tracer, newAttempt: outputs.NewAttemptID}, nil
}

// Options are a rewriter's optional collaborators; the zero value emits
// no metrics and traces nothing.
type Options struct {
	// Metrics receives the rewriter's metrics (EMF lines).
	Metrics Metrics
	// Tracer traces the rewrite's phases (the zero Tracer is off).
	Tracer tracing.Tracer
}

func (r *Rewriter) emit(task messages.Task, outcome Outcome, c messages.Counters, err error) {
	if r.metrics == nil {
		return
	}
	dims := map[string]string{"Table": task.Table, "Function": "rewriter"}
	var ms []metrics.Metric
	switch {
	case err != nil:
		ms = append(ms, metrics.Metric{Name: "TaskFailures", Value: 1, Unit: metrics.Count})
		if errors.Is(err, ErrTerminal) {
			ms = append(ms, metrics.Metric{Name: "GroupsFailed", Value: 1, Unit: metrics.Count})
		}
	case outcome == OutcomeRewritten:
		ms = append(ms,
			metrics.Metric{Name: "GroupsRewritten", Value: 1, Unit: metrics.Count},
			metrics.Metric{Name: "BytesIn", Value: float64(c.BytesIn), Unit: metrics.Bytes},
			metrics.Metric{Name: "BytesOut", Value: float64(c.BytesOut), Unit: metrics.Bytes},
			metrics.Metric{Name: "FilesIn", Value: float64(c.FilesIn), Unit: metrics.Count},
			metrics.Metric{Name: "FilesOut", Value: float64(c.FilesOut), Unit: metrics.Count},
			metrics.Metric{Name: "DeleteFilesApplied", Value: float64(c.DeleteFilesApplied), Unit: metrics.Count},
			metrics.Metric{Name: "RewriteDuration", Value: float64(c.DurationMillis), Unit: metrics.Milliseconds})
		if task.Deletes == nil {
			// A delete-file rewrite rewrites deletes, not rows.
			ms = append(ms, metrics.Metric{Name: "RowsRewritten", Value: float64(c.RowsWritten), Unit: metrics.Count})
		}
	case outcome == OutcomeDuplicate:
		ms = append(ms, metrics.Metric{Name: "TasksDuplicate", Value: 1, Unit: metrics.Count})
	case outcome == OutcomeDropped:
		ms = append(ms, metrics.Metric{Name: "TasksDropped", Value: 1, Unit: metrics.Count})
	}
	if len(ms) > 0 {
		if eerr := r.metrics.Emit(dims, ms...); eerr != nil {
			r.log.Warn("emit metrics", "err", eerr.Error())
		}
	}
}

// Handle processes one task delivered for the receiveCount-th time. A nil
// error means the message can be deleted (including dropped stale tasks); an
// error means it must be redelivered, and errors.Is(err, ErrTerminal) means
// it will never succeed.
func (r *Rewriter) Handle(ctx context.Context, task messages.Task, receiveCount int) (Result, error) {
	log := r.log.With("job_id", task.JobID, "table", task.Table, "group", task.Group, "snapshot_id", task.Pin.SnapshotID, "receive_count", receiveCount, "trace_id", r.tracer.TraceID(ctx))
	res, err := r.handle(ctx, log, task, receiveCount)
	switch {
	case errors.Is(err, ErrStale):
		log.Info("dropped stale task", "reason", err.Error())
		r.emit(task, OutcomeDropped, messages.Counters{}, nil)
		return Result{Outcome: OutcomeDropped}, nil
	case err != nil:
		log.Error("rewrite failed", "err", err.Error(), "terminal", errors.Is(err, ErrTerminal))
	default:
		log.Info("task done", "outcome", res.Outcome, "attempt", res.Attempt, "rows_written", res.Counters.RowsWritten, "files_out", res.Counters.FilesOut, "handed_off", res.HandedOff)
	}
	r.emit(task, res.Outcome, res.Counters, err)
	return res, err
}

func (r *Rewriter) handle(ctx context.Context, log *slog.Logger, task messages.Task, receiveCount int) (Result, error) {
	job, err := r.jobs.Get(ctx, task.JobID)
	if errors.Is(err, jobs.ErrNotFound) {
		return Result{}, fmt.Errorf("%w: job %s not found", ErrStale, task.JobID)
	}
	if err != nil {
		return Result{}, err
	}
	if job.Token != task.Token {
		return Result{}, fmt.Errorf("%w: task token %d, job token %d", ErrStale, task.Token, job.Token)
	}
	g, err := r.jobs.Group(ctx, task.JobID, task.Group)
	if err != nil {
		if errors.Is(err, jobs.ErrNotFound) {
			return Result{}, fmt.Errorf("%w: group %d not in job", ErrTerminal, task.Group)
		}
		return Result{}, err
	}
	switch {
	case g.State == jobs.GroupFailed && job.Batched() && job.BatchEnded(job.BatchOf(task.Group)):
		// Its batch failed (perhaps for another group): nothing to do.
		return Result{}, fmt.Errorf("%w: batch %d of the job ended: %s", ErrStale, job.BatchOf(task.Group), g.Reason)
	case g.State == jobs.GroupFailed:
		if job.Batched() {
			// Its batch may not have been handed to the committer yet.
			if _, err := r.handOffFailed(ctx, task.JobID, task.Group); err != nil {
				log.Warn("hand the failed batch to the committer", "err", err.Error())
			}
		}
		// Keep failing so the message reaches the dead-letter queue.
		return Result{}, fmt.Errorf("%w: group failed earlier: %s", ErrTerminal, g.Reason)
	case g.State == jobs.GroupDone:
		handed, err := r.handOff(ctx, task.JobID, task.Group, task.Exchange)
		return Result{Outcome: OutcomeDuplicate, Attempt: g.Winner, HandedOff: handed}, err
	}
	if !job.Claimable() {
		return Result{}, fmt.Errorf("%w: job is %s", ErrStale, job.State)
	}
	// The work in progress keeps the job's term: each task renews it, so a
	// job whose rewriting outlasts one TTL is not taken over while its
	// tasks (and their retries) still run.
	if _, err := r.leases.Renew(ctx, lease.Lease{Table: task.Table, Owner: task.JobID, Token: task.Token}, r.settings.LeaseTTL); err != nil {
		if !errors.Is(err, lease.ErrLost) {
			return Result{}, err
		}
		r.requestAbort(ctx, log, task.JobID, "lease lost before group "+fmt.Sprint(task.Group)+" was rewritten", "")
		return Result{}, fmt.Errorf("%w: job no longer holds the table lease", ErrStale)
	}

	attempt := r.newAttempt()
	log = log.With("attempt", attempt)
	if err := r.jobs.RegisterAttempt(ctx, task.JobID, task.Token, task.Group, attempt); err != nil {
		switch {
		case errors.Is(err, jobs.ErrNotRunning):
			return Result{}, fmt.Errorf("%w: %v", ErrStale, err)
		case errors.Is(err, jobs.ErrGroupSettled):
			handed, herr := r.handOff(ctx, task.JobID, task.Group, task.Exchange)
			return Result{Outcome: OutcomeDuplicate, HandedOff: handed}, herr
		}
		return Result{}, err
	}

	var (
		written  []iceberg.DataFile
		counters measured
		tbl      *table.Table
	)
	err = r.tracer.Phase(ctx, tracing.PhaseWrite, func(ctx context.Context) error {
		var werr error
		switch kind := task.Kind(); kind {
		case messages.TaskRewriteDeletes:
			written, counters, tbl, werr = r.rewriteDeletes(ctx, task, attempt)
		case messages.TaskExchangeReduce:
			written, counters, tbl, werr = r.reduce(ctx, task, attempt)
		case messages.TaskCompact, messages.TaskExchangeMap:
			written, counters, tbl, werr = r.rewrite(ctx, task, attempt)
		default:
			werr = fmt.Errorf("%w: a %s task is not a rewrite", ErrTerminal, kind)
		}
		return werr
	})
	if err != nil {
		if tbl != nil {
			if rerr := outputs.Remove(context.WithoutCancel(ctx), tbl, paths(written)); rerr != nil {
				log.Warn("remove partial outputs", "err", rerr.Error())
			}
		}
		if errors.Is(err, ErrTerminal) || receiveCount >= r.settings.MaxAttempts {
			reason := fmt.Sprintf("group %d failed on delivery %d: %v", task.Group, receiveCount, err)
			if ferr := r.jobs.FailGroup(context.WithoutCancel(ctx), task.JobID, task.Group, reason); ferr != nil && !errors.Is(ferr, jobs.ErrGroupSettled) {
				log.Warn("mark group failed", "err", ferr.Error())
			}
			if job.Batched() {
				// A failed group fails its batch only: the committer ends it.
				if _, herr := r.handOffFailed(context.WithoutCancel(ctx), task.JobID, task.Group); herr != nil {
					log.Warn("hand the failed batch to the committer", "err", herr.Error())
				}
			} else {
				r.requestAbort(ctx, log, task.JobID, reason, messages.FailRewrite)
			}
			if !errors.Is(err, ErrTerminal) {
				err = fmt.Errorf("%w: %w", ErrTerminal, err)
			}
		}
		return Result{Attempt: attempt}, err
	}

	desc := messages.Descriptor{
		Version: messages.FormatVersion, JobID: task.JobID, Group: task.Group, Attempt: attempt, SpecID: task.SpecID,
		SchemaID: counters.SchemaID, Counters: counters.Counters,
	}
	if len(written) > 0 {
		// New files are written with the group's output spec, which can
		// differ from its input spec when the partitioning evolved.
		desc.SpecID = int(written[0].SpecID())
	}
	desc.InputPaths = counters.inputPaths
	desc.Exchange = counters.exchange
	if task.Deletes != nil {
		desc.InputDeletes = messages.SortedCopy(task.Deletes.InputDeletes)
	}
	// undo removes what this attempt wrote: its files, its row map.
	undo := func() {
		_ = outputs.Remove(context.WithoutCancel(ctx), tbl, paths(written))
		if desc.RowMapKey != "" {
			_ = r.blobs.Delete(context.WithoutCancel(ctx), desc.RowMapKey)
		}
	}
	if desc.NewFiles, err = messages.EncodeDataFiles(tbl.Metadata(), written); err != nil {
		undo()
		return Result{Attempt: attempt}, fmt.Errorf("%w: %w", ErrTerminal, err)
	}
	if counters.rowMap != nil {
		body, err := messages.Encode(counters.rowMap)
		switch {
		case err != nil:
		case len(body) <= r.inlineRowMapBytes():
			// In the descriptor: one S3 PUT a group fewer.
			desc.RowMap = body
		default:
			desc.RowMapKey, err = r.blobs.Put(ctx, fmt.Sprintf("jobs/%s/rowmaps/%05d-%s.json", task.JobID, task.Group, attempt), body)
		}
		if err != nil {
			undo()
			return Result{Attempt: attempt}, fmt.Errorf("put row map: %w", err)
		}
	}
	body, err := messages.Encode(desc)
	if err != nil {
		undo()
		return Result{Attempt: attempt}, err
	}
	descKey, err := r.blobs.Put(ctx, fmt.Sprintf("jobs/%s/descriptors/%05d-%s.json", task.JobID, task.Group, attempt), body)
	if err != nil {
		undo()
		return Result{Attempt: attempt}, err
	}

	res := Result{Outcome: OutcomeRewritten, Attempt: attempt, Counters: counters.Counters}
	if err := r.jobs.Claim(ctx, task.JobID, task.Token, task.Group, attempt, descKey, counters.RowsWritten); err != nil {
		lost := errors.Is(err, jobs.ErrGroupSettled) || errors.Is(err, jobs.ErrNotRunning)
		if !lost {
			// Unknown outcome: keep the files; the retry or the committer's
			// cleanup of non-winning attempts settles them.
			return res, err
		}
		// Lost the claim: this attempt's outputs must never reach a commit.
		if rerr := outputs.Remove(context.WithoutCancel(ctx), tbl, paths(written)); rerr != nil {
			log.Warn("remove losing attempt's outputs", "err", rerr.Error())
		}
		if desc.RowMapKey != "" {
			if derr := r.blobs.Delete(context.WithoutCancel(ctx), desc.RowMapKey); derr != nil {
				log.Warn("remove losing attempt's row map", "err", derr.Error())
			}
		}
		if derr := r.blobs.Delete(context.WithoutCancel(ctx), descKey); derr != nil {
			log.Warn("remove losing attempt's descriptor", "err", derr.Error())
		}
		if errors.Is(err, jobs.ErrNotRunning) {
			return Result{}, fmt.Errorf("%w: %v", ErrStale, err)
		}
		res.Outcome = OutcomeDuplicate
	}
	handed, err := r.handOff(ctx, task.JobID, task.Group, task.Exchange)
	res.HandedOff = handed
	return res, err
}

// handOff sends the job to the committer when every group is done, or for
// a batched job (partial progress) group's batch when every group of it is
// done. Several rewriters may send it; the committer is idempotent, and
// one committing another batch commits this one next.
//
// A two-stage sort's map group (x) hands its exchange over instead, when
// every map of it is done: the committer then starts the reduces.
func (r *Rewriter) handOff(ctx context.Context, jobID string, group int, x *messages.Exchange) (bool, error) {
	if x != nil && x.Role == messages.ExchangeMap {
		return r.sendExchangeReady(ctx, jobID, x)
	}
	return r.sendCommit(ctx, jobID, group, false)
}

// handOffFailed sends a batched job's batch to the committer because group
// failed: the batch fails without waiting for its other groups. (A batch
// whose groups succeed is sent by the claim that completes it: this is the
// only way a failure settles one, so a claim never reads the batch's other
// groups to look for one.)
func (r *Rewriter) handOffFailed(ctx context.Context, jobID string, group int) (bool, error) {
	return r.sendCommit(ctx, jobID, group, true)
}

func (r *Rewriter) sendCommit(ctx context.Context, jobID string, group int, failed bool) (bool, error) {
	job, err := r.jobs.Get(ctx, jobID)
	if err != nil {
		return false, err
	}
	req := messages.CommitJob(jobID)
	switch {
	case job.Batched():
		req.Batch = job.BatchOf(group)
		if job.State.Terminal() || job.BatchEnded(req.Batch) || (!failed && !job.BatchDone(req.Batch)) {
			return false, nil
		}
	case failed:
		return false, nil // an unbatched job's failed group asks for an abort instead
	case job.State != jobs.Planned && job.State != jobs.Running:
		return false, nil
	case len(job.DoneGroups) < job.Groups:
		return false, nil
	}
	body, err := messages.Encode(req)
	if err != nil {
		return false, err
	}
	if err := r.commits.Send(ctx, string(body)); err != nil {
		return false, err
	}
	return true, nil
}

func (r *Rewriter) requestAbort(ctx context.Context, log *slog.Logger, jobID, reason, class string) {
	body, err := messages.Encode(messages.AbortJob(jobID, reason, class))
	if err == nil {
		err = r.commits.Send(context.WithoutCancel(ctx), string(body))
	}
	if err != nil {
		log.Warn("request abort", "err", err.Error())
	}
}

// openTasks opens the pinned table and decodes the task's scan tasks, if
// any.
func (r *Rewriter) openTasks(ctx context.Context, ident table.Identifier, task messages.Task) (*table.Table, []table.FileScanTask, error) {
	tbl, err := r.tables.Open(ctx, ident, task.Pin)
	if err != nil {
		if errors.Is(err, pin.ErrMismatch) {
			err = fmt.Errorf("%w: %w", ErrTerminal, err)
		}
		return nil, nil, err
	}
	encoded := task.ScanTasks
	if task.ScanTasksKey != "" {
		data, err := r.blobs.Get(ctx, task.ScanTasksKey)
		if err != nil {
			return tbl, nil, fmt.Errorf("read scan tasks: %w", err)
		}
		var list messages.ScanTaskList
		if err := messages.Decode(data, &list); err != nil {
			return tbl, nil, fmt.Errorf("%w: %w", ErrTerminal, err)
		}
		encoded = list.ScanTasks
	}
	tasks, err := messages.DecodeScanTasks(tbl.Metadata(), task.SpecID, encoded)
	if err != nil {
		return tbl, nil, fmt.Errorf("%w: %w", ErrTerminal, err)
	}
	return tbl, tasks, nil
}

// classify marks read and write errors that no retry can fix as
// ErrTerminal: an input or delete file that no longer exists (expired or
// removed by another tool), and data, schema or metadata that iceberg-go
// rejects. I/O failures, throttling and timeouts stay retryable.
func classify(err error) error {
	switch {
	case err == nil, errors.Is(err, ErrTerminal), errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return err
	case errors.Is(err, iofs.ErrNotExist),
		errors.Is(err, deletefiles.ErrMismatch),
		errors.Is(err, iceberg.ErrInvalidSchema),
		errors.Is(err, iceberg.ErrInvalidArgument),
		errors.Is(err, iceberg.ErrInvalidPartitionSpec),
		errors.Is(err, iceberg.ErrNotImplemented),
		errors.Is(err, iceberg.ErrType),
		errors.Is(err, table.ErrInvalidOperation),
		errors.Is(err, table.ErrInvalidMetadata):
		return fmt.Errorf("%w: %w", ErrTerminal, err)
	}
	return err
}

func paths(files []iceberg.DataFile) []string {
	out := make([]string, 0, len(files))
	for _, f := range files {
		out = append(out, f.FilePath())
	}
	return out
}

// inlineRowMapBytes is the largest row map written into the descriptor.
func (r *Rewriter) inlineRowMapBytes() int {
	if r.settings.InlineRowMapBytes > 0 {
		return r.settings.InlineRowMapBytes
	}
	return messages.DefaultInlineRowMapBytes
}
