package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	lambdaevents "github.com/aws/aws-lambda-go/events"

	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/harness/bootstraps"
	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/optin"
	"github.com/icekeeper/icekeeper/shared/queue"
)

// The tests in this file run the three functions' real bootstraps, built
// as `make lambdas` builds them (static, stripped, lambda.norpc, for this
// machine's architecture), under AWS's own Lambda Runtime Interface
// Emulator (github.com/aws/aws-lambda-runtime-interface-emulator, the
// aws-lambda-rie of AWS's base images), instead of the Runtime API
// stand-in of the cold-start benchmark: the emulator starts the bootstrap,
// serves it the Runtime API and takes invocations on its HTTP endpoint
// (POST /2015-03-31/functions/function/invocations), as Lambda would hand
// it an EventBridge event or an SQS batch. The functions talk to the
// process's emulated AWS (AWS_ENDPOINT_URL) and the test's sqlite catalog.

// rieVersion is the emulator's pseudo-version on the Go module proxy
// (the newest served here; its tagged releases are not).
const rieVersion = "v0.0.0-20261030222936-bef5c4ba774d"

var (
	rieOnce sync.Once
	rieBin  string
	rieErr  error
)

// rieBinary builds the emulator once per machine, into the user cache
// (go install of the pinned version from the module proxy).
func rieBinary(t *testing.T) string {
	t.Helper()
	rieOnce.Do(func() {
		cache, err := os.UserCacheDir()
		if err != nil {
			rieErr = err
			return
		}
		dir := filepath.Join(cache, "icekeeper", "aws-lambda-rie-"+rieVersion)
		rieBin = filepath.Join(dir, "aws-lambda-rie")
		if _, err := os.Stat(rieBin); err == nil {
			return
		}
		cmd := exec.Command("go", "install", "github.com/aws/aws-lambda-runtime-interface-emulator/cmd/aws-lambda-rie@"+rieVersion)
		cmd.Env = append(os.Environ(), "GOBIN="+dir, "CGO_ENABLED=0", "GOFLAGS=")
		if out, err := cmd.CombinedOutput(); err != nil {
			rieErr = fmt.Errorf("go install aws-lambda-rie@%s: %v\n%s", rieVersion, err, out)
		}
	})
	if rieErr != nil {
		t.Fatal(rieErr)
	}
	return rieBin
}

var (
	bootstrapsOnce sync.Once
	bootstrapPaths map[string]string
	bootstrapsErr  error
)

// bootstrap builds the three functions once per test binary, as `make
// lambdas` does (package bootstraps), and returns fn's.
func bootstrap(t *testing.T, fn string) string {
	t.Helper()
	bootstrapsOnce.Do(func() {
		dir, err := os.MkdirTemp("", "icekeeper-bootstraps-")
		if err != nil {
			bootstrapsErr = err
			return
		}
		bootstrapPaths, bootstrapsErr = bootstraps.Build(context.Background(), "..", dir)
	})
	if bootstrapsErr != nil {
		t.Fatal(bootstrapsErr)
	}
	return bootstrapPaths[fn]
}

// rieFunction is one function's bootstrap running under the emulator.
type rieFunction struct {
	name string
	url  string
	logs *lockedBuffer
}

// lockedBuffer collects a process's output, safe to read while it writes.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

func freeAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().String()
}

// startUnderRIE starts fn's bootstrap under the emulator with the
// function's environment (the stack's variables for the env's resources,
// mode active, the test's grants) and waits for its endpoint.
func (e *env) startUnderRIE(fn string) *rieFunction {
	e.t.Helper()
	cfg := e.cfg
	cfg.Mode, cfg.Grants = config.ModeActive, "demo"
	environ := []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), "TMPDIR=" + os.TempDir(),
		"AWS_ENDPOINT_URL=" + cloud.URL, "AWS_REGION=us-east-1", "AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test",
		"AWS_LAMBDA_FUNCTION_MEMORY_SIZE=1024", "LOG_LEVEL=error"}
	for k, v := range cfg.Env() {
		environ = append(environ, k+"="+v)
	}
	api, invoke := freeAddr(e.t), freeAddr(e.t)
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, rieBinary(e.t), "--runtime-api-address", api, "--runtime-interface-emulator-address", invoke, bootstrap(e.t, fn))
	cmd.Env = environ
	cmd.Dir = e.t.TempDir()
	f := &rieFunction{name: fn, url: "http://" + invoke + "/2015-03-31/functions/function/invocations", logs: &lockedBuffer{}}
	cmd.Stdout, cmd.Stderr = f.logs, f.logs
	if err := cmd.Start(); err != nil {
		cancel()
		e.t.Fatalf("start the emulator for %s: %v", fn, err)
	}
	e.t.Cleanup(func() {
		cancel()
		_ = cmd.Wait()
		if e.t.Failed() {
			e.t.Logf("%s under the emulator logged:\n%s", fn, f.logs.String())
		}
	})
	for deadline := time.Now().Add(30 * time.Second); ; {
		c, err := net.DialTimeout("tcp", invoke, time.Second)
		if err == nil {
			c.Close()
			return f
		}
		if time.Now().After(deadline) {
			e.t.Fatalf("the emulator for %s never listened on %s:\n%s", fn, invoke, f.logs.String())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// Lambda's payload limits, which the emulator does not apply: "For
// synchronous invocations, the maximum payload size is 6 MB. For
// asynchronous invocations, the maximum payload size is 1 MB" (Invoke, AWS
// Lambda API Reference, https://docs.aws.amazon.com/lambda/latest/dg/API_Invoke.html).
// An SQS event source mapping invokes synchronously; EventBridge invokes
// asynchronously.
const (
	lambdaSyncPayloadBytes  = 6 << 20
	lambdaAsyncPayloadBytes = 1 << 20
)

// invoke is one invocation through the emulator's endpoint, held to
// Lambda's payload limits (async: an EventBridge target; else synchronous,
// as the event source mapping invokes); it returns the function's
// response.
func (f *rieFunction) invoke(t *testing.T, payload any, async bool) []byte {
	t.Helper()
	body, err := json.Marshal(payload)
	if err != nil {
		t.Fatal(err)
	}
	if limit := map[bool]int{false: lambdaSyncPayloadBytes, true: lambdaAsyncPayloadBytes}[async]; len(body) > limit {
		t.Fatalf("invoke %s: a payload of %d bytes, over Lambda's %d", f.name, len(body), limit)
	}
	resp, err := http.Post(f.url, "application/json", bytes.NewReader(body))
	if err != nil {
		t.Fatalf("invoke %s: %v", f.name, err)
	}
	defer resp.Body.Close()
	out, _ := io.ReadAll(resp.Body)
	if len(out) > lambdaSyncPayloadBytes {
		t.Fatalf("invoke %s: a response of %d bytes, over Lambda's %d", f.name, len(out), lambdaSyncPayloadBytes)
	}
	if resp.StatusCode != http.StatusOK || resp.Header.Get("X-Amz-Function-Error") != "" || strings.Contains(string(out), `"errorType"`) {
		t.Fatalf("invoke %s: %s %s: %s\n%s", f.name, resp.Status, resp.Header.Get("X-Amz-Function-Error"), out, f.logs.String())
	}
	return out
}

// sqsBatch receives up to ten messages of q as Lambda's event source
// mapping would hand them to the function (receipt handles, attributes,
// the queue's ARN).
func (e *env) sqsBatch(q *queue.Queue) (lambdaevents.SQSEvent, []queue.Message) {
	e.t.Helper()
	msgs, err := q.Receive(e.ctx, 10, 1, 120)
	if err != nil {
		e.t.Fatal(err)
	}
	arn := "arn:aws:sqs:us-east-1:000000000000:" + filepath.Base(q.URL())
	var ev lambdaevents.SQSEvent
	for _, m := range msgs {
		ev.Records = append(ev.Records, lambdaevents.SQSMessage{MessageId: m.ID, ReceiptHandle: m.ReceiptHandle, Body: m.Body,
			Attributes: m.Attributes, EventSource: "aws:sqs", EventSourceARN: arn, AWSRegion: "us-east-1"})
	}
	return ev, msgs
}

// settle does what the event source mapping does with the function's
// answer: deletes the batch's messages it did not report as failed, and
// returns the ids it reported.
func (e *env) settle(q *queue.Queue, msgs []queue.Message, answer []byte) map[string]bool {
	e.t.Helper()
	var resp lambdaevents.SQSEventResponse
	if err := json.Unmarshal(answer, &resp); err != nil {
		e.t.Fatalf("answer %s: %v", answer, err)
	}
	failed := map[string]bool{}
	for _, f := range resp.BatchItemFailures {
		failed[f.ItemIdentifier] = true
	}
	for _, m := range msgs {
		if !failed[m.ID] {
			if err := q.Delete(e.ctx, m.ReceiptHandle); err != nil {
				e.t.Fatal(err)
			}
		}
	}
	return failed
}

// TestRIE_TheRealBootstrapsCompactATable: the planner's bootstrap is
// invoked with the custom commit event (events/icekeeper-commit.json), the
// rewriter's with the task queue's batch plus one malformed record, the
// committer's with the commit queue's batch. The job commits, every row
// is there once, and the rewriter answers the malformed record, and only
// it, as a batch item failure (partial batch response). Then a Glue table
// state change and the scheduled sweep reach the table.
func TestRIE_TheRealBootstrapsCompactATable(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the functions and AWS's runtime interface emulator")
	}
	e := setup(t)
	e.createTable(smallTable)
	e.setProperties(iceberg.Properties{optin.PropertyEnabled: "true"})
	want := e.fingerprint()
	filesBefore := e.stats().DataFiles

	planner := e.startUnderRIE("planner")
	rewriter := e.startUnderRIE("rewriter")
	committer := e.startUnderRIE("committer")

	raw, err := os.ReadFile("../events/icekeeper-commit.json")
	if err != nil {
		t.Fatal(err)
	}
	var commitEvent map[string]any
	if err := json.Unmarshal(raw, &commitEvent); err != nil {
		t.Fatal(err)
	}
	t.Logf("planner answered %s", planner.invoke(t, commitEvent, true))

	ev, msgs := e.sqsBatch(e.deps.Tasks)
	if len(msgs) == 0 {
		t.Fatalf("the planner sent no task:\n%s", planner.logs.String())
	}
	ev.Records = append(ev.Records, lambdaevents.SQSMessage{MessageId: "not-a-task", ReceiptHandle: "none", Body: `{"version": 1, "kind": "nonsense"`,
		EventSource: "aws:sqs", EventSourceARN: ev.Records[0].EventSourceARN, Attributes: map[string]string{"ApproximateReceiveCount": "1"}})
	failed := e.settle(e.deps.Tasks, msgs, rewriter.invoke(t, ev, false))
	if len(failed) != 1 || !failed["not-a-task"] {
		t.Fatalf("batch item failures %v, want the malformed record only", failed)
	}
	for {
		ev, msgs := e.sqsBatch(e.deps.Tasks)
		if len(msgs) == 0 {
			break
		}
		if failed := e.settle(e.deps.Tasks, msgs, rewriter.invoke(t, ev, false)); len(failed) > 0 {
			t.Fatalf("rewriter failed %v", failed)
		}
	}
	var jobID string
	for round := 0; round < 5; round++ {
		ev, msgs := e.sqsBatch(e.deps.Commits)
		if len(msgs) == 0 {
			break
		}
		for _, r := range ev.Records {
			var req struct {
				JobID string `json:"job_id"`
			}
			_ = json.Unmarshal([]byte(r.Body), &req)
			jobID = req.JobID
		}
		if failed := e.settle(e.deps.Commits, msgs, committer.invoke(t, ev, false)); len(failed) > 0 {
			t.Fatalf("committer failed %v", failed)
		}
	}
	if jobID == "" {
		t.Fatal("no commit request reached the commit queue")
	}
	if j := e.job(jobID); j.State != jobs.Committed {
		t.Fatalf("job %s %s (%s)\n%s", jobID, j.State, j.Reason, e.diagnose(jobID))
	}
	if got := e.fingerprint(); got != want {
		t.Fatalf("rows %s, want %s", got, want)
	}
	if after := e.stats().DataFiles; after >= filesBefore {
		t.Fatalf("%d data files after the job, %d before: nothing compacted", after, filesBefore)
	}
	// A Glue table state change (events/glue-table-state-change.json) and
	// the scheduled sweep (events/scheduled.json) each reach the table: the
	// sweep finds it among the catalog's granted tables.
	for _, sample := range []string{"glue-table-state-change.json", "scheduled.json"} {
		raw, err := os.ReadFile("../events/" + sample)
		if err != nil {
			t.Fatal(err)
		}
		var ev map[string]any
		if err := json.Unmarshal(raw, &ev); err != nil {
			t.Fatal(err)
		}
		if out := planner.invoke(t, ev, true); !strings.Contains(string(out), `"table":"demo.events"`) {
			t.Fatalf("%s did not reach demo.events: %s", sample, out)
		}
	}
}
