package tracing

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/credentials"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb/types"
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

// daemonListener listens where the X-Ray daemon would and returns its
// documents (header line checked and dropped) as they arrive.
func daemonListener(t *testing.T) (addr string, next func(wait time.Duration) (map[string]any, bool)) {
	t.Helper()
	conn, err := net.ListenPacket("udp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn.LocalAddr().String(), func(wait time.Duration) (map[string]any, bool) {
		t.Helper()
		_ = conn.SetReadDeadline(time.Now().Add(wait))
		buf := make([]byte, 64<<10)
		n, _, err := conn.ReadFrom(buf)
		if err != nil {
			return nil, false
		}
		head, body, ok := strings.Cut(string(buf[:n]), "\n")
		if !ok || head != `{"format":"json","version":1}` {
			t.Fatalf("datagram without the daemon header: %q", buf[:n])
		}
		var doc map[string]any
		if err := json.Unmarshal([]byte(body), &doc); err != nil {
			t.Fatalf("document is not JSON: %v: %s", err, body)
		}
		return doc, true
	}
}

// TestTracer_InALambdaInvocationPhasesHangOnTheFunctionsSegment: in Lambda
// the invocation's trace header (in the context, as aws-lambda-go puts it)
// names the function's segment; a phase is sent as an independent
// subsegment of it, and an invocation Lambda did not sample sends nothing
// while its phases still run.
func TestTracer_InALambdaInvocationPhasesHangOnTheFunctionsSegment(t *testing.T) {
	addr, next := daemonListener(t)
	t.Setenv("ICEKEEPER_XRAY", "")
	t.Setenv("AWS_LAMBDA_FUNCTION_NAME", "icekeeper-planner")
	t.Setenv("AWS_XRAY_DAEMON_ADDRESS", addr)
	t.Setenv("_X_AMZN_TRACE_ID", "")
	tr := FromEnv()
	if !tr.On() {
		t.Fatal("tracing off in Lambda with a daemon")
	}
	const root, fn = "1-5759e988-bd862e3fe1be46a994272793", "53995c3f42cd8ad8"
	ctx := context.WithValue(context.Background(), lambdaContextKey, "Root="+root+";Parent="+fn+";Sampled=1")
	if got := tr.TraceID(ctx); got != root {
		t.Fatalf("trace id %q, want the invocation's %s", got, root)
	}
	want := errors.New("boom")
	if err := tr.Phase(ctx, PhasePlan, func(ctx context.Context) error { tr.Annotate(ctx, "table", "demo.events"); return want }); !errors.Is(err, want) {
		t.Fatalf("phase error %v", err)
	}
	doc, ok := next(5 * time.Second)
	if !ok {
		t.Fatal("no subsegment reached the daemon")
	}
	if doc["name"] != "plan" || doc["type"] != "subsegment" || doc["trace_id"] != root || doc["parent_id"] != fn || doc["fault"] != true {
		t.Fatalf("subsegment %v: want plan, of %s in trace %s, a fault", doc, fn, root)
	}
	if a, _ := doc["annotations"].(map[string]any); a["table"] != "demo.events" {
		t.Fatalf("annotations %v", doc["annotations"])
	}
	if doc["start_time"].(float64) <= 0 || doc["end_time"].(float64) < doc["start_time"].(float64) {
		t.Fatalf("times %v to %v", doc["start_time"], doc["end_time"])
	}

	// A long error is cut to fit the daemon's datagram.
	long := errors.New(strings.Repeat("x", 100<<10))
	_ = tr.Phase(ctx, PhaseCommit, func(context.Context) error { return long })
	doc, ok = next(5 * time.Second)
	if !ok {
		t.Fatal("a phase with a 100 KB error sent nothing")
	}
	if c, _ := doc["cause"].(map[string]any); c == nil || len(fmt.Sprint(c["exceptions"])) > maxCause+100 {
		t.Fatalf("cause %v", doc["cause"])
	}

	ran := false
	unsampled := context.WithValue(context.Background(), lambdaContextKey, "Root="+root+";Parent="+fn+";Sampled=0")
	_ = tr.Phase(unsampled, PhaseWrite, func(context.Context) error { ran = true; return nil })
	if doc, ok := next(200 * time.Millisecond); ok || !ran {
		t.Fatalf("unsampled invocation: sent %v, ran %v; want nothing sent and the phase run", doc, ran)
	}
	// No trace header at all: the phase runs untraced.
	if err := tr.Phase(context.Background(), PhaseRead, func(context.Context) error { return nil }); err != nil {
		t.Fatal(err)
	}
	if doc, ok := next(200 * time.Millisecond); ok {
		t.Fatalf("untraced phase sent %v", doc)
	}
}

// TestTracer_AWSCallsAreSubsegmentsThatPassTheTraceOn: an instrumented
// client's call is a subsegment of the phase it is made in (namespace aws,
// its operation, region, request id and status), and the request carries
// the trace header naming that subsegment as its parent.
func TestTracer_AWSCallsAreSubsegmentsThatPassTheTraceOn(t *testing.T) {
	addr, next := daemonListener(t)
	t.Setenv("ICEKEEPER_XRAY", "true")
	t.Setenv("AWS_XRAY_DAEMON_ADDRESS", "tcp:"+addr+" udp:"+addr)
	var header string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		header = r.Header.Get(HeaderName)
		w.Header().Set("X-Amzn-Requestid", "req-42")
		w.Header().Set("Content-Type", "application/x-amz-json-1.0")
		_, _ = w.Write([]byte(`{}`))
	}))
	defer srv.Close()
	tr := FromEnv()
	cfg := aws.Config{Region: "eu-west-1", Credentials: credentials.NewStaticCredentialsProvider("a", "b", ""), BaseEndpoint: aws.String(srv.URL)}
	tr.InstrumentAWS(&cfg)
	db := dynamodb.NewFromConfig(cfg)

	ctx, end := tr.Begin(context.Background(), "icekeeper-test")
	var phaseID string
	err := tr.Phase(ctx, PhaseCommit, func(ctx context.Context) error {
		phaseID = ctx.Value(spanKey{}).(*span).id
		_, err := db.GetItem(ctx, &dynamodb.GetItemInput{TableName: aws.String("t"), Key: map[string]types.AttributeValue{"k": &types.AttributeValueMemberS{Value: "v"}}})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	end()
	call, ok := next(5 * time.Second)
	if !ok {
		t.Fatal("no AWS call subsegment reached the daemon")
	}
	info, _ := call["aws"].(map[string]any)
	httpDoc, _ := call["http"].(map[string]any)
	if call["name"] != "DynamoDB" || call["namespace"] != "aws" || call["parent_id"] != phaseID || info["operation"] != "GetItem" || info["region"] != "eu-west-1" || info["request_id"] != "req-42" ||
		fmt.Sprint(httpDoc["response"]) != "map[status:200]" || call["error"] != nil || call["fault"] != nil {
		t.Fatalf("call subsegment %v: want DynamoDB GetItem in eu-west-1, request req-42, status 200, child of the phase %s", call, phaseID)
	}
	if want := "Root=" + call["trace_id"].(string) + ";Parent=" + call["id"].(string) + ";Sampled=1"; header != want {
		t.Fatalf("request's %s %q, want %q", HeaderName, header, want)
	}
	for _, want := range []string{"commit", "icekeeper-test"} {
		doc, ok := next(5 * time.Second)
		if !ok || doc["name"] != want {
			t.Fatalf("got %v, want the %s (sub)segment next", doc, want)
		}
	}
}

func TestDaemonAddress_ReadsTheUDPListener(t *testing.T) {
	for in, want := range map[string]string{"": defaultDaemon, "169.254.79.129:2000": "169.254.79.129:2000", "tcp:10.0.0.1:2000 udp:10.0.0.2:2001": "10.0.0.2:2001"} {
		if got := daemonAddress(in); got != want {
			t.Errorf("daemonAddress(%q) = %q, want %q", in, got, want)
		}
	}
}
