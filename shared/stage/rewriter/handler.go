package rewriter

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

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
	// Heartbeat, with Requeue, keeps each task invisible for Heartbeat at
	// a time while it runs (set on receipt, renewed every third of it), so
	// the task of a rewriter that dies without answering comes back within
	// Heartbeat (envvars.TaskHeartbeat in the Lambda function). 0: the
	// queue's visibility timeout holds it.
	Heartbeat time.Duration
	Log       *slog.Logger
}

// Handle rewrites each task in the batch and reports the failed ones.
func (h Handler) Handle(ctx context.Context, ev lambdaevents.SQSEvent) (lambdaevents.SQSEventResponse, error) {
	log := stage.Logger(h.Log)
	resp := stage.EachMessage(ctx, log, ev, "task", func(ctx context.Context, task messages.Task, rec lambdaevents.SQSMessage) error {
		n := stage.ReceiveCount(rec)
		stop := h.heartbeat(ctx, log, task, rec.ReceiptHandle)
		// A panic stops the heartbeat too, as a dead process's would stop.
		defer stop()
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
		// No heartbeat may land after the retry delay below.
		stop()
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

// heartbeat keeps the task's message invisible for h.Heartbeat from now
// and renews that every third of it until stop is called (stop may be
// called more than once). A renewal that fails is logged: the task may
// then be delivered again while it runs, which the rewrite's attempts
// make harmless (package rewrite).
func (h Handler) heartbeat(ctx context.Context, log *slog.Logger, task messages.Task, receipt string) (stop func()) {
	if h.Requeue == nil || h.Heartbeat <= 0 {
		return func() {}
	}
	seconds := int32(max(h.Heartbeat/time.Second, 1))
	beat := func() {
		if err := h.Requeue.Release(context.WithoutCancel(ctx), receipt, seconds); err != nil {
			log.Warn("renew the task's visibility", "job_id", task.JobID, "group", task.Group, "err", err.Error())
		}
	}
	beat()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		tick := time.NewTicker(max(h.Heartbeat/3, time.Millisecond))
		defer tick.Stop()
		for {
			select {
			case <-done:
				return
			case <-tick.C:
				beat()
			}
		}
	}()
	var once sync.Once
	return func() {
		once.Do(func() {
			close(done)
			wg.Wait()
		})
	}
}
