package tests

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/smithy-go/middleware"
	smithyhttp "github.com/aws/smithy-go/transport/http"

	"github.com/icekeeper/icekeeper/shared/harness/sampletable"
	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/plan"
)

// The SDK sends a request again when the connection broke under its
// response (it retries a closed connection by default: aws-sdk-go-v2 PR
// 2949, after issues 1825 and 2737), so a write can reach DynamoDB twice
// and its caller sees the second answer: a conditional write fails on its
// own first try. sendWritesTwice, installed on the tests' clients, sends
// every DynamoDB PutItem, UpdateItem and DeleteItem made under a context
// withWritesSentTwice twice, the second answer returned
// (package sentagain does the same for one store's client).

type writesSentTwiceKey struct{}

// writesSentTwice counts the writes sent a second time.
var writesSentTwice atomic.Int64

func withWritesSentTwice(ctx context.Context) context.Context {
	return context.WithValue(ctx, writesSentTwiceKey{}, true)
}

func sendWritesTwice(cfg *aws.Config) {
	cfg.APIOptions = append(cfg.APIOptions, func(stack *middleware.Stack) error {
		return stack.Deserialize.Add(middleware.DeserializeMiddlewareFunc("icekeeper-send-writes-twice", sendWriteTwice), middleware.Before)
	})
}

func sendWriteTwice(ctx context.Context, in middleware.DeserializeInput, next middleware.DeserializeHandler) (middleware.DeserializeOutput, middleware.Metadata, error) {
	switch op := awsmiddleware.GetOperationName(ctx); {
	case ctx.Value(writesSentTwiceKey{}) == nil, awsmiddleware.GetServiceID(ctx) != "DynamoDB",
		op != "PutItem" && op != "UpdateItem" && op != "DeleteItem":
		return next.HandleDeserialize(ctx, in)
	}
	out, md, err := next.HandleDeserialize(ctx, in)
	if err != nil {
		return out, md, err
	}
	req, ok := in.Request.(*smithyhttp.Request)
	if !ok {
		return out, md, fmt.Errorf("send again: unknown request type %T", in.Request)
	}
	again := req.Clone() // as the SDK's retry middleware does
	if err := again.RewindStream(); err != nil {
		return out, md, fmt.Errorf("send again: %w", err)
	}
	in.Request = again
	writesSentTwice.Add(1)
	return next.HandleDeserialize(ctx, in)
}

// TestPipeline_ACompactionCommitsWithEveryDynamoDBWriteSentTwice: with
// every lease, cooldown, job and group write of the planner, the
// rewriters and the committer sent twice, a compaction still takes its
// lease, runs every group and commits once, every row kept.
func TestPipeline_ACompactionCommitsWithEveryDynamoDBWriteSentTwice(t *testing.T) {
	e := setup(t)
	e.createTable(sampletable.Options{FormatVersion: 2, Partitions: 2, Files: 6, RowsPerFile: 100, PositionDeletes: true})
	before := e.fingerprint()
	e.ctx = withWritesSentTwice(e.ctx)
	sent := writesSentTwice.Load()

	r := e.plan()
	if r.Outcome != plan.OutcomePlanned {
		t.Fatalf("plan outcome %s (%s), want planned", r.Outcome, r.Reason)
	}
	e.drainTasks()
	e.drainCommits()
	if j := e.job(r.JobID); j.State != jobs.Committed {
		t.Fatalf("job state %s (%s), want committed", j.State, j.Reason)
	}
	if writesSentTwice.Load() == sent {
		t.Fatal("no write was sent twice")
	}
	if after := e.fingerprint(); after != before {
		t.Fatalf("rows changed: before %s, after %s", before, after)
	}
	if n := e.jobSnapshots(r.JobID); n != 1 {
		t.Fatalf("snapshots stamped with the job: %d, want 1", n)
	}
}

// TestPartialProgress_BatchesCommitWithEveryDynamoDBWriteSentTwice: a job
// committed in two batches (BeginBatch, EndBatch and the claims of the
// other batch's groups in between) with every DynamoDB write sent twice
// commits both batches, every row kept.
func TestPartialProgress_BatchesCommitWithEveryDynamoDBWriteSentTwice(t *testing.T) {
	e := setup(t)
	e.partialTable(fourPartitions, 3)
	want := e.fingerprint()
	e.ctx = withWritesSentTwice(e.ctx)
	r, _ := e.planBatched(2)
	e.drainTasks()
	e.drainCommits()
	e.requireCommitted(r.JobID, want)
	if j := e.job(r.JobID); len(j.CommittedBatches) != 2 || len(j.FailedBatches) != 0 {
		t.Fatalf("job: committed %v, failed %v (%s), want both batches", j.CommittedBatches, j.FailedBatches, j.Reason)
	}
	e.requireOnlyReferencedJobFiles(r.JobID)
}

// TestExpire_ExpiresWithEveryDynamoDBWriteSentTwice: a snapshot expiry
// with every DynamoDB write sent twice commits, frees what only expired
// snapshots used, and keeps every row and every file a snapshot needs.
func TestExpire_ExpiresWithEveryDynamoDBWriteSentTwice(t *testing.T) {
	e := setup(t)
	compactedWithShortRetention(t, e)
	e.ctx = withWritesSentTwice(e.ctx)
	sent := writesSentTwice.Load()
	e.expireAllButTheCurrentSnapshot()
	if writesSentTwice.Load() == sent {
		t.Fatal("no write was sent twice")
	}
}
