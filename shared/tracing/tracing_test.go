package tracing

import (
	"context"
	"errors"
	"net"
	"strings"
	"testing"
	"time"
)

func TestTracer_OffIsANoOp(t *testing.T) {
	t.Setenv("ICEKEEPER_XRAY", "")
	t.Setenv("AWS_LAMBDA_FUNCTION_NAME", "")
	tr := FromEnv()
	if tr.On() {
		t.Fatal("tracing on outside Lambda")
	}
	want := errors.New("boom")
	if err := tr.Phase(context.Background(), PhasePlan, func(context.Context) error { return want }); !errors.Is(err, want) {
		t.Fatalf("phase error %v", err)
	}
	if tr.TraceID(context.Background()) != "" {
		t.Fatal("trace id while off")
	}
}

// TestTracer_PhasesReachTheDaemon listens where the X-Ray daemon would and
// checks that a phase arrives as a subsegment of the segment.
func TestTracer_PhasesReachTheDaemon(t *testing.T) {
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	t.Setenv("ICEKEEPER_XRAY", "true")
	t.Setenv("AWS_XRAY_DAEMON_ADDRESS", conn.LocalAddr().String())
	tr := FromEnv()
	ctx, end := tr.Begin(context.Background(), "icekeeper-test")
	if tr.TraceID(ctx) == "" {
		t.Fatal("no trace id inside a segment")
	}
	err = tr.Phase(ctx, PhaseCommit, func(ctx context.Context) error {
		tr.Annotate(ctx, "job_id", "j-1")
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	end()
	_ = conn.SetReadDeadline(time.Now().Add(5 * time.Second))
	buf := make([]byte, 64<<10)
	var got strings.Builder
	for !strings.Contains(got.String(), `"name":"commit"`) {
		n, _, err := conn.ReadFrom(buf)
		if err != nil {
			t.Fatalf("no commit subsegment reached the daemon: %v\n%s", err, got.String())
		}
		got.Write(buf[:n])
	}
	if !strings.Contains(got.String(), `"job_id":"j-1"`) {
		t.Fatalf("annotation missing: %s", got.String())
	}
}
