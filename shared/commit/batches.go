package commit

// Partial progress: committing a batched job one batch at a time (package
// jobs, batches.go, has the batches and their states).
//
// A batch commits like a job: under the lease and the committing state,
// with its own descriptors' invariants (every planned input file of the
// batch accounted for once, rows written equal rows scanned), the same
// validation of every snapshot since S, the same rebase of concurrent
// deletes, and one RewriteFiles snapshot pinned to S's data sequence
// number, stamped with the job id and the batch (FindBatchSnapshot), so
// that a retried or taken-over committer finds it and never commits a
// batch twice.
//
// Earlier batches' snapshots are snapshots since S like any other: they
// removed other files (inputs are disjoint across groups), and the
// deletes they rebased onto their new files keep the rows of this batch's
// inputs, which this batch rebases in turn. A delete file an earlier batch
// removed as dead is left out of this batch's removals.
//
// A failed group, an invariant or a conflict fails its batch only: the
// batch's pending groups are failed (their rewriters stop), every file its
// attempts and its rebase wrote is removed, and the job goes on. After the
// last batch the job is committed when any batch committed.

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/google/uuid"

	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/lease"
	"github.com/icekeeper/icekeeper/shared/messages"
)

// errGroupFailed: a group of the batch failed (the batch fails; the job
// goes on).
var errGroupFailed = errors.New("commit: a group of the batch failed")

// handleBatch commits one settled batch of a batched job (batch, or any
// settled one when batch is 0 or is not settled).
func (c *Committer) handleBatch(ctx context.Context, log *slog.Logger, job jobs.Job, ident table.Identifier, term lease.Lease, me string, batch, receiveCount int) (Result, error) {
	res := Result{JobID: job.ID, Table: job.Table, Batch: batch}
	tookOver := false
	switch job.State {
	case jobs.Planned, jobs.Running:
		groups, err := c.jobs.Groups(ctx, job.ID)
		if err != nil {
			return res, err
		}
		next := settledBatch(job, groups, batch)
		if next == 0 {
			res.Outcome = OutcomeWaiting
			if batch > 0 && job.BatchEnded(batch) {
				res.Outcome = OutcomeAlready
			}
			res.Reason = fmt.Sprintf("%d of %d groups done, %d of %d batches ended", len(job.DoneGroups), job.Groups, len(job.CommittedBatches)+len(job.FailedBatches), job.Batches())
			return res, nil
		}
		batch, res.Batch = next, next
		err = c.renewThenBegin(ctx, job, term, func() error { return c.jobs.BeginBatch(ctx, job.ID, batch, me) })
		if errors.Is(err, lease.ErrLost) {
			return c.abort(ctx, log, job, jobs.Failed, "lease lost before commit", "", "")
		}
		if err != nil {
			return res, err
		}
	case jobs.Committing:
		if err := c.takeOverSilent(ctx, job, me); err != nil {
			return res, err
		}
		log.Warn("took over a committing batch whose committer went silent", "previous_committer", job.CommitterID, "batch", job.CommittingBatch)
		if job.CommittingBatch == 0 {
			// Committing the job itself, not a batch: an abort was ending it.
			return c.abort(ctx, log, job, jobs.Failed, "a committer ending the job went silent", me, "")
		}
		batch, res.Batch, tookOver = job.CommittingBatch, job.CommittingBatch, true
	}
	job.State, job.CommittingBatch, job.CommitterID = jobs.Committing, batch, me
	log = log.With("batch", batch)

	res, err := c.commitBatch(ctx, log, job, ident, term, me, tookOver)
	switch {
	case err == nil:
	case errors.Is(err, ErrBusy):
		return res, err
	case errors.Is(err, errLeaseLost):
		out, aerr := c.abort(ctx, log, job, jobs.Failed, err.Error(), me, "")
		out.Batch = batch
		return out, aerr
	case errors.Is(err, ErrAborted) || errors.Is(err, ErrInvariant) || errors.Is(err, errGroupFailed) || receiveCount >= c.settings.MaxAttempts:
		state := jobs.Failed
		if errors.Is(err, ErrAborted) {
			state = jobs.Aborted
		}
		class := failClass(err)
		if errors.Is(err, errGroupFailed) {
			class = messages.FailRewrite
		}
		out, ferr := c.failBatch(ctx, log, job, term, me, state, err.Error(), class)
		out.Conflicts, out.Retries = res.Conflicts, res.Retries
		if ferr != nil {
			return out, ferr
		}
		res = out
	default:
		return res, err
	}
	if res.batchOnly {
		res.nextBatch = c.nextSettledBatch(ctx, log, job.ID)
	}
	return res, nil
}

// commitBatch checks that no group of the committing batch failed, then
// commits it (commit).
func (c *Committer) commitBatch(ctx context.Context, log *slog.Logger, job jobs.Job, ident table.Identifier, term lease.Lease, me string, tookOver bool) (Result, error) {
	groups, err := c.jobs.Groups(ctx, job.ID)
	if err != nil {
		return Result{JobID: job.ID, Table: job.Table, Batch: job.CommittingBatch}, err
	}
	for _, g := range groups {
		if job.BatchOf(g.Index) == job.CommittingBatch && g.State == jobs.GroupFailed {
			return Result{JobID: job.ID, Table: job.Table, Batch: job.CommittingBatch}, fmt.Errorf("%w: group %d: %s", errGroupFailed, g.Index, g.Reason)
		}
	}
	return c.commit(ctx, log, job, ident, term, me, tookOver)
}

// settledBatch is a batch of job that has not ended and whose groups are
// all settled, preferring want; 0 if none. A batch with a failed group is
// settled: it fails without waiting for the rest.
func settledBatch(job jobs.Job, groups []jobs.Group, want int) int {
	settled := func(b int) bool {
		if b < 1 || b > job.Batches() || job.BatchEnded(b) {
			return false
		}
		all := true
		for _, i := range job.BatchGroups(b) {
			if i >= len(groups) {
				return false
			}
			switch groups[i].State {
			case jobs.GroupFailed:
				return true
			case jobs.GroupPending:
				all = false
			}
		}
		return all
	}
	if settled(want) {
		return want
	}
	for b := 1; b <= job.Batches(); b++ {
		if settled(b) {
			return b
		}
	}
	return 0
}

// nextSettledBatch reads the job again and returns a settled batch to
// commit next, or 0.
func (c *Committer) nextSettledBatch(ctx context.Context, log *slog.Logger, jobID string) int {
	job, err := c.jobs.Get(ctx, jobID)
	if err != nil || job.State.Terminal() {
		return 0
	}
	groups, err := c.jobs.Groups(ctx, jobID)
	if err != nil {
		log.Warn("look for the next settled batch", "err", err.Error())
		return 0
	}
	return settledBatch(job, groups, 0)
}

// batchGroups returns the group records of the job's committing batch and
// the number of input files the plan gives them.
func batchGroups(job jobs.Job, groups []jobs.Group, plan messages.Plan) ([]jobs.Group, int64) {
	var out []jobs.Group
	var files int64
	for _, g := range groups {
		if job.BatchOf(g.Index) == job.CommittingBatch {
			out = append(out, g)
			files += int64(len(plan.Groups[g.Index].InputPaths))
		}
	}
	return out, files
}

// withoutEarlierBatchRemovals leaves out of st's dead deletes the delete
// files that an earlier batch of the job removed (a delete that applies
// to no live file is dead for every batch): removing one twice would
// fail, and ValidateSince would take the earlier batch's removal for a
// writer's. For the same reason they leave the scope's applied deletes
// (Scope.Applied).
func withoutEarlierBatchRemovals(ctx context.Context, cur *table.Table, job jobs.Job, st stagedRewrite) (stagedRewrite, error) {
	fs, err := cur.FS(ctx)
	if err != nil {
		return st, fmt.Errorf("open table IO: %w", err)
	}
	removed := map[string]struct{}{}
	for _, s := range cur.Metadata().Snapshots() {
		if s.Summary == nil || s.Summary.Properties[SummaryJobID] != job.ID || s.Summary.Properties[messages.SummaryBatch] == "" {
			continue
		}
		manifests, err := s.Manifests(fs)
		if err != nil {
			return st, fmt.Errorf("read manifests of batch snapshot %d: %w", s.SnapshotID, err)
		}
		for _, m := range manifests {
			if m.SnapshotID() != s.SnapshotID || m.ManifestContent() != iceberg.ManifestContentDeletes {
				continue
			}
			for e, err := range m.Entries(fs, false) {
				if err != nil {
					return st, fmt.Errorf("read manifest %s: %w", m.FilePath(), err)
				}
				if e.Status() == iceberg.EntryStatusDELETED && e.SnapshotID() == s.SnapshotID {
					removed[fileKey(e.DataFile())] = struct{}{}
				}
			}
		}
	}
	if len(removed) == 0 {
		return st, nil
	}
	for k := range removed {
		// The job's own removal, not another writer's undo.
		delete(st.scope.Applied, k)
	}
	kept := st.deadDeletes[:0:0]
	for _, d := range st.deadDeletes {
		if _, ok := removed[fileKey(d)]; ok {
			delete(st.scope.Removing, fileKey(d))
			continue
		}
		kept = append(kept, d)
	}
	st.deadDeletes = kept
	return st, nil
}

// failBatch ends the committing batch without a commit (state failed or
// aborted): its snapshot is looked for first (found means committed), its
// pending groups are failed so that their rewriters stop, and every file
// its attempts and its rebase wrote is removed.
func (c *Committer) failBatch(ctx context.Context, log *slog.Logger, job jobs.Job, term lease.Lease, me string, state jobs.State, reason, class string) (Result, error) {
	ctx = context.WithoutCancel(ctx)
	res := Result{JobID: job.ID, Table: job.Table, Batch: job.CommittingBatch, Outcome: OutcomeFailed, Reason: reason}
	ident, err := messages.TableIdent(job.Table)
	if err != nil {
		return res, err
	}
	cur, err := c.catalog.LoadTable(ctx, ident)
	if err != nil {
		// Cannot prove the batch did not land: keep everything.
		return res, fmt.Errorf("fail batch %d of %s: cannot check the table: %w", job.CommittingBatch, job.ID, err)
	}
	if snap := FindBatchSnapshot(cur, job.ID, job.CommittingBatch); snap != nil {
		return c.endBatch(ctx, log, job, term, me, snap.SnapshotID, jobs.Committed, "found the batch's snapshot while failing it", "")
	}
	groups, err := c.jobs.Groups(ctx, job.ID)
	if err != nil {
		return res, err
	}
	for _, g := range groups {
		if job.BatchOf(g.Index) == job.CommittingBatch && g.State == jobs.GroupPending {
			if err := c.jobs.FailGroup(ctx, job.ID, g.Index, fmt.Sprintf("batch %d failed: %s", job.CommittingBatch, reason)); err != nil && !errors.Is(err, jobs.ErrGroupSettled) {
				return res, err
			}
		}
	}
	return c.endBatch(ctx, log, job, term, me, 0, state, reason, class)
}

// endBatch records how the committing batch ended (committed at
// snapshotID, or state with reason) and moves the job on: back to running,
// or after its last batch to committed when any batch committed. It then
// removes the files the batch does not keep and, after the last batch,
// releases the lease.
func (c *Committer) endBatch(ctx context.Context, log *slog.Logger, job jobs.Job, term lease.Lease, me string, snapshotID int64, state jobs.State, reason, class string) (Result, error) {
	batch := job.CommittingBatch
	res := Result{JobID: job.ID, Table: job.Table, Batch: batch, Outcome: OutcomeCommitted, SnapshotID: snapshotID, Reason: reason}
	switch state {
	case jobs.Failed:
		res.Outcome = OutcomeFailed
	case jobs.Aborted:
		res.Outcome = OutcomeAborted
	}
	now, err := c.jobs.Get(ctx, job.ID)
	if err != nil {
		return res, err
	}
	committed, failed := len(now.CommittedBatches), len(now.FailedBatches)
	if snapshotID != 0 {
		committed++
	} else {
		failed++
	}
	end := jobs.BatchEnd{Batch: batch, SnapshotID: snapshotID, Reason: reason, Final: jobs.Running,
		FinalReason: fmt.Sprintf("batch %d of %d %s", batch, job.Batches(), state)}
	last := committed+failed >= job.Batches()
	if last {
		end.Final, end.FinalReason = state, batchSummary(now, batch, snapshotID, reason)
		if committed > 0 {
			end.Final = jobs.Committed
		}
	}
	if err := c.jobs.EndBatch(ctx, job.ID, me, end); err != nil {
		if errors.Is(err, jobs.ErrStateConflict) {
			return res, fmt.Errorf("%w: lost batch %d of job %s before recording it: %v", ErrBusy, batch, job.ID, err)
		}
		return res, err
	}
	if snapshotID != 0 {
		log.Info("batch committed", "committed_snapshot_id", snapshotID, "why", reason)
	} else {
		log.Warn("batch ended without commit", "state", state, "reason", reason, "class", class)
	}
	// What to remove is decided on the job as EndBatch left it: the batch's
	// winners are kept exactly when it committed. Unreadable, nothing is
	// removed (the next job's clean-up after this one removes it).
	if ended, err := c.jobs.Get(ctx, job.ID); err != nil {
		log.Warn("read the job after its batch: the batch's unused files are left to the next job's clean-up", "err", err.Error())
	} else if n, err := c.removeUnkept(ctx, ended, batch); err != nil {
		log.Warn("remove the batch's unused files", "err", err.Error())
	} else if snapshotID == 0 {
		res.FilesRemoved = n
	}
	res.batchOnly = !last
	res.ConflictAbort = class == lease.ClassConflict
	if !last {
		if _, err := c.leases.Renew(ctx, term, c.settings.LeaseTTL); err != nil {
			log.Warn("renew lease between batches", "err", err.Error())
		}
		return res, nil
	}
	if committed > 0 {
		if err := c.leases.RecordSuccess(ctx, job.Table); err != nil {
			log.Warn("clear failure record", "err", err.Error())
		}
	} else if class != "" {
		if _, err := c.leases.RecordFailure(ctx, job.Table, class); err != nil {
			log.Warn("record failure", "err", err.Error())
		}
	}
	if err := c.leases.Release(ctx, term); err != nil && !errors.Is(err, lease.ErrLost) {
		log.Warn("release lease", "err", err.Error())
	}
	log.Info("batched job ended", "state", end.Final, "reason", end.FinalReason)
	if committed > 0 {
		c.continueCompaction(ctx, log, job, &res)
	}
	return res, nil
}

// batchSummary is a batched job's final reason: how many batches
// committed, and why each failed one failed.
func batchSummary(job jobs.Job, lastBatch int, lastSnapshot int64, lastReason string) string {
	committed := len(job.CommittedBatches)
	failed := map[int]string{}
	for b, r := range job.FailedBatches {
		failed[b] = r
	}
	if lastSnapshot != 0 {
		committed++
	} else {
		failed[lastBatch] = lastReason
	}
	s := fmt.Sprintf("%d of %d batches committed", committed, job.Batches())
	var parts []string
	for _, b := range jobs.SortedBatches(failed) {
		parts = append(parts, fmt.Sprintf("batch %d: %s", b, failed[b]))
	}
	if len(parts) > 0 {
		s += "; failed " + strings.Join(parts, "; ")
	}
	return s
}

// holdBatchedForEnd prepares a batched job for its end: it ends through
// the committing state, which no batch commit then holds (owner, a new
// one when the job is not committing), so what it reads of the committed
// batches stays true until it ends the job; job is re-read for them.
func (c *Committer) holdBatchedForEnd(ctx context.Context, job jobs.Job, owner string) (jobs.Job, string, error) {
	if owner == "" {
		owner = uuid.NewString()
		if err := c.jobs.BeginCommit(ctx, job.ID, []jobs.State{jobs.Planned, jobs.Running}, owner); err != nil {
			if errors.Is(err, jobs.ErrStateConflict) {
				return job, owner, fmt.Errorf("%w: job %s changed state while ending it", ErrBusy, job.ID)
			}
			return job, owner, err
		}
		job.CommittingBatch = 0
	}
	now, err := c.jobs.Get(ctx, job.ID)
	if err != nil {
		return job, owner, err
	}
	now.CommittingBatch = job.CommittingBatch
	return now, owner, nil
}
