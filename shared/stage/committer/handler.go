package committer

import (
	"context"
	"log/slog"

	lambdaevents "github.com/aws/aws-lambda-go/events"

	"github.com/icekeeper/icekeeper/shared/commit"
	"github.com/icekeeper/icekeeper/shared/messages"
	"github.com/icekeeper/icekeeper/shared/stage"
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
	return stage.EachMessage(ctx, stage.Logger(h.Log), ev, "commit request", func(ctx context.Context, req messages.CommitRequest, rec lambdaevents.SQSMessage) error {
		_, err := h.Commit.Handle(ctx, req, stage.ReceiveCount(rec))
		return err
	}), nil
}
