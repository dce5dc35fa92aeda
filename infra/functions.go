package main

import (
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambda"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdadestinations"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslambdaeventsources"
	"github.com/aws/aws-cdk-go/awscdk/v2/awslogs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// Lambdas are the three functions.
type Lambdas struct {
	Planner, Rewriter, Committer awslambda.Function
	// PlannerLogs is the planner's log group: its EMF records carry the
	// per-table values the dashboard's Logs Insights tables read.
	PlannerLogs awslogs.LogGroup
}

// ByName returns the function called name (Planner, Rewriter, Committer).
func (l Lambdas) ByName(name string) awslambda.Function {
	switch name {
	case Planner:
		return l.Planner
	case Rewriter:
		return l.Rewriter
	default:
		return l.Committer
	}
}

// FunctionSettings returns the sizing of the function called name.
func (s Settings) FunctionSettings(name string) FunctionSettings {
	switch name {
	case Planner:
		return s.Planner
	case Rewriter:
		return s.Rewriter
	default:
		return s.Committer
	}
}

// newFunctions creates the three functions from their bootstraps
// (provided.al2023, arm64 by default, X-Ray active tracing), with the same
// environment, and wires the rewriter to the task queue and the committer
// to the commit queue: one message per invocation, failures reported per
// message. The rewriter's reserved concurrency is the fan-out throttle; its
// event source's maximum concurrency is set to the same number so the
// poller does not hand the function more than it may run (throttled
// deliveries would use up receives and push tasks to the dead-letter
// queue).
func newFunctions(scope constructs.Construct, s Settings, st Storage, q Queues, bus string, wake *WakeUps) (Lambdas, error) {
	n := Names{
		Bucket: *st.Bucket.BucketName(), LeaseTable: *st.LeaseTable.TableName(), JobsTable: *st.JobsTable.TableName(),
		TaskQueueURL: *q.Tasks.QueueUrl(), CommitQueueURL: *q.Commits.QueueUrl(), EventBus: bus,
	}
	n.WakeUpGroup, n.WakeUpRoleARN, n.EventBusARN = wake.names()
	env := s.FunctionEnvironment(n)
	arch := awslambda.Architecture_ARM_64()
	if s.Architecture == "x86_64" {
		arch = awslambda.Architecture_X86_64()
	}
	removal := awscdk.RemovalPolicy_RETAIN
	if s.RemovalPolicy == "destroy" {
		removal = awscdk.RemovalPolicy_DESTROY
	}
	groups := map[string]awslogs.LogGroup{}
	code := map[string]string{}
	for _, name := range Functions() {
		dir, err := s.codeDir(name)
		if err != nil {
			return Lambdas{}, err
		}
		code[name] = dir
	}
	newFn := func(name, id, description string, reserved, ephemeralMB int) awslambda.Function {
		fs := s.FunctionSettings(name)
		logs := awslogs.NewLogGroup(scope, jsii.String(id+"Logs"), &awslogs.LogGroupProps{
			Retention:     retention(s.LogRetentionDays),
			RemovalPolicy: removal,
		})
		groups[name] = logs
		props := &awslambda.FunctionProps{
			Description:  jsii.String(description),
			Runtime:      awslambda.Runtime_PROVIDED_AL2023(),
			Architecture: arch,
			Handler:      jsii.String("bootstrap"),
			Code:         awslambda.Code_FromAsset(jsii.String(code[name]), nil),
			MemorySize:   jsii.Number(float64(fs.MemoryMB)),
			Timeout:      seconds(fs.Timeout),
			Tracing:      awslambda.Tracing_ACTIVE,
			Environment:  stringMap(env),
			LogGroup:     logs,
		}
		if reserved > 0 {
			props.ReservedConcurrentExecutions = jsii.Number(float64(reserved))
		}
		if ephemeralMB > 512 {
			props.EphemeralStorageSize = awscdk.Size_Mebibytes(jsii.Number(float64(ephemeralMB)))
		}
		return awslambda.NewFunction(scope, jsii.String(id), props)
	}
	l := Lambdas{
		Planner:   newFn(Planner, "Planner", "icekeeper planner: EventBridge events in, health reports and compaction jobs out", 0, 0),
		Rewriter:  newFn(Rewriter, "Rewriter", "icekeeper rewriter: one file group per task", s.RewriterReserved, s.RewriterEphemeralMB),
		Committer: newFn(Committer, "Committer", "icekeeper committer: one atomic commit per job", 0, 0),
	}
	l.PlannerLogs = groups[Planner]
	// The planner's asynchronous invocations (EventBridge events): two
	// retries within two hours, then the event goes to the planner's
	// dead-letter queue instead of being dropped.
	l.Planner.ConfigureAsyncInvoke(&awslambda.EventInvokeConfigOptions{
		OnFailure:     awslambdadestinations.NewSqsDestination(q.PlannerDLQ),
		RetryAttempts: jsii.Number(2),
		MaxEventAge:   awscdk.Duration_Hours(jsii.Number(2)),
	})
	rewriterSource := &awslambdaeventsources.SqsEventSourceProps{
		BatchSize:               jsii.Number(1),
		ReportBatchItemFailures: jsii.Bool(true),
	}
	rewriterSource.MaxConcurrency = jsii.Number(float64(s.RewriterConcurrency)) // 2 to 1000, validated
	l.Rewriter.AddEventSource(awslambdaeventsources.NewSqsEventSource(q.Tasks, rewriterSource))
	l.Committer.AddEventSource(awslambdaeventsources.NewSqsEventSource(q.Commits, &awslambdaeventsources.SqsEventSourceProps{
		BatchSize:               jsii.Number(1),
		ReportBatchItemFailures: jsii.Bool(true),
	}))
	return l, nil
}

// codeDir is the directory the function's code package is made of: its
// bootstrap directory under AssetDir, or, when the grant list goes in the
// code (GrantsInFile), a copy of it with GrantsFileName beside the
// bootstrap (the CDK copies the directory into its cloud assembly).
func (s Settings) codeDir(name string) (string, error) {
	src := filepath.Join(s.AssetDir, name)
	if !s.GrantsInFile() {
		return src, nil
	}
	dir, err := os.MkdirTemp("", "icekeeper-"+name+"-")
	if err != nil {
		return "", fmt.Errorf("%w: stage the %s code with the grant list: %w", ErrSettings, name, err)
	}
	boot := filepath.Join(dir, "bootstrap")
	if err := os.Link(filepath.Join(src, "bootstrap"), boot); err != nil {
		raw, rerr := os.ReadFile(filepath.Join(src, "bootstrap"))
		if rerr != nil {
			return "", fmt.Errorf("%w: read the %s bootstrap: %w", ErrSettings, name, rerr)
		}
		if err := os.WriteFile(boot, raw, 0o755); err != nil {
			return "", fmt.Errorf("%w: stage the %s bootstrap: %w", ErrSettings, name, err)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, GrantsFileName), []byte(s.GrantsFileContent()), 0o644); err != nil {
		return "", fmt.Errorf("%w: write the %s grant list: %w", ErrSettings, name, err)
	}
	return dir, nil
}

func seconds(d time.Duration) awscdk.Duration {
	return awscdk.Duration_Seconds(jsii.Number(d.Round(time.Second).Seconds()))
}

func stringMap(m map[string]string) *map[string]*string {
	out := make(map[string]*string, len(m))
	for k, v := range m {
		out[k] = jsii.String(v)
	}
	return &out
}

func retention(days int) awslogs.RetentionDays {
	return map[int]awslogs.RetentionDays{
		1: awslogs.RetentionDays_ONE_DAY, 3: awslogs.RetentionDays_THREE_DAYS, 5: awslogs.RetentionDays_FIVE_DAYS,
		7: awslogs.RetentionDays_ONE_WEEK, 14: awslogs.RetentionDays_TWO_WEEKS, 30: awslogs.RetentionDays_ONE_MONTH,
		60: awslogs.RetentionDays_TWO_MONTHS, 90: awslogs.RetentionDays_THREE_MONTHS, 120: awslogs.RetentionDays_FOUR_MONTHS,
		150: awslogs.RetentionDays_FIVE_MONTHS, 180: awslogs.RetentionDays_SIX_MONTHS, 365: awslogs.RetentionDays_ONE_YEAR,
		400: awslogs.RetentionDays_THIRTEEN_MONTHS, 545: awslogs.RetentionDays_EIGHTEEN_MONTHS, 731: awslogs.RetentionDays_TWO_YEARS,
		1096: awslogs.RetentionDays_THREE_YEARS, 1827: awslogs.RetentionDays_FIVE_YEARS, 2192: awslogs.RetentionDays_SIX_YEARS,
		2557: awslogs.RetentionDays_SEVEN_YEARS, 2922: awslogs.RetentionDays_EIGHT_YEARS, 3288: awslogs.RetentionDays_NINE_YEARS,
		3653: awslogs.RetentionDays_TEN_YEARS,
	}[days]
}
