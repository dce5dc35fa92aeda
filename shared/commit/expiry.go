package commit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/blob"
	"github.com/icekeeper/icekeeper/shared/expire"
	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/lease"
	"github.com/icekeeper/icekeeper/shared/messages"
	"github.com/icekeeper/icekeeper/shared/orphans"
	"github.com/icekeeper/icekeeper/shared/outputs"
)

// An expiry job (jobs.KindExpire), in the committing state, under the
// table's lease:
//
//  1. select again, on the table as it is now, with its retention and the
//     plan's pins, and keep only what the plan selected (the job does what
//     was planned, or less);
//  2. list the files that frees (expire.Unreferenced) and write them as a
//     durable record (messages.Deletions) before anything changes;
//  3. commit the removal through the catalog, asserting every ref is where
//     the selection saw it (a moved ref is a conflict: reload and redo 1-3);
//  4. delete the files, part by part, less any file a snapshot committed
//     since references (expire.StillUnreferenced), renewing the lease as it
//     goes; each part's object is removed once its files are;
//  5. mark the job committed and release the lease.
//
// Any committer that finds the record and a table without the expired
// snapshots knows the commit landed and resumes at 4: a crash anywhere
// leaks nothing and deletes nothing twice. A record whose commit did not
// land is written again by 2. In an S3 table bucket nothing is deleted
// (package outputs): the bucket's unreferenced file removal does it.

// deletionsKey is the full key of a job's Deletions record, next to its
// plan object.
func deletionsKey(job jobs.Job) string {
	return strings.TrimSuffix(job.PlanKey, "plan.json") + "deletions.json"
}

// readDeletions reads the job's record; found is false when there is none.
func (c *Committer) readDeletions(ctx context.Context, job jobs.Job) (messages.Deletions, bool, error) {
	var rec messages.Deletions
	b, err := c.blobs.Get(ctx, deletionsKey(job))
	if errors.Is(err, blob.ErrNotFound) {
		return rec, false, nil
	}
	if err != nil {
		return rec, false, err
	}
	if err := messages.Decode(b, &rec); err != nil {
		return rec, false, fmt.Errorf("%w: deletions record of job %s: %w", ErrInvariant, job.ID, err)
	}
	return rec, true, nil
}

// landed reports whether the expiry the record describes is committed in
// meta: none of its snapshots and refs is there any more.
func landed(meta table.Metadata, rec messages.Deletions) bool {
	for _, id := range rec.Expired {
		if meta.SnapshotByID(int64(id)) != nil {
			return false
		}
	}
	refs := meta.Refs()
	for _, name := range rec.RemoveRefs {
		for r := range refs {
			if r == name {
				return false
			}
		}
	}
	return true
}

// expire runs an expiry job in the committing state (steps 1 to 5).
func (c *Committer) expire(ctx context.Context, log *slog.Logger, job jobs.Job, ident table.Identifier, term lease.Lease, me string) (Result, error) {
	res := Result{JobID: job.ID, Table: job.Table}
	cur, err := c.catalog.LoadTable(ctx, ident)
	if err != nil {
		return res, fmt.Errorf("load table %s: %w", job.Table, classify(err))
	}
	rec, found, err := c.readDeletions(ctx, job)
	if err != nil {
		return res, err
	}
	if found && landed(cur.Metadata(), rec) {
		return c.deleteAndFinish(ctx, log, job, term, me, cur, rec, "the expiry was committed; finishing its deletions", true)
	}
	if _, err := c.leases.Renew(ctx, term, c.settings.LeaseTTL); err != nil {
		if errors.Is(err, lease.ErrLost) {
			return res, fmt.Errorf("%w before commit", errLeaseLost)
		}
		return res, err
	}
	b, err := c.blobs.Get(ctx, job.PlanKey)
	if err != nil {
		return res, fmt.Errorf("read expiry plan: %w", err)
	}
	var plan messages.ExpiryPlan
	if err := messages.Decode(b, &plan); err != nil {
		return res, fmt.Errorf("%w: expiry plan: %w", ErrInvariant, err)
	}
	leftover, err := c.finishLeftovers(ctx, log, term, cur, plan.Leftovers)
	if err != nil {
		return res, err
	}
	res.FilesDeleted, res.BytesFreed = leftover.FilesDeleted, leftover.BytesFreed
	for attempt := 0; ; attempt++ {
		if attempt > 0 {
			if cur, err = c.catalog.LoadTable(ctx, ident); err != nil {
				return res, fmt.Errorf("reload table %s: %w", job.Table, classify(err))
			}
		}
		props := cur.Properties()
		if gc, err := expire.GCEnabled(props); err != nil || !gc {
			return res, fmt.Errorf("%w: %v", ErrAborted, errors.Join(err, expire.ErrGCDisabled))
		}
		retention, err := expire.RetentionFor(props)
		if err != nil {
			return res, fmt.Errorf("%w: %w", ErrAborted, err)
		}
		// Only the refs the plan removes may go: a ref that passed its
		// max-ref-age since keeps everything its retention keeps.
		sel := onlyPlanned(cur.Metadata(), expire.SelectRemoving(cur.Metadata(), c.now(), retention, plan.RemoveRefs, messages.Int64s(plan.Pinned)...), plan)
		if sel.Empty() {
			why := "nothing planned is due any more"
			if leftover.FilesDeleted > 0 {
				why += fmt.Sprintf("; deleted %d files (%d bytes) earlier expiries left", leftover.FilesDeleted, leftover.BytesFreed)
			}
			out, ferr := c.finish(ctx, log, job, term, currentID(cur), why)
			out.Retries, out.Conflicts = attempt, res.Conflicts
			out.FilesDeleted, out.BytesFreed = leftover.FilesDeleted, leftover.BytesFreed
			return out, ferr
		}
		fsys, err := cur.FS(ctx)
		if err != nil {
			return res, fmt.Errorf("open table IO: %w", err)
		}
		files, err := expire.Unreferenced(ctx, fsys, cur.Metadata(), sel)
		if err != nil {
			return res, err
		}
		// Still the job's committer? One that was taken over must not
		// write over the record of the one that took it over.
		if err := c.jobs.Heartbeat(ctx, job.ID, me); err != nil {
			if errors.Is(err, jobs.ErrStateConflict) {
				return res, fmt.Errorf("%w: lost the committing job before writing its deletions: %v", ErrBusy, err)
			}
			return res, fmt.Errorf("fence before writing the deletions: %w", err)
		}
		if rec, err = c.writeDeletions(ctx, job, sel, files); err != nil {
			return res, err
		}
		err = c.commitExpiry(ctx, job, me, ident, cur.Metadata(), sel)
		if err == nil {
			break
		}
		if errors.Is(err, ErrBusy) {
			return res, err
		}
		if !IsConflict(err) {
			// The outcome may be unknown: look before deciding.
			if again, lerr := c.catalog.LoadTable(ctx, ident); lerr == nil && landed(again.Metadata(), rec) {
				break
			}
			return res, fmt.Errorf("commit: %w", classify(err))
		}
		res.Conflicts++
		if attempt >= c.settings.MaxRetries {
			return res, fmt.Errorf("%w: %w: %d commit conflicts, retries exhausted: %w", ErrAborted, ErrConcurrent, attempt+1, err)
		}
		log.Warn("expiry commit conflict; reloading", "attempt", attempt+1, "err", err.Error())
		res.Retries = attempt + 1
		if err := sleep(ctx, backoff(c.settings.Backoff, attempt)); err != nil {
			return res, err
		}
	}
	if c.afterCatalogCommit != nil {
		if err := c.afterCatalogCommit(job.ID); err != nil {
			return res, err
		}
	}
	if cur, err = c.catalog.LoadTable(ctx, ident); err != nil {
		return res, fmt.Errorf("reload table %s: %w", job.Table, classify(err))
	}
	out, err := c.deleteAndFinish(ctx, log, job, term, me, cur, rec, "committed", true)
	out.Retries, out.Conflicts = res.Retries, res.Conflicts
	out.FilesDeleted += leftover.FilesDeleted
	out.BytesFreed += leftover.BytesFreed
	return out, err
}

// onlyPlanned keeps, of a selection made on meta (expire.SelectRemoving
// with the plan's refs: a ref past its max age since the plan whose
// removal was not planned stays, with what its retention keeps), the
// expiry of snapshots and refs the plan selected; everything else is
// kept, and so is the snapshot of every ref that stays (removing the
// snapshot alone would drop the ref with it).
func onlyPlanned(meta table.Metadata, sel expire.Selection, plan messages.ExpiryPlan) expire.Selection {
	planned := messages.Int64s(plan.Expire)
	out := expire.Selection{Kept: sel.Kept}
	for _, r := range sel.RemovedRefs {
		if slices.Contains(plan.RemoveRefs, r) {
			out.RemovedRefs = append(out.RemovedRefs, r)
		}
	}
	heads := map[int64]bool{}
	for name, ref := range meta.Refs() {
		if !slices.Contains(out.RemovedRefs, name) {
			heads[ref.SnapshotID] = true
		}
	}
	for _, s := range sel.Expired {
		if slices.Contains(planned, s.SnapshotID) && !heads[s.SnapshotID] {
			out.Expired = append(out.Expired, s)
		} else {
			out.Kept = append(out.Kept, s)
		}
	}
	return out
}

func currentID(t *table.Table) int64 {
	if s := t.CurrentSnapshot(); s != nil {
		return s.SnapshotID
	}
	return 0
}

// writeDeletions writes the record of the files sel frees, in parts.
func (c *Committer) writeDeletions(ctx context.Context, job jobs.Job, sel expire.Selection, files []expire.File) (messages.Deletions, error) {
	var kept []int64
	for _, s := range sel.Kept {
		kept = append(kept, s.SnapshotID)
	}
	refs := make([]messages.FileRef, len(files))
	for i, f := range files {
		refs[i] = messages.FileRef{Path: f.Path, Kind: f.Kind, Bytes: f.Bytes}
	}
	rec, parts := messages.SplitDeletions(job.ID, job.Table, refs, c.settings.DeletionPartFiles, func(i int) string { return deletionPartName(job.ID, i) })
	rec.Expired, rec.RemoveRefs, rec.Kept = messages.IDs(sel.ExpiredIDs()), sel.RemovedRefs, messages.IDs(kept)
	return rec, putDeletions(ctx, c.blobs, job, &rec, parts)
}

// deletionPartName is the name of part i of a job's deletions record.
func deletionPartName(jobID string, i int) string {
	return fmt.Sprintf("jobs/%s/deletions/%05d.json", jobID, i)
}

// DeletionsName is the name of a job's deletions record, next to its plan.
func DeletionsName(jobID string) string { return "jobs/" + jobID + "/deletions.json" }

// putDeletions writes the parts, then the record naming their full keys.
// Parts of an earlier record of the job (an attempt that met a conflict)
// are removed first: a deletion task must never act on a list made
// against another selection, and the part objects left are how the tasks
// know they are done.
func putDeletions(ctx context.Context, blobs Blobs, job jobs.Job, rec *messages.Deletions, parts []messages.DeletionPart) error {
	stale, err := blobs.List(ctx, "jobs/"+job.ID+"/deletions/")
	if err != nil {
		return fmt.Errorf("list earlier deletion parts: %w", err)
	}
	for _, key := range stale {
		if err := blobs.Delete(ctx, key); err != nil {
			return fmt.Errorf("remove an earlier deletion part: %w", err)
		}
	}
	for i, part := range parts {
		body, err := messages.Encode(part)
		if err != nil {
			return err
		}
		key, err := blobs.Put(ctx, deletionPartName(job.ID, i), body)
		if err != nil {
			return fmt.Errorf("write deletion part %d: %w", i, err)
		}
		rec.Parts[i] = key
	}
	body, err := messages.Encode(*rec)
	if err != nil {
		return err
	}
	if _, err := blobs.Put(ctx, DeletionsName(job.ID), body); err != nil {
		return fmt.Errorf("write deletions record: %w", err)
	}
	return nil
}

// commitExpiry fences the job and commits sel's updates, made on base,
// through the catalog within the commit deadline.
func (c *Committer) commitExpiry(ctx context.Context, job jobs.Job, me string, ident table.Identifier, base table.Metadata, sel expire.Selection) error {
	if err := c.jobs.Heartbeat(ctx, job.ID, me); err != nil {
		if errors.Is(err, jobs.ErrStateConflict) {
			return fmt.Errorf("%w: lost the committing job before the catalog commit: %v", ErrBusy, err)
		}
		return fmt.Errorf("fence before the catalog commit: %w", err)
	}
	reqs, updates := expire.Updates(base, sel, c.serverSideRequirements())
	cctx, cancel := context.WithTimeout(ctx, c.settings.CommitDeadline)
	defer cancel()
	_, _, err := c.catalog.CommitTable(cctx, ident, reqs, updates)
	return err
}

// deleteAndFinish deletes what the committed expiry freed (step 4) and
// finishes the job (step 5); a large record is fanned out instead when
// fanOut allows. me owns the committing state. The record is verified
// first (verifyExpiry): nothing is deleted before. When the lease is lost
// on the way (another job took the table), the job ends committed with its
// deletions left for the table's next expiry (Job.DeletionsLeft), so that
// it never stays committing and pins nothing.
func (c *Committer) deleteAndFinish(ctx context.Context, log *slog.Logger, job jobs.Job, term lease.Lease, me string, cur *table.Table, rec messages.Deletions, why string, fanOut bool) (Result, error) {
	res := Result{JobID: job.ID, Table: job.Table, SnapshotsExpired: len(rec.Expired)}
	rec, err := c.verifyExpiry(ctx, log, job, cur, rec)
	if errors.Is(err, expire.ErrUnverifiable) {
		// When in doubt, do not delete: the expiry landed, its files stay
		// (orphan cleanup, with its own proof, may remove them later).
		reason := fmt.Sprintf("%s: expired %d snapshots; deleted nothing: %v", why, len(rec.Expired), err)
		log.Error("expiry committed but not verifiable; nothing deleted", "err", err.Error())
		out, ferr := c.finish(ctx, log, job, term, currentID(cur), reason)
		out.SnapshotsExpired = len(rec.Expired)
		return out, ferr
	}
	if err != nil {
		return res, err
	}
	if fanOut && c.fanOut != nil && len(rec.Parts) >= c.fanOutParts {
		return c.fanOutDeletions(ctx, log, job, cur, rec, messages.DeleteTask{MetadataLocation: cur.MetadataLocation(), Kept: rec.Kept, Expired: rec.Expired})
	}
	done, err := c.deleteParts(ctx, log, term, cur, rec, c.unreferencedNow(ctx, cur, rec))
	res.FilesDeleted, res.BytesFreed = done.FilesDeleted, done.BytesFreed
	if errors.Is(err, errLeaseLost) {
		return c.leaveDeletions(ctx, log, job, cur, rec, res, why, err)
	}
	if errors.Is(err, expire.ErrUndone) {
		// Loud: the files left are needed again, and stay.
		reason := fmt.Sprintf("%s: expired %d snapshots, deleted %d files (%d bytes), then stopped: %v", why, len(rec.Expired), res.FilesDeleted, res.BytesFreed, err)
		out, aerr := c.abort(ctx, log, job, jobs.Failed, reason, me, messages.FailTerminal)
		out.SnapshotsExpired, out.FilesDeleted, out.BytesFreed = res.SnapshotsExpired, res.FilesDeleted, res.BytesFreed
		return out, aerr
	}
	if err != nil {
		return res, err
	}
	summary := fmt.Sprintf("%s: expired %d snapshots, deleted %d files (%d bytes)", why, len(rec.Expired), res.FilesDeleted, res.BytesFreed)
	if len(rec.DroppedRefs) > 0 {
		return c.endDroppedRefs(ctx, log, job, term, me, rec, res, summary)
	}
	out, err := c.finish(ctx, log, job, term, currentID(cur), summary)
	out.SnapshotsExpired, out.FilesDeleted, out.BytesFreed = res.SnapshotsExpired, res.FilesDeleted, res.BytesFreed
	return out, err
}

// unreferencedNow is deleteParts' check for an expiry's part: its files
// against the table as the catalog has it right before the part is
// deleted (what was committed since, every metadata file of its log, and
// the expiry still in effect: expire.StillUnreferenced), as a fanned-out
// deletion task checks its part (package deletions). In an S3 table
// bucket nothing is deleted (package outputs): cur is kept.
func (c *Committer) unreferencedNow(ctx context.Context, cur *table.Table, rec messages.Deletions) func([]expire.File) ([]expire.File, error) {
	known, gone := messages.Int64s(rec.Kept), messages.Int64s(rec.Expired)
	return func(files []expire.File) ([]expire.File, error) {
		now := cur
		if !outputs.InTableBucket(cur.Location()) {
			t, err := c.catalog.LoadTable(ctx, cur.Identifier())
			if err != nil {
				return nil, fmt.Errorf("load the table before deleting a part: %w", classify(err))
			}
			now = t
		}
		fsys, err := now.FS(ctx)
		if err != nil {
			return nil, fmt.Errorf("open table IO: %w", err)
		}
		return expire.StillUnreferenced(ctx, fsys, now.Metadata(), known, gone, files)
	}
}

// deleteParts deletes, part by part, the files of a deletions record that
// keep lets through (what may still be deleted now), renewing the lease
// before each part and removing each part's object once its files are
// gone. Parts already removed were done by an earlier run. In an S3 table
// bucket nothing is deleted (package outputs) and nothing is counted.
func (c *Committer) deleteParts(ctx context.Context, log *slog.Logger, term lease.Lease, cur *table.Table, rec messages.Deletions, keep func([]expire.File) ([]expire.File, error)) (Result, error) {
	var res Result
	for _, key := range rec.Parts {
		b, err := c.blobs.Get(ctx, key)
		if errors.Is(err, blob.ErrNotFound) {
			continue // deleted by an earlier run
		}
		if err != nil {
			return res, fmt.Errorf("read deletion part: %w", err)
		}
		var part messages.DeletionPart
		if err := messages.Decode(b, &part); err != nil {
			return res, fmt.Errorf("%w: deletion part %s: %w", ErrInvariant, key, err)
		}
		files := make([]expire.File, len(part.Files))
		for i, f := range part.Files {
			files[i] = expire.File{Path: f.Path, Kind: f.Kind, Bytes: f.Bytes}
		}
		if files, err = keep(files); err != nil {
			return res, err
		}
		// Still ours? A committer that lost the table stops here.
		if _, err := c.leases.Renew(ctx, term, c.settings.LeaseTTL); err != nil {
			if errors.Is(err, lease.ErrLost) {
				return res, fmt.Errorf("%w before deleting part %d: %w", errLeaseLost, part.Index, err)
			}
			return res, fmt.Errorf("renew the lease before deleting: %w", err)
		}
		paths := make([]string, len(files))
		for i, f := range files {
			paths[i] = f.Path
		}
		if !outputs.InTableBucket(cur.Location()) {
			res.FilesDeleted += len(paths)
			for _, f := range files {
				res.BytesFreed += f.Bytes
			}
		}
		if err := outputs.Remove(ctx, cur, paths); err != nil {
			return res, fmt.Errorf("delete part %d: %w", part.Index, err)
		}
		if err := c.blobs.Delete(ctx, key); err != nil {
			log.Warn("remove deletion part", "key", key, "err", err.Error())
		}
	}
	return res, nil
}

// fanOutDeletions sends one deletion task per part left; the job stays
// committing until the last task's commit request (finishDeletions). A
// committer that takes the job over (its committer went silent) finds the
// record and deletes what is left itself.
func (c *Committer) fanOutDeletions(ctx context.Context, log *slog.Logger, job jobs.Job, cur *table.Table, rec messages.Deletions, proto messages.DeleteTask) (Result, error) {
	res := Result{JobID: job.ID, Table: job.Table, Outcome: OutcomeWaiting}
	var bodies []string
	for _, key := range rec.Parts {
		dt := proto
		dt.PartKey = key
		b, err := messages.Encode(messages.NewDeleteTask(job.ID, job.Table, job.Token, dt))
		if err != nil {
			return res, err
		}
		bodies = append(bodies, string(b))
	}
	for _, b := range bodies {
		if err := c.fanOut.Send(ctx, b); err != nil {
			return res, fmt.Errorf("send deletion task: %w", err)
		}
	}
	res.Reason = fmt.Sprintf("deletions fanned out: %d tasks for %d files", len(bodies), rec.Files)
	log.Info("deletions fanned out", "tasks", len(bodies), "files", rec.Files)
	return res, nil
}

// finishDeletions ends a job whose fanned-out deletions are done (the
// last task's commit request): with no part left, it finishes the job
// with what the record listed; otherwise it waits for the tasks left.
func (c *Committer) finishDeletions(ctx context.Context, log *slog.Logger, job jobs.Job, ident table.Identifier, term lease.Lease) (Result, error) {
	res := Result{JobID: job.ID, Table: job.Table}
	if job.State.Terminal() || job.State != jobs.Committing {
		res.Outcome, res.Reason = OutcomeAlready, string(job.State)+": "+job.Reason
		return res, nil
	}
	rec, found, err := c.readDeletions(ctx, job)
	if err != nil {
		return res, err
	}
	if !found {
		return res, fmt.Errorf("%w: job %s has no deletions record", ErrInvariant, job.ID)
	}
	left, err := c.blobs.List(ctx, "jobs/"+job.ID+"/deletions/")
	if err != nil {
		return res, fmt.Errorf("list deletion parts: %w", err)
	}
	if len(left) > 0 {
		res.Outcome, res.Reason = OutcomeWaiting, fmt.Sprintf("%d deletion parts left", len(left))
		return res, nil
	}
	cur, err := c.catalog.LoadTable(ctx, ident)
	if err != nil {
		return res, fmt.Errorf("load table %s: %w", job.Table, classify(err))
	}
	refused, err := c.refusedParts(ctx, job)
	if err != nil {
		return res, err
	}
	if len(refused) > 0 {
		// Loud: the job fails, and the table's failure record counts it;
		// what the other parts deleted was checked by their tasks.
		what := orphans.ErrRefused.Error()
		if job.Kind == jobs.KindExpire {
			what = "expiry deletions refused"
		}
		reason := fmt.Sprintf("%s: %d of %d deletion parts refused, their files kept: %s", what, len(refused), len(rec.Parts), refused[0].Reason)
		return c.abort(ctx, log, job, jobs.Failed, reason, job.CommitterID, messages.FailTerminal)
	}
	var why string
	var out Result
	switch job.Kind {
	case jobs.KindExpire:
		why = fmt.Sprintf("committed: expired %d snapshots, deleted %d files (%d bytes) in fanned-out tasks", len(rec.Expired), rec.Files, rec.Bytes)
		if len(rec.DroppedRefs) > 0 {
			return c.endDroppedRefs(ctx, log, job, term, job.CommitterID, rec, Result{JobID: job.ID, Table: job.Table, SnapshotsExpired: len(rec.Expired), FilesDeleted: rec.Files, BytesFreed: rec.Bytes}, why)
		}
		out, err = c.finish(ctx, log, job, term, currentID(cur), why)
		out.SnapshotsExpired, out.FilesDeleted, out.BytesFreed = len(rec.Expired), rec.Files, rec.Bytes
	default:
		why = fmt.Sprintf("removed %d orphan files in fanned-out tasks", rec.Files)
		out, err = c.finish(ctx, log, job, term, currentID(cur), why)
		out.OrphansRemoved = rec.Files
	}
	return out, err
}

// refusedParts reads what deletion tasks refused: an orphan cleanup's
// parts, or an undone expiry's (package deletions).
func (c *Committer) refusedParts(ctx context.Context, job jobs.Job) ([]messages.RefusedPart, error) {
	keys, err := c.blobs.List(ctx, messages.RefusedPrefix(job.ID))
	if err != nil {
		return nil, fmt.Errorf("list refused deletion parts: %w", err)
	}
	var out []messages.RefusedPart
	for _, k := range keys {
		b, err := c.blobs.Get(ctx, k)
		if err != nil {
			return nil, fmt.Errorf("read refused deletion part %s: %w", k, err)
		}
		var p messages.RefusedPart
		if err := messages.Decode(b, &p); err != nil {
			return nil, fmt.Errorf("%w: refused deletion part %s: %w", ErrInvariant, k, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// serverSideRequirements reports whether the catalog validates commit
// requirements on a server that cannot run expire's guard (REST, or a
// catalog that does not say what it is): the expiry then asserts every ref
// where it saw it (expire.Updates).
func (c *Committer) serverSideRequirements() bool {
	typed, ok := c.catalog.(interface{ CatalogType() catalog.Type })
	if !ok {
		return true
	}
	switch typed.CatalogType() {
	case catalog.SQL, catalog.Glue, catalog.Hive:
		return false // UpdateAndStageTable validates them in the client
	}
	return true
}

// verifyExpiry checks, once, what the expiry's commit did against the
// metadata the catalog applied it to (expire.FindApplied: the table's
// metadata log names it). A ref that metadata had and the commit lost,
// although the expiry did not decide to remove it (a tag or branch another
// writer created on an expired snapshot, which a catalog that applies
// updates to its own current metadata drops with the snapshot), is
// recorded, and every file its snapshot needs is taken out of the parts
// before anything is deleted. The verified record is written back, so a
// committer that resumes it does not need the log again. An unverifiable
// commit (a metadata file of the log gone or unreadable) is
// expire.ErrUnverifiable: nothing may be deleted.
func (c *Committer) verifyExpiry(ctx context.Context, log *slog.Logger, job jobs.Job, cur *table.Table, rec messages.Deletions) (messages.Deletions, error) {
	if rec.Verified {
		return rec, nil
	}
	fsys, err := cur.FS(ctx)
	if err != nil {
		return rec, fmt.Errorf("open table IO: %w", err)
	}
	applied, err := expire.FindApplied(fsys, cur.Metadata(), cur.MetadataLocation(), messages.Int64s(rec.Expired))
	if err != nil {
		return rec, err
	}
	dropped := expire.Dropped(applied, rec.RemoveRefs)
	if len(dropped) > 0 {
		ids := make([]int64, len(dropped))
		for i, d := range dropped {
			ids[i] = d.SnapshotID
			rec.DroppedRefs = append(rec.DroppedRefs, messages.DroppedRef{Name: d.Name, SnapshotID: messages.ID(d.SnapshotID)})
		}
		log.Error("the expiry's commit dropped refs it did not decide to remove; their snapshots' files are kept", "dropped_refs", rec.DroppedRefs, "applied_to", applied.BeforeLocation)
		rec.Files, rec.Bytes = 0, 0
		for _, key := range rec.Parts {
			part, found, err := c.readPart(ctx, key)
			if err != nil {
				return rec, err
			}
			if !found {
				continue
			}
			files := make([]expire.File, len(part.Files))
			for i, f := range part.Files {
				files[i] = expire.File{Path: f.Path, Kind: f.Kind, Bytes: f.Bytes}
			}
			if files, err = expire.Keep(ctx, fsys, applied.Before, ids, files); err != nil {
				return rec, err
			}
			part.Files = part.Files[:0]
			for _, f := range files {
				part.Files = append(part.Files, messages.FileRef{Path: f.Path, Kind: f.Kind, Bytes: f.Bytes})
				rec.Files++
				rec.Bytes += f.Bytes
			}
			if _, err := putEncoded(ctx, c.blobs, deletionPartName(job.ID, part.Index), part); err != nil {
				return rec, fmt.Errorf("write deletion part %d without the dropped refs' files: %w", part.Index, err)
			}
		}
	}
	rec.Verified, rec.AppliedTo = true, applied.BeforeLocation
	if _, err := putEncoded(ctx, c.blobs, DeletionsName(job.ID), rec); err != nil {
		return rec, fmt.Errorf("write the verified deletions record: %w", err)
	}
	return rec, nil
}

// readPart reads one deletion part; found is false when it is gone (its
// files were deleted).
func (c *Committer) readPart(ctx context.Context, key string) (messages.DeletionPart, bool, error) {
	var part messages.DeletionPart
	b, err := c.blobs.Get(ctx, key)
	if errors.Is(err, blob.ErrNotFound) {
		return part, false, nil
	}
	if err != nil {
		return part, false, fmt.Errorf("read deletion part: %w", err)
	}
	if err := messages.Decode(b, &part); err != nil {
		return part, false, fmt.Errorf("%w: deletion part %s: %w", ErrInvariant, key, err)
	}
	return part, true, nil
}

// endDroppedRefs ends an expiry whose commit dropped refs (verifyExpiry)
// as failed, loud: the snapshots are gone from the table and cannot be
// added back through a catalog commit (a snapshot older than the table's
// last sequence number is refused), so the refs are lost there; their
// files are all still on storage and the reason names the metadata file
// from which an operator can restore them.
func (c *Committer) endDroppedRefs(ctx context.Context, log *slog.Logger, job jobs.Job, term lease.Lease, me string, rec messages.Deletions, res Result, summary string) (Result, error) {
	names := make([]string, len(rec.DroppedRefs))
	for i, d := range rec.DroppedRefs {
		names[i] = fmt.Sprintf("%s (snapshot %d)", d.Name, d.SnapshotID)
	}
	reason := fmt.Sprintf("%s; but the catalog also dropped refs another writer created during the expiry: %s; every file they need was kept; their snapshots are in %s", summary, strings.Join(names, ", "), rec.AppliedTo)
	res.Outcome, res.Reason = OutcomeFailed, reason
	if err := c.jobs.EndCommitting(ctx, job.ID, me, jobs.Failed, reason); err != nil && !errors.Is(err, jobs.ErrStateConflict) {
		return res, err
	}
	log.Error("expiry ended failed: refs dropped by its commit", "reason", reason)
	if _, err := c.leases.RecordFailure(ctx, job.Table, messages.FailInvariant); err != nil {
		log.Warn("record failure", "err", err.Error())
	}
	if err := c.leases.Release(ctx, term); err != nil && !errors.Is(err, lease.ErrLost) {
		log.Warn("release lease", "err", err.Error())
	}
	return res, nil
}

// endLandedExpiry finishes, rather than aborts, an expiry asked to end
// whose catalog commit landed (ended): its snapshots are gone, so its files
// must go too. Not fanned out: an abort comes when another job took the
// table, and fanned-out tasks would be dropped; without the lease the job
// ends with its deletions left for the next expiry (leftovers.go).
func (c *Committer) endLandedExpiry(ctx context.Context, log *slog.Logger, job jobs.Job, term lease.Lease, owner string, cur *table.Table) (Result, bool, error) {
	rec, found, err := c.readDeletions(ctx, job)
	if err != nil {
		return Result{}, false, err
	}
	if !found || !landed(cur.Metadata(), rec) {
		return Result{}, false, nil
	}
	res, err := c.deleteAndFinish(ctx, log, job, term, owner, cur, rec, "the expiry was committed before the abort request", false)
	return res, true, err
}
