package rewriter

import (
	"context"
	"errors"
	"testing"

	lambdaevents "github.com/aws/aws-lambda-go/events"

	"github.com/icekeeper/icekeeper/shared/messages"
	"github.com/icekeeper/icekeeper/shared/rewrite"
)

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
	resp, err := Handler{Rewrite: fakeRewriter{fail: map[int]bool{1: true}}}.Handle(context.Background(), ev)
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

type recordingRequeuer struct{ got map[string]int32 }

func (r *recordingRequeuer) Release(_ context.Context, receipt string, seconds int32) error {
	r.got[receipt] = seconds
	return nil
}

type erroringRewriter map[int]error

func (f erroringRewriter) Handle(_ context.Context, task messages.Task, _ int) (rewrite.Result, error) {
	return rewrite.Result{}, f[task.Group]
}

// TestRewriter_FailedTasksComeBackAfterABackoff: a task that failed with a
// retryable error is made visible again after rewrite.RetryDelay for its
// delivery count, a terminal one at once (on to the dead-letter queue), and
// a successful one is left alone.
func TestRewriter_FailedTasksComeBackAfterABackoff(t *testing.T) {
	t.Parallel()
	rq := &recordingRequeuer{got: map[string]int32{}}
	rw := erroringRewriter{1: errors.New("throttled"), 2: rewrite.ErrTerminal}
	var ev lambdaevents.SQSEvent
	for g, count := range map[int]string{0: "1", 1: "2", 2: "1"} {
		body, _ := messages.Encode(messages.Task{Version: messages.FormatVersion, JobID: "j", Group: g})
		ev.Records = append(ev.Records, lambdaevents.SQSMessage{MessageId: string(rune('a' + g)), ReceiptHandle: string(rune('A' + g)), Body: string(body), Attributes: map[string]string{"ApproximateReceiveCount": count}})
	}
	resp, _ := Handler{Rewrite: rw, Requeue: rq}.Handle(context.Background(), ev)
	if len(resp.BatchItemFailures) != 2 {
		t.Fatalf("failures %+v, want 2", resp.BatchItemFailures)
	}
	if _, ok := rq.got["A"]; ok {
		t.Error("a successful task was requeued")
	}
	if want := int32(rewrite.RetryDelay(2, errors.New("x")).Seconds()); rq.got["B"] != want || want != 40 {
		t.Errorf("retryable failure on delivery 2 comes back after %ds, want %ds (40)", rq.got["B"], want)
	}
	if got, ok := rq.got["C"]; !ok || got != 0 {
		t.Errorf("terminal failure comes back after %ds (requeued %v), want at once", got, ok)
	}
}
