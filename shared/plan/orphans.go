package plan

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/expire"
	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/lease"
	"github.com/icekeeper/icekeeper/shared/messages"
	"github.com/icekeeper/icekeeper/shared/optin"
	"github.com/icekeeper/icekeeper/shared/orphans"
)

// ReasonOrphansRefused begins the reason of an orphan cleanup refused
// (orphans.ErrRefused): a location that may not be the table's own alone,
// a listed file that matches a reference but for its scheme or authority.
const ReasonOrphansRefused = "orphan cleanup refused: "

// PlanOrphanCleanup plans removing the table's orphan files: files under
// its location that no metadata file, snapshot or manifest references,
// older than the safety age (olderThan when positive, else the table's
// icekeeper.orphans.older-than, default 72h, never less than 24h), not
// written by a job still in flight. It refuses, with the reason, a table
// whose location may not be its own alone or whose files cannot be told
// apart from its references (orphans.ErrRefused: orphans.Find,
// orphans.Shared, which lists the catalog's tables when the planner's
// catalog can: orphans.Catalog), and one whose gc.enabled is false. Only files under data/ and metadata/ are
// deleted; others are reported in the plan. A table with at least
// Settings.OrphanListFanOutFiles live files is not listed here: the plan
// asks the committer to fan the listing out (messages.OrphanPlan.ListFanOut).
func (p *Planner) PlanOrphanCleanup(ctx context.Context, name, trigger string, olderThan time.Duration) (Result, error) {
	return p.underLease(ctx, name, trigger, func(ctx context.Context, log *slog.Logger, ident table.Identifier, name, jobID, trigger string, l lease.Lease) (Result, bool, error) {
		return p.planOrphansLeased(ctx, log, ident, name, jobID, trigger, l, olderThan)
	})
}

func (p *Planner) planOrphansLeased(ctx context.Context, log *slog.Logger, ident table.Identifier, name, jobID, trigger string, l lease.Lease, olderThan time.Duration) (res Result, started bool, err error) {
	res = Result{Table: name}
	planStart := p.now()
	tbl, err := p.loadLeased(ctx, log, ident, name, l, &res)
	if err != nil {
		return res, false, fmt.Errorf("plan orphan cleanup of %s: %w", name, err)
	}
	props := tbl.Properties()
	if gc, err := expire.GCEnabled(props); err != nil || !gc {
		res.Outcome, res.Reason = OutcomeNothingToDo, errors.Join(err, expire.ErrGCDisabled).Error()
		return res, false, nil
	}
	age, err := optin.OrphanAge(props, olderThan)
	if err != nil {
		return res, false, fmt.Errorf("plan orphan cleanup of %s: %w", name, err)
	}
	fanOut := p.settings.OrphanListFanOutFiles > 0 && liveFiles(tbl) >= p.settings.OrphanListFanOutFiles
	var (
		found                orphans.Found
		paths                []string
		deletable, elsewhere []string
		bytes                int64
		prefixes             []orphans.Prefix
	)
	if fanOut {
		// Too large to list here: the committer fans the listing out and
		// decides on what it finds; only the location is checked now.
		prefixes, err = orphans.Prefixes(ctx, tbl)
	} else {
		found, err = orphans.Find(ctx, tbl, orphans.Prefix{}, p.now().Add(-age))
		paths, bytes = orphans.Paths(found.Orphans)
	}
	if errors.Is(err, orphans.ErrNotListable) {
		res.Outcome, res.Reason = OutcomeNothingToDo, err.Error()
		return res, false, nil
	}
	if err == nil {
		cat, _ := p.catalog.(orphans.Catalog)
		err = orphans.Shared(ctx, tbl, found.Metadata, cat)
	}
	if errors.Is(err, orphans.ErrRefused) {
		res.Outcome, res.Reason = OutcomeNothingToDo, ReasonOrphansRefused+orphans.Why(err)
		log.Warn("orphan cleanup refused", "why", err.Error())
		return res, false, nil
	}
	if err != nil {
		return res, false, fmt.Errorf("plan orphan cleanup of %s: %w", name, err)
	}
	inFlight, err := p.attemptsInFlight(ctx, l.PastJobs)
	if err != nil {
		return res, false, fmt.Errorf("plan orphan cleanup of %s: %w", name, err)
	}
	if !fanOut {
		deletable, elsewhere = orphans.Deletable(tbl.Location(), paths, inFlight)
		if len(deletable) == 0 {
			res.Outcome = OutcomeNothingToDo
			res.Reason = fmt.Sprintf("no orphan file older than %s under data/ or metadata/", age)
			if len(elsewhere) > 0 {
				res.Reason += fmt.Sprintf(" (%d elsewhere under the location, left alone)", len(elsewhere))
			}
			return res, false, nil
		}
	}
	var pin messages.Pin
	if snap := tbl.CurrentSnapshot(); snap != nil {
		pin = messages.Pin{MetadataLocation: tbl.MetadataLocation(), SnapshotID: snap.SnapshotID, SequenceNumber: snap.SequenceNumber}
	}
	body, err := messages.Encode(messages.OrphanPlan{Version: messages.FormatVersion, JobID: jobID, Table: name, Pin: pin,
		OlderThanMillis: age.Milliseconds(), Files: len(deletable), Bytes: bytes, Elsewhere: elsewhere, InFlightAttempts: inFlight, ListFanOut: fanOut})
	if err != nil {
		return res, false, err
	}
	job := jobs.Job{
		ID: jobID, Table: name, Kind: jobs.KindRemoveOrphans, Trigger: trigger, Token: l.Token,
		MetadataLocation: pin.MetadataLocation, SnapshotID: pin.SnapshotID, SequenceNumber: pin.SequenceNumber,
	}
	if job.PlanKey, err = p.blobs.Put(ctx, "jobs/"+jobID+"/plan.json", body); err != nil {
		return res, false, fmt.Errorf("plan orphan cleanup of %s: %w", name, err)
	}
	job.PlanMillis = p.now().Sub(planStart).Milliseconds()
	if err := p.jobs.Create(ctx, job, nil); err != nil {
		return res, false, fmt.Errorf("plan orphan cleanup of %s: %w", name, err)
	}
	why := fmt.Sprintf("%d orphan files older than %s", len(deletable), age)
	if fanOut {
		why = fmt.Sprintf("orphan files older than %s, listed by %d tasks", age, len(prefixes))
	}
	return p.handToCommitter(ctx, log, res, job, why)
}

// liveFiles is the data and delete files of the table's current snapshot,
// from its summary (0 when it has none).
func liveFiles(tbl *table.Table) int64 {
	snap := tbl.CurrentSnapshot()
	if snap == nil || snap.Summary == nil {
		return 0
	}
	var n int64
	for _, k := range []string{"total-data-files", "total-delete-files"} {
		v, _ := strconv.ParseInt(snap.Summary.Properties[k], 10, 64)
		n += v
	}
	return n
}

// attemptsInFlight lists the attempts of the jobs among past that have
// not ended, their rebase attempts included: their files may still be
// committed.
func (p *Planner) attemptsInFlight(ctx context.Context, past []string) ([]string, error) {
	js, err := p.pastJobs(ctx, past)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, j := range js {
		if j.State.Terminal() {
			continue
		}
		groups, err := p.jobs.Groups(ctx, j.ID)
		if err != nil {
			return nil, fmt.Errorf("read groups of job %s: %w", j.ID, err)
		}
		for _, g := range groups {
			out = append(out, g.Attempts...)
		}
		// A job not ended has committed none of what it has not committed:
		// every batch's rebase may still land.
		out = append(out, j.UnreferencedRebases(0)...)
	}
	return out, nil
}
