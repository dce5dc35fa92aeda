// Package localrun stands in for Lambda's SQS event source mapping when the
// pipeline runs outside Lambda (the demo, `icekeeper compact` and
// `icekeeper invoke`, the tests): it receives messages, hands each batch to
// the same handler the Lambda function runs, deletes the messages the
// handler did not report failed, and makes failed ones visible again so
// they are redelivered (and, past the queue's maxReceiveCount, moved to its
// dead-letter queue by SQS).
package localrun

import (
	"context"
	"errors"
	"fmt"
	"time"

	lambdaevents "github.com/aws/aws-lambda-go/events"

	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/messages"
	"github.com/icekeeper/icekeeper/shared/plan"
	"github.com/icekeeper/icekeeper/shared/queue"
)

// BatchHandler is a Lambda SQS handler with batch item failures.
type BatchHandler func(ctx context.Context, ev lambdaevents.SQSEvent) (lambdaevents.SQSEventResponse, error)

// Stats counts what a drain did.
type Stats struct {
	Batches   int `json:"batches"`
	Delivered int `json:"delivered"`
	Failed    int `json:"failed"`
	// ReceiveErrors are receives that failed and were tried again: a
	// response cut short may have taken messages with it, which come back
	// only when their visibility timeout runs out.
	ReceiveErrors    int    `json:"receive_errors,omitempty"`
	LastReceiveError string `json:"last_receive_error,omitempty"`
	// RetriedReceives are receives the SDK sent more than once: an
	// earlier attempt whose response was lost may have taken messages.
	RetriedReceives int `json:"retried_receives,omitempty"`
	// Waits are the pauses a drain to empty made after an empty receive
	// because a receive may have lost messages and the queue still had
	// some in flight (settlePoll each).
	Waits int `json:"waits,omitempty"`
	// InFlightLeft is how many messages were still in flight, held by
	// nobody this drain knows of, when it stopped waiting for them.
	InFlightLeft int `json:"in_flight_left,omitempty"`
}

// receiveAttempts is how many times a receive is tried before Drain gives
// up: Lambda's event source mapping keeps polling through a failed poll,
// and the emulator has been seen to cut a response short under load
// ("deserialization failed, unexpected EOF"). A message a lost response
// took is delivered again when its visibility timeout runs out, as on SQS.
const receiveAttempts = 3

func receive(ctx context.Context, q *queue.Queue, batchSize int32, st *Stats) ([]queue.Message, error) {
	var err error
	for i := range receiveAttempts {
		if i > 0 {
			select {
			case <-ctx.Done():
				return nil, errors.Join(err, ctx.Err())
			case <-time.After(time.Duration(i) * 100 * time.Millisecond):
			}
		}
		var msgs []queue.Message
		var retried bool
		if msgs, retried, err = q.ReceiveRetried(ctx, batchSize, 0, receiveVisibility); err == nil {
			if retried {
				st.RetriedReceives++
			}
			return msgs, nil
		}
		st.ReceiveErrors, st.LastReceiveError = st.ReceiveErrors+1, err.Error()
	}
	return nil, fmt.Errorf("localrun: %d receives failed: %w", receiveAttempts, err)
}

// receiveVisibility is the visibility timeout of Drain's receives, in
// seconds.
const receiveVisibility = 60

// settleWait bounds how long a drain to empty waits for the messages a
// lost receive may have taken; settlePoll is how often it looks meanwhile.
// A receive whose response was lost holds its messages for the receive's
// visibility timeout: the SDK retries such a receive, and the retry finds
// the queue empty.
const (
	settleWait = (receiveVisibility + 10) * time.Second
	settlePoll = 500 * time.Millisecond
)

// Drain delivers messages from q to h, batchSize at a time.
//
// With maxBatches 0 it drains the queue: an empty receive ends it, unless
// one of its receives failed or was retried by the SDK. Such a receive may
// have taken messages with the response it lost, and they are in flight
// until their visibility timeout: then an empty receive ends the drain only
// when the queue also has no message in flight, waiting for them up to
// settleWait after the last such receive (counted in Stats.InFlightLeft if
// still in flight then), as Lambda's event source mapping keeps polling.
// Without that evidence, messages in flight are another consumer's.
//
// With maxBatches > 0 it delivers at most that many batches and stops at
// the first empty receive (the soak's functions poll this way, side by
// side on one queue).
//
// Short polls keep it prompt (the emulator does not wake long polls when a
// visibility timeout expires).
func Drain(ctx context.Context, q *queue.Queue, h BatchHandler, batchSize int32, maxBatches int) (Stats, error) {
	var st Stats
	var waitUntil time.Time // settleWait after the last failed or retried receive
	for maxBatches == 0 || st.Batches < maxBatches {
		suspect := st.ReceiveErrors + st.RetriedReceives
		msgs, err := receive(ctx, q, batchSize, &st)
		if err != nil {
			return st, err
		}
		if st.ReceiveErrors+st.RetriedReceives > suspect {
			waitUntil = time.Now().Add(settleWait)
		}
		if len(msgs) == 0 {
			if maxBatches > 0 || st.ReceiveErrors+st.RetriedReceives == 0 {
				return st, nil
			}
			more, err := settle(ctx, q, waitUntil, &st)
			if err != nil || !more {
				return st, err
			}
			continue
		}
		ev := lambdaevents.SQSEvent{}
		for _, m := range msgs {
			ev.Records = append(ev.Records, lambdaevents.SQSMessage{
				MessageId: m.ID, ReceiptHandle: m.ReceiptHandle, Body: m.Body, Attributes: m.Attributes,
				EventSource: "aws:sqs", EventSourceARN: q.URL(),
			})
		}
		resp, herr := h(ctx, ev)
		st.Batches++
		failed := map[string]bool{}
		if herr != nil {
			for _, m := range msgs {
				failed[m.ID] = true
			}
		}
		for _, f := range resp.BatchItemFailures {
			failed[f.ItemIdentifier] = true
		}
		for _, m := range msgs {
			st.Delivered++
			if failed[m.ID] {
				st.Failed++
				if err := q.Release(ctx, m.ReceiptHandle, 0); err != nil {
					return st, fmt.Errorf("localrun: release failed message: %w", err)
				}
				continue
			}
			if err := q.Delete(ctx, m.ReceiptHandle); err != nil {
				return st, fmt.Errorf("localrun: delete message: %w", err)
			}
		}
	}
	return st, nil
}

// settle is called after an empty receive. It reports whether to receive
// again: when a message is visible (a short poll samples a subset of SQS's
// servers and can miss one), or, after a pause of settlePoll, when messages
// are in flight and waitUntil has not passed (one whose visibility timeout
// ran out is visible again; the emulator counts it in flight until a
// receive returns it). It reports false when the queue holds nothing, or
// when messages are still in flight at waitUntil.
func settle(ctx context.Context, q *queue.Queue, waitUntil time.Time, st *Stats) (bool, error) {
	b, err := q.Backlog(ctx)
	if err != nil {
		st.ReceiveErrors, st.LastReceiveError = st.ReceiveErrors+1, err.Error()
		b.InFlight = 1 // unknown: look again
	}
	switch {
	case b.Visible > 0:
		return true, nil
	case b.InFlight == 0:
		return false, nil
	case time.Now().After(waitUntil):
		st.InFlightLeft = b.InFlight
		return false, nil
	}
	st.Waits++
	select {
	case <-ctx.Done():
		return false, ctx.Err()
	case <-time.After(settlePoll):
		return true, nil
	}
}

// TablePlanner plans one job on one table (*plan.Planner): a compaction
// or a snapshot expiry.
type TablePlanner interface {
	PlanTable(ctx context.Context, table, trigger string) (plan.Result, error)
	PlanLayout(ctx context.Context, table, trigger string, layout plan.Layout) (plan.Result, error)
	PlanExpiry(ctx context.Context, table, trigger string) (plan.Result, error)
	PlanManifestRewrite(ctx context.Context, table, trigger string) (plan.Result, error)
	PlanDeleteRewrite(ctx context.Context, table, trigger string) (plan.Result, error)
	PlanOrphanCleanup(ctx context.Context, table, trigger string, olderThan time.Duration) (plan.Result, error)
}

// Stages are the three handlers of the pipeline and their queues.
type Stages struct {
	Plan      TablePlanner
	Rewriter  BatchHandler
	Committer BatchHandler
	Tasks     *queue.Queue
	Commits   *queue.Queue
	// Jobs reads the job record after the cycle.
	Jobs interface {
		Get(ctx context.Context, id string) (jobs.Job, error)
	}
	// End ends a job without committing it (the committer's abort path:
	// the job is marked failed, every file its attempts wrote is removed,
	// the lease released), when the cycle is interrupted. It returns how
	// many files were removed.
	End func(ctx context.Context, jobID, reason string) (int, error)
	// Progress, when set, hears how the cycle advances.
	Progress Progress
	// BeforeCommit, when set, runs after the rewrites and before the
	// committer: the demo has a writer commit there, as a busy table's
	// would while a job runs.
	BeforeCommit func(ctx context.Context, p plan.Result) error
}

// Progress hears how a cycle advances: the plan, then each group
// rewritten (with its input bytes), then the end of the rewrites.
type Progress interface {
	Planned(p plan.Result)
	Rewritten(inputBytes int64)
	RewritesDone()
}

// reporting wraps a rewriter's handler so that every task it rewrote
// (not reported as a batch item failure) reaches p with its input bytes.
func reporting(h BatchHandler, p Progress) BatchHandler {
	return func(ctx context.Context, ev lambdaevents.SQSEvent) (lambdaevents.SQSEventResponse, error) {
		resp, err := h(ctx, ev)
		if err != nil {
			return resp, err
		}
		failed := map[string]bool{}
		for _, f := range resp.BatchItemFailures {
			failed[f.ItemIdentifier] = true
		}
		for _, rec := range ev.Records {
			var task messages.Task
			if !failed[rec.MessageId] && messages.Decode([]byte(rec.Body), &task) == nil {
				p.Rewritten(task.InputBytes)
			}
		}
		return resp, nil
	}
}

// ErrInterrupted: the cycle's context was cancelled (Ctrl-C, SIGTERM)
// while rewriting; the job was ended and what it wrote removed.
var ErrInterrupted = errors.New("interrupted")

// endTimeout bounds ending an interrupted job.
const endTimeout = 2 * time.Minute

// Cycle is what one complete maintenance cycle of one table did.
type Cycle struct {
	Plan      plan.Result `json:"plan"`
	Rewrites  Stats       `json:"rewrites"`
	Commits   Stats       `json:"commits"`
	Job       *jobs.Job   `json:"job,omitempty"`
	Committed bool        `json:"committed"`
	// Removed is how many files an interrupted cycle's job had written and
	// were removed.
	Removed int `json:"removed_files,omitempty"`
}

// RunCycle plans the table, runs rewriters until the task queue is empty,
// then the committer until the commit queue is empty, and reads the job's
// outcome. A job that did not commit is reported, not returned as an error.
//
// Interrupted (ctx cancelled) while rewriting, it ends the job with End,
// which removes everything the job wrote, and returns ErrInterrupted.
// Once the rewrites are done the commit is not interrupted: it takes
// seconds and is bounded by the committer's own deadline, and stopping it
// halfway would leave the job for a takeover instead.
func RunCycle(ctx context.Context, s Stages, table, trigger string) (Cycle, error) {
	return run(ctx, s, s.Plan.PlanTable, table, trigger)
}

// RunLayoutCycle is RunCycle for a compaction with the given layout
// (sort or z-order), whatever the table's icekeeper.compaction.strategy
// says.
func RunLayoutCycle(layout plan.Layout) func(ctx context.Context, s Stages, table, trigger string) (Cycle, error) {
	return func(ctx context.Context, s Stages, table, trigger string) (Cycle, error) {
		return run(ctx, s, func(ctx context.Context, table, trigger string) (plan.Result, error) {
			return s.Plan.PlanLayout(ctx, table, trigger, layout)
		}, table, trigger)
	}
}

// RunExpiry is RunCycle for a snapshot expiry: plan it, then run the
// committer, which commits it and deletes the files it frees.
func RunExpiry(ctx context.Context, s Stages, table, trigger string) (Cycle, error) {
	return run(ctx, s, s.Plan.PlanExpiry, table, trigger)
}

// RunManifestRewrite is RunCycle for a manifest rewrite.
func RunManifestRewrite(ctx context.Context, s Stages, table, trigger string) (Cycle, error) {
	return run(ctx, s, s.Plan.PlanManifestRewrite, table, trigger)
}

// RunDeleteRewrite is RunCycle for a delete-file rewrite.
func RunDeleteRewrite(ctx context.Context, s Stages, table, trigger string) (Cycle, error) {
	return run(ctx, s, s.Plan.PlanDeleteRewrite, table, trigger)
}

// RunOrphanCleanup is RunCycle for an orphan cleanup with the given
// safety age (0: the table's).
func RunOrphanCleanup(olderThan time.Duration) func(ctx context.Context, s Stages, table, trigger string) (Cycle, error) {
	return func(ctx context.Context, s Stages, table, trigger string) (Cycle, error) {
		return run(ctx, s, func(ctx context.Context, table, trigger string) (plan.Result, error) {
			return s.Plan.PlanOrphanCleanup(ctx, table, trigger, olderThan)
		}, table, trigger)
	}
}

func run(ctx context.Context, s Stages, planTable func(ctx context.Context, table, trigger string) (plan.Result, error), table, trigger string) (Cycle, error) {
	var c Cycle
	var err error
	if c.Plan, err = planTable(ctx, table, trigger); err != nil {
		if ctx.Err() != nil {
			return c, fmt.Errorf("%w while planning: %v", ErrInterrupted, err)
		}
		return c, err
	}
	if c.Plan.Outcome != plan.OutcomePlanned {
		return c, nil
	}
	rewriter := s.Rewriter
	if s.Progress != nil && c.Plan.Groups > 0 {
		s.Progress.Planned(c.Plan)
		rewriter = reporting(rewriter, s.Progress)
	}
	c.Rewrites, err = Drain(ctx, s.Tasks, rewriter, 1, 0)
	if s.Progress != nil && c.Plan.Groups > 0 {
		s.Progress.RewritesDone()
	}
	if ctx.Err() != nil {
		return c, c.end(ctx, s, "interrupted while rewriting")
	}
	if err != nil {
		return c, err
	}
	if s.BeforeCommit != nil {
		if err := s.BeforeCommit(ctx, c.Plan); err != nil {
			return c, fmt.Errorf("before commit: %w", err)
		}
	}
	if c.Commits, err = Drain(context.WithoutCancel(ctx), s.Commits, s.Committer, 1, 0); err != nil {
		return c, err
	}
	j, err := s.Jobs.Get(ctx, c.Plan.JobID)
	if err != nil {
		return c, err
	}
	c.Job = &j
	c.Committed = j.State == jobs.Committed
	return c, nil
}

// end ends an interrupted cycle's job.
func (c *Cycle) end(ctx context.Context, s Stages, reason string) error {
	if s.End == nil {
		return fmt.Errorf("%w: job %s was left to its lease's expiry", ErrInterrupted, c.Plan.JobID)
	}
	ectx, cancel := context.WithTimeout(context.WithoutCancel(ctx), endTimeout)
	defer cancel()
	n, err := s.End(ectx, c.Plan.JobID, reason)
	if err != nil {
		return fmt.Errorf("%w: ending job %s: %v", ErrInterrupted, c.Plan.JobID, err)
	}
	c.Removed = n
	if j, gerr := s.Jobs.Get(ectx, c.Plan.JobID); gerr == nil {
		c.Job = &j
	}
	return fmt.Errorf("%w: job %s ended, %d files it wrote removed", ErrInterrupted, c.Plan.JobID, n)
}
