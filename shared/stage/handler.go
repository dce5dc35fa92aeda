package stage

import (
	"context"
	"log/slog"
	"strconv"

	lambdaevents "github.com/aws/aws-lambda-go/events"

	"github.com/icekeeper/icekeeper/shared/messages"
)

// EachMessage decodes every record as a T and hands it to handle with its
// record; malformed records and handler errors become batch item failures
// (a malformed record never succeeds, so it reaches the DLQ).
func EachMessage[T any](ctx context.Context, log *slog.Logger, ev lambdaevents.SQSEvent, what string, handle func(context.Context, T, lambdaevents.SQSMessage) error) lambdaevents.SQSEventResponse {
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

// ReceiveCount is how many times SQS has delivered the message (1 on the
// first delivery).
func ReceiveCount(rec lambdaevents.SQSMessage) int {
	n, err := strconv.Atoi(rec.Attributes["ApproximateReceiveCount"])
	if err != nil || n < 1 {
		return 1
	}
	return n
}

// Logger is l, or the default logger when l is nil.
func Logger(l *slog.Logger) *slog.Logger {
	if l == nil {
		return slog.Default()
	}
	return l
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
		Logger(h.Log).Warn("not in mode active: message dropped", "function", h.Function, "mode", h.Mode, "message_id", rec.MessageId)
	}
	return lambdaevents.SQSEventResponse{}, nil
}
