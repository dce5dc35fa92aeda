// Package queue sends icekeeper's messages to SQS and, for local runs,
// receives them the way Lambda's SQS event source mapping would.
//
// Messages are JSON. Send is at-least-once; every consumer of these queues is
// idempotent (see packages rewrite and commit), so duplicates are harmless.
package queue

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/aws/retry"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/aws-sdk-go-v2/service/sqs/types"
)

// SQS is the subset of the SQS client the queue needs.
type SQS interface {
	SendMessage(ctx context.Context, in *sqs.SendMessageInput, opts ...func(*sqs.Options)) (*sqs.SendMessageOutput, error)
	SendMessageBatch(ctx context.Context, in *sqs.SendMessageBatchInput, opts ...func(*sqs.Options)) (*sqs.SendMessageBatchOutput, error)
	ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, opts ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error)
	DeleteMessage(ctx context.Context, in *sqs.DeleteMessageInput, opts ...func(*sqs.Options)) (*sqs.DeleteMessageOutput, error)
	ChangeMessageVisibility(ctx context.Context, in *sqs.ChangeMessageVisibilityInput, opts ...func(*sqs.Options)) (*sqs.ChangeMessageVisibilityOutput, error)
	GetQueueAttributes(ctx context.Context, in *sqs.GetQueueAttributesInput, opts ...func(*sqs.Options)) (*sqs.GetQueueAttributesOutput, error)
}

// Queue is one SQS queue.
type Queue struct {
	client SQS
	url    string
}

// New validates its arguments and returns a Queue. setting names the
// environment variable the URL came from, for the error message.
func New(client SQS, url, setting string) (*Queue, error) {
	if client == nil {
		return nil, errors.New("queue: nil SQS client")
	}
	if url == "" {
		return nil, fmt.Errorf("queue: empty queue URL (set %s)", setting)
	}
	return &Queue{client: client, url: url}, nil
}

// URL returns the queue URL.
func (q *Queue) URL() string { return q.url }

// Send sends one message body.
func (q *Queue) Send(ctx context.Context, body string) error {
	if _, err := q.client.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(q.url), MessageBody: aws.String(body)}); err != nil {
		return fmt.Errorf("queue: send to %s: %w", q.url, err)
	}
	return nil
}

// SendAll sends bodies in batches of ten; it returns an error if any message
// could not be sent (the ones before it were).
func (q *Queue) SendAll(ctx context.Context, bodies []string) error {
	for _, batch := range Batches(bodies) {
		entries := make([]types.SendMessageBatchRequestEntry, 0, len(batch))
		for _, i := range batch {
			entries = append(entries, types.SendMessageBatchRequestEntry{Id: aws.String(strconv.Itoa(i)), MessageBody: aws.String(bodies[i])})
		}
		out, err := q.client.SendMessageBatch(ctx, &sqs.SendMessageBatchInput{QueueUrl: aws.String(q.url), Entries: entries})
		if err != nil {
			return fmt.Errorf("queue: send batch to %s: %w", q.url, err)
		}
		if len(out.Failed) > 0 {
			f := out.Failed[0]
			return fmt.Errorf("queue: send batch to %s: %d failed, first: %s %s", q.url, len(out.Failed), aws.ToString(f.Code), aws.ToString(f.Message))
		}
	}
	return nil
}

// SendMessageBatch's limits: at most 10 entries, and the sum of the
// entries' body lengths at most 262,144 bytes (the SendMessageBatch API
// reference: "The maximum allowed individual message size and the maximum
// total payload size (the sum of the individual lengths of all of the
// batched messages) are both 256 KiB (262,144 bytes)"; SQS has since
// raised both to 1 MiB, and the smaller bound holds under either).
// A batch over it fails whole with BatchRequestTooLong.
const (
	MaxBatchEntries = 10
	MaxBatchBytes   = 262_144
)

// Batches splits bodies, in order, into the index lists of the batches
// SendAll sends: each at most MaxBatchEntries entries and MaxBatchBytes
// bytes of bodies; a body larger than MaxBatchBytes goes alone (SQS then
// refuses it, saying why).
func Batches(bodies []string) [][]int {
	var out [][]int
	var cur []int
	size := 0
	for i, b := range bodies {
		if len(cur) > 0 && (len(cur) == MaxBatchEntries || size+len(b) > MaxBatchBytes) {
			out = append(out, cur)
			cur, size = nil, 0
		}
		cur = append(cur, i)
		size += len(b)
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// Message is one received message.
type Message struct {
	ID            string
	ReceiptHandle string
	Body          string
	// ReceiveCount is SQS's ApproximateReceiveCount (1 on first delivery).
	ReceiveCount int
	Attributes   map[string]string
}

// Receive takes up to max messages, waiting at most waitSeconds for the first.
func (q *Queue) Receive(ctx context.Context, max int32, waitSeconds int32, visibility int32) ([]Message, error) {
	msgs, _, err := q.ReceiveRetried(ctx, max, waitSeconds, visibility)
	return msgs, err
}

// ReceiveRetried is Receive, and reports whether the SDK sent the request
// more than once (its retryer tries again when a response is lost or cut
// short). An earlier attempt may have taken messages that this answer
// does not carry: they are in flight until their visibility timeout runs
// out, then delivered again.
func (q *Queue) ReceiveRetried(ctx context.Context, max int32, waitSeconds int32, visibility int32) ([]Message, bool, error) {
	out, err := q.client.ReceiveMessage(ctx, &sqs.ReceiveMessageInput{
		QueueUrl: aws.String(q.url), MaxNumberOfMessages: max, WaitTimeSeconds: waitSeconds,
		VisibilityTimeout:           visibility,
		MessageSystemAttributeNames: []types.MessageSystemAttributeName{types.MessageSystemAttributeNameAll},
	})
	if err != nil {
		return nil, false, fmt.Errorf("queue: receive from %s: %w", q.url, err)
	}
	attempts, _ := retry.GetAttemptResults(out.ResultMetadata)
	retried := len(attempts.Results) > 1
	msgs := make([]Message, 0, len(out.Messages))
	for _, m := range out.Messages {
		attrs := map[string]string{}
		for k, v := range m.Attributes {
			attrs[k] = v
		}
		n, _ := strconv.Atoi(attrs["ApproximateReceiveCount"])
		msgs = append(msgs, Message{ID: aws.ToString(m.MessageId), ReceiptHandle: aws.ToString(m.ReceiptHandle), Body: aws.ToString(m.Body), ReceiveCount: n, Attributes: attrs})
	}
	return msgs, retried, nil
}

// Delete acknowledges a message.
func (q *Queue) Delete(ctx context.Context, receiptHandle string) error {
	if _, err := q.client.DeleteMessage(ctx, &sqs.DeleteMessageInput{QueueUrl: aws.String(q.url), ReceiptHandle: aws.String(receiptHandle)}); err != nil {
		return fmt.Errorf("queue: delete from %s: %w", q.url, err)
	}
	return nil
}

// Release makes a message visible again after seconds (0: at once), as a
// failed Lambda invocation would after its visibility timeout.
func (q *Queue) Release(ctx context.Context, receiptHandle string, seconds int32) error {
	if _, err := q.client.ChangeMessageVisibility(ctx, &sqs.ChangeMessageVisibilityInput{
		QueueUrl: aws.String(q.url), ReceiptHandle: aws.String(receiptHandle), VisibilityTimeout: seconds,
	}); err != nil {
		return fmt.Errorf("queue: release on %s: %w", q.url, err)
	}
	return nil
}

// Backlog is what a queue holds, by SQS's approximate counts.
type Backlog struct {
	// Visible messages can be received now.
	Visible int
	// InFlight messages were received and are neither deleted nor
	// visible again: a consumer holds them, or a receive whose response
	// was lost took them until their visibility timeout runs out.
	InFlight int
	// Delayed messages become visible after their delay.
	Delayed int
}

// Empty reports whether the queue holds no message at all.
func (b Backlog) Empty() bool { return b.Visible+b.InFlight+b.Delayed == 0 }

// Backlog reads the queue's approximate message counts.
func (q *Queue) Backlog(ctx context.Context) (Backlog, error) {
	out, err := q.client.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{
		QueueUrl: aws.String(q.url),
		AttributeNames: []types.QueueAttributeName{
			types.QueueAttributeNameApproximateNumberOfMessages,
			types.QueueAttributeNameApproximateNumberOfMessagesNotVisible,
			types.QueueAttributeNameApproximateNumberOfMessagesDelayed,
		},
	})
	if err != nil {
		return Backlog{}, fmt.Errorf("queue: attributes of %s: %w", q.url, err)
	}
	var b Backlog
	for name, n := range map[types.QueueAttributeName]*int{
		types.QueueAttributeNameApproximateNumberOfMessages:           &b.Visible,
		types.QueueAttributeNameApproximateNumberOfMessagesNotVisible: &b.InFlight,
		types.QueueAttributeNameApproximateNumberOfMessagesDelayed:    &b.Delayed,
	} {
		v, ok := out.Attributes[string(name)]
		if !ok {
			continue
		}
		if *n, err = strconv.Atoi(v); err != nil {
			return Backlog{}, fmt.Errorf("queue: attribute %s of %s is %q: %w", name, q.url, v, err)
		}
	}
	return b, nil
}
