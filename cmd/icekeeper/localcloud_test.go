package main

import (
	"bytes"
	"context"
	"io"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"

	"github.com/icekeeper/icekeeper/shared/awsclients"
)

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string { s.mu.Lock(); defer s.mu.Unlock(); return s.b.String() }

// TestLocalCloud_ServesTheResourcesItPrints starts local-cloud on a free
// port, reads the export lines it prints, uses them, and stops it.
func TestLocalCloud_ServesTheResourcesItPrints(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	var out syncBuffer
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{"local-cloud", "--addr", "127.0.0.1:0", "--prefix", "lc"}, &out, io.Discard)
	}()
	deadline := time.Now().Add(10 * time.Second)
	for !strings.Contains(out.String(), "serving until interrupted") {
		if time.Now().After(deadline) {
			cancel()
			t.Fatalf("local-cloud printed: %s", out.String())
		}
		time.Sleep(20 * time.Millisecond)
	}
	env := map[string]string{}
	for _, m := range regexp.MustCompile(`export (\w+)="([^"]*)"`).FindAllStringSubmatch(out.String(), -1) {
		env[m[1]] = m[2]
	}
	for _, k := range []string{"AWS_ENDPOINT_URL", "ICEKEEPER_TASK_QUEUE_URL", "ICEKEEPER_COMMIT_QUEUE_URL", "ICEKEEPER_LEASE_TABLE", "ICEKEEPER_JOBS_TABLE", "ICEKEEPER_BUCKET", "ICEKEEPER_MODE", "ICEKEEPER_GRANTS"} {
		if env[k] == "" {
			t.Fatalf("no export of %s in:\n%s", k, out.String())
		}
	}
	cl := awsclients.ForEndpoint(env["AWS_ENDPOINT_URL"], "us-east-1")
	if _, err := cl.SQS.SendMessage(ctx, &sqs.SendMessageInput{QueueUrl: aws.String(env["ICEKEEPER_TASK_QUEUE_URL"]), MessageBody: aws.String("{}")}); err != nil {
		t.Fatalf("task queue through the printed endpoint: %v", err)
	}
	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("local-cloud: %v", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("local-cloud did not stop when interrupted")
	}
}
