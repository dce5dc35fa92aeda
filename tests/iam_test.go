package tests

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	awsmiddleware "github.com/aws/aws-sdk-go-v2/aws/middleware"
	"github.com/aws/aws-sdk-go-v2/service/athena"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/glue"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	s3types "github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/middleware"
)

// Every AWS call the functions make in the end-to-end tests is allowed by
// that function's IAM policy, as the CDK stack synthesizes it, and is
// answered as AWS would answer it.
//
// The emulator's clients carry a middleware (recordCalls, enforceCall)
// that sees each call made on behalf of a function: the test harness
// marks the context of each stage (asFunction: the planner's planning and
// dispatch, the rewriters' and the committer's queue drains). Each call
// becomes the IAM actions and resources AWS authorizes it by
// (authorizations), with icekeeper's own resources as the placeholders of
// infra/testdata/policies.json (${Bucket}, ${Leases}, ${Tasks}, ...), which
// the stack's tests write from the synthesized policies. At the call, one
// the function's policy does not allow fails with AccessDenied before the
// emulator sees it (authorizeCall), a call that breaks a documented limit
// fails as AWS fails it (checkCallRules, awsrules_test.go), and a read of
// a missing S3 key answers 403 unless the policy allows listing the bucket
// (missingKeyAsAWS). After a full run, TestMain also fails when a
// statement grants an action that no recorded call used and no known path
// outside the recorded code needs (usedElsewhere, which says which path
// needs it), and lists every call denied (checkIAM).
//
// Not recorded: calls of iceberg-go's own file IO to the table's storage
// (its S3 client is built by iceberg-go; the tests' warehouses are mostly
// local), and calls no stage makes (test setup). The evaluation is IAM's
// for identity-based policies (explicit Deny, then Allow, else denied),
// with action and resource globs and the conditions the stack writes:
// StringLike on s3:prefix, StringEquals on s3tables:namespace and
// s3tables:tableName.

var policiesFile = filepath.Join("..", "infra", "testdata", "policies.json")

type functionKey struct{}

// asFunction marks ctx as work of a Lambda function ("Planner", "Rewriter",
// "Committer", as in the stack).
func asFunction(ctx context.Context, fn string) context.Context {
	return context.WithValue(ctx, functionKey{}, fn)
}

type authorization struct {
	Action, Resource, Prefix string
	// Namespace and TableName are the s3tables:namespace and
	// s3tables:tableName condition keys of an S3 Tables request.
	Namespace, TableName string
	// PassedToService is iam:PassRole's iam:PassedToService key.
	PassedToService string
}

type recordedCall struct {
	Function, Operation string
	Auth                []authorization
}

var calls = struct {
	sync.Mutex
	list []recordedCall
}{}

// recordCalls adds the recording and enforcing middleware to the
// emulator's clients.
func recordCalls(cfg *aws.Config) {
	cfg.APIOptions = append(cfg.APIOptions, func(stack *middleware.Stack) error {
		return stack.Initialize.Add(middleware.InitializeMiddlewareFunc("icekeeper-record-call", enforceCall), middleware.After)
	})
}

// enforceCall records a call made on behalf of a function and answers it
// as AWS would: AccessDenied when the function's policy does not allow it
// (before the emulator sees it), the rules of callRules (awsrules_test.go)
// that kumo does not apply, and S3's 403 for a missing key.
func enforceCall(ctx context.Context, in middleware.InitializeInput, next middleware.InitializeHandler) (middleware.InitializeOutput, middleware.Metadata, error) {
	fn, ok := ctx.Value(functionKey{}).(string)
	if !ok {
		return next.HandleInitialize(ctx, in)
	}
	op := awsmiddleware.GetServiceID(ctx) + ":" + awsmiddleware.GetOperationName(ctx)
	auth := authorizations(in.Parameters)
	calls.Lock()
	calls.list = append(calls.list, recordedCall{Function: fn, Operation: op, Auth: auth})
	calls.Unlock()
	if err := authorizeCall(fn, op, auth); err != nil {
		return middleware.InitializeOutput{}, middleware.Metadata{}, err
	}
	if err := checkCallRules(in.Parameters); err != nil {
		return middleware.InitializeOutput{}, middleware.Metadata{}, err
	}
	out, md, err := next.HandleInitialize(ctx, in)
	if err != nil {
		err = missingKeyAsAWS(fn, in.Parameters, err)
	} else {
		err = checkAfterCall(ctx, in.Parameters)
	}
	return out, md, err
}

// loadPolicies reads policiesFile once.
var loadPolicies = sync.OnceValues(func() (map[string][]policyStatement, error) {
	raw, err := os.ReadFile(policiesFile)
	if err != nil {
		return nil, err
	}
	var policies map[string][]policyStatement
	if err := json.Unmarshal(raw, &policies); err != nil {
		return nil, fmt.Errorf("%s: %w", policiesFile, err)
	}
	return policies, nil
})

// accessDenied is the error AWS answers a request IAM does not allow
// with (error code AccessDenied; S3's HEAD, which has no body, says
// Forbidden).
func accessDenied(code, format string, args ...any) error {
	return &smithy.GenericAPIError{Code: code, Message: "icekeeper tests, as AWS: " + fmt.Sprintf(format, args...), Fault: smithy.FaultClient}
}

// authorizeCall fails a call when the function's policy does not allow
// every authorization of it, as IAM does at the call; the after-run
// report (checkIAM) lists it too.
func authorizeCall(fn, op string, auth []authorization) error {
	policies, err := loadPolicies()
	if err != nil {
		return err
	}
	for _, a := range auth {
		if a.Resource == "" {
			continue // not one of the env's resources: a test's own
		}
		if _, ok := allowed(policies[fn], a); !ok {
			return accessDenied("AccessDenied", "%s %s: %s on %s is not allowed by the %s policy (%s)", fn, op, a.Action, a.Resource, fn, policiesFile)
		}
	}
	return nil
}

// missingKeyAsAWS turns the emulator's 404 for a missing key into the 403
// AWS answers when the caller may not list the bucket: "If the object
// that you request doesn't exist, the error that Amazon S3 returns
// depends on whether you also have the s3:ListBucket permission", 404
// with it, 403 AccessDenied without it (Amazon S3 API Reference,
// GetObject and HeadObject, "Permissions":
// https://docs.aws.amazon.com/AmazonS3/latest/API/API_GetObject.html,
// https://docs.aws.amazon.com/AmazonS3/latest/API/API_HeadObject.html).
// A GET carries no s3:prefix, and a condition on a key the request does
// not carry does not hold (IAM User Guide, "IAM JSON policy elements:
// Condition operators":
// https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_elements_condition_operators.html),
// so only a ListBucket without an s3:prefix condition counts here: the
// strictest reading of the docs, which say nothing of a ListBucket
// limited by s3:prefix.
func missingKeyAsAWS(fn string, in any, err error) error {
	var bucket, key *string
	code := "AccessDenied"
	switch v := in.(type) {
	case *s3.GetObjectInput:
		var nsk *s3types.NoSuchKey
		if !errors.As(err, &nsk) {
			return err
		}
		bucket, key = v.Bucket, v.Key
	case *s3.HeadObjectInput:
		var nf *s3types.NotFound
		if !errors.As(err, &nf) {
			return err
		}
		bucket, key, code = v.Bucket, v.Key, "Forbidden"
	default:
		return err
	}
	res := ownResource(aws.ToString(bucket))
	if res == "" {
		res = "arn:aws:s3:::" + aws.ToString(bucket)
	}
	policies, perr := loadPolicies()
	if perr != nil {
		return perr
	}
	if _, ok := allowed(policies[fn], authorization{Action: "s3:ListBucket", Resource: res}); ok {
		return err
	}
	return accessDenied(code, "%s: s3://%s/%s does not exist, and the %s policy has no s3:ListBucket on the bucket", fn, aws.ToString(bucket), aws.ToString(key), fn)
}

const testRegion, testAccount = "us-east-1", "000000000000"

// ownResource is the placeholder of one of the test env's resources,
// recognised by the names localcloud.Provision gives them ("" when the
// name is not one of them).
func ownResource(name string) string {
	for _, k := range []struct{ prefix, ph string }{
		{"t-descriptors-", "${Bucket}"}, {"t-leases-", "${Leases}"}, {"t-jobs-", "${Jobs}"},
		{"t-tasks-dlq-", "${TasksDLQ}"}, {"t-tasks-", "${Tasks}"},
		{"t-commits-dlq-", "${CommitsDLQ}"}, {"t-commits-", "${Commits}"},
		{"t-wakeups-role-", "${ExpiryWakeUpsRole}"}, {"t-wakeups-", "${ExpiryWakeUps}"},
	} {
		if strings.HasPrefix(name, k.prefix) {
			return k.ph
		}
	}
	return ""
}

func queueResource(url *string) string {
	return ownResource(aws.ToString(url)[strings.LastIndex(aws.ToString(url), "/")+1:])
}

func bucketObject(bucket, key *string) string {
	if ph := ownResource(aws.ToString(bucket)); ph != "" {
		return ph + "/" + aws.ToString(key)
	}
	return "arn:aws:s3:::" + aws.ToString(bucket) + "/" + aws.ToString(key)
}

func glueARNs(db, table string) []string {
	out := []string{fmt.Sprintf("arn:aws:glue:%s:%s:catalog", testRegion, testAccount)}
	if db != "" {
		out = append(out, fmt.Sprintf("arn:aws:glue:%s:%s:database/%s", testRegion, testAccount, db))
	}
	if table != "" {
		out = append(out, fmt.Sprintf("arn:aws:glue:%s:%s:table/%s/%s", testRegion, testAccount, db, table))
	}
	return out
}

// authorizations maps a call's input to what IAM authorizes it by (the
// Service Authorization Reference's actions and resource types).
func authorizations(in any) []authorization {
	one := func(action string, resources ...string) []authorization {
		var out []authorization
		for _, r := range resources {
			out = append(out, authorization{Action: action, Resource: r})
		}
		return out
	}
	table := func(name *string) string { return ownResource(aws.ToString(name)) }
	switch v := in.(type) {
	case *s3.PutObjectInput:
		return one("s3:PutObject", bucketObject(v.Bucket, v.Key))
	case *s3.GetObjectInput:
		return one("s3:GetObject", bucketObject(v.Bucket, v.Key))
	case *s3.HeadObjectInput:
		return one("s3:GetObject", bucketObject(v.Bucket, v.Key))
	case *s3.DeleteObjectInput:
		return one("s3:DeleteObject", bucketObject(v.Bucket, v.Key))
	case *s3.DeleteObjectsInput:
		var out []authorization
		for _, o := range v.Delete.Objects {
			out = append(out, one("s3:DeleteObject", bucketObject(v.Bucket, o.Key))...)
		}
		return out
	case *s3.ListObjectsV2Input:
		b := ownResource(aws.ToString(v.Bucket))
		if b == "" {
			b = "arn:aws:s3:::" + aws.ToString(v.Bucket)
		}
		return []authorization{{Action: "s3:ListBucket", Resource: b, Prefix: aws.ToString(v.Prefix)}}
	case *dynamodb.GetItemInput:
		return one("dynamodb:GetItem", table(v.TableName))
	case *dynamodb.PutItemInput:
		return one("dynamodb:PutItem", table(v.TableName))
	case *dynamodb.UpdateItemInput:
		return one("dynamodb:UpdateItem", table(v.TableName))
	case *dynamodb.DeleteItemInput:
		return one("dynamodb:DeleteItem", table(v.TableName))
	case *dynamodb.QueryInput:
		return one("dynamodb:Query", table(v.TableName))
	case *dynamodb.ScanInput:
		return one("dynamodb:Scan", table(v.TableName))
	case *dynamodb.TransactWriteItemsInput:
		// Authorized per contained action (DynamoDB developer guide,
		// "Using IAM with DynamoDB transactions").
		var out []authorization
		for _, it := range v.TransactItems {
			switch {
			case it.Update != nil:
				out = append(out, one("dynamodb:UpdateItem", table(it.Update.TableName))...)
			case it.Put != nil:
				out = append(out, one("dynamodb:PutItem", table(it.Put.TableName))...)
			case it.Delete != nil:
				out = append(out, one("dynamodb:DeleteItem", table(it.Delete.TableName))...)
			case it.ConditionCheck != nil:
				out = append(out, one("dynamodb:ConditionCheckItem", table(it.ConditionCheck.TableName))...)
			}
		}
		return out
	case *sqs.SendMessageInput:
		return one("sqs:SendMessage", queueResource(v.QueueUrl))
	case *sqs.SendMessageBatchInput:
		return one("sqs:SendMessage", queueResource(v.QueueUrl))
	case *sqs.ReceiveMessageInput:
		return one("sqs:ReceiveMessage", queueResource(v.QueueUrl))
	case *sqs.DeleteMessageInput:
		return one("sqs:DeleteMessage", queueResource(v.QueueUrl))
	case *sqs.ChangeMessageVisibilityInput:
		return one("sqs:ChangeMessageVisibility", queueResource(v.QueueUrl))
	case *sqs.GetQueueAttributesInput:
		return one("sqs:GetQueueAttributes", queueResource(v.QueueUrl))
	case *eventbridge.PutEventsInput:
		var out []authorization
		for _, e := range v.Entries {
			bus := aws.ToString(e.EventBusName)
			if bus == "" {
				bus = "default"
			}
			if !strings.HasPrefix(bus, "arn:") {
				bus = fmt.Sprintf("arn:aws:events:%s:%s:event-bus/%s", testRegion, testAccount, bus)
			}
			out = append(out, one("events:PutEvents", bus)...)
		}
		return out
	case *scheduler.CreateScheduleInput:
		// Authorized on the schedule; the target's role is passed to the
		// scheduler (EventBridge Scheduler User Guide, "Set up the
		// execution role": the caller needs iam:PassRole on it).
		group := aws.ToString(v.GroupName)
		if ph := ownResource(group); ph != "" {
			group = ph
		}
		out := one("scheduler:CreateSchedule", fmt.Sprintf("arn:aws:scheduler:%s:%s:schedule/%s/%s", testRegion, testAccount, group, aws.ToString(v.Name)))
		if v.Target != nil {
			role := aws.ToString(v.Target.RoleArn)
			if ph := ownResource(role[strings.LastIndex(role, "/")+1:]); ph != "" {
				role = ph
			}
			out = append(out, authorization{Action: "iam:PassRole", Resource: role, PassedToService: "scheduler.amazonaws.com"})
		}
		return out
	case *glue.GetTableInput:
		return one("glue:GetTable", glueARNs(aws.ToString(v.DatabaseName), aws.ToString(v.Name))...)
	case *glue.GetTablesInput:
		return one("glue:GetTables", glueARNs(aws.ToString(v.DatabaseName), "*")...)
	case *glue.GetDatabaseInput:
		return one("glue:GetDatabase", glueARNs(aws.ToString(v.Name), "")...)
	case *glue.UpdateTableInput:
		return one("glue:UpdateTable", glueARNs(aws.ToString(v.DatabaseName), aws.ToString(v.TableInput.Name))...)
	case *athena.GetQueryExecutionInput:
		// Authorized on the query's workgroup (Service Authorization
		// Reference, Amazon Athena: GetQueryExecution, resource type
		// workgroup); the tests' queries run in "primary".
		return one("athena:GetQueryExecution", fmt.Sprintf("arn:aws:athena:%s:%s:workgroup/primary", testRegion, testAccount))
	}
	return []authorization{{Action: fmt.Sprintf("unmapped:%T", in)}}
}

type policyStatement struct {
	Sid string `json:"sid"`
	// Effect is Allow or Deny.
	Effect    string         `json:"effect"`
	Actions   []string       `json:"actions"`
	Resources []string       `json:"resources"`
	Condition map[string]any `json:"condition"`
}

// usedElsewhere are statements no call of the functions' own code makes,
// and why the stack grants them anyway.
var usedElsewhere = map[string]string{
	"xray:PutTraceSegments":       "the Lambda runtime and the X-Ray daemon (active tracing)",
	"sqs:ReceiveMessage":          "the SQS event source mapping polls for the function",
	"sqs:GetQueueUrl":             "granted with the event source mapping's consume permissions",
	"s3:ListBucket":               "listing the table locations: iceberg-go's file IO, not recorded here",
	"glue:GetCatalog":             "the Glue Iceberg REST endpoint (the tests' Glue catalog uses the Glue API)",
	"glue:GetTables":              "the sweep over a granted namespace",
	"s3:GetObject":                "reading table objects: iceberg-go's file IO, not recorded here",
	"s3:PutObject":                "writing table objects: iceberg-go's file IO, not recorded here",
	"s3:DeleteObject":             "removing table objects: iceberg-go's file IO, not recorded here",
	"s3:AbortMultipartUpload":     "iceberg-go's multipart uploads to the table locations",
	"dynamodb:DeleteItem":         "granted with the state tables' read-write actions",
	"dynamodb:Query":              "granted with the state tables' read-write actions",
	"dynamodb:ConditionCheckItem": "transactions of the other functions",
	"dynamodb:PutItem":            "granted with the state tables' read-write actions (the planner creates the records)",
	"sqs:GetQueueAttributes":      "the SQS event source mapping (and CDK's grants to send)",
	"xray:PutTelemetryRecords":    "the Lambda runtime and the X-Ray daemon (active tracing)",
	"glue:GetDatabase":            "namespace lookups of the Glue catalog (the sweep over a granted namespace)",
	"glue:GetDatabases":           "orphan cleanup's walk of the whole catalog (shared/orphans; the tests' walks use the sqlite catalog)",
	"glue:GetTable":               "loading a table on Glue: the rewriters' deletion and listing tasks and orphan cleanup's catalog walk (the tests use the sqlite catalog there)",
}

// checkIAM evaluates the recorded calls after a full run; it returns the
// denied calls, or "" (also for partial runs, which record a subset).
func checkIAM() string {
	if f := flag.Lookup("test.run"); f == nil || f.Value.String() != "" || flag.Lookup("test.short").Value.String() == "true" {
		return ""
	}
	raw, err := os.ReadFile(policiesFile)
	if err != nil {
		return err.Error()
	}
	var policies map[string][]policyStatement
	if err := json.Unmarshal(raw, &policies); err != nil {
		return fmt.Sprintf("%s: %v", policiesFile, err)
	}
	calls.Lock()
	defer calls.Unlock()
	denied := map[string]bool{}
	used := map[string]bool{}
	for _, c := range calls.list {
		for _, a := range c.Auth {
			if a.Resource == "" {
				continue // not one of the env's resources: a test's own
			}
			sid, ok := allowed(policies[c.Function], a)
			if !ok {
				where := a.Resource
				if a.Prefix != "" {
					where += " (s3:prefix " + a.Prefix + ")"
				}
				denied[fmt.Sprintf("%s %s: %s on %s", c.Function, c.Operation, a.Action, where)] = true
				continue
			}
			used[c.Function+"/"+sid+"/"+a.Action] = true
		}
	}
	// A grant that no recorded call used and that no known path outside
	// the recorded code needs is a grant too many.
	for fn, sts := range policies {
		for _, st := range sts {
			if st.Effect == "Deny" {
				continue // a guard, not a grant
			}
			for _, act := range st.Actions {
				if !used[fn+"/"+st.Sid+"/"+act] && usedElsewhere[act] == "" {
					denied[fmt.Sprintf("%s statement %q grants %s, which no recorded call used and no known path needs (add the path to usedElsewhere, or remove the grant)", fn, st.Sid, act)] = true
				}
			}
		}
	}
	if len(denied) == 0 {
		return ""
	}
	var list []string
	for d := range denied {
		list = append(list, d)
	}
	sort.Strings(list)
	return fmt.Sprintf("the synthesized IAM policies (%s) and the recorded AWS calls disagree:\n  %s", policiesFile, strings.Join(list, "\n  "))
}

// allowed evaluates a as IAM evaluates an identity-based policy: an
// explicit Deny of a matching statement wins over any Allow; without one,
// an Allow covering a allows it; without that, it is denied (IAM User
// Guide, "Policy evaluation logic":
// https://docs.aws.amazon.com/IAM/latest/UserGuide/reference_policies_evaluation-logic.html).
// It returns the Sid of the Allow statement used, or of the Deny.
func allowed(sts []policyStatement, a authorization) (string, bool) {
	matches := func(st policyStatement) bool {
		return anyGlob(st.Actions, a.Action) && anyGlob(st.Resources, a.Resource) &&
			(len(st.Condition) == 0 || conditionHolds(st.Condition, a))
	}
	for _, st := range sts {
		if st.Effect == "Deny" && matches(st) {
			return st.Sid, false
		}
	}
	for _, st := range sts {
		if st.Effect != "Deny" && matches(st) {
			return st.Sid, true
		}
	}
	return "", false
}

func anyGlob(patterns []string, s string) bool {
	for _, p := range patterns {
		if glob(p, s) {
			return true
		}
	}
	return false
}

// glob matches IAM's wildcards: * any run of characters, ? one.
func glob(p, s string) bool {
	re := "^" + strings.NewReplacer(`\*`, ".*", `\?`, ".").Replace(regexp.QuoteMeta(p)) + "$"
	ok, _ := regexp.MatchString(re, s)
	return ok
}

// conditionHolds evaluates the conditions the stack writes: StringLike on
// s3:prefix, and StringEquals on s3tables:namespace and
// s3tables:tableName. Every key of a condition must hold, each by one of
// its values (IAM's AND across keys, OR across values); an unknown
// operator or key does not hold.
func conditionHolds(cond map[string]any, a authorization) bool {
	for op, keys := range cond {
		m, ok := keys.(map[string]any)
		if !ok {
			return false
		}
		for key, v := range m {
			var values []string
			switch v := v.(type) {
			case string:
				values = []string{v}
			case []any:
				for _, p := range v {
					values = append(values, fmt.Sprint(p))
				}
			}
			var holds bool
			switch {
			case op == "StringLike" && key == "s3:prefix":
				holds = anyGlob(values, a.Prefix)
			case op == "StringEquals" && key == "s3tables:namespace":
				holds = a.Namespace != "" && slices.Contains(values, a.Namespace)
			case op == "StringEquals" && key == "s3tables:tableName":
				holds = a.TableName != "" && slices.Contains(values, a.TableName)
			case op == "StringEquals" && key == "iam:PassedToService":
				holds = a.PassedToService != "" && slices.Contains(values, a.PassedToService)
			}
			if !holds {
				return false
			}
		}
	}
	return true
}
