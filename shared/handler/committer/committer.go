// Package committer is the committer function's handler: it decodes each
// commit request of an SQS batch and hands it to package commit, reporting
// failures per message. It knows nothing of AWS clients or configuration.
package committer

import (
	"context"
	"log/slog"

	lambdaevents "github.com/aws/aws-lambda-go/events"

	"github.com/icekeeper/icekeeper/shared/commit"
	"github.com/icekeeper/icekeeper/shared/handler"
	"github.com/icekeeper/icekeeper/shared/messages"
)

// JobCommitter finishes one job.
type JobCommitter interface {
	Handle(ctx context.Context, req messages.CommitRequest, receiveCount int) (commit.Result, error)
}

// Handler handles SQS commit-request batches for the committer function.
type Handler struct {
	Commit JobCommitter
	Log    *slog.Logger
}

// Handle finishes each job in the batch and reports the failed requests.
func (h Handler) Handle(ctx context.Context, ev lambdaevents.SQSEvent) (lambdaevents.SQSEventResponse, error) {
	return handler.EachMessage(ctx, handler.Logger(h.Log), ev, "commit request", func(ctx context.Context, req messages.CommitRequest, rec lambdaevents.SQSMessage) error {
		_, err := h.Commit.Handle(ctx, req, handler.ReceiveCount(rec))
		return err
	}), nil
}
