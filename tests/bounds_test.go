package tests

import (
	"fmt"
	"strings"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	ddbtypes "github.com/aws/aws-sdk-go-v2/service/dynamodb/types"

	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/optin"
	"github.com/icekeeper/icekeeper/shared/plan"
)

// Items that grow with a job are bounded below DynamoDB's 400 KB item
// limit (ddbMaxItemBytes), which the test world applies after every write
// of a function (checkAfterCall).

// TestBounds_AJobRecordAtItsLargestFitsADynamoDBItem: a batched job at the
// cap of its batches (optin.MaxPartialProgressCommits), every group
// claimed, every batch failed with an error text far longer than a
// record keeps, and a long final reason: every write is accepted under
// the 400 KB rule, the item measures below it, and each reason kept is at
// most jobs.MaxReasonBytes.
func TestBounds_AJobRecordAtItsLargestFitsADynamoDBItem(t *testing.T) {
	e := setup(t)
	ctx := asFunction(e.ctx, "Committer")
	const id = "bounded-job"
	n := optin.MaxPartialProgressCommits
	groups := make([]jobs.Group, n)
	for i := range groups {
		groups[i] = jobs.Group{Index: i, InputFiles: 2}
	}
	if err := e.deps.Jobs.Create(ctx, jobs.Job{ID: id, Table: e.name(), Token: 1, BatchSize: 1}, groups); err != nil {
		t.Fatal(err)
	}
	long := strings.Repeat("a wrapped error naming s3://bucket/warehouse/demo/events/data/00000-0-file.parquet; ", 200) // ~16 KB
	for g := range n {
		attempt := fmt.Sprintf("attempt-%03d", g)
		if err := e.deps.Jobs.RegisterAttempt(ctx, id, 1, g, attempt); err != nil {
			t.Fatalf("register group %d: %v", g, err)
		}
		if err := e.deps.Jobs.Claim(ctx, id, 1, g, attempt, "jobs/"+id+"/descriptors/"+attempt+".json", 1_000_000); err != nil {
			t.Fatalf("claim group %d: %v", g, err)
		}
	}
	for b := 1; b <= n; b++ {
		if err := e.deps.Jobs.BeginBatch(ctx, id, b, "committer"); err != nil {
			t.Fatalf("begin batch %d: %v", b, err)
		}
		end := jobs.BatchEnd{Batch: b, Reason: long, Final: jobs.Running, FinalReason: long}
		if b == n {
			end.Final = jobs.Failed
		}
		if err := e.deps.Jobs.EndBatch(ctx, id, "committer", end); err != nil {
			t.Fatalf("end batch %d: %v", b, err)
		}
	}
	out, err := cloud.Clients.DynamoDB.GetItem(e.ctx, &dynamodb.GetItemInput{TableName: aws.String(e.cfg.JobsTable), ConsistentRead: aws.Bool(true),
		Key: map[string]ddbtypes.AttributeValue{"job_id": &ddbtypes.AttributeValueMemberS{Value: id}, "item_key": &ddbtypes.AttributeValueMemberS{Value: "job"}}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Item) == 0 {
		t.Fatal("no job item (item_key is not \"job\"?)")
	}
	size := ddbItemBytes(out.Item)
	if size > ddbMaxItemBytes {
		t.Fatalf("the job item is %d bytes, over DynamoDB's %d", size, ddbMaxItemBytes)
	}
	j := e.job(id)
	if len(j.FailedBatches) != n || len(j.DoneGroups) != n {
		t.Fatalf("%d failed batches and %d done groups recorded, want %d each", len(j.FailedBatches), len(j.DoneGroups), n)
	}
	for b, r := range j.FailedBatches {
		if len(r) > jobs.MaxReasonBytes {
			t.Errorf("batch %d keeps a reason of %d bytes, over %d", b, len(r), jobs.MaxReasonBytes)
		}
	}
	if len(j.Reason) > jobs.MaxReasonBytes {
		t.Errorf("the job keeps a reason of %d bytes", len(j.Reason))
	}
	t.Logf("job item at the bound: %d bytes of %d", size, ddbMaxItemBytes)
}

// TestBounds_AJobOfTheMostGroupsFitsADynamoDBItemWithEveryGroupDone: a
// job of jobs.MaxGroups groups, every one settled done (the job item's
// done_groups number set holds them all; the last one added by the
// store's own claim, under the test world's 400 KB rule), measures below
// DynamoDB's item limit and reads back whole; a job of one group more is
// refused at creation.
func TestBounds_AJobOfTheMostGroupsFitsADynamoDBItemWithEveryGroupDone(t *testing.T) {
	e := setup(t)
	ctx := asFunction(e.ctx, "Planner")
	const id = "most-groups"
	n := jobs.MaxGroups
	groups := make([]jobs.Group, n)
	for i := range groups {
		groups[i] = jobs.Group{Index: i, InputFiles: 1}
	}
	if err := e.deps.Jobs.Create(ctx, jobs.Job{ID: "too-many-groups", Table: e.name(), Token: 1}, append(groups, jobs.Group{Index: n, InputFiles: 1})); err == nil {
		t.Fatalf("a job of %d groups was created, want it refused", n+1)
	}
	if err := e.deps.Jobs.Create(ctx, jobs.Job{ID: id, Table: e.name(), Token: 1}, groups); err != nil {
		t.Fatal(err)
	}
	key := map[string]ddbtypes.AttributeValue{"job_id": &ddbtypes.AttributeValueMemberS{Value: id}, "item_key": &ddbtypes.AttributeValueMemberS{Value: "job"}}
	done := make([]string, n-1)
	for i := range done {
		done[i] = fmt.Sprint(i)
	}
	if _, err := cloud.Clients.DynamoDB.UpdateItem(e.ctx, &dynamodb.UpdateItemInput{TableName: aws.String(e.cfg.JobsTable), Key: key,
		UpdateExpression:          aws.String("ADD done_groups :g"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":g": &ddbtypes.AttributeValueMemberNS{Value: done}}}); err != nil {
		t.Fatal(err)
	}
	last := n - 1
	cctx := asFunction(e.ctx, "Rewriter")
	if err := e.deps.Jobs.RegisterAttempt(cctx, id, 1, last, "attempt-last"); err != nil {
		t.Fatal(err)
	}
	if err := e.deps.Jobs.Claim(cctx, id, 1, last, "attempt-last", "jobs/"+id+"/descriptors/attempt-last.json", 1); err != nil {
		t.Fatalf("claim the last group: %v", err)
	}
	out, err := cloud.Clients.DynamoDB.GetItem(e.ctx, &dynamodb.GetItemInput{TableName: aws.String(e.cfg.JobsTable), ConsistentRead: aws.Bool(true), Key: key})
	if err != nil {
		t.Fatal(err)
	}
	size := ddbItemBytes(out.Item)
	if size > ddbMaxItemBytes {
		t.Fatalf("the job item is %d bytes, over DynamoDB's %d", size, ddbMaxItemBytes)
	}
	if j := e.job(id); len(j.DoneGroups) != n {
		t.Fatalf("%d done groups read back, want %d", len(j.DoneGroups), n)
	}
	t.Logf("job item with %d groups done: %d bytes of %d", n, size, ddbMaxItemBytes)
}

// TestBounds_ALeaseItemAtMaxPastJobsFitsAndGoneJobsAreForgotten: a table's
// lease item remembering plan.MaxPastJobs job ids (the most clean-up keeps)
// measures below DynamoDB's item limit; when those jobs' records are gone
// (TTL), the next planning forgets them all and remembers only its own job.
func TestBounds_ALeaseItemAtMaxPastJobsFitsAndGoneJobsAreForgotten(t *testing.T) {
	e := setup(t)
	e.createTable(smallTable)
	key := map[string]ddbtypes.AttributeValue{"table_id": &ddbtypes.AttributeValueMemberS{Value: e.name()}}
	ids := make([]string, plan.MaxPastJobs)
	for i := range ids {
		ids[i] = fmt.Sprintf("20261203T%06dZ-%08x", i, i)
	}
	if _, err := cloud.Clients.DynamoDB.UpdateItem(e.ctx, &dynamodb.UpdateItemInput{TableName: aws.String(e.cfg.LeaseTable), Key: key,
		UpdateExpression:          aws.String("ADD past_jobs :j"),
		ExpressionAttributeValues: map[string]ddbtypes.AttributeValue{":j": &ddbtypes.AttributeValueMemberSS{Value: ids}}}); err != nil {
		t.Fatal(err)
	}
	out, err := cloud.Clients.DynamoDB.GetItem(e.ctx, &dynamodb.GetItemInput{TableName: aws.String(e.cfg.LeaseTable), ConsistentRead: aws.Bool(true), Key: key})
	if err != nil {
		t.Fatal(err)
	}
	if size := ddbItemBytes(out.Item); size > ddbMaxItemBytes {
		t.Fatalf("the lease item with %d past jobs is %d bytes, over %d", len(ids), size, ddbMaxItemBytes)
	} else {
		t.Logf("lease item with %d past jobs: %d bytes of %d", len(ids), size, ddbMaxItemBytes)
	}
	r := e.plan()
	if r.Outcome != plan.OutcomePlanned {
		t.Fatalf("plan: %s (%s)", r.Outcome, r.Reason)
	}
	l, ok, err := e.deps.Leases.Get(e.ctx, e.name())
	if err != nil || !ok {
		t.Fatalf("lease: %v %v", ok, err)
	}
	if len(l.PastJobs) != 1 || l.PastJobs[0] != r.JobID {
		t.Fatalf("%d past jobs remembered after planning, want only the new job %s", len(l.PastJobs), r.JobID)
	}
}
