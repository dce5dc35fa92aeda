package planner

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"

	"github.com/icekeeper/icekeeper/events"
	"github.com/icekeeper/icekeeper/shared/metrics"
	"github.com/icekeeper/icekeeper/shared/stage"
	"github.com/icekeeper/icekeeper/shared/trigger"
)

// TriggerDispatcher acts on one decoded trigger (package trigger).
type TriggerDispatcher interface {
	Dispatch(ctx context.Context, trig events.Trigger) (trigger.Outcome, error)
}

// Counter counts rejected events.
type Counter interface {
	Emit(dimensions map[string]string, ms ...metrics.Metric) error
}

// Response is what the planner function returns.
type Response struct {
	Trigger  events.Trigger         `json:"trigger"`
	Tables   []trigger.TableOutcome `json:"tables,omitempty"`
	Rejected string                 `json:"rejected,omitempty"`
	Errors   []string               `json:"errors,omitempty"`
	// Deferred counts the granted tables a sweep left for the next one
	// for lack of time (trigger.Outcome.Deferred).
	Deferred int `json:"deferred,omitempty"`
}

// Handler handles EventBridge events for the planner function.
type Handler struct {
	Dispatch TriggerDispatcher
	// Metrics counts rejected events (optional).
	Metrics Counter
	Log     *slog.Logger
}

// Handle decodes the event and dispatches it. A rejected event is logged,
// counted and answered without error (retrying it cannot help); a
// retryable failure makes the invocation fail, so the asynchronous invoke
// retries it (dispatching is idempotent: leases and cooldowns).
func (h Handler) Handle(ctx context.Context, raw json.RawMessage) (Response, error) {
	log := stage.Logger(h.Log)
	trig, err := events.Decode(raw)
	if err != nil {
		log.Error("event rejected", "err", err.Error(), "metric", "EventsRejected")
		if h.Metrics != nil {
			_ = h.Metrics.Emit(map[string]string{"Function": "planner"}, metrics.Metric{Name: "EventsRejected", Value: 1, Unit: metrics.Count})
		}
		return Response{Rejected: err.Error()}, nil
	}
	out, err := h.Dispatch.Dispatch(ctx, trig)
	return Response{Trigger: trig, Tables: out.Tables, Errors: out.Errors, Deferred: out.Deferred}, err
}

// String renders a response for logs.
func (r Response) String() string {
	b, _ := json.Marshal(r)
	return fmt.Sprint(string(b))
}
