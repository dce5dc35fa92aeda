package plan

import (
	"context"
	"fmt"
	"log/slog"
	"strings"

	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/lease"
	"github.com/icekeeper/icekeeper/shared/messages"
)

// LayoutChange is a layout the table's query signals recommend changing
// to (signals.Recommendation with Change set).
type LayoutChange struct {
	// Layout is "sort" or "z-order".
	Layout  string
	Columns []string
	Why     string
	// Verdict, when set ("keep" or "revert", package layouttrial),
	// settles the table's layout trial instead: Layout and Columns are
	// the trial's, Trial its property's value (layouttrial.PropertyTrial).
	Verdict string
	Trial   string
}

// PlanLayoutChange plans a layout change job for the named table: the
// committer makes the table's default sort order (or its z-order columns)
// the change's, unless the owner changed the order meanwhile (see
// commit's changeLayout). Only for an owner who set icekeeper.layout.auto;
// the trigger checks that.
func (p *Planner) PlanLayoutChange(ctx context.Context, name, trigger string, change LayoutChange) (Result, error) {
	return p.underLease(ctx, name, trigger, func(ctx context.Context, log *slog.Logger, ident table.Identifier, name, jobID, trigger string, l lease.Lease) (Result, bool, error) {
		res := Result{Table: name}
		if change.Layout != "sort" && change.Layout != "z-order" || len(change.Columns) == 0 {
			return res, false, fmt.Errorf("plan layout change of %s: %q on %v is not a layout", name, change.Layout, change.Columns)
		}
		tbl, err := p.loadLeased(ctx, log, ident, name, l, &res)
		if err != nil {
			return res, false, fmt.Errorf("plan layout change of %s: %w", name, err)
		}
		pin := messages.Pin{MetadataLocation: tbl.MetadataLocation()}
		if snap := tbl.CurrentSnapshot(); snap != nil {
			pin.SnapshotID, pin.SequenceNumber = snap.SnapshotID, snap.SequenceNumber
		}
		res.SnapshotID = pin.SnapshotID
		body, err := messages.Encode(messages.LayoutPlan{Version: messages.FormatVersion, JobID: jobID, Table: name, Pin: pin,
			Layout: change.Layout, Columns: change.Columns, FromOrderID: tbl.Metadata().DefaultSortOrder(), Why: change.Why,
			At: p.now().UTC(), Verdict: change.Verdict, Trial: change.Trial})
		if err != nil {
			return res, false, err
		}
		job := jobs.Job{ID: jobID, Table: name, Kind: jobs.KindChangeLayout, Trigger: trigger, Token: l.Token,
			MetadataLocation: pin.MetadataLocation, SnapshotID: pin.SnapshotID, SequenceNumber: pin.SequenceNumber}
		if job.PlanKey, err = p.blobs.Put(ctx, "jobs/"+jobID+"/plan.json", body); err != nil {
			return res, false, fmt.Errorf("plan layout change of %s: %w", name, err)
		}
		if err := p.jobs.Create(ctx, job, nil); err != nil {
			return res, false, fmt.Errorf("plan layout change of %s: %w", name, err)
		}
		what := fmt.Sprintf("%s on %s: %s", change.Layout, strings.Join(change.Columns, ", "), change.Why)
		if change.Verdict != "" {
			what = fmt.Sprintf("layout trial of the %s on %s: %s: %s", change.Layout, strings.Join(change.Columns, ", "), change.Verdict, change.Why)
		}
		return p.handToCommitter(ctx, log, res, job, what)
	})
}
