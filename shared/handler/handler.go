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
	"errors"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/apache/iceberg-go/catalog"
	lambdaevents "github.com/aws/aws-lambda-go/events"

	"github.com/icekeeper/icekeeper/events"
	"github.com/icekeeper/icekeeper/shared/commit"
	"github.com/icekeeper/icekeeper/shared/messages"
	"github.com/icekeeper/icekeeper/shared/plan"
	"github.com/icekeeper/icekeeper/shared/rewrite"
)

// TablePlanner plans one table.
type TablePlanner interface {
	PlanTable(ctx context.Context, table, trigger string) (plan.Result, error)
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
	Trigger  events.Trigger `json:"trigger"`
	Results  []plan.Result  `json:"results,omitempty"`
	Rejected string         `json:"rejected,omitempty"`
	Errors   []string       `json:"errors,omitempty"`
}

// Planner handles EventBridge events for the planner function.
type Planner struct {
	Plan TablePlanner
	// SweepTables are the tables a scheduled sweep visits.
	SweepTables []string
	Log         *slog.Logger
}

// Handle decodes the event and plans each table it names. A rejected event
// is logged and answered without error (retrying it cannot help); a table
// whose planning failed makes the invocation fail after every table was
// tried, so the asynchronous invoke retries (planning is idempotent).
func (h Planner) Handle(ctx context.Context, raw json.RawMessage) (PlannerResponse, error) {
	log := logger(h.Log)
	trig, err := events.Decode(raw)
	if err != nil {
		log.Error("event rejected", "err", err.Error(), "metric", "EventsRejected")
		return PlannerResponse{Rejected: err.Error()}, nil
	}
	resp := PlannerResponse{Trigger: trig}
	tables := trig.Tables
	if trig.Sweep {
		tables = h.SweepTables
	}
	var errs []error
	for _, t := range tables {
		r, err := h.Plan.PlanTable(ctx, t, trig.Kind)
		if err != nil {
			resp.Errors = append(resp.Errors, err.Error())
			terminal := Terminal(err)
			log.Error("planning failed", "table", t, "err", err.Error(), "terminal", terminal)
			if !terminal {
				errs = append(errs, err)
			}
			continue
		}
		resp.Results = append(resp.Results, r)
	}
	return resp, errors.Join(errs...)
}

// Rewriter handles SQS task batches for the rewriter function.
type Rewriter struct {
	Rewrite TaskRewriter
	Log     *slog.Logger
}

// Handle rewrites each task in the batch and reports the failed ones.
func (h Rewriter) Handle(ctx context.Context, ev lambdaevents.SQSEvent) (lambdaevents.SQSEventResponse, error) {
	return eachMessage(ctx, logger(h.Log), ev, "task", func(ctx context.Context, task messages.Task, n int) error {
		_, err := h.Rewrite.Handle(ctx, task, n)
		return err
	}), nil
}

// Committer handles SQS commit-request batches for the committer function.
type Committer struct {
	Commit JobCommitter
	Log    *slog.Logger
}

// Handle finishes each job in the batch and reports the failed requests.
func (h Committer) Handle(ctx context.Context, ev lambdaevents.SQSEvent) (lambdaevents.SQSEventResponse, error) {
	return eachMessage(ctx, logger(h.Log), ev, "commit request", func(ctx context.Context, req messages.CommitRequest, n int) error {
		_, err := h.Commit.Handle(ctx, req, n)
		return err
	}), nil
}

// eachMessage decodes every record as a T and hands it to handle with its
// delivery count; malformed records and handler errors become batch item
// failures (a malformed record never succeeds, so it reaches the DLQ).
func eachMessage[T any](ctx context.Context, log *slog.Logger, ev lambdaevents.SQSEvent, what string, handle func(context.Context, T, int) error) lambdaevents.SQSEventResponse {
	var resp lambdaevents.SQSEventResponse
	for _, rec := range ev.Records {
		var msg T
		err := messages.Decode([]byte(rec.Body), &msg)
		if err != nil {
			log.Error("malformed "+what, "message_id", rec.MessageId, "err", err.Error())
		} else {
			err = handle(ctx, msg, receiveCount(rec))
		}
		if err != nil {
			resp.BatchItemFailures = append(resp.BatchItemFailures, lambdaevents.SQSBatchItemFailure{ItemIdentifier: rec.MessageId})
		}
	}
	return resp
}

// Terminal reports whether a planning error cannot be fixed by retrying the
// same event: the table or namespace does not exist, or its name is
// malformed.
func Terminal(err error) bool {
	return errors.Is(err, catalog.ErrNoSuchTable) || errors.Is(err, catalog.ErrNoSuchNamespace) || errors.Is(err, messages.ErrMalformed)
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
