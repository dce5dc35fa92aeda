package jobs_test

import (
	"context"
	"errors"
	"strconv"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/icekeeper/icekeeper/shared/harness/localcloud"
	"github.com/icekeeper/icekeeper/shared/harness/sentagain"
	"github.com/icekeeper/icekeeper/shared/jobs"
)

type clock struct{ t time.Time }

func (c *clock) now() time.Time { return c.t }

func setup(t *testing.T) *jobs.Store {
	s, _ := setupClock(t)
	return s
}

func setupClock(t *testing.T) (*jobs.Store, *clock) {
	s, c, _, _ := setupAll(t)
	return s, c
}

func ttlSetup(t *testing.T) (*jobs.Store, *dynamodb.Client, string) {
	s, _, db, table := setupAll(t)
	return s, db, table
}

func setupAll(t *testing.T) (*jobs.Store, *clock, *dynamodb.Client, string) {
	t.Helper()
	cloud := localcloud.Start()
	t.Cleanup(cloud.Close)
	res, err := cloud.Provision(context.Background(), "jobs", "", 3)
	if err != nil {
		t.Fatal(err)
	}
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	s, err := jobs.NewStore(cloud.Clients.DynamoDB, res.JobsTable, c.now)
	if err != nil {
		t.Fatal(err)
	}
	return s, c, cloud.Clients.DynamoDB, res.JobsTable
}

func create(t *testing.T, s *jobs.Store, id string, groups int) {
	t.Helper()
	gs := make([]jobs.Group, groups)
	for i := range gs {
		gs[i] = jobs.Group{Index: i, InputFiles: 5}
	}
	if err := s.Create(context.Background(), jobs.Job{ID: id, Table: "db.t", Token: 7, SnapshotID: 42, InputFiles: int64(5 * groups)}, gs); err != nil {
		t.Fatal(err)
	}
}

func TestStore_CreateRejectsADuplicateJob(t *testing.T) {
	s := setup(t)
	create(t, s, "j1", 1)
	err := s.Create(context.Background(), jobs.Job{ID: "j1", Table: "db.t"}, nil)
	if !errors.Is(err, jobs.ErrStateConflict) {
		t.Fatalf("duplicate create: %v, want ErrStateConflict", err)
	}
	j, err := s.Get(context.Background(), "j1")
	if err != nil || j.State != jobs.Planned || j.Groups != 1 || j.Token != 7 || j.SnapshotID != 42 {
		t.Fatalf("job %+v, err %v", j, err)
	}
}

func TestStore_TransitionsAreConditionalOnTheCurrentState(t *testing.T) {
	s := setup(t)
	ctx := context.Background()
	create(t, s, "j1", 1)
	if err := s.Transition(ctx, "j1", []jobs.State{jobs.Running}, jobs.Failed, "x"); !errors.Is(err, jobs.ErrStateConflict) {
		t.Fatalf("transition from the wrong state: %v", err)
	}
	if err := s.Transition(ctx, "j1", []jobs.State{jobs.Planned}, jobs.Committing, "x"); err == nil {
		t.Fatal("Transition must not enter the committing state")
	}
	if err := s.Transition(ctx, "j1", []jobs.State{jobs.Planned}, jobs.Running, "sent"); err != nil {
		t.Fatal(err)
	}
	if err := s.Transition(ctx, "j1", []jobs.State{jobs.Planned, jobs.Running}, jobs.Failed, "boom"); err != nil {
		t.Fatal(err)
	}
	j, _ := s.Get(ctx, "j1")
	if j.State != jobs.Failed || j.Reason != "boom" || !j.State.Terminal() {
		t.Fatalf("job %+v", j)
	}
	if err := s.MarkCommitted(ctx, "j1", 9, "x"); !errors.Is(err, jobs.ErrStateConflict) {
		t.Fatalf("mark committed on a failed job: %v", err)
	}
	if _, err := s.Get(ctx, "missing"); !errors.Is(err, jobs.ErrNotFound) {
		t.Fatalf("missing job: %v", err)
	}
}

func TestStore_OnlyTheFirstClaimWins(t *testing.T) {
	s := setup(t)
	ctx := context.Background()
	create(t, s, "j1", 2)
	for _, a := range []string{"a1", "a2"} {
		if err := s.RegisterAttempt(ctx, "j1", 7, 0, a); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Claim(ctx, "j1", 7, 0, "a1", "k1", 100); err != nil {
		t.Fatal(err)
	}
	if err := s.Claim(ctx, "j1", 7, 0, "a2", "k2", 100); !errors.Is(err, jobs.ErrGroupSettled) {
		t.Fatalf("second claim: %v, want ErrGroupSettled", err)
	}
	if err := s.RegisterAttempt(ctx, "j1", 7, 0, "a3"); !errors.Is(err, jobs.ErrGroupSettled) {
		t.Fatalf("register on a settled group: %v, want ErrGroupSettled", err)
	}
	g, err := s.Group(ctx, "j1", 0)
	if err != nil {
		t.Fatal(err)
	}
	if g.State != jobs.GroupDone || g.Winner != "a1" || g.DescriptorKey != "k1" || len(g.Attempts) != 2 {
		t.Fatalf("group %+v", g)
	}
	j, _ := s.Get(ctx, "j1")
	if len(j.DoneGroups) != 1 || j.DoneGroups[0] != 0 {
		t.Fatalf("done groups %v", j.DoneGroups)
	}
}

func TestStore_ClaimsStopWhenTheJobMovesOnOrTheTokenIsStale(t *testing.T) {
	s := setup(t)
	ctx := context.Background()
	create(t, s, "j1", 2)
	if err := s.RegisterAttempt(ctx, "j1", 6, 0, "old"); !errors.Is(err, jobs.ErrNotRunning) {
		t.Fatalf("register with a stale token: %v, want ErrNotRunning", err)
	}
	if err := s.RegisterAttempt(ctx, "j1", 7, 1, "a1"); err != nil {
		t.Fatal(err)
	}
	if err := s.BeginCommit(ctx, "j1", []jobs.State{jobs.Planned, jobs.Running}, "c1"); err != nil {
		t.Fatal(err)
	}
	if err := s.Claim(ctx, "j1", 7, 1, "a1", "k", 1); !errors.Is(err, jobs.ErrNotRunning) {
		t.Fatalf("claim after the job moved on: %v, want ErrNotRunning", err)
	}
	if g, _ := s.Group(ctx, "j1", 1); g.State != jobs.GroupPending {
		t.Fatalf("group settled by a rejected claim: %+v", g)
	}
}

func TestStore_FailGroupSettlesOnlyAPendingGroup(t *testing.T) {
	s := setup(t)
	ctx := context.Background()
	create(t, s, "j1", 2)
	if err := s.FailGroup(ctx, "j1", 0, "cannot read"); err != nil {
		t.Fatal(err)
	}
	if err := s.FailGroup(ctx, "j1", 0, "again"); !errors.Is(err, jobs.ErrGroupSettled) {
		t.Fatalf("second fail: %v", err)
	}
	groups, err := s.Groups(ctx, "j1")
	if err != nil || len(groups) != 2 || groups[0].State != jobs.GroupFailed || groups[0].Reason != "cannot read" {
		t.Fatalf("groups %+v, err %v", groups, err)
	}
}

func TestStore_OnlyTheOwnerOfTheCommittingStateDecides(t *testing.T) {
	s, c := setupClock(t)
	ctx := context.Background()
	create(t, s, "j1", 1)
	if err := s.BeginCommit(ctx, "j1", []jobs.State{jobs.Planned, jobs.Running}, "A"); err != nil {
		t.Fatal(err)
	}
	if err := s.BeginCommit(ctx, "j1", []jobs.State{jobs.Planned, jobs.Running}, "B"); !errors.Is(err, jobs.ErrStateConflict) {
		t.Fatalf("second begin: %v", err)
	}
	if err := s.EndCommitting(ctx, "j1", "B", jobs.Aborted, "not mine"); !errors.Is(err, jobs.ErrStateConflict) {
		t.Fatalf("non-owner ended the job: %v", err)
	}
	// A is still working: no takeover.
	if err := s.TakeOver(ctx, "j1", "B", c.t.Add(-time.Minute)); !errors.Is(err, jobs.ErrStateConflict) {
		t.Fatalf("takeover of a live committer: %v", err)
	}
	c.t = c.t.Add(time.Hour)
	if err := s.TakeOver(ctx, "j1", "B", c.t.Add(-time.Minute)); err != nil {
		t.Fatalf("takeover of a silent committer: %v", err)
	}
	if err := s.Heartbeat(ctx, "j1", "A"); !errors.Is(err, jobs.ErrStateConflict) {
		t.Fatalf("the old owner's heartbeat: %v", err)
	}
	if err := s.EndCommitting(ctx, "j1", "A", jobs.Aborted, "stale"); !errors.Is(err, jobs.ErrStateConflict) {
		t.Fatalf("the old owner ended the job: %v", err)
	}
	if err := s.Heartbeat(ctx, "j1", "B"); err != nil {
		t.Fatal(err)
	}
	if err := s.EndCommitting(ctx, "j1", "B", jobs.Aborted, "conflict"); err != nil {
		t.Fatal(err)
	}
	if j, _ := s.Get(ctx, "j1"); j.State != jobs.Aborted || j.Reason != "conflict" || j.CommitterID != "B" {
		t.Fatalf("job %+v", j)
	}
}

// TestStore_RecordsExpireByTTL: job and group items carry purge_at (Unix
// seconds) RecordRetention after creation, for the jobs table's TTL.
func TestStore_RecordsExpireByTTL(t *testing.T) {
	s, db, table := ttlSetup(t)
	ctx := context.Background()
	created := time.Unix(1_800_000_000, 0)
	if err := s.Create(ctx, jobs.Job{ID: "j-ttl", Table: "db.t"}, []jobs.Group{{Index: 0}}); err != nil {
		t.Fatal(err)
	}
	out, err := db.Scan(ctx, &dynamodb.ScanInput{TableName: aws.String(table)})
	if err != nil {
		t.Fatal(err)
	}
	want := strconv.FormatInt(created.Add(jobs.RecordRetention).Unix(), 10)
	n := 0
	for _, it := range out.Items {
		if id, _ := it["job_id"].(*types.AttributeValueMemberS); id == nil || id.Value != "j-ttl" {
			continue
		}
		n++
		if v, ok := it[jobs.PurgeAttribute].(*types.AttributeValueMemberN); !ok || v.Value != want {
			t.Errorf("item %v: purge_at %v, want %s", it["item_key"], it[jobs.PurgeAttribute], want)
		}
	}
	if n != 2 {
		t.Fatalf("%d items, want the job and its group", n)
	}
}

// TestStore_AClaimWhoseEarlierTryWonIsWon: the same claim sent again (an
// earlier try landed, its response was lost) reports the group won, not
// settled by another: the winner must keep its files. Another attempt's
// claim is still refused.
func TestStore_AClaimWhoseEarlierTryWonIsWon(t *testing.T) {
	s := setup(t)
	ctx := context.Background()
	create(t, s, "j1", 2)
	for _, a := range []string{"a1", "a2"} {
		if err := s.RegisterAttempt(ctx, "j1", 7, 0, a); err != nil {
			t.Fatal(err)
		}
	}
	if err := s.Claim(ctx, "j1", 7, 0, "a1", "d1", 10); err != nil {
		t.Fatal(err)
	}
	if err := s.Claim(ctx, "j1", 7, 0, "a1", "d1", 10); err != nil {
		t.Fatalf("the same claim again: %v, want won", err)
	}
	if err := s.Claim(ctx, "j1", 7, 0, "a2", "d2", 10); !errors.Is(err, jobs.ErrGroupSettled) {
		t.Fatalf("another attempt's claim: %v, want ErrGroupSettled", err)
	}
	g, err := s.Group(ctx, "j1", 0)
	if err != nil || g.Winner != "a1" || g.DescriptorKey != "d1" {
		t.Fatalf("group %+v %v", g, err)
	}
}

// TestStore_WritesSentAgainAfterTheirResponseWasLostTakeEffectOnce: the SDK
// sends a request again when the connection broke under its response;
// the second try of a Create's put fails its condition on the first
// try's item. That is the Create's own job: its groups are written and
// no error says the job exists (the planner gave up on a job item left
// without groups). A job of another token under the id still conflicts.
func TestStore_WritesSentAgainAfterTheirResponseWasLostTakeEffectOnce(t *testing.T) {
	cloud := localcloud.Start()
	t.Cleanup(cloud.Close)
	res, err := cloud.Provision(context.Background(), "jobs", "", 3)
	if err != nil {
		t.Fatal(err)
	}
	db := &sentagain.DynamoDB{Client: cloud.Clients.DynamoDB}
	db.On.Store(true)
	c := &clock{t: time.Unix(1_800_000_000, 0)}
	s, err := jobs.NewStore(db, res.JobsTable, c.now)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	create(t, s, "j1", 2)
	if db.Repeated.Load() == 0 {
		t.Fatal("no write was sent again")
	}
	gs, err := s.Groups(ctx, "j1")
	if err != nil || len(gs) != 2 {
		t.Fatalf("groups %+v, %v: want the job's 2", gs, err)
	}
	if err := s.Create(ctx, jobs.Job{ID: "j1", Table: "db.t", Token: 8}, nil); !errors.Is(err, jobs.ErrStateConflict) {
		t.Fatalf("another job under the id: %v, want ErrStateConflict", err)
	}
	// Each transition's second try fails its condition on its own first
	// try's change: still the transition's, not a conflict.
	if err := s.Transition(ctx, "j1", []jobs.State{jobs.Planned}, jobs.Running, "sent"); err != nil {
		t.Fatalf("transition sent again: %v", err)
	}
	if err := s.BeginCommit(ctx, "j1", []jobs.State{jobs.Running}, "c1"); err != nil {
		t.Fatalf("begin commit sent again: %v", err)
	}
	if err := s.MarkCommitted(ctx, "j1", 99, "done"); err != nil {
		t.Fatalf("mark committed sent again: %v", err)
	}
	if j, err := s.Get(ctx, "j1"); err != nil || j.State != jobs.Committed || j.CommittedSnapshotID != 99 {
		t.Fatalf("job %+v, %v: want committed at 99", j, err)
	}
	// A transition another write made impossible still conflicts.
	if err := s.BeginCommit(ctx, "j1", []jobs.State{jobs.Running}, "c2"); !errors.Is(err, jobs.ErrStateConflict) {
		t.Fatalf("begin commit of a committed job: %v, want ErrStateConflict", err)
	}
}
