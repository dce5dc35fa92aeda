// Package handler adapts Lambda events to icekeeper's stages. A handler only
// decodes its event and calls the domain package (plan, rewrite, commit);
// it knows nothing of AWS clients or configuration.
//
// SQS handlers report failures per message (SQSEventResponse batch item
// failures), so one bad message never makes a batch's good ones redeliver.
package handler

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"strconv"

	lambdaevents "github.com/aws/aws-lambda-go/events"

	"github.com/icekeeper/icekeeper/events"
	"github.com/icekeeper/icekeeper/shared/commit"
	"github.com/icekeeper/icekeeper/shared/messages"
	"github.com/icekeeper/icekeeper/shared/metrics"
	"github.com/icekeeper/icekeeper/shared/plan"
	"github.com/icekeeper/icekeeper/shared/rewrite"
	"github.com/icekeeper/icekeeper/shared/trigger"
)

// TriggerDispatcher acts on one decoded trigger (package trigger).
type TriggerDispatcher interface {
	Dispatch(ctx context.Context, trig events.Trigger) (trigger.Outcome, error)
}

// TablePlanner plans one table.
type TablePlanner interface {
	PlanTable(ctx context.Context, table, trigger string) (plan.Result, error)
}

// Counter counts rejected events.
type Counter interface {
	Emit(dimensions map[string]string, ms ...metrics.Metric) error
}

// TaskRewriter rewrites one group.
type TaskRewriter interface {
	Handle(ctx context.Context, task messages.Task, receiveCount int) (rewrite.Result, error)
}

// JobCommitter finishes one job.
type JobCommitter interface {
	Handle(ctx context.Context, req messages.CommitRequest, receiveCount int) (commit.Result, error)
}

// PlannerResponse is what the planner function returns.
type PlannerResponse struct {
	Trigger  events.Trigger         `json:"trigger"`
	Tables   []trigger.TableOutcome `json:"tables,omitempty"`
	Rejected string                 `json:"rejected,omitempty"`
	Errors   []string               `json:"errors,omitempty"`
}

// Planner handles EventBridge events for the planner function.
type Planner struct {
	Dispatch TriggerDispatcher
	// Metrics counts rejected events (optional).
	Metrics Counter
	Log     *slog.Logger
}

// Handle decodes the event and dispatches it. A rejected event is logged,
// counted and answered without error (retrying it cannot help); a
// retryable failure makes the invocation fail, so the asynchronous invoke
// retries it (dispatching is idempotent: leases and cooldowns).
func (h Planner) Handle(ctx context.Context, raw json.RawMessage) (PlannerResponse, error) {
	log := logger(h.Log)
	trig, err := events.Decode(raw)
	if err != nil {
		log.Error("event rejected", "err", err.Error(), "metric", "EventsRejected")
		if h.Metrics != nil {
			_ = h.Metrics.Emit(map[string]string{"Function": "planner"}, metrics.Metric{Name: "EventsRejected", Value: 1, Unit: metrics.Count})
		}
		return PlannerResponse{Rejected: err.Error()}, nil
	}
	out, err := h.Dispatch.Dispatch(ctx, trig)
	return PlannerResponse{Trigger: trig, Tables: out.Tables, Errors: out.Errors}, err
}

// Requeuer makes a failed message visible again after a delay (SQS
// ChangeMessageVisibility on the task queue; *queue.Queue).
type Requeuer interface {
	Release(ctx context.Context, receiptHandle string, seconds int32) error
}

// Rewriter handles SQS task batches for the rewriter function.
type Rewriter struct {
	Rewrite TaskRewriter
	// Requeue, when set, brings a failed task back after
	// rewrite.RetryDelay instead of the queue's visibility timeout.
	Requeue Requeuer
	Log     *slog.Logger
}

// Handle rewrites each task in the batch and reports the failed ones.
func (h Rewriter) Handle(ctx context.Context, ev lambdaevents.SQSEvent) (lambdaevents.SQSEventResponse, error) {
	log := logger(h.Log)
	resp := eachMessage(ctx, log, ev, "task", func(ctx context.Context, task messages.Task, rec lambdaevents.SQSMessage) error {
		n := receiveCount(rec)
		_, err := h.Rewrite.Handle(ctx, task, n)
		if err != nil && h.Requeue != nil {
			delay := rewrite.RetryDelay(n, err)
			if rerr := h.Requeue.Release(context.WithoutCancel(ctx), rec.ReceiptHandle, int32(delay.Seconds())); rerr != nil {
				log.Warn("requeue failed task", "job_id", task.JobID, "group", task.Group, "err", rerr.Error())
			}
		}
		return err
	})
	return resp, nil
}

// Committer handles SQS commit-request batches for the committer function.
type Committer struct {
	Commit JobCommitter
	Log    *slog.Logger
}

// Handle finishes each job in the batch and reports the failed requests.
func (h Committer) Handle(ctx context.Context, ev lambdaevents.SQSEvent) (lambdaevents.SQSEventResponse, error) {
	return eachMessage(ctx, logger(h.Log), ev, "commit request", func(ctx context.Context, req messages.CommitRequest, rec lambdaevents.SQSMessage) error {
		_, err := h.Commit.Handle(ctx, req, receiveCount(rec))
		return err
	}), nil
}

// eachMessage decodes every record as a T and hands it to handle with its
// record; malformed records and handler errors become batch item failures
// (a malformed record never succeeds, so it reaches the DLQ).
func eachMessage[T any](ctx context.Context, log *slog.Logger, ev lambdaevents.SQSEvent, what string, handle func(context.Context, T, lambdaevents.SQSMessage) error) lambdaevents.SQSEventResponse {
	var resp lambdaevents.SQSEventResponse
	for _, rec := range ev.Records {
		var msg T
		err := messages.Decode([]byte(rec.Body), &msg)
		if err != nil {
			log.Error("malformed "+what, "message_id", rec.MessageId, "err", err.Error())
		} else {
			err = handle(ctx, msg, rec)
		}
		if err != nil {
			resp.BatchItemFailures = append(resp.BatchItemFailures, lambdaevents.SQSBatchItemFailure{ItemIdentifier: rec.MessageId})
		}
	}
	return resp
}

func receiveCount(rec lambdaevents.SQSMessage) int {
	n, err := strconv.Atoi(rec.Attributes["ApproximateReceiveCount"])
	if err != nil || n < 1 {
		return 1
	}
	return n
}

func logger(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.Default()
	}
	return l
}

// String renders a response for logs.
func (r PlannerResponse) String() string {
	b, _ := json.Marshal(r)
	return fmt.Sprint(string(b))
}

// Idle is the rewriter's and the committer's handler outside mode active:
// it touches nothing and acknowledges every message, logging it, so that
// nothing piles up in the queues. A job left behind is ended by the next
// active planner that takes over its expired lease.
type Idle struct {
	Function string
	Mode     string
	Log      *slog.Logger
}

// Handle acknowledges the batch without acting on it.
func (h Idle) Handle(_ context.Context, ev lambdaevents.SQSEvent) (lambdaevents.SQSEventResponse, error) {
	for _, rec := range ev.Records {
		logger(h.Log).Warn("not in mode active: message dropped", "function", h.Function, "mode", h.Mode, "message_id", rec.MessageId)
	}
	return lambdaevents.SQSEventResponse{}, nil
}
