package plan

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/outputs"
)

// cleanUpAfter removes, before the new job plans, the files that earlier
// jobs on the table wrote and that no snapshot references: every file of an
// attempt that did not win a committed group (losers, crashed and killed
// attempts, and all attempts of failed or aborted jobs). Those jobs' own
// clean-up normally removed them already; this pass catches what it could
// not see, such as a file written after its listing by an attempt that
// registered before the job ended, or a job whose clean-up never ran.
//
// Only ended jobs are cleaned up: a job still running (a superseded one,
// whose abort was just requested) is left for the next job. A job whose
// record is gone (DynamoDB TTL) is forgotten. Winners of committed jobs are
// never touched, nor those of a batched job's committed batches: their files
// are referenced by the table's snapshots (jobs.Job.Unreferenced). It
// holds the table's lease, so no other icekeeper job is writing the table.
// It returns how many files it removed. Errors are logged, never fatal:
// planning goes on.
//
// The lease item's past jobs stay bounded (MaxPastJobs): a job whose
// record is gone is forgotten even when the removal fails, and when more
// ended jobs are remembered than MaxPastJobs allows (their clean-up has
// kept failing), the oldest of them are forgotten, loud; what they left
// is unreferenced, for orphan cleanup. A job in flight or with deletions
// left is never forgotten: it pins snapshots (section 14 of DESIGN.md).
func (p *Planner) cleanUpAfter(ctx context.Context, log *slog.Logger, tbl *table.Table, name string, past []string) (removed int) {
	var attempts, done, gone []string
	var ended []string
	defer func() {
		forget := append(gone, overCap(len(past)-len(gone), ended)...)
		if len(forget) > len(gone) {
			log.Warn("clean-up: past jobs over the cap forgotten; what they left is for orphan cleanup", "max_past_jobs", MaxPastJobs, "forgotten", len(forget)-len(gone))
		}
		if err := p.leases.ForgetJobs(ctx, name, forget); err != nil {
			log.Warn("clean-up: forget past jobs", "err", err.Error())
		}
	}()
	for _, id := range past {
		j, err := p.jobs.Get(ctx, id)
		if errors.Is(err, jobs.ErrNotFound) {
			gone = append(gone, id)
			continue
		}
		if err != nil {
			log.Warn("clean-up: read past job", "past_job", id, "err", err.Error())
			continue
		}
		if !j.State.Terminal() || j.DeletionsLeft {
			// A job with deletions left is remembered until the table's
			// next expiry finishes them (ExpiryPlan.Leftovers).
			continue
		}
		groups, err := p.jobs.Groups(ctx, id)
		if err != nil {
			log.Warn("clean-up: read past job's groups", "past_job", id, "err", err.Error())
			continue
		}
		for _, g := range groups {
			attempts = append(attempts, j.Unreferenced(g)...)
		}
		// A commit that crashed in a rebase round, or a job that ended
		// without committing after one, leaves rebased deletes no record
		// names; they carry the job's rebase attempt ids.
		attempts = append(attempts, j.UnreferencedRebases(0)...)
		done = append(done, id)
	}
	ended = done
	if len(attempts) > 0 {
		n, err := outputs.RemoveAttempts(ctx, tbl, attempts)
		if err != nil {
			log.Warn("clean-up: remove past attempts' files", "err", err.Error())
			return 0 // keep the jobs, to try again next time
		}
		if n > 0 {
			log.Warn("clean-up: removed files earlier jobs left behind", "files", n, "past_jobs", done)
		}
		removed = n
	}
	gone = append(gone, done...)
	ended = nil
	return removed
}

// MaxPastJobs bounds the ended jobs a table's lease item remembers for
// clean-up (past_jobs, a string set of job ids of 25 characters): 2,000
// are about 50 KB of DynamoDB's 400 KB item (measured at the cap:
// TestBounds_ALeaseItemAtMaxPastJobsFitsAndGoneJobsAreForgotten) ("Quotas in Amazon DynamoDB",
// DynamoDB Developer Guide). Without it, a table whose clean-up keeps
// failing would add one id a job until the item is refused.
const MaxPastJobs = 2_000

// overCap is what of ended (jobs whose clean-up did not finish) is
// forgotten so that the remembered jobs, remembered of them, keep at most
// MaxPastJobs: the oldest first (job ids begin with their UTC start
// time), never one not in ended.
func overCap(remembered int, ended []string) []string {
	over := remembered - MaxPastJobs
	if over <= 0 || len(ended) == 0 {
		return nil
	}
	oldest := slices.Clone(ended)
	slices.Sort(oldest)
	return oldest[:min(over, len(oldest))]
}

// pastJobs reads the records of the jobs among past, in order; a job
// whose record is gone (DynamoDB TTL) is left out.
func (p *Planner) pastJobs(ctx context.Context, past []string) ([]jobs.Job, error) {
	var out []jobs.Job
	for _, id := range past {
		j, err := p.jobs.Get(ctx, id)
		if errors.Is(err, jobs.ErrNotFound) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("read past job %s: %w", id, err)
		}
		out = append(out, j)
	}
	return out, nil
}
