package localrun_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	lambdaevents "github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/icekeeper/icekeeper/shared/harness/localcloud"
	"github.com/icekeeper/icekeeper/shared/harness/localrun"
	"github.com/icekeeper/icekeeper/shared/queue"
)

// flaky fails the first failures receives the way the emulator was seen to
// under load: the response cut short after its status line.
type flaky struct {
	queue.SQS
	failures int
}

var errCutShort = errors.New("deserialization failed, unexpected EOF")

func (f *flaky) ReceiveMessage(ctx context.Context, in *sqs.ReceiveMessageInput, opts ...func(*sqs.Options)) (*sqs.ReceiveMessageOutput, error) {
	if f.failures > 0 {
		f.failures--
		return nil, errCutShort
	}
	return f.SQS.ReceiveMessage(ctx, in, opts...)
}

func setup(t *testing.T, failures int) *queue.Queue {
	t.Helper()
	cloud := localcloud.Start()
	t.Cleanup(cloud.Close)
	ctx := context.Background()
	res, err := cloud.Provision(ctx, "localrun", "", 3)
	if err != nil {
		t.Fatal(err)
	}
	sender, err := queue.New(cloud.Clients.SQS, res.TaskQueueURL, "TASK_QUEUE_URL")
	if err != nil {
		t.Fatal(err)
	}
	for _, body := range []string{"a", "b", "c"} {
		if err := sender.Send(ctx, body); err != nil {
			t.Fatal(err)
		}
	}
	q, err := queue.New(&flaky{SQS: cloud.Clients.SQS, failures: failures}, res.TaskQueueURL, "TASK_QUEUE_URL")
	if err != nil {
		t.Fatal(err)
	}
	return q
}

func collect(got *[]string) localrun.BatchHandler {
	return func(_ context.Context, ev lambdaevents.SQSEvent) (lambdaevents.SQSEventResponse, error) {
		for _, r := range ev.Records {
			*got = append(*got, r.Body)
		}
		return lambdaevents.SQSEventResponse{}, nil
	}
}

func TestDrain_KeepsPollingThroughAFailedReceive(t *testing.T) {
	q := setup(t, 2)
	var got []string
	st, err := localrun.Drain(context.Background(), q, collect(&got), 10, 0)
	if err != nil {
		t.Fatalf("drain: %v", err)
	}
	if len(got) != 3 || st.Delivered != 3 {
		t.Fatalf("delivered %v (stats %+v), want a, b and c", got, st)
	}
}

func TestDrain_GivesUpWhenEveryReceiveFails(t *testing.T) {
	q := setup(t, 100)
	var got []string
	_, err := localrun.Drain(context.Background(), q, collect(&got), 10, 0)
	if !errors.Is(err, errCutShort) || !strings.Contains(err.Error(), "receives failed") {
		t.Fatalf("drain: %v, want the receive's error after the last attempt", err)
	}
	if len(got) != 0 {
		t.Fatalf("delivered %v with every receive failing", got)
	}
}
