package rewriter

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

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

// beatingRequeuer records every visibility change, in order, and tells
// beats when the n-th arrived.
type beatingRequeuer struct {
	mu    sync.Mutex
	calls []int32
	n     int
	beats chan struct{}
}

func (r *beatingRequeuer) Release(_ context.Context, _ string, seconds int32) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.calls = append(r.calls, seconds)
	if len(r.calls) == r.n {
		close(r.beats)
	}
	return nil
}

// blockingRewriter fails its task once the heartbeat renewed it.
type blockingRewriter struct{ beats chan struct{} }

func (b blockingRewriter) Handle(context.Context, messages.Task, int) (rewrite.Result, error) {
	<-b.beats
	return rewrite.Result{}, errors.New("boom")
}

// TestRewriter_ARunningTaskIsKeptInvisibleByAHeartbeat: on receipt the
// task's visibility is set to the heartbeat, and renewed while the task
// runs, so a rewriter that dies lets its task come back within one
// heartbeat; once the task failed, the retry delay is the last change (no
// renewal lands after it and undoes the backoff).
func TestRewriter_ARunningTaskIsKeptInvisibleByAHeartbeat(t *testing.T) {
	t.Parallel()
	body, _ := messages.Encode(messages.Task{Version: messages.FormatVersion, JobID: "j", Table: "db.t", Group: 0})
	rq := &beatingRequeuer{n: 3, beats: make(chan struct{})}
	h := Handler{Rewrite: blockingRewriter{beats: rq.beats}, Requeue: rq, Heartbeat: 3 * time.Millisecond}
	ev := lambdaevents.SQSEvent{Records: []lambdaevents.SQSMessage{{MessageId: "m", ReceiptHandle: "r", Body: string(body), Attributes: map[string]string{"ApproximateReceiveCount": "1"}}}}
	resp, err := h.Handle(context.Background(), ev)
	if err != nil || len(resp.BatchItemFailures) != 1 {
		t.Fatalf("resp %v err %v, want the task failed", resp, err)
	}
	rq.mu.Lock()
	calls := append([]int32(nil), rq.calls...)
	rq.mu.Unlock()
	if len(calls) < 4 {
		t.Fatalf("visibility changes %v: want the receipt's, two renewals and the retry delay", calls)
	}
	for i, c := range calls[:len(calls)-1] {
		if c != 1 { // the heartbeat, in whole seconds (at least 1)
			t.Fatalf("change %d of %v is %ds, want the heartbeat's 1s", i, calls, c)
		}
	}
	if last, want := calls[len(calls)-1], int32(rewrite.RetryDelay(1, errors.New("boom")).Seconds()); last != want {
		t.Fatalf("last visibility change %ds (of %v), want the retry delay %ds", last, calls, want)
	}
	// The heartbeat has stopped: Handle waited for it before returning.
	rq.mu.Lock()
	after := len(rq.calls)
	rq.mu.Unlock()
	if after != len(calls) {
		t.Fatalf("a renewal landed after the task ended: %v", rq.calls)
	}
}
