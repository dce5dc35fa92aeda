package commit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/expire"
	"github.com/icekeeper/icekeeper/shared/health"
	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/lease"
	"github.com/icekeeper/icekeeper/shared/messages"
)

// removeOrphans runs an orphan cleanup job (jobs.KindRemoveOrphans) in the
// committing state, under the table's lease. The committer decides again
// on the table as it is now: it lists the orphans older than the plan's
// safety age, refuses a shared location, keeps what it may delete (under
// data/ and metadata/, not named for an attempt the plan saw in flight),
// records them (messages.Deletions, so a committer that dies resumes the
// same list part by part) and deletes each part after checking its files
// are still referenced by nothing. Nothing is committed to the catalog.
func (c *Committer) removeOrphans(ctx context.Context, log *slog.Logger, job jobs.Job, ident table.Identifier, term lease.Lease, me string) (Result, error) {
	res := Result{JobID: job.ID, Table: job.Table}
	b, err := c.blobs.Get(ctx, job.PlanKey)
	if err != nil {
		return res, fmt.Errorf("read orphan plan: %w", err)
	}
	var plan messages.OrphanPlan
	if err := messages.Decode(b, &plan); err != nil {
		return res, fmt.Errorf("%w: orphan plan: %w", ErrInvariant, err)
	}
	cur, err := c.catalog.LoadTable(ctx, ident)
	if err != nil {
		return res, fmt.Errorf("load table %s: %w", job.Table, classify(err))
	}
	if _, err := c.leases.Renew(ctx, term, c.settings.LeaseTTL); err != nil {
		if errors.Is(err, lease.ErrLost) {
			return res, fmt.Errorf("%w before deleting", errLeaseLost)
		}
		return res, err
	}
	rec, found, err := c.readDeletions(ctx, job)
	if err != nil {
		return res, err
	}
	if !found {
		if gc, err := expire.GCEnabled(cur.Properties()); err != nil || !gc {
			return res, fmt.Errorf("%w: %v", ErrAborted, errors.Join(err, expire.ErrGCDisabled))
		}
		olderThan := job.CreatedAt.Add(-time.Duration(plan.OlderThanMillis) * time.Millisecond)
		orphans, _, err := health.FindOrphans(ctx, cur, olderThan)
		if err != nil {
			return res, fmt.Errorf("list orphans: %w", err)
		}
		why, err := health.SharedLocation(ctx, cur, orphans)
		if err != nil {
			return res, err
		}
		if why != "" {
			return res, fmt.Errorf("%w: orphan cleanup refused: %s", ErrAborted, why)
		}
		deletable, _ := health.Deletable(cur.Location(), orphans, plan.InFlightAttempts)
		refs := make([]messages.FileRef, len(deletable))
		for i, p := range deletable {
			refs[i] = messages.FileRef{Path: p, Kind: "orphan"}
		}
		var parts []messages.DeletionPart
		rec, parts = messages.SplitDeletions(job.ID, job.Table, refs, c.settings.DeletionPartFiles, func(i int) string { return deletionPartName(job.ID, i) })
		if err := putDeletions(ctx, c.blobs, job, &rec, parts); err != nil {
			return res, err
		}
	}
	if c.fanOut != nil && len(rec.Parts) >= c.fanOutParts {
		return c.fanOutDeletions(ctx, log, job, cur, rec, messages.DeleteTask{MetadataLocation: cur.MetadataLocation(), Orphans: true})
	}
	deleted, err := c.deleteParts(ctx, log, term, cur, rec, func(files []expire.File) ([]expire.File, error) {
		paths := make([]string, len(files))
		for i, f := range files {
			paths[i] = f.Path
		}
		still, err := health.StillOrphans(ctx, cur, paths)
		if err != nil {
			return nil, err
		}
		keep := map[string]bool{}
		for _, p := range still {
			keep[p] = true
		}
		var out []expire.File
		for _, f := range files {
			if keep[f.Path] {
				out = append(out, f)
			}
		}
		return out, nil
	})
	if err != nil {
		return res, err
	}
	out, err := c.finish(ctx, log, job, term, currentID(cur), fmt.Sprintf("removed %d orphan files older than %s", deleted.FilesDeleted, time.Duration(plan.OlderThanMillis)*time.Millisecond))
	out.OrphansRemoved = deleted.FilesDeleted
	return out, err
}
