package plan

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/health"
	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/lease"
	"github.com/icekeeper/icekeeper/shared/messages"
)

// PlanManifestRewrite plans one manifest rewrite job for the named table:
// due when the current snapshot has more data manifests than the table's
// commit.manifest.min-count-to-merge (Iceberg's default, 100), the count
// at which Iceberg's own appends start merging them. The committer
// rewrites them with iceberg-go's Transaction.RewriteManifests, clustered
// by partition, into manifests of commit.manifest.target-size-bytes.
func (p *Planner) PlanManifestRewrite(ctx context.Context, name, trigger string) (Result, error) {
	return p.underLease(ctx, name, trigger, p.planManifestRewriteLeased)
}

func (p *Planner) planManifestRewriteLeased(ctx context.Context, log *slog.Logger, ident table.Identifier, name, jobID, trigger string, l lease.Lease) (res Result, started bool, err error) {
	res = Result{Table: name}
	planStart := p.now()
	tbl, err := p.loadLeased(ctx, log, ident, name, l, &res)
	if err != nil {
		return res, false, fmt.Errorf("plan manifest rewrite of %s: %w", name, err)
	}
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		res.Outcome, res.Reason = OutcomeNothingToDo, "table has no snapshot"
		return res, false, nil
	}
	th, err := health.ThresholdsFor(tbl.Properties(), 0)
	if err != nil {
		return res, false, fmt.Errorf("plan manifest rewrite of %s: %w", name, err)
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		return res, false, fmt.Errorf("plan manifest rewrite of %s: open table IO: %w", name, err)
	}
	manifests, err := snap.Manifests(fsys)
	if err != nil {
		return res, false, fmt.Errorf("plan manifest rewrite of %s: read manifest list: %w", name, err)
	}
	data := 0
	for _, m := range manifests {
		if m.ManifestContent() == iceberg.ManifestContentData {
			data++
		}
	}
	if data <= th.MaxManifests {
		res.Outcome = OutcomeNothingToDo
		res.Reason = fmt.Sprintf("%d data manifests, at most %d wanted (%s)", data, th.MaxManifests, table.ManifestMinMergeCountKey)
		return res, false, nil
	}
	pin := messages.Pin{MetadataLocation: tbl.MetadataLocation(), SnapshotID: snap.SnapshotID, SequenceNumber: snap.SequenceNumber}
	res.SnapshotID = pin.SnapshotID
	body, err := messages.Encode(messages.ManifestRewritePlan{Version: messages.FormatVersion, JobID: jobID, Table: name, Pin: pin, DataManifests: data, MaxManifests: th.MaxManifests})
	if err != nil {
		return res, false, err
	}
	job := jobs.Job{
		ID: jobID, Table: name, Kind: jobs.KindRewriteManifests, Trigger: trigger, Token: l.Token,
		MetadataLocation: pin.MetadataLocation, SnapshotID: pin.SnapshotID, SequenceNumber: pin.SequenceNumber,
	}
	if job.PlanKey, err = p.blobs.Put(ctx, "jobs/"+jobID+"/plan.json", body); err != nil {
		return res, false, fmt.Errorf("plan manifest rewrite of %s: %w", name, err)
	}
	job.PlanMillis = p.now().Sub(planStart).Milliseconds()
	if err := p.jobs.Create(ctx, job, nil); err != nil {
		return res, false, fmt.Errorf("plan manifest rewrite of %s: %w", name, err)
	}
	return p.handToCommitter(ctx, log, res, job, fmt.Sprintf("%d data manifests, more than %d", data, th.MaxManifests))
}
