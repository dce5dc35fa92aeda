package jobs

// Partial progress: a compaction whose owner asked for it
// (icekeeper.compaction.partial-progress.enabled) commits its groups in
// batches, one catalog commit per batch, instead of one commit for the
// whole job (Spark's rewrite_data_files partial-progress.enabled and
// partial-progress.max-commits).
//
// Group i belongs to batch i/BatchSize + 1 (batches are numbered from 1;
// batch 0 means "the whole job" everywhere). A batch commits when each of
// its groups is done; a failed group fails only its batch.
//
// The committing state serialises batch commits: the committer enters it
// for one batch (committing_batch) and leaves it with EndBatch, which
// records the batch's outcome (committed_batches, with the snapshot, or
// failed_batches, with the reason) and moves the job back to running, or,
// after the last batch, to its terminal state: committed when any batch
// committed, failed or aborted otherwise. Rewriters of other batches keep
// claiming while a batch commits (a claim touches only its own group and
// done_groups; the committing batch's groups are all settled already).
//
// Invariant: whenever a batched job is not committing, committed_batches
// names exactly the batches whose snapshots are in the table. A batch's
// catalog commit happens only in the committing state under the commit
// fence, and the only ways out of it (EndBatch, EndCommitting) look for the
// batch's snapshot first. The files of a committed batch's winners are
// referenced by the table and are never removed, whatever the job's end.

import (
	"context"
	"fmt"
	"sort"
	"strconv"
	"strings"

	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
	"github.com/google/uuid"
)

// Batched reports whether the job commits its groups in batches.
func (j Job) Batched() bool { return j.BatchSize > 0 && j.Groups > j.BatchSize }

// Batches is the number of commits the job makes: 1 unless it is batched.
func (j Job) Batches() int {
	if !j.Batched() {
		return 1
	}
	return (j.Groups + j.BatchSize - 1) / j.BatchSize
}

// BatchOf is the batch group belongs to (0 when the job is not batched).
func (j Job) BatchOf(group int) int {
	if !j.Batched() {
		return 0
	}
	return group/j.BatchSize + 1
}

// BatchGroups lists the group indexes of batch (every group for batch 0).
func (j Job) BatchGroups(batch int) []int {
	lo, hi := 0, j.Groups
	if batch > 0 && j.Batched() {
		lo, hi = (batch-1)*j.BatchSize, min(batch*j.BatchSize, j.Groups)
	}
	out := make([]int, 0, max(hi-lo, 0))
	for i := lo; i < hi; i++ {
		out = append(out, i)
	}
	return out
}

// BatchEnded reports whether batch has committed or failed.
func (j Job) BatchEnded(batch int) bool {
	_, ok := j.CommittedBatches[batch]
	_, bad := j.FailedBatches[batch]
	return ok || bad
}

// BatchDone reports whether every group of batch is done (from the job's
// done set; failed groups are on the group records).
func (j Job) BatchDone(batch int) bool {
	done := make(map[int]bool, len(j.DoneGroups))
	for _, g := range j.DoneGroups {
		done[g] = true
	}
	for _, g := range j.BatchGroups(batch) {
		if !done[g] {
			return false
		}
	}
	return true
}

// GroupsPerCommit is how many groups one commit of a job with groups groups
// takes when it may make at most maxCommits commits: Spark's
// groupsPerCommit, ceil(groups / maxCommits). A result of groups or more
// means one commit (the job is not batched).
func GroupsPerCommit(groups, maxCommits int) int {
	if maxCommits < 1 || groups < 1 {
		return groups
	}
	return (groups + maxCommits - 1) / maxCommits
}

// BeginBatch moves a batched job from planned or running to committing
// batch, owned by committer. It returns ErrStateConflict when the job is
// in neither state (another committer took it).
func (s *Store) BeginBatch(ctx context.Context, id string, batch int, committer string) error {
	if batch < 1 {
		return fmt.Errorf("jobs: begin batch %d of %s: batches are numbered from 1", batch, id)
	}
	return s.updateJob(ctx, id, "SET job_state = :committing, committer_id = :c, committing_batch = :b, updated_at = :now",
		"attribute_exists(job_id) AND (job_state = :planned OR job_state = :running) AND batch_size > :zero",
		map[string]types.AttributeValue{
			":committing": str(string(Committing)), ":c": str(committer), ":b": num(int64(batch)),
			":planned": str(string(Planned)), ":running": str(string(Running)), ":zero": num(0),
			":now": num(s.now().UnixMilli()),
		},
		func() error {
			return fmt.Errorf("%w: job %s cannot start committing batch %d for %s", ErrStateConflict, id, batch, committer)
		},
		func(err error) error { return fmt.Errorf("jobs: begin batch %d of %s: %w", batch, id, err) })
}

// BatchEnd is how a batch ended.
type BatchEnd struct {
	Batch int
	// SnapshotID is the batch's snapshot; 0 means the batch failed.
	SnapshotID int64
	// Reason says why it failed (or "committed").
	Reason string
	// Final is the job's state after this batch: Running while batches
	// remain, the terminal state after the last one; FinalReason its
	// reason.
	Final       State
	FinalReason string
}

// EndBatch records the outcome of the batch committer is committing and
// moves the job on to e.Final, only for the committing owner of that
// batch. It returns ErrStateConflict otherwise.
func (s *Store) EndBatch(ctx context.Context, id, committer string, e BatchEnd) error {
	if e.Final != Running && !e.Final.Terminal() {
		return fmt.Errorf("jobs: end batch %d of %s: %s is not running or terminal", e.Batch, id, e.Final)
	}
	vals := map[string]types.AttributeValue{
		":committing": str(string(Committing)), ":c": str(committer), ":b": num(int64(e.Batch)),
		":to": str(string(e.Final)), ":reason": str(boundReason(e.FinalReason)), ":now": num(s.now().UnixMilli()),
	}
	update := "SET job_state = :to, job_reason = :reason, updated_at = :now"
	if e.SnapshotID != 0 {
		vals[":entry"] = &types.AttributeValueMemberSS{Value: []string{fmt.Sprintf("%d:%d", e.Batch, e.SnapshotID)}}
		vals[":snap"] = num(e.SnapshotID)
		update += ", committed_snapshot = :snap ADD committed_batches :entry"
	} else {
		vals[":entry"] = &types.AttributeValueMemberSS{Value: []string{fmt.Sprintf("%d:%s", e.Batch, boundReason(e.Reason))}}
		update += " ADD failed_batches :entry"
	}
	update += " REMOVE committing_batch"
	return s.updateJob(ctx, id, update, "job_state = :committing AND committer_id = :c AND committing_batch = :b", vals,
		func() error {
			return fmt.Errorf("%w: job %s is not committing batch %d for %s", ErrStateConflict, id, e.Batch, committer)
		},
		func(err error) error { return fmt.Errorf("jobs: end batch %d of %s: %w", e.Batch, id, err) })
}

// decodeBatches reads the batch attributes of a job item.
func decodeBatches(it map[string]types.AttributeValue, j *Job) {
	j.BatchSize = int(getN(it, "batch_size"))
	j.CommittingBatch = int(getN(it, "committing_batch"))
	if ss, ok := it["committed_batches"].(*types.AttributeValueMemberSS); ok {
		j.CommittedBatches = map[int]int64{}
		for _, v := range ss.Value {
			b, snap, _ := strings.Cut(v, ":")
			bn, err1 := strconv.Atoi(b)
			sn, err2 := strconv.ParseInt(snap, 10, 64)
			if err1 == nil && err2 == nil {
				j.CommittedBatches[bn] = sn
			}
		}
	}
	if ss, ok := it["failed_batches"].(*types.AttributeValueMemberSS); ok {
		j.FailedBatches = map[int]string{}
		for _, v := range ss.Value {
			b, reason, _ := strings.Cut(v, ":")
			if bn, err := strconv.Atoi(b); err == nil {
				j.FailedBatches[bn] = reason
			}
		}
	}
}

// SortedBatches lists the keys of a batch map in order.
func SortedBatches[V any](m map[int]V) []int {
	out := make([]int, 0, len(m))
	for b := range m {
		out = append(out, b)
	}
	sort.Ints(out)
	return out
}

// WinnerCommitted reports whether g's winning attempt is in a committed
// snapshot of the table: the job committed (its one commit), or, for a
// batched job, g's batch did.
func (j Job) WinnerCommitted(g Group) bool {
	if g.State != GroupDone || g.Winner == "" {
		return false
	}
	if j.Batched() {
		_, ok := j.CommittedBatches[j.BatchOf(g.Index)]
		return ok
	}
	return j.State == Committed
}

// Unreferenced lists g's attempts whose files no committed snapshot
// references: all of them, or all but the winner when WinnerCommitted.
func (j Job) Unreferenced(g Group) []string {
	keep := j.WinnerCommitted(g)
	var out []string
	for _, a := range g.Attempts {
		if keep && a == g.Winner {
			continue
		}
		out = append(out, a)
	}
	return out
}

// rebaseNamespace derives a job's rebase attempt ids from its job id.
var rebaseNamespace = uuid.MustParse("4f1c7e2a-9b3d-4c5e-8a6f-0d2e1b3c4a5f")

// RebaseAttempt is the attempt id whose stem every delete file a job's
// rebase writes carries (package commit, rebase.go): fixed per job and
// batch (0 for a job's one commit), so that an abort, a committer taking
// over or the next job's clean-up finds them without a record. Each batch
// of a batched job has its own: removing what an uncommitted batch's
// rebase wrote must never touch the rebased deletes of a batch that
// committed, which the table references.
func RebaseAttempt(jobID string, batch int) string {
	name := jobID
	if batch > 0 {
		name = fmt.Sprintf("%s/batch/%d", jobID, batch)
	}
	return uuid.NewSHA1(rebaseNamespace, []byte(name)).String()[:32] + "0000"
}

// UnreferencedRebases lists the rebase attempts (RebaseAttempt) of a
// compaction whose files no committed snapshot references: those of every
// batch (or of its one commit) that did not commit, limited to batch when
// it is not 0. A committed round's rebased deletes share their attempt's
// name with the rounds before it that conflicted, so a committed batch's
// attempt is never listed: its earlier rounds' files are removed by the
// committer when the round fails (removeRebased), not by name.
func (j Job) UnreferencedRebases(batch int) []string {
	if j.Kind != KindCompaction {
		return nil
	}
	batches := []int{0}
	switch {
	case batch > 0:
		batches = []int{batch}
	case j.Batched():
		batches = batches[:0]
		for b := 1; b <= j.Batches(); b++ {
			batches = append(batches, b)
		}
	}
	var out []string
	for _, b := range batches {
		if _, ok := j.CommittedBatches[b]; !ok && !(b == 0 && j.State == Committed) {
			out = append(out, RebaseAttempt(j.ID, b))
		}
	}
	return out
}
