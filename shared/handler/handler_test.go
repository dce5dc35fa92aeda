package handler

import (
	"context"
	"errors"
	"testing"

	lambdaevents "github.com/aws/aws-lambda-go/events"

	"github.com/icekeeper/icekeeper/events"
	"github.com/icekeeper/icekeeper/shared/messages"
	"github.com/icekeeper/icekeeper/shared/metrics"
	"github.com/icekeeper/icekeeper/shared/rewrite"
	"github.com/icekeeper/icekeeper/shared/trigger"
)

type fakeDispatcher struct {
	got []events.Trigger
	err error
}

func (f *fakeDispatcher) Dispatch(_ context.Context, trig events.Trigger) (trigger.Outcome, error) {
	f.got = append(f.got, trig)
	return trigger.Outcome{Trigger: trig, Tables: []trigger.TableOutcome{{Table: "db.t", Action: trigger.ActionAssessed}}}, f.err
}

type countingMetrics struct{ names []string }

func (c *countingMetrics) Emit(_ map[string]string, ms ...metrics.Metric) error {
	for _, m := range ms {
		c.names = append(c.names, m.Name)
	}
	return nil
}

func TestPlanner_RejectsMalformedEventsWithoutFailing(t *testing.T) {
	t.Parallel()
	d, m := &fakeDispatcher{}, &countingMetrics{}
	resp, err := Planner{Dispatch: d, Metrics: m}.Handle(context.Background(), []byte(`{"source":"aws.s3","detail-type":"Object Deleted"}`))
	if err != nil || resp.Rejected == "" {
		t.Fatalf("resp %+v err %v: want a rejection and no error", resp, err)
	}
	if len(d.got) != 0 || len(m.names) != 1 || m.names[0] != "EventsRejected" {
		t.Fatalf("dispatched %v, counted %v", d.got, m.names)
	}
}

func TestPlanner_DispatchesDecodedEventsAndFailsOnRetryableErrors(t *testing.T) {
	t.Parallel()
	glue := []byte(`{"source":"aws.glue","detail-type":"Glue Data Catalog Table State Change","detail":{"databaseName":"db","changedTables":["t"]}}`)
	d := &fakeDispatcher{}
	resp, err := Planner{Dispatch: d}.Handle(context.Background(), glue)
	if err != nil || len(resp.Tables) != 1 || len(d.got) != 1 || d.got[0].Tables[0] != "db.t" {
		t.Fatalf("resp %+v err %v dispatched %+v", resp, err, d.got)
	}
	d.err = errors.New("throttled")
	if _, err := (Planner{Dispatch: d}).Handle(context.Background(), glue); err == nil {
		t.Fatal("a retryable dispatch error must fail the invocation")
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
