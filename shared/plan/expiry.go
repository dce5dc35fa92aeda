package plan

import (
	"context"
	"fmt"
	"log/slog"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/expire"
	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/lease"
	"github.com/icekeeper/icekeeper/shared/messages"
)

// planExpiryLeased plans a snapshot expiry under the table's lease: it
// selects the snapshots due with the table's retention (package expire),
// keeping every snapshot a job still in flight pinned (an earlier job on
// the table that has not ended, such as a superseded one), records the
// job and its plan, and hands it to the committer. Nothing is due, or the
// table's gc.enabled is false: nothing to do.
func (p *Planner) planExpiryLeased(ctx context.Context, log *slog.Logger, ident table.Identifier, name, jobID, trigger string, l lease.Lease) (res Result, started bool, err error) {
	res = Result{Table: name}
	planStart := p.now()
	tbl, err := p.loadLeased(ctx, log, ident, name, l, &res)
	if err != nil {
		return res, false, fmt.Errorf("plan expiry of %s: %w", name, err)
	}
	snap := tbl.CurrentSnapshot()
	if snap == nil {
		res.Outcome, res.Reason = OutcomeNothingToDo, "table has no snapshot"
		return res, false, nil
	}
	props := tbl.Properties()
	gc, err := expire.GCEnabled(props)
	if err != nil {
		return res, false, fmt.Errorf("plan expiry of %s: %w", name, err)
	}
	if !gc {
		res.Outcome, res.Reason = OutcomeNothingToDo, expire.ErrGCDisabled.Error()
		return res, false, nil
	}
	retention, err := expire.RetentionFor(props)
	if err != nil {
		return res, false, fmt.Errorf("plan expiry of %s: %w", name, err)
	}
	pinned, err := p.pinsInFlight(ctx, l.PastJobs)
	if err != nil {
		return res, false, fmt.Errorf("plan expiry of %s: %w", name, err)
	}
	leftovers, err := p.leftovers(ctx, l.PastJobs)
	if err != nil {
		return res, false, fmt.Errorf("plan expiry of %s: %w", name, err)
	}
	now := p.now()
	sel := expire.Select(tbl.Metadata(), now, retention, pinned...)
	if due, ok := expire.NextDue(tbl.Metadata(), now, retention, pinned...); ok {
		res.NextExpiryDue = &due
	}
	if sel.Empty() && len(leftovers) == 0 {
		res.Outcome = OutcomeNothingToDo
		res.Reason = fmt.Sprintf("no snapshot is due for expiry (%d snapshots; keep %d per branch, expire after %s)", len(tbl.Metadata().Snapshots()), retention.MinSnapshotsToKeep, retention.MaxSnapshotAge)
		if res.NextExpiryDue != nil {
			res.Reason += "; the next comes due at " + res.NextExpiryDue.UTC().Format(time.RFC3339)
		}
		return res, false, nil
	}
	pin := messages.Pin{MetadataLocation: tbl.MetadataLocation(), SnapshotID: snap.SnapshotID, SequenceNumber: snap.SequenceNumber}
	res.SnapshotID = pin.SnapshotID
	planObj := messages.ExpiryPlan{Version: messages.FormatVersion, JobID: jobID, Table: name, Pin: pin,
		Pinned: messages.IDs(pinned), Expire: messages.IDs(sel.ExpiredIDs()), RemoveRefs: sel.RemovedRefs, Leftovers: leftovers}
	body, err := messages.Encode(planObj)
	if err != nil {
		return res, false, err
	}
	job := jobs.Job{
		ID: jobID, Table: name, Kind: jobs.KindExpire, Trigger: trigger, Token: l.Token,
		MetadataLocation: pin.MetadataLocation, SnapshotID: pin.SnapshotID, SequenceNumber: pin.SequenceNumber,
	}
	if job.PlanKey, err = p.blobs.Put(ctx, "jobs/"+jobID+"/plan.json", body); err != nil {
		return res, false, fmt.Errorf("plan expiry of %s: %w", name, err)
	}
	job.PlanMillis = p.now().Sub(planStart).Milliseconds()
	if err := p.jobs.Create(ctx, job, nil); err != nil {
		return res, false, fmt.Errorf("plan expiry of %s: %w", name, err)
	}
	why := fmt.Sprintf("%d snapshots due for expiry", len(sel.Expired))
	if len(sel.RemovedRefs) > 0 {
		why += fmt.Sprintf(", %d refs past their max age", len(sel.RemovedRefs))
	}
	if len(leftovers) > 0 {
		why += fmt.Sprintf(", the deletions %d earlier expiries left", len(leftovers))
	}
	log.Info("expiry selected", "expire", len(sel.Expired), "remove_refs", sel.RemovedRefs, "pinned", pinned)
	return p.handToCommitter(ctx, log, res, job, why)
}

// pinsInFlight lists the snapshots pinned by the jobs among past that
// have not ended.
func (p *Planner) pinsInFlight(ctx context.Context, past []string) ([]int64, error) {
	js, err := p.pastJobs(ctx, past)
	if err != nil {
		return nil, err
	}
	var pins []int64
	for _, j := range js {
		if !j.State.Terminal() && j.SnapshotID != 0 {
			pins = append(pins, j.SnapshotID)
		}
	}
	return pins, nil
}

// leftovers lists the ended expiries among past whose deletions are not
// finished (jobs.Job.DeletionsLeft): the next expiry's committer finishes
// them.
func (p *Planner) leftovers(ctx context.Context, past []string) ([]string, error) {
	js, err := p.pastJobs(ctx, past)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, j := range js {
		if j.State.Terminal() && j.DeletionsLeft {
			out = append(out, j.ID)
		}
	}
	return out, nil
}
