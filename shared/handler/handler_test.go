package handler

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/apache/iceberg-go/catalog"
	lambdaevents "github.com/aws/aws-lambda-go/events"

	"github.com/icekeeper/icekeeper/shared/messages"
	"github.com/icekeeper/icekeeper/shared/plan"
	"github.com/icekeeper/icekeeper/shared/rewrite"
)

type fakePlanner map[string]error

func (f fakePlanner) PlanTable(_ context.Context, table, _ string) (plan.Result, error) {
	if err := f[table]; err != nil {
		return plan.Result{Table: table}, err
	}
	return plan.Result{Table: table, Outcome: plan.OutcomePlanned}, nil
}

func TestPlanner_RejectsMalformedEventsWithoutFailing(t *testing.T) {
	t.Parallel()
	resp, err := Planner{Plan: fakePlanner{}}.Handle(context.Background(), []byte(`{"source":"aws.s3","detail-type":"Object Created"}`))
	if err != nil || resp.Rejected == "" {
		t.Fatalf("resp %+v err %v: want a rejection and no error", resp, err)
	}
}

func TestPlanner_FailsOnlyForRetryableErrors(t *testing.T) {
	t.Parallel()
	glue := []byte(`{"source":"aws.glue","detail-type":"Glue Data Catalog Table State Change","detail":{"databaseName":"db","changedTables":["gone","ok","flaky"]}}`)
	p := fakePlanner{"db.gone": fmt.Errorf("load: %w", catalog.ErrNoSuchTable), "db.flaky": errors.New("throttled")}
	resp, err := Planner{Plan: p}.Handle(context.Background(), glue)
	if err == nil || len(resp.Results) != 1 || len(resp.Errors) != 2 {
		t.Fatalf("resp %+v err %v", resp, err)
	}
	delete(p, "db.flaky")
	if _, err := (Planner{Plan: p}).Handle(context.Background(), glue); err != nil {
		t.Fatalf("a missing table must not make the invocation fail: %v", err)
	}
}

type fakeRewriter struct{ fail map[int]bool }

func (f fakeRewriter) Handle(_ context.Context, task messages.Task, _ int) (rewrite.Result, error) {
	if f.fail[task.Group] {
		return rewrite.Result{}, errors.New("boom")
	}
	return rewrite.Result{Outcome: rewrite.OutcomeRewritten}, nil
}

func TestRewriter_ReportsFailuresPerMessage(t *testing.T) {
	t.Parallel()
	body := func(g int) string {
		b, _ := messages.Encode(messages.Task{Version: messages.FormatVersion, JobID: "j", Table: "db.t", Group: g})
		return string(b)
	}
	ev := lambdaevents.SQSEvent{Records: []lambdaevents.SQSMessage{
		{MessageId: "ok", Body: body(0)},
		{MessageId: "bad", Body: body(1)},
		{MessageId: "garbage", Body: `{"v":99}`},
	}}
	resp, err := Rewriter{Rewrite: fakeRewriter{fail: map[int]bool{1: true}}}.Handle(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]bool{}
	for _, f := range resp.BatchItemFailures {
		got[f.ItemIdentifier] = true
	}
	if len(got) != 2 || !got["bad"] || !got["garbage"] {
		t.Fatalf("failures %v, want bad and garbage", got)
	}
}
