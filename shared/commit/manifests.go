package commit

import (
	"context"
	"errors"
	"fmt"
	"log/slog"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/lease"
)

// rewriteManifests runs a manifest rewrite job (jobs.KindRewriteManifests)
// in the committing state, under the table's lease: iceberg-go's
// Transaction.RewriteManifests on the table as it is now, its entries
// clustered by partition (so that a scan filtering on partitions reads few
// manifests), committed as one REPLACE snapshot that changes no data or
// delete file. A commit that lands meanwhile makes the catalog refuse the
// stale base: reload and rewrite again. The rewrite is idempotent: after a
// crash, running it again finds the manifests already optimal. The old
// manifests stay referenced by the older snapshots until an expiry frees
// them.
func (c *Committer) rewriteManifests(ctx context.Context, log *slog.Logger, job jobs.Job, ident table.Identifier, term lease.Lease, me string) (Result, error) {
	var out *table.RewriteManifestsResult
	return c.commitLoop(ctx, log, job, ident, term, me, "manifest rewrite", func(cur *table.Table) (*table.Transaction, string, error) {
		txn := cur.NewTransaction()
		var err error
		if out, err = txn.RewriteManifests(ctx, table.WithRewriteManifestClusterBy(partitionCluster)); err != nil {
			return nil, "", fmt.Errorf("rewrite manifests: %w", classify(err))
		}
		if out.IsNoOp() {
			return nil, "manifests already optimal", nil
		}
		return txn, "", nil
	}, func(res *Result) string {
		res.ManifestsRewritten, res.ManifestsAdded = len(out.RewrittenManifests), len(out.AddedManifests)
		return fmt.Sprintf("rewrote %d data manifests into %d", len(out.RewrittenManifests), len(out.AddedManifests))
	})
}

// commitLoop makes a job's one commit that changes no data (a manifest
// rewrite, a layout change), under the table's lease: it loads the table
// as it is now, renews the lease, stages the change with stage, and
// commits it behind the fence (a heartbeat on the committing job, then at
// most CommitDeadline for the catalog call). stage may instead give a
// reason to end the job without a commit. A commit that lands meanwhile
// makes the catalog refuse the stale base: reload, stage again, retry, at
// most MaxRetries times. committed fills the result of a commit and says
// why it was made.
func (c *Committer) commitLoop(ctx context.Context, log *slog.Logger, job jobs.Job, ident table.Identifier, term lease.Lease, me, what string,
	stage func(cur *table.Table) (*table.Transaction, string, error), committed func(*Result) string,
) (Result, error) {
	res := Result{JobID: job.ID, Table: job.Table}
	for attempt := 0; ; attempt++ {
		cur, err := c.catalog.LoadTable(ctx, ident)
		if err != nil {
			return res, fmt.Errorf("load table %s: %w", job.Table, classify(err))
		}
		if _, err := c.leases.Renew(ctx, term, c.settings.LeaseTTL); err != nil {
			if errors.Is(err, lease.ErrLost) {
				return res, fmt.Errorf("%w before commit", errLeaseLost)
			}
			return res, err
		}
		txn, noCommit, err := stage(cur)
		if err != nil {
			return res, err
		}
		if noCommit != "" {
			done, ferr := c.finish(ctx, log, job, term, currentID(cur), noCommit)
			done.Retries, done.Conflicts = res.Retries, res.Conflicts
			return done, ferr
		}
		if err := c.jobs.Heartbeat(ctx, job.ID, me); err != nil {
			if errors.Is(err, jobs.ErrStateConflict) {
				return res, fmt.Errorf("%w: lost the committing job before the catalog commit: %v", ErrBusy, err)
			}
			return res, fmt.Errorf("fence before the catalog commit: %w", err)
		}
		cctx, cancel := context.WithTimeout(ctx, c.settings.CommitDeadline)
		after, err := txn.Commit(cctx)
		cancel()
		if err == nil {
			var filled Result
			why := committed(&filled)
			done, ferr := c.finish(ctx, log, job, term, currentID(after), why)
			done.Retries, done.Conflicts = res.Retries, res.Conflicts
			done.ManifestsRewritten, done.ManifestsAdded = filled.ManifestsRewritten, filled.ManifestsAdded
			return done, ferr
		}
		if !IsConflict(err) {
			return res, fmt.Errorf("commit: %w", classify(err))
		}
		res.Conflicts++
		if attempt >= c.settings.MaxRetries {
			return res, fmt.Errorf("%w: %w: %d commit conflicts, retries exhausted: %w", ErrAborted, ErrConcurrent, attempt+1, err)
		}
		log.Warn(what+" conflict; reloading", "attempt", attempt+1, "err", err.Error())
		res.Retries = attempt + 1
		if err := sleep(ctx, backoff(c.settings.Backoff, attempt)); err != nil {
			return res, err
		}
	}
}

// partitionCluster is the manifest cluster of a data file: its spec and
// partition (fmt prints a map with its keys sorted).
func partitionCluster(df iceberg.DataFile) any {
	return fmt.Sprint(df.SpecID(), df.Partition())
}
