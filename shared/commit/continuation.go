package commit

import (
	"context"
	"log/slog"
	"time"

	"github.com/icekeeper/icekeeper/events"
	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/messages"
)

// Cooldowns reopens a table's planning slot (lease.CooldownStore).
type Cooldowns interface {
	SetNext(ctx context.Context, table string, next time.Time) error
}

// Announcer puts one event on icekeeper's bus (audit.Publisher).
type Announcer interface {
	Publish(ctx context.Context, detailType string, detail any) error
}

// chainResumesAfter are the kinds of job after which the table's
// maintenance chain (trigger.Dispatcher's plan: layout change, compaction,
// delete-file rewrite, manifest rewrite, snapshot expiry) resumes at once:
// each replaces files that only a later action (the expiry above all)
// frees. Without it a table whose compaction is due at every visit never
// reached its expiry, one job a visit, and its storage grew with every
// compaction (the soak harness, docs/PERFORMANCE.md).
var chainResumesAfter = map[jobs.Kind]bool{
	jobs.KindCompaction:       true,
	jobs.KindRewriteDeletes:   true,
	jobs.KindRewriteManifests: true,
}

// continueCompaction runs after a job committed and its lease was released.
// When the planner left groups of the compaction for later jobs because of
// the committer's file cap alone (jobs.Job.Continues, DeferredGroups), it
// reopens the table's cooldown and announces the continuation, so that the
// next job is planned now instead of a cooldown (ICEKEEPER_MIN_INTERVAL, an
// hour by default) later. Groups the owner's
// icekeeper.compaction.max-bytes-per-job left (a layout rolling out
// gradually) wait for the planner's later visits, as the owner asked.
//
// Otherwise, after a compaction, delete-file rewrite or manifest rewrite,
// it announces that the chain resumes after the job's kind
// (events.Continuation.ResumeAfter) without reopening the cooldown: the
// planner then plans only the later actions that are due, so the chain
// moves forward and ends (at most one job of each later action per
// committed job), and a busy table's compactions stay a cooldown apart.
//
// Both steps are best effort: the commit stands either way. The cooldown is
// reopened first, so the announcement's planner visit finds the slot free;
// should the announcement be lost, the next trigger or sweep finds it free.
// The event changes nothing by itself: the planner claims the slot as for
// any event, so a duplicate delivery, or a writer's commit event that
// arrived first, plans once; a duplicate chain continuation finds the
// lease held or the later action no longer due. A crash between the
// commit's bookkeeping and this leaves the table to its normal cooldown.
func (c *Committer) continueCompaction(ctx context.Context, log *slog.Logger, job jobs.Job, res *Result) {
	if c.cooldowns == nil || c.announcer == nil {
		return
	}
	if !job.Continues || job.DeferredGroups <= 0 {
		c.resumeChain(ctx, log, job, res)
		return
	}
	ctx = context.WithoutCancel(ctx)
	log = log.With("deferred_groups", job.DeferredGroups, "deferred_bytes", job.DeferredBytes)
	// Reopened to the epoch, not to this committer's now: a planner whose
	// clock is behind this one's must find the slot free too.
	if err := c.cooldowns.SetNext(ctx, job.Table, time.Unix(0, 0)); err != nil {
		log.Warn("the compaction's next job waits for the cooldown: reopen the table's cooldown", "err", err.Error())
		return
	}
	ident, err := messages.TableIdent(job.Table)
	var detail events.Continuation
	if err == nil {
		detail, err = events.NewContinuation(ident, job.ID, job.DeferredGroups, job.DeferredBytes)
	}
	if err == nil {
		err = c.announcer.Publish(ctx, events.DetailTypeContinue, detail)
	}
	if err != nil {
		log.Warn("the compaction's next job waits for the next trigger or sweep: announce it", "err", err.Error())
		return
	}
	res.Continued = true
	log.Info("compaction continues: its next job can be planned now")
}

// resumeChain announces that the table's maintenance chain resumes after
// the committed job (continueCompaction).
func (c *Committer) resumeChain(ctx context.Context, log *slog.Logger, job jobs.Job, res *Result) {
	if !chainResumesAfter[job.Kind] {
		return
	}
	ident, err := messages.TableIdent(job.Table)
	var detail events.Continuation
	if err == nil {
		detail, err = events.NewChainContinuation(ident, job.ID, string(job.Kind))
	}
	if err == nil {
		err = c.announcer.Publish(context.WithoutCancel(ctx), events.DetailTypeContinue, detail)
	}
	if err != nil {
		log.Warn("the rest of the maintenance chain waits for the next trigger or sweep: announce it", "err", err.Error())
		return
	}
	res.ChainResumed = true
	log.Info("maintenance chain resumes after this job", "resume_after", string(job.Kind))
}
