package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	lambdaevents "github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"
	awslambda "github.com/aws/aws-sdk-go-v2/service/lambda"
	lambdatypes "github.com/aws/aws-sdk-go-v2/service/lambda/types"

	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/queue"
	plannerstage "github.com/icekeeper/icekeeper/shared/stage/planner"
	"github.com/icekeeper/icekeeper/shared/trigger"
)

// TestLambda_RealMainsRunThePipeline builds the three functions' real main
// binaries, connects each to the Lambda Runtime API that the emulator serves
// (as the Lambda service would), and drives them with Invoke: the planner
// with the sample scheduled event, the rewriter and the committer with SQS
// event batches built from their queues (the emulator's SQS-to-Lambda event
// source mappings do nothing, so the test stands in for them). This tests
// the wiring: environment configuration, SDK clients, catalog, handlers.
func TestLambda_RealMainsRunThePipeline(t *testing.T) {
	if testing.Short() {
		t.Skip("builds three binaries")
	}
	e := setup(t, func(c *config.Config) { c.Mode, c.Grants = config.ModeActive, "demo" })
	e.createTable(withProps(smallTable, optedIn))
	want := e.fingerprint()

	bin := t.TempDir()
	build := exec.Command("go", "build", "-o", bin+"/", "./functions/planner", "./functions/rewriter", "./functions/committer")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("build functions: %v\n%s", err, out)
	}

	lam := awslambda.NewFromConfig(cloud.Clients.Config)
	start := func(fn string) string {
		name := "ik-" + fn + "-" + strings.ToLower(strings.ReplaceAll(t.Name(), "/", "-"))
		if len(name) > 60 {
			name = name[:60]
		}
		if _, err := lam.CreateFunction(e.ctx, &awslambda.CreateFunctionInput{
			FunctionName: aws.String(name), Role: aws.String("arn:aws:iam::000000000000:role/icekeeper"),
			Runtime: lambdatypes.RuntimeProvidedal2023, Handler: aws.String("bootstrap"),
			Code: &lambdatypes.FunctionCode{ZipFile: []byte("bootstrap")}, Timeout: aws.Int32(120),
		}); err != nil {
			t.Fatalf("create function %s: %v", name, err)
		}
		cmd := exec.Command(filepath.Join(bin, fn))
		cmd.Env = append(os.Environ(),
			"AWS_LAMBDA_RUNTIME_API="+strings.TrimPrefix(cloud.URL, "http://")+"/_runtime/"+name,
			"AWS_ENDPOINT_URL="+cloud.URL, "AWS_REGION=us-east-1",
			"AWS_ACCESS_KEY_ID=test", "AWS_SECRET_ACCESS_KEY=test")
		for k, v := range e.cfg.Env() {
			cmd.Env = append(cmd.Env, k+"="+v)
		}
		var logs bytes.Buffer
		cmd.Stdout, cmd.Stderr = &logs, &logs
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
			if t.Failed() {
				t.Logf("%s logs:\n%s", fn, logs.String())
			}
		})
		return name
	}
	planner, rewriter, committer := start("planner"), start("rewriter"), start("committer")

	invoke := func(fn string, payload []byte, out any) {
		t.Helper()
		ctx, cancel := context.WithTimeout(e.ctx, 2*time.Minute)
		defer cancel()
		// The emulator answers "no runtime handler" until the process has
		// made its first poll of the Runtime API; Lambda would wait for init
		// instead. Retry only that answer, briefly.
		var res *awslambda.InvokeOutput
		var err error
		for i := 0; i < 100; i++ {
			res, err = lam.Invoke(ctx, &awslambda.InvokeInput{FunctionName: aws.String(fn), Payload: payload})
			if err == nil || !strings.Contains(err.Error(), "has no runtime handler") {
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
		if err != nil {
			t.Fatalf("invoke %s: %v", fn, err)
		}
		if res.FunctionError != nil {
			t.Fatalf("%s: function error %s: %s", fn, aws.ToString(res.FunctionError), res.Payload)
		}
		if err := json.Unmarshal(res.Payload, out); err != nil {
			t.Fatalf("%s: response %s: %v", fn, res.Payload, err)
		}
	}
	drive := func(fn string, q *queue.Queue) {
		t.Helper()
		for {
			msgs, err := q.Receive(e.ctx, 1, 0, 60)
			if err != nil {
				t.Fatal(err)
			}
			if len(msgs) == 0 {
				return
			}
			ev := lambdaevents.SQSEvent{}
			for _, m := range msgs {
				ev.Records = append(ev.Records, lambdaevents.SQSMessage{MessageId: m.ID, ReceiptHandle: m.ReceiptHandle, Body: m.Body, Attributes: m.Attributes, EventSource: "aws:sqs"})
			}
			payload, _ := json.Marshal(ev)
			var resp lambdaevents.SQSEventResponse
			invoke(fn, payload, &resp)
			if len(resp.BatchItemFailures) > 0 {
				t.Fatalf("%s reported failures: %+v", fn, resp.BatchItemFailures)
			}
			for _, m := range msgs {
				if err := q.Delete(e.ctx, m.ReceiptHandle); err != nil {
					t.Fatal(err)
				}
			}
		}
	}

	scheduled, err := os.ReadFile("../events/scheduled.json")
	if err != nil {
		t.Fatal(err)
	}
	var presp plannerstage.Response
	invoke(planner, scheduled, &presp)
	if len(presp.Tables) != 1 || presp.Tables[0].Action != trigger.ActionPlanned || presp.Tables[0].Plan == nil {
		t.Fatalf("planner response %+v", presp)
	}
	drive(rewriter, e.deps.Tasks)
	drive(committer, e.deps.Commits)

	if j := e.job(presp.Tables[0].Plan.JobID); j.State != jobs.Committed {
		t.Fatalf("job %s (%s)", j.State, j.Reason)
	}
	if got := e.fingerprint(); got != want {
		t.Fatalf("rows %s, want %s", got, want)
	}
}
