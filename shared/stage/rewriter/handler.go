package rewriter

import (
	"context"
	"fmt"
	"log/slog"

	lambdaevents "github.com/aws/aws-lambda-go/events"

	"github.com/icekeeper/icekeeper/shared/deletions"
	"github.com/icekeeper/icekeeper/shared/listing"
	"github.com/icekeeper/icekeeper/shared/messages"
	"github.com/icekeeper/icekeeper/shared/rewrite"
	"github.com/icekeeper/icekeeper/shared/stage"
)

// TaskRewriter rewrites one group.
type TaskRewriter interface {
	Handle(ctx context.Context, task messages.Task, receiveCount int) (rewrite.Result, error)
}

// Requeuer makes a failed message visible again after a delay (SQS
// ChangeMessageVisibility on the task queue; *queue.Queue).
type Requeuer interface {
	Release(ctx context.Context, receiptHandle string, seconds int32) error
}

// TaskDeleter deletes one part of a job's deletions record
// (*deletions.Deleter).
type TaskDeleter interface {
	Handle(ctx context.Context, task messages.Task) (deletions.Result, error)
}

// TaskLister lists one prefix of an orphan cleanup's fanned-out listing
// (listing.Lister).
type TaskLister interface {
	Handle(ctx context.Context, task messages.Task) (listing.Result, error)
}

// Handler handles SQS task batches for the rewriter function: rewrite
// tasks, deletion tasks (a task with Delete set) and listing tasks (List
// set).
type Handler struct {
	Rewrite TaskRewriter
	// Delete runs deletion tasks (nil: they fail, and reach the DLQ).
	Delete TaskDeleter
	// List runs listing tasks (nil: they fail, and reach the DLQ).
	List TaskLister
	// Requeue, when set, brings a failed task back after
	// rewrite.RetryDelay instead of the queue's visibility timeout.
	Requeue Requeuer
	Log     *slog.Logger
}

// Handle rewrites each task in the batch and reports the failed ones.
func (h Handler) Handle(ctx context.Context, ev lambdaevents.SQSEvent) (lambdaevents.SQSEventResponse, error) {
	log := stage.Logger(h.Log)
	resp := stage.EachMessage(ctx, log, ev, "task", func(ctx context.Context, task messages.Task, rec lambdaevents.SQSMessage) error {
		n := stage.ReceiveCount(rec)
		var err error
		switch kind := task.Kind(); kind {
		case messages.TaskDelete:
			if h.Delete == nil {
				err = fmt.Errorf("%w: a deletion task, but this rewriter runs none", rewrite.ErrTerminal)
				break
			}
			_, err = h.Delete.Handle(ctx, task)
		case messages.TaskList:
			if h.List == nil {
				err = fmt.Errorf("%w: a listing task, but this rewriter runs none", rewrite.ErrTerminal)
				break
			}
			_, err = h.List.Handle(ctx, task)
		case messages.TaskCompact, messages.TaskExchangeMap, messages.TaskExchangeReduce, messages.TaskRewriteDeletes:
			_, err = h.Rewrite.Handle(ctx, task, n)
		default:
			err = fmt.Errorf("%w: task kind %q", rewrite.ErrTerminal, kind)
		}
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
