package commit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/expire"
	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/lease"
	"github.com/icekeeper/icekeeper/shared/messages"
)

// An expiry whose catalog commit landed must end, whatever happens to its
// deletions: while it is committing it pins its snapshot, and every later
// expiry of the table keeps everything from that snapshot on. When it can
// no longer delete (its lease was taken by another job, typically after
// its fanned-out deletions waited in the queue past the lease), it ends
// committed with its deletions record left in place (jobs.Job
// .DeletionsLeft); the planner keeps such a job among the lease's past
// jobs and names it in the table's next expiry plan (ExpiryPlan
// .Leftovers), whose committer, holding the lease, finishes the record
// with the same checks (the record verified, each part checked against
// the table as it is then) before its own selection.

// leaveDeletions ends a landed expiry that lost its lease before its
// deletions finished: committed, with DeletionsLeft.
func (c *Committer) leaveDeletions(ctx context.Context, log *slog.Logger, job jobs.Job, cur *table.Table, rec messages.Deletions, res Result, why string, cause error) (Result, error) {
	reason := fmt.Sprintf("%s: expired %d snapshots, deleted %d files (%d bytes); the rest of its deletions record is left for the table's next expiry (%v)", why, len(rec.Expired), res.FilesDeleted, res.BytesFreed, cause)
	if err := c.jobs.MarkCommittedLeavingDeletions(ctx, job.ID, currentID(cur), reason); err != nil && !errors.Is(err, jobs.ErrStateConflict) {
		return res, err
	}
	log.Warn("expiry committed; deletions left for the next expiry", "reason", reason)
	res.Outcome, res.Reason, res.SnapshotID = OutcomeCommitted, reason, currentID(cur)
	return res, nil
}

// finishLeftovers finishes the deletions of the earlier expiries ids names
// (ExpiryPlan.Leftovers), under this job's lease (term), against cur. A
// record that is not landed or cannot be verified is left, loud: nothing
// of it is deleted.
func (c *Committer) finishLeftovers(ctx context.Context, log *slog.Logger, term lease.Lease, cur *table.Table, ids []string) (Result, error) {
	var res Result
	if len(ids) == 0 {
		return res, nil
	}
	for _, id := range ids {
		past, err := c.jobs.Get(ctx, id)
		if errors.Is(err, jobs.ErrNotFound) {
			continue
		}
		if err != nil {
			return res, fmt.Errorf("read earlier job %s: %w", id, err)
		}
		if !past.DeletionsLeft || past.Kind != jobs.KindExpire {
			continue
		}
		plog := log.With("leftover_job", id)
		rec, found, err := c.readDeletions(ctx, past)
		if err != nil {
			return res, err
		}
		if found && !landed(cur.Metadata(), rec) {
			plog.Error("an earlier expiry marked committed is not in the table; its deletions are left undone")
			continue
		}
		if found {
			if rec, err = c.verifyExpiry(ctx, plog, past, cur, rec); err != nil {
				if errors.Is(err, expire.ErrUnverifiable) {
					plog.Error("an earlier expiry's commit cannot be verified; its deletions are left undone", "err", err.Error())
					continue
				}
				return res, err
			}
			done, err := c.deleteParts(ctx, plog, term, cur, rec, c.unreferencedNow(ctx, cur, rec))
			res.FilesDeleted += done.FilesDeleted
			res.BytesFreed += done.BytesFreed
			if errors.Is(err, expire.ErrUndone) {
				// Its files are needed again; if a later expiry removes
				// those snapshots again, this record is landed again.
				plog.Error("an earlier expiry was undone; the rest of its deletions are left undone", "err", err.Error())
				continue
			}
			if err != nil {
				return res, err
			}
		}
		if err := c.jobs.ClearDeletionsLeft(ctx, id); err != nil && !errors.Is(err, jobs.ErrStateConflict) {
			return res, err
		}
		plog.Info("finished an earlier expiry's deletions", "files", res.FilesDeleted)
	}
	return res, nil
}
