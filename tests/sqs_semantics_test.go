package tests

import (
	"strconv"
	"testing"
	"time"
)

// TestSQS_TheEmulatorKeepsTheReceiveSemanticsThePipelineReliesOn checks
// the stand-in against SQS's documented behaviour that icekeeper's retries
// and dead-letter accounting depend on, so that a test never passes on a
// queue that forgives what SQS does not:
//   - "ApproximateReceiveCount: Returns the number of times a message has
//     been received across all queues but not deleted" (ReceiveMessage,
//     Amazon SQS API Reference): 1 on the first receive, one more each time;
//   - a received message is invisible for its visibility timeout, and a
//     visibility of 0 makes it visible at once (ChangeMessageVisibility);
//   - "maxReceiveCount – The number of times a message is delivered to the
//     source queue before being moved to the dead-letter queue" (Using
//     dead-letter queues in Amazon SQS, Developer Guide): after that many
//     receives without a delete, the next receive finds it in the DLQ, not
//     the source queue.
func TestSQS_TheEmulatorKeepsTheReceiveSemanticsThePipelineReliesOn(t *testing.T) {
	e := setup(t)
	q := e.deps.Tasks
	if err := q.Send(e.ctx, `{"probe": true}`); err != nil {
		t.Fatal(err)
	}
	for want := 1; want <= e.cfg.MaxTaskAttempts; want++ {
		msgs, err := q.Receive(e.ctx, 10, 1, 60)
		if err != nil {
			t.Fatal(err)
		}
		if len(msgs) != 1 {
			t.Fatalf("receive %d: %d messages, want the probe", want, len(msgs))
		}
		if got := msgs[0].Attributes["ApproximateReceiveCount"]; got != strconv.Itoa(want) {
			t.Fatalf("receive %d: ApproximateReceiveCount %q", want, got)
		}
		// Invisible for its visibility timeout ...
		if again, err := q.Receive(e.ctx, 10, 0, 60); err != nil || len(again) != 0 {
			t.Fatalf("receive %d: the probe was visible again within its visibility timeout (%d, %v)", want, len(again), err)
		}
		// ... and visible at once when released.
		if err := q.Release(e.ctx, msgs[0].ReceiptHandle, 0); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(10 * time.Millisecond)
	if msgs, err := q.Receive(e.ctx, 10, 1, 60); err != nil || len(msgs) != 0 {
		t.Fatalf("after %d receives the probe is still in the source queue (%d, %v), want it in the DLQ", e.cfg.MaxTaskAttempts, len(msgs), err)
	}
	if n, err := e.dlq(e.ctx); err != nil || n != 1 {
		t.Fatalf("DLQ holds %d (%v), want the probe", n, err)
	}
}
