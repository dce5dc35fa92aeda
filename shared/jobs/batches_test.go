package jobs_test

import (
	"context"
	"errors"
	"slices"
	"testing"

	"github.com/icekeeper/icekeeper/shared/jobs"
)

// TestGroupsPerCommit_FollowsSparksBatching: ceil(groups / max-commits)
// groups per commit, and as many commits as that takes (which can be fewer
// than max-commits).
func TestGroupsPerCommit_FollowsSparksBatching(t *testing.T) {
	for _, c := range []struct{ groups, maxCommits, perCommit, batches int }{
		{4, 3, 2, 2}, {10, 10, 1, 10}, {5, 2, 3, 2}, {3, 10, 1, 3}, {7, 1, 7, 1}, {1, 10, 1, 1},
	} {
		n := jobs.GroupsPerCommit(c.groups, c.maxCommits)
		j := jobs.Job{Groups: c.groups}
		if n < c.groups {
			j.BatchSize = n
		}
		if n != c.perCommit || j.Batches() != c.batches {
			t.Errorf("%d groups, at most %d commits: %d per commit in %d batches, want %d in %d", c.groups, c.maxCommits, n, j.Batches(), c.perCommit, c.batches)
		}
	}
}

// TestJob_BatchesPartitionTheGroups: every group is in exactly one batch,
// the last batch holding what is left.
func TestJob_BatchesPartitionTheGroups(t *testing.T) {
	j := jobs.Job{Groups: 5, BatchSize: 2}
	want := [][]int{{0, 1}, {2, 3}, {4}}
	if j.Batches() != len(want) {
		t.Fatalf("%d batches, want %d", j.Batches(), len(want))
	}
	for b := 1; b <= j.Batches(); b++ {
		if got := j.BatchGroups(b); !slices.Equal(got, want[b-1]) {
			t.Errorf("batch %d has groups %v, want %v", b, got, want[b-1])
		}
		for _, g := range want[b-1] {
			if j.BatchOf(g) != b {
				t.Errorf("group %d is in batch %d, want %d", g, j.BatchOf(g), b)
			}
		}
	}
	if one := (jobs.Job{Groups: 5}); one.Batched() || one.Batches() != 1 || one.BatchOf(3) != 0 || len(one.BatchGroups(0)) != 5 {
		t.Errorf("an unbatched job: batched %v, %d batches, group 3 in batch %d", one.Batched(), one.Batches(), one.BatchOf(3))
	}
}

func createBatched(t *testing.T, s *jobs.Store, id string, groups, batchSize int) {
	t.Helper()
	gs := make([]jobs.Group, groups)
	for i := range gs {
		gs[i] = jobs.Group{Index: i, InputFiles: 5}
	}
	if err := s.Create(context.Background(), jobs.Job{ID: id, Table: "db.t", Token: 7, BatchSize: batchSize}, gs); err != nil {
		t.Fatal(err)
	}
}

// TestStore_OnlyTheBatchsOwnerEndsItAndOtherBatchesKeepClaiming: a batch
// is ended only by the committer that began it, for that batch; while it
// commits, groups of other batches are still claimed (an unbatched job
// takes no claim once committing); the end is recorded on the job.
func TestStore_OnlyTheBatchsOwnerEndsItAndOtherBatchesKeepClaiming(t *testing.T) {
	s := setup(t)
	ctx := context.Background()
	createBatched(t, s, "b1", 4, 2)
	for _, g := range []int{0, 1} {
		if err := s.RegisterAttempt(ctx, "b1", 7, g, "a"+string(rune('0'+g))); err != nil {
			t.Fatal(err)
		}
		if err := s.Claim(ctx, "b1", 7, g, "a"+string(rune('0'+g)), "d", 10); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.BeginBatch(ctx, "b1", 1, "me"); err != nil {
		t.Fatal(err)
	}
	if err := s.BeginBatch(ctx, "b1", 2, "other"); !errors.Is(err, jobs.ErrStateConflict) {
		t.Fatalf("a second batch began while one commits: %v", err)
	}
	if err := s.RegisterAttempt(ctx, "b1", 7, 2, "a2"); err != nil {
		t.Fatalf("register in batch 2 while batch 1 commits: %v", err)
	}
	if err := s.Claim(ctx, "b1", 7, 2, "a2", "d", 10); err != nil {
		t.Fatalf("claim in batch 2 while batch 1 commits: %v", err)
	}
	end := jobs.BatchEnd{Batch: 1, SnapshotID: 99, Reason: "committed", Final: jobs.Running, FinalReason: "batch 1 of 2 committed"}
	if err := s.EndBatch(ctx, "b1", "other", end); !errors.Is(err, jobs.ErrStateConflict) {
		t.Fatalf("another committer ended the batch: %v", err)
	}
	wrong := end
	wrong.Batch = 2
	if err := s.EndBatch(ctx, "b1", "me", wrong); !errors.Is(err, jobs.ErrStateConflict) {
		t.Fatalf("the owner ended a batch it is not committing: %v", err)
	}
	if err := s.EndBatch(ctx, "b1", "me", end); err != nil {
		t.Fatal(err)
	}
	j, err := s.Get(ctx, "b1")
	if err != nil {
		t.Fatal(err)
	}
	if j.State != jobs.Running || j.CommittedBatches[1] != 99 || j.CommittingBatch != 0 || !j.BatchEnded(1) || j.BatchEnded(2) || !slices.Equal(j.DoneGroups, []int{0, 1, 2}) {
		t.Fatalf("after batch 1: %+v", j)
	}
	if err := s.BeginBatch(ctx, "b1", 2, "me"); err != nil {
		t.Fatal(err)
	}
	last := jobs.BatchEnd{Batch: 2, Reason: "group 3 failed", Final: jobs.Committed, FinalReason: "1 of 2 batches committed"}
	if err := s.EndBatch(ctx, "b1", "me", last); err != nil {
		t.Fatal(err)
	}
	if j, _ = s.Get(ctx, "b1"); j.State != jobs.Committed || j.FailedBatches[2] != "group 3 failed" || j.CommittedSnapshotID != 99 {
		t.Fatalf("after batch 2: %+v", j)
	}
	if err := s.RegisterAttempt(ctx, "b1", 7, 3, "late"); !errors.Is(err, jobs.ErrNotRunning) {
		t.Fatalf("register after the job ended: %v, want ErrNotRunning", err)
	}

	// An unbatched job takes no claim once committing, nor a batch.
	create(t, s, "j1", 2)
	if err := s.BeginBatch(ctx, "j1", 1, "me"); !errors.Is(err, jobs.ErrStateConflict) {
		t.Fatalf("an unbatched job began a batch: %v", err)
	}
	if err := s.BeginCommit(ctx, "j1", []jobs.State{jobs.Planned}, "me"); err != nil {
		t.Fatal(err)
	}
	if err := s.RegisterAttempt(ctx, "j1", 7, 0, "a"); !errors.Is(err, jobs.ErrNotRunning) {
		t.Fatalf("register on a committing unbatched job: %v, want ErrNotRunning", err)
	}
}
