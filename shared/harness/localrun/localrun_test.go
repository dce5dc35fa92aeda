package localrun_test

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net/http"
	"slices"
	"strings"
	"testing"

	lambdaevents "github.com/aws/aws-lambda-go/events"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
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
	return setupWith(t, func(c *sqs.Client) queue.SQS { return &flaky{SQS: c, failures: failures} })
}

// setupWith provisions a task queue holding a, b and c, and returns it
// read through the client wrap makes of the emulator's.
func setupWith(t *testing.T, wrap func(*sqs.Client) queue.SQS) *queue.Queue {
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
	q, err := queue.New(wrap(cloud.Clients.SQS), res.TaskQueueURL, "TASK_QUEUE_URL")
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

// losingTransport loses the response of the first lost receives after
// the emulator answered them: the messages they took are in flight (for a
// second: the request's visibility timeout is cut to 1 s, so that the
// test is quick), and the SDK's retryer sends the receive again, as it
// does after a connection reset.
type losingTransport struct {
	next interface {
		Do(*http.Request) (*http.Response, error)
	}
	lost int
}

func (l *losingTransport) Do(req *http.Request) (*http.Response, error) {
	if l.lost == 0 || req.Header.Get("X-Amz-Target") != "AmazonSQS.ReceiveMessage" {
		return l.next.Do(req)
	}
	l.lost--
	body, err := io.ReadAll(req.Body)
	if err != nil {
		return nil, err
	}
	body = bytes.Replace(body, []byte(`"VisibilityTimeout":60`), []byte(`"VisibilityTimeout":1`), 1)
	req.Body, req.ContentLength = io.NopCloser(bytes.NewReader(body)), int64(len(body))
	resp, err := l.next.Do(req)
	if err != nil {
		return nil, err
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	return nil, errors.New("read tcp 127.0.0.1:4566: read: connection reset by peer")
}

// losing reads the queue through an SDK client whose first receive's
// response is lost.
func losing(c *sqs.Client) queue.SQS {
	opts := c.Options()
	next := opts.HTTPClient
	if next == nil {
		next = awshttp.NewBuildableClient()
	}
	opts.HTTPClient = &losingTransport{next: next, lost: 1}
	return sqs.New(opts)
}

func TestDrain_WaitsForTheMessagesALostReceiveTook(t *testing.T) {
	q := setupWith(t, losing)
	var got []string
	st, err := localrun.Drain(context.Background(), q, collect(&got), 1, 0)
	if err != nil {
		t.Fatalf("drain: %v", err)
	}
	if st.RetriedReceives == 0 {
		t.Fatalf("stats %+v: the SDK did not retry the lost receive; the test proves nothing", st)
	}
	if len(got) != 3 || st.Delivered != 3 {
		t.Fatalf("delivered %v (stats %+v), want a, b and c: the drain stopped with a message in flight", got, st)
	}
	if st.Waits == 0 || st.InFlightLeft != 0 {
		t.Fatalf("stats %+v, want a wait and nothing left in flight", st)
	}
}

func TestDrain_ABoundedDrainStopsAtTheFirstEmptyReceive(t *testing.T) {
	q := setupWith(t, losing)
	var got []string
	st, err := localrun.Drain(context.Background(), q, collect(&got), 1, 5)
	if err != nil {
		t.Fatalf("drain: %v", err)
	}
	if st.Waits != 0 || slices.Contains(got, "a") {
		t.Fatalf("delivered %v (stats %+v): a bounded drain polls and does not wait for the lost message", got, st)
	}
}

// TestDrain_MessagesInFlightElsewhereAreNotWaitedFor: without a lost or
// failed receive, a message another consumer holds is its own; the drain
// ends at the first empty receive.
func TestDrain_MessagesInFlightElsewhereAreNotWaitedFor(t *testing.T) {
	q := setup(t, 0)
	held, err := q.Receive(context.Background(), 1, 0, 60)
	if err != nil || len(held) != 1 {
		t.Fatalf("another consumer's receive: %v (%d messages)", err, len(held))
	}
	var got []string
	st, err := localrun.Drain(context.Background(), q, collect(&got), 1, 0)
	if err != nil {
		t.Fatalf("drain: %v", err)
	}
	if len(got) != 2 || st.Waits != 0 {
		t.Fatalf("delivered %v (stats %+v), want the two others and no wait", got, st)
	}
}
