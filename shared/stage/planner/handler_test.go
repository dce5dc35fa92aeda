package planner

import (
	"context"
	"errors"
	"testing"

	"github.com/icekeeper/icekeeper/events"
	"github.com/icekeeper/icekeeper/shared/metrics"
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
	resp, err := Handler{Dispatch: d, Metrics: m}.Handle(context.Background(), []byte(`{"source":"aws.s3","detail-type":"Object Deleted"}`))
	if err != nil || resp.Rejected == "" {
		t.Fatalf("resp %+v err %v: want a rejection and no error", resp, err)
	}
	if len(d.got) != 0 || len(m.names) != 1 || m.names[0] != "EventsRejected" {
		t.Fatalf("dispatched %v, counted %v", d.got, m.names)
	}
}

func TestPlanner_DispatchesDecodedEventsAndFailsOnRetryableErrors(t *testing.T) {
	t.Parallel()
	glue := []byte(`{"source":"aws.glue","detail-type":"Glue Data Catalog Table State Change","detail":{"databaseName":"db","tableName":"t","typeOfChange":"UpdateTable"}}`)
	d := &fakeDispatcher{}
	resp, err := Handler{Dispatch: d}.Handle(context.Background(), glue)
	if err != nil || len(resp.Tables) != 1 || len(d.got) != 1 || d.got[0].Tables[0] != "db.t" {
		t.Fatalf("resp %+v err %v dispatched %+v", resp, err, d.got)
	}
	d.err = errors.New("throttled")
	if _, err := (Handler{Dispatch: d}).Handle(context.Background(), glue); err == nil {
		t.Fatal("a retryable dispatch error must fail the invocation")
	}
}
