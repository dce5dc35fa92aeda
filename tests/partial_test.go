package tests

import (
	"fmt"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/icekeeper/icekeeper/shared/commit"
	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/harness/sampletable"
	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/messages"
	"github.com/icekeeper/icekeeper/shared/optin"
	"github.com/icekeeper/icekeeper/shared/outputs"
	"github.com/icekeeper/icekeeper/shared/plan"
)

// fourPartitions has one compaction group per partition: four groups.
var fourPartitions = sampletable.Options{FormatVersion: 2, Partitions: 4, Files: 6, RowsPerFile: 50, PositionDeletes: true, EqualityDeletes: true}

// partialTable creates a table of o's shape with partial progress on, at
// most maxCommits commits per compaction.
func (e *env) partialTable(o sampletable.Options, maxCommits int) {
	e.t.Helper()
	e.createTable(o)
	txn := e.load().NewTransaction()
	if err := txn.SetProperties(iceberg.Properties{
		optin.PropertyPartialProgressEnabled:    "true",
		optin.PropertyPartialProgressMaxCommits: strconv.Itoa(maxCommits),
	}); err != nil {
		e.t.Fatal(err)
	}
	if _, err := txn.Commit(e.ctx); err != nil {
		e.t.Fatal(err)
	}
}

// planBatched plans a compaction and checks that it is batched in batches.
func (e *env) planBatched(batches int) (plan.Result, messages.Plan) {
	e.t.Helper()
	r := e.plan()
	if r.Outcome != plan.OutcomePlanned {
		e.t.Fatalf("plan: %s (%s)", r.Outcome, r.Reason)
	}
	if want := map[bool]int{true: batches, false: 0}[batches > 1]; r.Batches != want {
		e.t.Fatalf("plan result says %d batches, want %d", r.Batches, want)
	}
	if j := e.job(r.JobID); j.Batches() != batches {
		e.t.Fatalf("job has %d groups in %d batches of %d, want %d batches", j.Groups, j.Batches(), j.BatchSize, batches)
	}
	raw, err := e.deps.Blobs.Get(e.ctx, e.job(r.JobID).PlanKey)
	if err != nil {
		e.t.Fatal(err)
	}
	var p messages.Plan
	if err := messages.Decode(raw, &p); err != nil {
		e.t.Fatal(err)
	}
	return r, p
}

// batchSnapshots maps each batch of the job to the snapshots stamped with
// it ("" for a snapshot stamped with the job but no batch).
func (e *env) batchSnapshots(jobID string) map[string]int {
	out := map[string]int{}
	for _, s := range e.load().Metadata().Snapshots() {
		if s.Summary != nil && s.Summary.Properties[commit.SummaryJobID] == jobID {
			out[s.Summary.Properties[messages.SummaryBatch]]++
		}
	}
	return out
}

// batchInputs is the input files of a batch's groups.
func batchInputs(j jobs.Job, p messages.Plan, batch int) map[string]bool {
	out := map[string]bool{}
	for _, g := range j.BatchGroups(batch) {
		for _, path := range p.Groups[g].InputPaths {
			out[path] = true
		}
	}
	return out
}

// requireOnlyReferencedJobFiles fails the test when a file any attempt or
// rebase of the job wrote is on disk but not referenced by the table.
func (e *env) requireOnlyReferencedJobFiles(jobID string) {
	e.t.Helper()
	live := e.referencedFiles()
	for _, p := range e.jobFilesOnDisk(jobID) {
		if !strings.HasPrefix(p, "file://") {
			p = "file://" + p
		}
		if !live[p] {
			e.t.Fatalf("job file %s is on disk but not in the table", p)
		}
	}
}

// TestPartialProgress_BatchesCommitOneSnapshotEachAndKeepEveryRow: with
// partial progress on and at most 3 commits, a job of 4 groups commits in
// 2 batches of 2 (Spark's groups per commit, ceil(4/3)), one snapshot per
// batch stamped with it; every input file is replaced, every row is there
// once, and nothing the job wrote is left outside the table.
func TestPartialProgress_BatchesCommitOneSnapshotEachAndKeepEveryRow(t *testing.T) {
	for _, version := range []int{2, 3} {
		t.Run(fmt.Sprintf("v%d", version), func(t *testing.T) {
			e := setup(t)
			o := fourPartitions
			o.FormatVersion = version
			e.partialTable(o, 3)
			want := e.fingerprint()
			r, p := e.planBatched(2)
			e.drainTasks()
			e.drainCommits()
			e.requireCommitted(r.JobID, want)
			j := e.job(r.JobID)
			if len(j.CommittedBatches) != 2 || len(j.FailedBatches) != 0 || !strings.Contains(j.Reason, "2 of 2 batches committed") {
				t.Fatalf("job: committed %v, failed %v (%s)", j.CommittedBatches, j.FailedBatches, j.Reason)
			}
			if got := e.batchSnapshots(r.JobID); got["1"] != 1 || got["2"] != 1 || len(got) != 2 {
				t.Fatalf("snapshots per batch %v, want one for each of batches 1 and 2", got)
			}
			live := map[string]bool{}
			for _, task := range e.liveTasks() {
				live[task.File.FilePath()] = true
			}
			for b := 1; b <= 2; b++ {
				for path := range batchInputs(j, p, b) {
					if live[path] {
						t.Fatalf("input %s of batch %d is still live", path, b)
					}
				}
			}
			e.requireOnlyReferencedJobFiles(r.JobID)
		})
	}
}

// TestPartialProgress_OneBatchIsOneAtomicCommit: max-commits 1 (or more
// commits than the job has groups would need at least two) keeps a job of
// four groups one atomic commit, with no batch stamp.
func TestPartialProgress_OneBatchIsOneAtomicCommit(t *testing.T) {
	e := setup(t)
	e.partialTable(fourPartitions, 1)
	want := e.fingerprint()
	r, _ := e.planBatched(1)
	e.drainTasks()
	e.drainCommits()
	e.requireCommitted(r.JobID, want)
	if got := e.batchSnapshots(r.JobID); got[""] != 1 || len(got) != 1 {
		t.Fatalf("snapshots per batch %v, want the job's one commit", got)
	}
}

// TestPartialProgress_AFailedGroupFailsOnlyItsBatch: a group of batch 1
// cannot be rewritten (one of its files is gone). Batch 1 fails, and its
// other group's new files are removed; batch 2 commits. The job ends
// committed with batch 1's failure in its reason, and once the file is
// back every row is there once.
func TestPartialProgress_AFailedGroupFailsOnlyItsBatch(t *testing.T) {
	e := setup(t)
	e.partialTable(fourPartitions, 2)
	want := e.fingerprint()
	r, p := e.planBatched(2)
	j := e.job(r.JobID)
	victim := strings.TrimPrefix(p.Groups[j.BatchGroups(1)[0]].InputPaths[0], "file://")
	restore := e.hideFile(victim)
	e.drainTasks()
	e.drainCommits()
	restore()
	e.requireCommitted(r.JobID, want)
	j = e.job(r.JobID)
	if _, ok := j.CommittedBatches[2]; !ok || len(j.CommittedBatches) != 1 {
		t.Fatalf("committed batches %v, want batch 2 only", j.CommittedBatches)
	}
	if why, ok := j.FailedBatches[1]; !ok || !strings.Contains(why, "group") {
		t.Fatalf("failed batches %v, want batch 1 failed for its group", j.FailedBatches)
	}
	if !strings.Contains(j.Reason, "1 of 2 batches committed") || !strings.Contains(j.Reason, "batch 1:") {
		t.Fatalf("job reason %q does not say batch 1 failed", j.Reason)
	}
	live := map[string]bool{}
	for _, task := range e.liveTasks() {
		live[task.File.FilePath()] = true
	}
	for path := range batchInputs(j, p, 1) {
		if !live[path] {
			t.Fatalf("input %s of the failed batch is gone", path)
		}
	}
	e.requireOnlyReferencedJobFiles(r.JobID)
}

// TestPartialProgress_ACrashAfterEachBatchCommitLandsEachBatchOnce: the
// committer dies right after the catalog accepted each batch, before any
// bookkeeping. The committer that takes over finds the batch's snapshot
// and records it instead of committing it again; redelivered requests for
// either batch change nothing.
func TestPartialProgress_ACrashAfterEachBatchCommitLandsEachBatchOnce(t *testing.T) {
	const takeover = time.Second
	e := setup(t, func(c *config.Config) { c.CommitTakeover = takeover })
	e.partialTable(fourPartitions, 2)
	want := e.fingerprint()
	r, _ := e.planBatched(2)
	e.drainTasks()
	crashed := map[int]bool{}
	e.committer.SetAfterCatalogCommit(func(string) error {
		b := len(e.job(r.JobID).CommittedBatches) + len(crashed) + 1
		if !crashed[b] && len(crashed) < 2 {
			crashed[b] = true
			return fmt.Errorf("simulated crash after batch %d's catalog commit", b)
		}
		return nil
	})
	req := messages.CommitJob(r.JobID)
	for round := 1; e.job(r.JobID).State != jobs.Committed; round++ {
		if round > 6 {
			t.Fatalf("job %s after %d rounds", e.job(r.JobID).State, round)
		}
		if _, err := e.committer.Handle(e.ctx, req, 1); err != nil {
			time.Sleep(takeover + 100*time.Millisecond)
		}
	}
	if len(crashed) != 2 {
		t.Fatalf("crashed after %d batches, want both", len(crashed))
	}
	e.requireCommitted(r.JobID, want)
	if got := e.batchSnapshots(r.JobID); got["1"] != 1 || got["2"] != 1 {
		t.Fatalf("snapshots per batch %v, want exactly one each", got)
	}
	snaps := len(e.load().Metadata().Snapshots())
	for b := 1; b <= 2; b++ {
		res, err := e.committer.Handle(e.ctx, messages.CommitBatch(r.JobID, b), 1)
		if err != nil || res.Outcome != commit.OutcomeAlready {
			t.Fatalf("redelivered batch %d: %+v %v", b, res, err)
		}
	}
	if n := len(e.load().Metadata().Snapshots()); n != snaps {
		t.Fatalf("redelivered requests made %d snapshots", n-snaps)
	}
	e.requireOnlyReferencedJobFiles(r.JobID)
}

// TestPartialProgress_AConflictAbortsOnlyItsBatchAndKeepsTheOthersRebasedDeletes:
// while the job runs, a writer deletes rows of batch 1's files (position
// deletes or DVs) and another tool undoes a
// delete that applies only to batch 2's inputs. Batch 1 rebases the
// writer's deletes and commits; batch 2 cannot hide the undone rows and
// aborts, removing what it wrote and never what batch 1 rebased: the rows
// are exactly the table's as the writers left it.
func TestPartialProgress_AConflictAbortsOnlyItsBatchAndKeepsTheOthersRebasedDeletes(t *testing.T) {
	for _, version := range []int{2, 3} {
		t.Run(fmt.Sprintf("v%d", version), func(t *testing.T) {
			e := setup(t)
			o := fourPartitions
			o.FormatVersion = version
			e.partialTable(o, 2)
			r, p := e.planBatched(2)
			j := e.job(r.JobID)
			e.drainTasks()
			// The writer deletes rows of batch 1's partitions only: on v3
			// its DVs replace the older ones of the files it touches, and
			// batch 2 must keep an older delete to be undone.
			regionOf := sampletable.RegionOf(o.Partitions, o.RowsPerFile)
			inBatch1 := func(id int64) bool {
				for _, g := range j.BatchGroups(1) {
					if strings.Contains(p.Groups[g].Partition, regionOf(id)) {
						return true
					}
				}
				return false
			}
			var ids []int64
			for id := int64(3); id < int64(o.Partitions*o.Files*o.RowsPerFile); id += 37 {
				if inBatch1(id) {
					ids = append(ids, id)
				}
			}
			if len(ids) == 0 {
				t.Fatal("no row of batch 1 to delete")
			}
			if _, err := sampletable.DeleteByPosition(e.ctx, e.load(), ids); err != nil {
				t.Fatal(err)
			}
			e.undeleteOnly(batchInputs(j, p, 2), j.SequenceNumber)
			want := e.fingerprint()
			e.drainCommits()
			e.requireCommitted(r.JobID, want)
			j = e.job(r.JobID)
			if _, ok := j.CommittedBatches[1]; !ok || len(j.CommittedBatches) != 1 {
				t.Fatalf("committed batches %v, want batch 1 only (%s)", j.CommittedBatches, j.Reason)
			}
			if why := j.FailedBatches[2]; !strings.Contains(why, undoneDelete) {
				t.Fatalf("batch 2 failed for %q, want %q", why, undoneDelete)
			}
			rebased := 0
			live := e.referencedFiles()
			for path := range e.filesOnDisk() {
				if outputs.OfAttempt(path, jobs.RebaseAttempt(r.JobID, 1)) && live[path] {
					rebased++
				}
				if outputs.OfAttempt(path, jobs.RebaseAttempt(r.JobID, 2)) {
					t.Fatalf("the aborted batch left its rebased delete %s", path)
				}
			}
			if rebased == 0 {
				t.Fatal("batch 1 rebased no delete; the test needs one")
			}
			e.requireOnlyReferencedJobFiles(r.JobID)
		})
	}
}

// undeleteOnly removes one live position delete file or deletion vector
// from before the pin (sequence number at most pinned) whose every target
// is in targets, as another tool undoing a delete would.
func (e *env) undeleteOnly(targets map[string]bool, pinned int64) {
	e.t.Helper()
	e.undeleteWhere(func(ent iceberg.ManifestEntry) bool {
		if ent.SequenceNum() > pinned {
			return false
		}
		paths, err := positionDeleteTargets(ent.DataFile())
		if err != nil {
			e.t.Fatal(err)
		}
		for _, p := range paths {
			if !targets[p] {
				return false
			}
		}
		return len(paths) > 0
	})
}

// TestPartialProgress_EndingTheJobKeepsItsCommittedBatches: batch 1
// commits, then the job is ended before batch 2 is rewritten (as the
// planner ends a stalled job). The job ends committed with one of two
// batches, batch 1's new files stay (the table references them), and the
// next job's clean-up after it keeps them too.
func TestPartialProgress_EndingTheJobKeepsItsCommittedBatches(t *testing.T) {
	e := setup(t)
	e.partialTable(fourPartitions, 2)
	want := e.fingerprint()
	r, _ := e.planBatched(2)
	e.rewriteBatch(r.JobID, 1)
	e.drainCommits()
	var j jobs.Job
	if j = e.job(r.JobID); j.State != jobs.Running || len(j.CommittedBatches) != 1 {
		t.Fatalf("after batch 1: %s, committed %v (%s)", j.State, j.CommittedBatches, j.Reason)
	}
	res, err := e.committer.Handle(e.ctx, messages.AbortJob(r.JobID, "stalled", messages.FailStalled), 1)
	if err != nil || res.Outcome != commit.OutcomeCommitted {
		t.Fatalf("ending the job: %+v %v", res, err)
	}
	e.drainTasks() // batch 2's tasks find the job ended
	e.requireCommitted(r.JobID, want)
	if j = e.job(r.JobID); !strings.Contains(j.Reason, "1 of 2 batches committed") {
		t.Fatalf("job reason %q", j.Reason)
	}
	e.requireOnlyReferencedJobFiles(r.JobID)
	if got := e.fingerprint(); got != want {
		t.Fatalf("rows %s after the job ended, want %s", got, want)
	}
	// The next job cleans up after this one and keeps batch 1's files.
	e.plan()
	if got := e.fingerprint(); got != want {
		t.Fatalf("rows %s after the next job's clean-up, want %s", got, want)
	}
}

// rewriteBatch runs the rewriter on the task messages of one batch of the
// job, and leaves the others in the queue.
func (e *env) rewriteBatch(jobID string, batch int) {
	e.t.Helper()
	j := e.job(jobID)
	keep := func(group int) bool { return j.BatchOf(group) == batch }
	var handles []string
	for {
		msgs, err := e.deps.Tasks.Receive(e.ctx, 10, 0, 60)
		if err != nil {
			e.t.Fatal(err)
		}
		if len(msgs) == 0 {
			break
		}
		for _, m := range msgs {
			var task messages.Task
			if err := messages.Decode([]byte(m.Body), &task); err != nil {
				e.t.Fatal(err)
			}
			if !keep(task.Group) {
				handles = append(handles, m.ReceiptHandle)
				continue
			}
			if _, err := e.rewriter.Handle(asFunction(e.ctx, "Rewriter"), task, 1); err != nil {
				e.t.Fatalf("rewrite group %d: %v", task.Group, err)
			}
			if err := e.deps.Tasks.Delete(e.ctx, m.ReceiptHandle); err != nil {
				e.t.Fatal(err)
			}
		}
	}
	sort.Strings(handles)
	for _, h := range handles {
		if err := e.deps.Tasks.Release(e.ctx, h, 0); err != nil {
			e.t.Fatal(err)
		}
	}
}

// TestPartialProgress_RewritersOfOtherBatchesClaimWhileABatchCommits: batch
// 2's groups are rewritten while batch 1 is being committed (right after
// its catalog commit, before its bookkeeping). Their claims succeed (the
// committing batch's groups are all settled, so no claim can touch it),
// and the committer commits batch 2 next in the same call.
func TestPartialProgress_RewritersOfOtherBatchesClaimWhileABatchCommits(t *testing.T) {
	e := setup(t)
	e.partialTable(fourPartitions, 2)
	want := e.fingerprint()
	r, _ := e.planBatched(2)
	e.rewriteBatch(r.JobID, 1)
	during := false
	e.committer.SetAfterCatalogCommit(func(string) error {
		if !during {
			during = true
			if s := e.job(r.JobID).State; s != jobs.Committing {
				t.Errorf("job is %s during batch 1's commit, want committing", s)
			}
			e.rewriteBatch(r.JobID, 2)
		}
		return nil
	})
	st := e.drainCommits()
	if !during {
		t.Fatal("the hook did not run")
	}
	e.requireCommitted(r.JobID, want)
	if j := e.job(r.JobID); len(j.CommittedBatches) != 2 {
		t.Fatalf("committed batches %v (%s), want both", j.CommittedBatches, j.Reason)
	}
	if st.Failed != 0 {
		t.Fatalf("%d commit requests failed", st.Failed)
	}
	e.requireOnlyReferencedJobFiles(r.JobID)
}

// TestPartialProgress_ADeleteDeadForEveryBatchIsRemovedOnce: the
// equality deletes of a partition whose data files were all removed apply
// to no file, so every batch finds them dead. Batch 1 removes them; batch
// 2 must leave them out of its own removals (removing them again would
// fail, and would look like a writer removing them) and commit.
func TestPartialProgress_ADeleteDeadForEveryBatchIsRemovedOnce(t *testing.T) {
	e := setup(t)
	o := fourPartitions
	o.Partitions = 5
	e.partialTable(o, 2)
	// Another tool removes every data file of the last partition, and
	// leaves its equality deletes.
	gone := sampletable.Region(o.Partitions - 1)
	txn := e.load().NewTransaction()
	rw := txn.NewRewrite(iceberg.Properties{"removed-by": "another-tool"})
	removed := 0
	for _, task := range e.liveTasks() {
		if strings.Contains(task.File.FilePath(), gone) {
			rw.DeleteFile(task.File)
			removed++
		}
	}
	if removed == 0 {
		t.Fatalf("no data file in %s", gone)
	}
	if err := rw.Commit(e.ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(e.ctx); err != nil {
		t.Fatal(err)
	}
	deadEq := e.equalityDeletesIn(gone)
	if deadEq == 0 {
		t.Fatalf("no equality delete left in %s; the test needs one", gone)
	}
	want := e.fingerprint()
	r, _ := e.planBatched(2)
	e.drainTasks()
	e.drainCommits()
	e.requireCommitted(r.JobID, want)
	if j := e.job(r.JobID); len(j.CommittedBatches) != 2 {
		t.Fatalf("committed batches %v (%s), want both", j.CommittedBatches, j.Reason)
	}
	if n := e.equalityDeletesIn(gone); n != 0 {
		t.Fatalf("%d dead equality deletes left in %s", n, gone)
	}
}

// equalityDeletesIn counts the live equality delete files whose path is in
// region's partition.
func (e *env) equalityDeletesIn(region string) int {
	e.t.Helper()
	fsys, ms := e.currentManifests()
	n := 0
	for _, m := range ms {
		for ent, err := range m.Entries(fsys, true) {
			if err != nil {
				e.t.Fatal(err)
			}
			if df := ent.DataFile(); df.ContentType() == iceberg.EntryContentEqDeletes && strings.Contains(df.FilePath(), region) {
				n++
			}
		}
	}
	return n
}

// TestPartialProgress_AFailureInTheLastBatchEndsTheJob: batch 1 commits
// first; then a group of batch 2 fails. Nothing else is left to hand
// batch 2 to the committer, so the failing rewriter does: batch 2 fails,
// and the job ends committed with batch 1.
func TestPartialProgress_AFailureInTheLastBatchEndsTheJob(t *testing.T) {
	e := setup(t)
	e.partialTable(fourPartitions, 2)
	want := e.fingerprint()
	r, p := e.planBatched(2)
	e.rewriteBatch(r.JobID, 1)
	e.drainCommits()
	j := e.job(r.JobID)
	if j.State != jobs.Running || len(j.CommittedBatches) != 1 {
		t.Fatalf("after batch 1: %s, committed %v (%s)", j.State, j.CommittedBatches, j.Reason)
	}
	restore := e.hideFile(strings.TrimPrefix(p.Groups[j.BatchGroups(2)[0]].InputPaths[0], "file://"))
	e.drainTasks()
	e.drainCommits()
	restore()
	e.requireCommitted(r.JobID, want)
	j = e.job(r.JobID)
	if _, ok := j.FailedBatches[2]; !ok || !strings.Contains(j.Reason, "1 of 2 batches committed") {
		t.Fatalf("job %s (%s), failed batches %v; want batch 2 failed", j.State, j.Reason, j.FailedBatches)
	}
	e.requireOnlyReferencedJobFiles(r.JobID)
}

// TestPartialProgress_APositionDeleteSpanningBatchesGoesWithTheLastBatch:
// on an unpartitioned v2 table of two groups, one position delete file
// names a row of every data file, so it applies to the inputs of both
// batches and no single batch's inputs cover it. The batch that commits
// last, with the other committed, has replaced every file it names and
// removes it (before, it stayed, dead, and nothing planned removes a
// lone dead delete: the delete-file rewrite waits for 5 per partition).
// When batch 1 fails, its inputs stay live with the delete applying to
// them: the delete stays, and every row reads as before either way.
func TestPartialProgress_APositionDeleteSpanningBatchesGoesWithTheLastBatch(t *testing.T) {
	for _, failFirst := range []bool{false, true} {
		t.Run(map[bool]string{false: "both batches commit", true: "batch 1 fails"}[failFirst], func(t *testing.T) {
			e := setup(t)
			o := sampletable.Options{FormatVersion: 2, Files: 8, RowsPerFile: 50}
			e.partialTable(o, 2)
			var ids []int64
			var total int64
			for _, task := range e.liveTasks() {
				total += task.File.FileSizeBytes()
			}
			for f := range o.Files {
				ids = append(ids, int64(f*o.RowsPerFile))
			}
			if _, err := sampletable.DeleteByPosition(e.ctx, e.load(), ids); err != nil {
				t.Fatal(err)
			}
			if n := e.positionDeleteFiles(); n != 1 {
				t.Fatalf("%d position delete files, want one spanning every data file", n)
			}
			e.withMaxGroupBytes(total/2 + 1)
			want := e.fingerprint()
			r, p := e.planBatched(2)
			restore := func() {}
			if failFirst {
				restore = e.hideFile(strings.TrimPrefix(p.Groups[e.job(r.JobID).BatchGroups(1)[0]].InputPaths[0], "file://"))
			}
			e.drainTasks()
			e.drainCommits()
			restore()
			e.requireCommitted(r.JobID, want)
			if j := e.job(r.JobID); len(j.CommittedBatches) != map[bool]int{false: 2, true: 1}[failFirst] {
				t.Fatalf("committed batches %v (%s)", j.CommittedBatches, j.Reason)
			}
			wantDeletes := map[bool]int{false: 0, true: 1}[failFirst]
			if n := e.positionDeleteFiles(); n != wantDeletes {
				t.Fatalf("%d position delete files after the job, want %d", n, wantDeletes)
			}
		})
	}
}

// positionDeleteFiles counts the table's live position delete files.
func (e *env) positionDeleteFiles() int {
	e.t.Helper()
	n := 0
	for _, c := range e.deleteLayout().posFiles {
		n += c
	}
	return n
}
