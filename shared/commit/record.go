package commit

import (
	"context"
	"errors"
	"math"
	"runtime/debug"
	"time"

	"github.com/icekeeper/icekeeper/shared/health"
	"github.com/icekeeper/icekeeper/shared/joblog"
	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/messages"
	"github.com/icekeeper/icekeeper/shared/pruning"
)

// Recorder writes the maintenance log.
type Recorder interface {
	Write(ctx context.Context, r joblog.Record) (string, error)
}

// record writes the log record of a job this call ended. Failures are
// logged only: the job's outcome is already decided.
func (c *Committer) record(ctx context.Context, res Result, took time.Duration) {
	if c.recorder == nil || res.JobID == "" {
		return
	}
	switch res.Outcome {
	case OutcomeCommitted, OutcomeFailed, OutcomeAborted:
	default:
		return
	}
	if res.batchOnly {
		return // one record per job, written when its last batch ends
	}
	// The measures the record takes (the table before and after, what the
	// job saved its queries) read every manifest of the table twice or more:
	// on a table large for the function they can outlast the invocation,
	// which Lambda would end after the commit landed, and the redelivered
	// request would measure again. They stop RecordMargin before the
	// invocation's deadline (on Lambda, aws-lambda-go sets ctx's deadline
	// from the Runtime API's Lambda-Runtime-Deadline-Ms header:
	// lambda/invoke_loop.go), and the record is written without what they
	// did not finish.
	write := context.WithoutCancel(ctx)
	measure, cancel := write, context.CancelFunc(func() {})
	if dl, ok := ctx.Deadline(); ok {
		measure, cancel = context.WithDeadline(write, dl.Add(-RecordMargin))
	}
	defer cancel()
	r, err := c.buildRecord(write, measure, res, took)
	if err == nil {
		_, err = c.recorder.Write(write, r)
	}
	if err != nil {
		c.log.Warn("maintenance log record not written", "job_id", res.JobID, "err", err.Error())
	}
}

// RecordMargin is how long before the invocation's deadline the maintenance
// log record's measures stop, leaving the time to write the record.
const RecordMargin = 15 * time.Second

// buildRecord builds the record of a job from its job and group records
// (read with ctx) and measures of the table (read with measure, which may
// end first: a measure it cuts short is left out of the record).
func (c *Committer) buildRecord(ctx, measure context.Context, res Result, took time.Duration) (joblog.Record, error) {
	job, err := c.jobs.Get(ctx, res.JobID)
	if err != nil {
		return joblog.Record{}, err
	}
	r := joblog.Record{
		JobID: job.ID, Table: job.Table, Kind: string(job.Kind), Trigger: job.Trigger, Outcome: string(job.State), Reason: job.Reason,
		SnapshotsExpired: res.SnapshotsExpired, FilesDeleted: res.FilesDeleted, BytesFreed: res.BytesFreed,
		ManifestsRewritten: res.ManifestsRewritten, ManifestsAdded: res.ManifestsAdded, OrphansRemoved: res.OrphansRemoved,
		Parameters:       joblog.Parameters{TargetFileSize: job.TargetFileSize, LeaseToken: job.Token, SequenceNumber: job.SequenceNumber},
		PinnedSnapshotID: messages.ID(job.SnapshotID), PinnedMetadata: job.MetadataLocation, CommittedSnapshotID: messages.ID(job.CommittedSnapshotID),
		Groups: job.Groups, GroupsDone: len(job.DoneGroups), FilesIn: job.InputFiles, BytesIn: job.InputBytes,
		DeleteFilesOut: res.DeletesRemoved, DeletesRebased: res.DeletesRebased, PlanMillis: job.PlanMillis, CommitMillis: took.Milliseconds(),
		CreatedAt: job.CreatedAt, EndedAt: job.UpdatedAt,
	}
	if job.Batched() {
		r.Batches = job.Batches()
		r.CommittedBatches = map[int]messages.ID{}
		for b, snap := range job.CommittedBatches {
			r.CommittedBatches[b] = messages.ID(snap)
		}
	}
	groups, err := c.jobs.Groups(ctx, job.ID)
	if err != nil {
		return r, err
	}
	inputs := map[string]bool{}
	for _, g := range groups {
		r.Attempts += len(g.Attempts)
		if g.State != jobs.GroupDone || g.DescriptorKey == "" {
			continue
		}
		if job.Batched() && !job.WinnerCommitted(g) {
			continue // its batch failed: nothing of it is in the table
		}
		b, err := c.blobs.Get(ctx, g.DescriptorKey)
		if err != nil {
			continue // the job's end is recorded even if a descriptor is gone
		}
		var d messages.Descriptor
		if messages.Decode(b, &d) != nil {
			continue
		}
		for _, p := range d.InputPaths {
			inputs[p] = true
		}
		k := d.Counters
		r.RowsIn += k.RowsBeforeDeletes
		// The rows a scan returns after the job: what a compaction wrote
		// (its rows_written equals rows_scanned), and what a delete-file
		// rewrite left as it was (its rows_written counts deletes).
		r.RowsOut += k.RowsScanned
		r.FilesOut += int64(k.FilesOut)
		r.BytesOut += k.BytesOut
		r.DeletedRows += k.RowsBeforeDeletes - k.RowsScanned
		r.RewriteMillis += k.DurationMillis
		r.RewriteWallMillis = max(r.RewriteWallMillis, k.DurationMillis)
	}
	ident, err := messages.TableIdent(job.Table)
	if err != nil {
		return r, err
	}
	// The kinds whose reads the ledger weighs (ledger.Kinds).
	weighed := job.Kind == jobs.KindCompaction || job.Kind == jobs.KindRewriteDeletes
	tooLarge := false
	pin := job.Pin()
	pinned, err := c.tables.Open(ctx, ident, pin)
	if err == nil {
		if st, err := health.Measure(measure, pinned); err == nil {
			r.Before = tableStats(st)
		}
	}
	if job.State == jobs.Committed {
		cur, err := c.catalog.LoadTable(ctx, ident)
		if err != nil {
			return r, errors.Join(errors.New("load the committed table"), err)
		}
		if st, err := health.Measure(measure, cur); err == nil {
			r.After = tableStats(st)
		}
		if pinned != nil && len(inputs) > 0 && weighed {
			snaps := map[int64]bool{job.CommittedSnapshotID: true}
			for _, s := range job.CommittedBatches {
				snaps[s] = true
			}
			reads, err := pruning.Compare(measure, pinned, cur, pruning.Rewrite{Inputs: inputs, Snapshots: snaps, SequenceNumber: job.SequenceNumber, MaxBytes: recordMemory()})
			if err != nil {
				tooLarge = errors.Is(err, pruning.ErrTooLarge)
				c.log.Warn("reads before and after not measured", "job_id", job.ID, "err", err.Error())
			} else {
				r.Reads = &reads
			}
		}
	}
	// A measure that failed after the measures' deadline was cut short;
	// reads too large to measure in the memory the function has are left
	// out the same way.
	missing := r.Before == nil || (job.State == jobs.Committed && (r.After == nil || (weighed && len(inputs) > 0 && r.Reads == nil)))
	r.Unmeasured = missing && (measure.Err() != nil || tooLarge)
	r.Cost = joblog.Estimate(r, c.rewriterMB, c.coordinatorMB)
	return r, nil
}

// recordMemory is the memory the record's reads may hold: half of the
// process's Go memory limit (set from the function's memory on Lambda,
// shared/stage), none without a limit. The commit's own memory is
// released by then.
func recordMemory() int64 {
	limit := debug.SetMemoryLimit(-1)
	if limit <= 0 || limit == math.MaxInt64 {
		return 0
	}
	return limit / 2
}

func tableStats(s health.Stats) *joblog.TableStats {
	return &joblog.TableStats{DataFiles: s.DataFiles, DataBytes: s.DataBytes, DeleteFiles: s.DeleteFiles(), Snapshots: s.Snapshots}
}
