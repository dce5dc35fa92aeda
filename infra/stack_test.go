package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/icekeeper/icekeeper/shared/envvars"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"reflect"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/assertions"
	"github.com/aws/jsii-runtime-go"
)

// The tests synthesize the stack offline (jsii runs the CDK in a Node child
// process; no AWS account, no CDK CLI) and read the CloudFormation template.
// They do not call t.Parallel: every synthesis goes through the one jsii
// kernel process anyway.

// (The jsii kernel starts while the CDK packages initialize, before
// TestMain, so its Node version warning can only be silenced from outside:
// `make infra-test` sets JSII_SILENCE_WARNING_END_OF_LIFE_NODE_VERSION.)
func TestMain(m *testing.M) {
	code := m.Run()
	jsii.Close()
	os.Exit(code)
}

// activeContext is a typical production context: Glue catalog, one granted
// namespace and one granted table under an S3 warehouse.
func activeContext() map[string]any {
	return map[string]any{
		CtxMode:             "active",
		CtxGrants:           "analytics.*,sales.orders",
		CtxCatalogWarehouse: "s3://lake/warehouse",
		CtxAlarmEmail:       "ops@example.com",
	}
}

// fixture is one synthesized stack.
type fixture struct {
	stack     *IcekeeperStack
	tpl       assertions.Template
	resources map[string]map[string]any
}

// synth builds the app from ctx (with assetDir pointed at dummy
// bootstraps) and returns the template, or the error NewIcekeeperStack or
// the settings returned.
func synth(t *testing.T, ctx map[string]any) (*fixture, error) {
	t.Helper()
	assets := t.TempDir()
	writeBootstraps(t, assets)
	// The CDK feature flags of cdk.json, so the tests check the stack a
	// deployment synthesizes.
	c := cdkFeatureFlags(t)
	for k, v := range ctx {
		c[k] = v
	}
	c[CtxAssetDir] = assets
	app := awscdk.NewApp(&awscdk.AppProps{Context: &c, Outdir: jsii.String(t.TempDir())})
	settings, err := SettingsFromContext(app.Node())
	if err != nil {
		return nil, err
	}
	account, region := "123456789012", "eu-west-1"
	if a, ok := ctx[ctxTestAccount].(string); ok {
		account, region = a, ctx[ctxTestRegion].(string)
	}
	env := &awscdk.Environment{Account: jsii.String(account), Region: jsii.String(region)}
	if ctx[ctxTestAgnostic] == true {
		// As main.go synthesizes without CDK_DEFAULT_ACCOUNT and _REGION:
		// partition, region and account are deploy-time values.
		env = nil
	}
	stack, err := NewIcekeeperStack(app, "Test", &IcekeeperStackProps{
		StackProps: awscdk.StackProps{Env: env},
		Settings:   settings,
	})
	if err != nil {
		return nil, err
	}
	tpl := assertions.Template_FromStack(stack.Stack, nil)
	raw, err := json.Marshal(tpl.ToJSON())
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Resources map[string]map[string]any
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	return &fixture{stack: stack, tpl: tpl, resources: doc.Resources}, nil
}

// writeBootstraps puts a dummy bootstrap for each function under dir.
func writeBootstraps(t *testing.T, dir string) {
	t.Helper()
	for _, fn := range Functions() {
		if err := os.MkdirAll(filepath.Join(dir, fn), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, fn, "bootstrap"), []byte("#!/bin/sh\necho "+fn+"\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
}

// settingsFrom reads settings from a context without synthesizing.
func settingsFrom(t *testing.T, ctx map[string]any) (Settings, error) {
	t.Helper()
	app := awscdk.NewApp(&awscdk.AppProps{Context: &ctx, Outdir: jsii.String(t.TempDir())})
	return SettingsFromContext(app.Node())
}

func mustSynth(t *testing.T, ctx map[string]any) *fixture {
	t.Helper()
	f, err := synth(t, ctx)
	if err != nil {
		t.Fatalf("synth: %v", err)
	}
	return f
}

// assert runs a CDK assertion, turning its panic into a test error.
func assert(t *testing.T, what string, fn func()) {
	t.Helper()
	defer func() {
		if r := recover(); r != nil {
			t.Errorf("%s: %v", what, r)
		}
	}()
	fn()
}

// warnings are the stack's synthesis warnings, each as JSON.
func (f *fixture) warnings(t *testing.T) []string {
	t.Helper()
	var out []string
	for _, m := range *assertions.Annotations_FromStack(f.stack.Stack).FindWarning(jsii.String("*"), assertions.Match_AnyValue()) {
		raw, err := json.Marshal(m)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, string(raw))
	}
	return out
}

func (f *fixture) ofType(typ string) map[string]map[string]any {
	out := map[string]map[string]any{}
	for id, r := range f.resources {
		if r["Type"] == typ {
			out[id] = r
		}
	}
	return out
}

// idOf is the logical id of the one resource of type typ whose id starts
// with prefix.
func (f *fixture) idOf(t *testing.T, typ, prefix string) string {
	t.Helper()
	var ids []string
	for id := range f.ofType(typ) {
		if strings.HasPrefix(id, prefix) {
			ids = append(ids, id)
		}
	}
	if len(ids) != 1 {
		t.Fatalf("%d %s resources named %s*: %v", len(ids), typ, prefix, ids)
	}
	return ids[0]
}

func props(r map[string]any) map[string]any {
	p, _ := r["Properties"].(map[string]any)
	return p
}

// function returns the logical id and properties of the function whose id
// starts with name ("Planner", "Rewriter", "Committer").
func (f *fixture) function(t *testing.T, name string) (string, map[string]any) {
	t.Helper()
	for id, r := range f.ofType("AWS::Lambda::Function") {
		if strings.HasPrefix(id, name) {
			return id, props(r)
		}
	}
	t.Fatalf("no function %s", name)
	return "", nil
}

// flat renders a CloudFormation value as one string: Ref as ${X},
// Fn::GetAtt as ${X.Attr}, Fn::Join joined.
func flat(v any) string {
	switch t := v.(type) {
	case string:
		return t
	case float64:
		return strconv.FormatFloat(t, 'f', -1, 64)
	case map[string]any:
		if ref, ok := t["Ref"].(string); ok {
			return "${" + ref + "}"
		}
		if ga, ok := t["Fn::GetAtt"].([]any); ok && len(ga) == 2 {
			return "${" + flat(ga[0]) + "." + flat(ga[1]) + "}"
		}
		if j, ok := t["Fn::Join"].([]any); ok && len(j) == 2 {
			parts, _ := j[1].([]any)
			s := make([]string, 0, len(parts))
			for _, p := range parts {
				s = append(s, flat(p))
			}
			return strings.Join(s, flat(j[0]))
		}
	}
	b, _ := json.Marshal(v)
	return string(b)
}

func strs(v any) []string {
	switch t := v.(type) {
	case []any:
		out := make([]string, 0, len(t))
		for _, e := range t {
			out = append(out, flat(e))
		}
		return out
	case nil:
		return nil
	default:
		return []string{flat(t)}
	}
}

// stmt is one IAM statement with its resources flattened.
type stmt struct {
	Sid string
	// Effect is Allow or Deny.
	Effect    string
	Actions   []string
	Resources []string
	Condition any
}

func (s stmt) hasAction(prefix string) bool {
	for _, a := range s.Actions {
		if strings.HasPrefix(a, prefix) {
			return true
		}
	}
	return false
}

// statements lists the IAM statements attached to a function's role.
func (f *fixture) statements(t *testing.T, name string) []stmt {
	t.Helper()
	_, fn := f.function(t, name)
	role := strings.TrimSuffix(strings.TrimPrefix(flat(fn["Role"]), "${"), ".Arn}")
	var out []stmt
	policies := f.ofType("AWS::IAM::Policy")
	// A large deployment's table statements are in managed policies
	// attached to the role (iam.go, flush).
	for id, p := range f.ofType("AWS::IAM::ManagedPolicy") {
		policies[id] = p
	}
	for _, p := range policies {
		attached := false
		for _, r := range strs(props(p)["Roles"]) {
			attached = attached || r == "${"+role+"}"
		}
		if !attached {
			continue
		}
		doc := props(p)["PolicyDocument"].(map[string]any)
		for _, s := range doc["Statement"].([]any) {
			m := s.(map[string]any)
			sid, _ := m["Sid"].(string)
			effect, _ := m["Effect"].(string)
			out = append(out, stmt{Sid: sid, Effect: effect, Actions: strs(m["Action"]), Resources: strs(m["Resource"]), Condition: m["Condition"]})
		}
	}
	if len(out) == 0 {
		t.Fatalf("no policy statements for %s (role %s)", name, role)
	}
	return out
}

func (f *fixture) actions(t *testing.T, name string) map[string]bool {
	out := map[string]bool{}
	for _, s := range f.statements(t, name) {
		for _, a := range s.Actions {
			out[a] = true
		}
	}
	return out
}

// tableResources lists the resources of the function's statements that
// reach outside icekeeper's own resources into tables: Glue ARNs and S3
// ARNs that are not icekeeper's bucket.
func (f *fixture) tableResources(t *testing.T, name string) []string {
	var out []string
	for _, s := range f.statements(t, name) {
		for _, r := range s.Resources {
			if strings.Contains(r, ":glue:") || strings.Contains(r, ":s3:::") {
				out = append(out, r)
			}
		}
	}
	return out
}

// partition is the ARN prefix of the tests' stacks: their region
// (eu-west-1) is known and cdk.json sets @aws-cdk/core:target-partitions,
// so the CDK writes the partition itself instead of ${AWS::Partition}.
const partition = "arn:aws"

var functionIDs = []string{"Planner", "Rewriter", "Committer"}

func TestIcekeeperStack_CreatesTheResources(t *testing.T) {
	f := mustSynth(t, activeContext())
	for typ, n := range map[string]float64{
		"AWS::Lambda::Function": 3, "AWS::SQS::Queue": 5, "AWS::DynamoDB::Table": 2, "AWS::Events::Rule": 9, // schedule, orphans, summary, commit, continuation, Glue, S3, query signals, Athena
		"AWS::S3::Bucket": 1, "AWS::Lambda::EventSourceMapping": 2, "AWS::SNS::Topic": 1, "AWS::SNS::Subscription": 1,
		"AWS::CloudWatch::Dashboard": 1, "AWS::Logs::LogGroup": 3,
	} {
		assert(t, typ, func() { f.tpl.ResourceCountIs(jsii.String(typ), jsii.Number(n)) })
	}
	assert(t, "email subscription", func() {
		f.tpl.HasResourceProperties(jsii.String("AWS::SNS::Subscription"), map[string]any{"Protocol": "email", "Endpoint": "ops@example.com"})
	})
}

// TestIcekeeperStack_PlannerEventsThatFailGoToADeadLetterQueue: the
// planner's asynchronous invocations have an on-failure destination (the
// planner DLQ, which has an alarm) instead of being dropped after retries.
func TestIcekeeperStack_PlannerEventsThatFailGoToADeadLetterQueue(t *testing.T) {
	f := mustSynth(t, activeContext())
	var dlq string
	for id := range f.ofType("AWS::SQS::Queue") {
		if strings.HasPrefix(id, "PlannerDLQ") {
			dlq = id
		}
	}
	if dlq == "" {
		t.Fatal("no planner DLQ")
	}
	plannerID, _ := f.function(t, "Planner")
	found := false
	for _, r := range f.ofType("AWS::Lambda::EventInvokeConfig") {
		p := props(r)
		if strings.Contains(flat(p["FunctionName"]), plannerID) && strings.Contains(flat(p["DestinationConfig"]), dlq) && p["MaximumRetryAttempts"] == 2.0 {
			found = true
		}
	}
	if !found {
		t.Error("the planner's async invocations have no on-failure destination to its DLQ")
	}
	alarmed := false
	for id := range f.ofType("AWS::CloudWatch::Alarm") {
		alarmed = alarmed || strings.HasPrefix(id, "PlannerDLQNotEmpty")
	}
	if !alarmed {
		t.Error("no alarm on the planner DLQ")
	}
}

// TestIcekeeperStack_SSEKMSWarehouseKeys: with warehouse KMS keys, the
// planner may decrypt with them and the rewriter and committer may also
// generate data keys, on those keys only; without them nobody gets KMS.
func TestIcekeeperStack_SSEKMSWarehouseKeys(t *testing.T) {
	key := "arn:aws:kms:eu-west-1:123456789012:key/1234abcd-12ab-34cd-56ef-1234567890ab"
	ctx := activeContext()
	ctx[CtxKMSKeyARNs] = key
	f := mustSynth(t, ctx)
	for fn, want := range map[string][]string{"Planner": {"kms:Decrypt"}, "Rewriter": {"kms:Decrypt", "kms:GenerateDataKey"}, "Committer": {"kms:Decrypt", "kms:GenerateDataKey"}} {
		var got []string
		for _, s := range f.statements(t, fn) {
			for _, a := range s.Actions {
				if strings.HasPrefix(a, "kms:") {
					got = append(got, a)
					if !reflect.DeepEqual(s.Resources, []string{key}) {
						t.Errorf("%s %s on %v, want only the warehouse key", fn, a, s.Resources)
					}
				}
			}
		}
		sort.Strings(got)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s KMS actions %v, want %v", fn, got, want)
		}
	}
	for _, fn := range functionIDs {
		for a := range mustSynth(t, activeContext()).actions(t, fn) {
			if strings.HasPrefix(a, "kms:") {
				t.Errorf("%s has %s without warehouse keys", fn, a)
			}
		}
	}
	bad := activeContext()
	bad[CtxKMSKeyARNs] = "alias/lake"
	if _, err := synth(t, bad); err == nil || !strings.Contains(err.Error(), "want a KMS key ARN") {
		t.Errorf("an alias was accepted: %v", err)
	}
}

// TestIcekeeperStack_DestroyEmptiesTheBucket: with removalPolicy=destroy
// the bucket is emptied before deletion (CDK's auto-delete custom
// resource); by default it is retained and never emptied.
func TestIcekeeperStack_DestroyEmptiesTheBucket(t *testing.T) {
	ctx := activeContext()
	ctx[CtxRemovalPolicy] = "destroy"
	f := mustSynth(t, ctx)
	if n := len(f.ofType("Custom::S3AutoDeleteObjects")); n != 1 {
		t.Errorf("destroy: %d auto-delete resources, want 1", n)
	}
	if n := len(mustSynth(t, activeContext()).ofType("Custom::S3AutoDeleteObjects")); n != 0 {
		t.Errorf("retain: %d auto-delete resources, want none", n)
	}
}

func TestIcekeeperStack_FunctionsAreTracedArm64ProvidedAL2023(t *testing.T) {
	f := mustSynth(t, activeContext())
	for _, name := range functionIDs {
		_, p := f.function(t, name)
		if got := flat(p["TracingConfig"]); got != `{"Mode":"Active"}` {
			t.Errorf("%s tracing %s, want Active", name, got)
		}
		if got := strs(p["Architectures"]); !reflect.DeepEqual(got, []string{"arm64"}) {
			t.Errorf("%s architectures %v, want [arm64]", name, got)
		}
		if p["Runtime"] != "provided.al2023" || p["Handler"] != "bootstrap" {
			t.Errorf("%s runtime %v handler %v", name, p["Runtime"], p["Handler"])
		}
	}
	_, rw := f.function(t, "Rewriter")
	if rw["MemorySize"] != 1769.0 || rw["Timeout"] != 900.0 || rw["ReservedConcurrentExecutions"] != nil {
		t.Errorf("rewriter memory %v timeout %v reserved %v, want 1769 (one vCPU), 900, none (a new account's quota can be 10)", rw["MemorySize"], rw["Timeout"], rw["ReservedConcurrentExecutions"])
	}
	// Sort compaction spills sorted runs to the rewriter's /tmp.
	if got := flat(rw["EphemeralStorage"]); got != `{"Size":4096}` {
		t.Errorf("rewriter ephemeral storage %s, want 4096 MB", got)
	}
	for _, name := range []string{"Planner", "Committer"} {
		if _, p := f.function(t, name); p["EphemeralStorage"] != nil {
			t.Errorf("%s ephemeral storage %v: want Lambda's default", name, flat(p["EphemeralStorage"]))
		}
		if _, p := f.function(t, name); p["MemorySize"].(float64) >= 1769 || p["Timeout"].(float64) >= 900 || p["ReservedConcurrentExecutions"] != nil {
			t.Errorf("%s memory %v timeout %v reserved %v: want smaller than the rewriter, no reserved concurrency", name, p["MemorySize"], p["Timeout"], p["ReservedConcurrentExecutions"])
		}
	}
}

// configEnvNames parses shared/config/config.go and returns its
// ICEKEEPER_* constants.
func configEnvNames(t *testing.T) []string {
	t.Helper()
	// The names live in package envvars; config.go reads every one of them
	// (checked below by TestEnvNames_ConfigReadsEveryName).
	file, err := parser.ParseFile(token.NewFileSet(), filepath.Join("..", "shared", "envvars", "envvars.go"), nil, 0)
	if err != nil {
		t.Fatalf("parse config.go: %v", err)
	}
	var names []string
	ast.Inspect(file, func(n ast.Node) bool {
		if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
			if v, err := strconv.Unquote(lit.Value); err == nil && strings.HasPrefix(v, "ICEKEEPER_") && !strings.ContainsAny(v, " =") {
				names = append(names, v)
			}
		}
		return true
	})
	sort.Strings(names)
	return names
}

func TestEnvNames_AreExactlyConfigGoNames(t *testing.T) {
	want := configEnvNames(t)
	got := append([]string(nil), EnvNames()...)
	sort.Strings(got)
	if len(want) < 20 {
		t.Fatalf("found only %d names in config.go: %v", len(want), want)
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("infra/env.go names differ from shared/config/config.go\n infra:  %v\n config: %v", got, want)
	}
}

func TestEnvNames_ConfigReadsEveryName(t *testing.T) {
	src, err := os.ReadFile(filepath.Join("..", "shared", "config", "config.go"))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range EnvNames() {
		found := false
		for _, line := range strings.Split(string(src), "\n") {
			if strings.Contains(line, "envvars.") && strings.Contains(line, "= envvars."+envConstName(n)) {
				found = true
			}
		}
		if !found {
			t.Errorf("shared/config/config.go does not define a constant for %s", n)
		}
	}
}

// envConstName is the envvars constant of a variable: ICEKEEPER_LEASE_TTL
// is LeaseTTL. It is looked up in envvars.go itself.
func envConstName(name string) string {
	src, _ := os.ReadFile(filepath.Join("..", "shared", "envvars", "envvars.go"))
	for _, line := range strings.Split(string(src), "\n") {
		if strings.Contains(line, `"`+name+`"`) {
			return strings.TrimSpace(strings.SplitN(line, "=", 2)[0])
		}
	}
	return "?"
}

func TestIcekeeperStack_SetsTheEnvironmentConfigReads(t *testing.T) {
	ctx := activeContext()
	ctx[CtxMaxTaskAttempts] = 5
	ctx[CtxCatalogProperties] = "s3.region=eu-west-1,glue.region=eu-west-1"
	ctx[CtxLeaseTTL] = "45m"
	ctx[CtxEnvironment] = map[string]any{"ICEKEEPER_SWEEP_MAX_JOBS": "20"}
	f := mustSynth(t, ctx)
	known := map[string]bool{}
	for _, n := range configEnvNames(t) {
		known[n] = true
	}
	queue := func(prefix string) string {
		for id := range f.ofType("AWS::SQS::Queue") {
			if strings.HasPrefix(id, prefix) && !strings.Contains(id, "DLQ") {
				return "${" + id + "}"
			}
		}
		t.Fatalf("no queue %s", prefix)
		return ""
	}
	table := func(prefix string) string {
		for id := range f.ofType("AWS::DynamoDB::Table") {
			if strings.HasPrefix(id, prefix) {
				return "${" + id + "}"
			}
		}
		t.Fatalf("no table %s", prefix)
		return ""
	}
	var bucket string
	for id := range f.ofType("AWS::S3::Bucket") {
		bucket = "${" + id + "}"
	}
	want := map[string]string{
		envvars.Mode: "active", envvars.Grants: "analytics.*,sales.orders", envvars.MaxTaskAttempts: "5",
		envvars.CatalogType: "glue", envvars.CatalogName: "default", envvars.CatalogWarehouse: "s3://lake/warehouse",
		envvars.CatalogProperties: "glue.region=eu-west-1,s3.region=eu-west-1",
		envvars.TaskQueueURL:      queue("Tasks"), envvars.CommitQueueURL: queue("Commits"),
		envvars.LeaseTable: table("Leases"), envvars.JobsTable: table("Jobs"), envvars.Bucket: bucket,
		envvars.EventBus: "default", envvars.CommitTakeover: "16m0s", envvars.LeaseTTL: "45m0s", "ICEKEEPER_SWEEP_MAX_JOBS": "20",
		envvars.RewriterMemoryMB: "1769", envvars.CoordinatorMemMB: "1024",
		envvars.MaxJobFiles:         "100000", // the default committer's 1024 MB (MaxJobFilesFor)
		envvars.RewriterConcurrency: "10",     // the task event source's maximum concurrency (rewriterMaxConcurrency)
		// The expiry wake-ups (expiryWakeUps, on by default in mode active).
		envvars.WakeUpGroup: "${ExpiryWakeUps}", envvars.WakeUpRoleARN: "${" + f.idOf(t, "AWS::IAM::Role", "ExpiryWakeUpsRole") + ".Arn}",
		envvars.EventBusARN: "arn:aws:events:eu-west-1:123456789012:event-bus/default",
	}
	for _, name := range functionIDs {
		_, p := f.function(t, name)
		vars := p["Environment"].(map[string]any)["Variables"].(map[string]any)
		got := map[string]string{}
		for k, v := range vars {
			if !known[k] {
				t.Errorf("%s sets %s, which shared/config/config.go does not read", name, k)
			}
			got[k] = flat(v)
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s environment\n got  %v\n want %v", name, got, want)
		}
	}
}

// TestIcekeeperStack_DefaultRedriveIsAWSsRecommendedFive: with nothing
// set, both queues dead-letter after 5 receives, AWS's recommended least
// maxReceiveCount for a Lambda event source
// (https://docs.aws.amazon.com/lambda/latest/dg/sqs-retries.html), and the
// functions count the same deliveries (ICEKEEPER_MAX_TASK_ATTEMPTS, whose
// own default in shared/config is the same constant).
func TestIcekeeperStack_DefaultRedriveIsAWSsRecommendedFive(t *testing.T) {
	ctx := activeContext()
	delete(ctx, CtxMaxTaskAttempts)
	f := mustSynth(t, ctx)
	queues := 0
	for id, r := range f.ofType("AWS::SQS::Queue") {
		rp, ok := props(r)["RedrivePolicy"].(map[string]any)
		if !ok {
			continue
		}
		queues++
		if rp["maxReceiveCount"] != 5.0 {
			t.Errorf("%s maxReceiveCount %v, want 5", id, rp["maxReceiveCount"])
		}
	}
	if queues != 2 {
		t.Fatalf("%d queues with a redrive policy, want 2", queues)
	}
	_, rw := f.function(t, "Rewriter")
	vars, _ := rw["Environment"].(map[string]any)["Variables"].(map[string]any)
	if got := vars[envvars.MaxTaskAttempts]; got != "5" {
		t.Errorf("rewriter %s = %v, want 5", envvars.MaxTaskAttempts, got)
	}
	if config := envvars.DefaultMaxTaskAttempts; config != 5 {
		t.Errorf("envvars.DefaultMaxTaskAttempts (shared/config's default) = %d, want 5", config)
	}
}

// TestIcekeeperStack_ACrashedRewritersTaskComesBackWithinTheLease: the
// deployed lease (ICEKEEPER_LEASE_TTL) outlasts a rewriter's timeout plus
// the heartbeat that keeps its task invisible, so the task of a rewriter
// that died comes back while its job still holds the table.
func TestIcekeeperStack_ACrashedRewritersTaskComesBackWithinTheLease(t *testing.T) {
	f := mustSynth(t, activeContext())
	_, rw := f.function(t, "Rewriter")
	vars, _ := rw["Environment"].(map[string]any)["Variables"].(map[string]any)
	lease, err := time.ParseDuration(vars[envvars.LeaseTTL].(string))
	if err != nil {
		t.Fatal(err)
	}
	timeout := time.Duration(rw["Timeout"].(float64)) * time.Second
	if lease <= timeout+envvars.TaskHeartbeat {
		t.Fatalf("lease %s does not outlast the rewriter's timeout %s plus the heartbeat %s", lease, timeout, envvars.TaskHeartbeat)
	}
}

func TestIcekeeperStack_QueuesRedriveAfterMaxTaskAttemptsWithLongVisibility(t *testing.T) {
	ctx := activeContext()
	ctx[CtxMaxTaskAttempts] = 5
	f := mustSynth(t, ctx)
	_, rw := f.function(t, "Rewriter")
	_, cm := f.function(t, "Committer")
	timeouts := map[string]float64{"Tasks": rw["Timeout"].(float64), "Commits": cm["Timeout"].(float64)}
	seen := 0
	for id, r := range f.ofType("AWS::SQS::Queue") {
		p := props(r)
		if strings.Contains(id, "DLQ") {
			if p["RedrivePolicy"] != nil {
				t.Errorf("dead-letter queue %s has a redrive policy", id)
			}
			continue
		}
		seen++
		rp := p["RedrivePolicy"].(map[string]any)
		if rp["maxReceiveCount"] != 5.0 || !strings.Contains(flat(rp["deadLetterTargetArn"]), "DLQ") {
			t.Errorf("%s redrive %v, want maxReceiveCount 5 to its DLQ", id, flat(rp))
		}
		vis := p["VisibilityTimeout"].(float64)
		for prefix, timeout := range timeouts {
			if strings.HasPrefix(id, prefix) && vis < 6*timeout {
				t.Errorf("%s visibility %vs < 6 x %vs", id, vis, timeout)
			}
		}
		if strings.HasPrefix(id, "Commits") && vis <= 16*60 {
			t.Errorf("commit queue visibility %vs does not span ICEKEEPER_COMMIT_TAKEOVER (16m)", vis)
		}
		if p["SqsManagedSseEnabled"] != true {
			t.Errorf("%s is not encrypted", id)
		}
	}
	if seen != 2 {
		t.Fatalf("%d main queues, want 2", seen)
	}
	for id, r := range f.ofType("AWS::Lambda::EventSourceMapping") {
		p := props(r)
		if p["BatchSize"] != 1.0 || flat(p["FunctionResponseTypes"]) != `["ReportBatchItemFailures"]` {
			t.Errorf("%s batch %v responses %v, want 1 and ReportBatchItemFailures", id, p["BatchSize"], flat(p["FunctionResponseTypes"]))
		}
		if strings.HasPrefix(id, "Rewriter") && flat(p["ScalingConfig"]) != `{"MaximumConcurrency":10}` {
			t.Errorf("rewriter event source scaling %s, want maximum concurrency 10", flat(p["ScalingConfig"]))
		}
	}
}

func TestIcekeeperStack_StorageMatchesTheCode(t *testing.T) {
	f := mustSynth(t, activeContext())
	assert(t, "lease table", func() {
		f.tpl.HasResourceProperties(jsii.String("AWS::DynamoDB::Table"), map[string]any{
			"KeySchema":                        []any{map[string]any{"AttributeName": "table_id", "KeyType": "HASH"}},
			"AttributeDefinitions":             []any{map[string]any{"AttributeName": "table_id", "AttributeType": "S"}},
			"TimeToLiveSpecification":          map[string]any{"AttributeName": "purge_at", "Enabled": true},
			"BillingMode":                      "PAY_PER_REQUEST",
			"PointInTimeRecoverySpecification": map[string]any{"PointInTimeRecoveryEnabled": true},
		})
	})
	assert(t, "jobs table", func() {
		f.tpl.HasResourceProperties(jsii.String("AWS::DynamoDB::Table"), map[string]any{
			"KeySchema": []any{
				map[string]any{"AttributeName": "job_id", "KeyType": "HASH"},
				map[string]any{"AttributeName": "item_key", "KeyType": "RANGE"},
			},
			"TimeToLiveSpecification":          map[string]any{"AttributeName": "purge_at", "Enabled": true},
			"BillingMode":                      "PAY_PER_REQUEST",
			"PointInTimeRecoverySpecification": map[string]any{"PointInTimeRecoveryEnabled": true},
		})
	})
	assert(t, "bucket", func() {
		f.tpl.HasResourceProperties(jsii.String("AWS::S3::Bucket"), map[string]any{
			"BucketEncryption": map[string]any{"ServerSideEncryptionConfiguration": []any{
				map[string]any{"ServerSideEncryptionByDefault": map[string]any{"SSEAlgorithm": "AES256"}},
			}},
			"PublicAccessBlockConfiguration": map[string]any{
				"BlockPublicAcls": true, "BlockPublicPolicy": true, "IgnorePublicAcls": true, "RestrictPublicBuckets": true,
			},
			"LifecycleConfiguration": map[string]any{"Rules": assertions.Match_ArrayWith(&[]any{
				assertions.Match_ObjectLike(&map[string]any{"Prefix": "jobs/", "ExpirationInDays": 14, "Status": "Enabled"}),
				assertions.Match_ObjectLike(&map[string]any{"Prefix": "health/", "ExpirationInDays": 90, "Status": "Enabled"}),
				assertions.Match_ObjectLike(&map[string]any{"Prefix": "log/", "ExpirationInDays": 400, "Status": "Enabled"}),
			})},
		})
	})
	var policy string
	for _, r := range f.ofType("AWS::S3::BucketPolicy") {
		policy = flat(props(r)["PolicyDocument"])
	}
	if !strings.Contains(policy, `"aws:SecureTransport":"false"`) || !strings.Contains(policy, `"Effect":"Deny"`) {
		t.Errorf("bucket policy does not deny plain HTTP: %s", policy)
	}
}

func TestIcekeeperStack_GlueAccessIsScopedToGrants(t *testing.T) {
	f := mustSynth(t, activeContext())
	glue := func(what string) string { return partition + ":glue:eu-west-1:123456789012:" + what }
	want := []string{glue("catalog"), glue("database/analytics"), glue("database/sales"), glue("table/analytics/*"), glue("table/sales/orders")}
	for _, name := range []string{"Planner", "Committer"} {
		found := false
		for _, s := range f.statements(t, name) {
			if !s.hasAction("glue:") {
				continue
			}
			if s.Sid == "CatalogWalk" {
				// Orphan cleanup's proof that no other table lies in a
				// location reads every table's metadata, nothing else.
				wantWalk := []string{glue("catalog"), glue("database/*"), glue("table/*/*")}
				if !reflect.DeepEqual(s.Resources, wantWalk) {
					t.Errorf("%s's catalog walk on %v, want %v", name, s.Resources, wantWalk)
				}
				for _, a := range s.Actions {
					if !strings.HasPrefix(a, "glue:Get") {
						t.Errorf("%s's catalog walk allows %s; want reads only", name, a)
					}
				}
				continue
			}
			found = true
			if !reflect.DeepEqual(s.Resources, want) {
				t.Errorf("%s %v on\n %v\nwant\n %v", name, s.Actions, s.Resources, want)
			}
		}
		if !found {
			t.Errorf("%s has no Glue permission", name)
		}
	}
}

func TestIcekeeperStack_OnlyTheCommitterUpdatesTheCatalog(t *testing.T) {
	f := mustSynth(t, activeContext())
	for a := range f.actions(t, "Rewriter") {
		// Deletion and listing tasks load the table from the catalog.
		if strings.HasPrefix(a, "glue:") && !strings.HasPrefix(a, "glue:Get") {
			t.Errorf("rewriter has %s; rewriters may only read the catalog", a)
		}
	}
	if f.actions(t, "Planner")["glue:UpdateTable"] {
		t.Error("planner may update the catalog")
	}
	if !f.actions(t, "Committer")["glue:UpdateTable"] {
		t.Error("committer may not update the catalog")
	}
	// The Glue Iceberg REST endpoint requires glue:GetCatalog on every call.
	for _, fn := range []string{"Planner", "Committer"} {
		if !f.actions(t, fn)["glue:GetCatalog"] {
			t.Errorf("%s lacks glue:GetCatalog", fn)
		}
	}
	// The committer writes the maintenance log.
	if !f.actions(t, "Committer")["s3:PutObject"] {
		t.Error("committer cannot write the maintenance log")
	}
}

func TestIcekeeperStack_NoWildcardTableResourcesAndNoQueryServices(t *testing.T) {
	for mode, ctx := range map[string]map[string]any{"active": activeContext(), "advisory": func() map[string]any {
		c := activeContext()
		c[CtxMode] = "advisory"
		return c
	}()} {
		f := mustSynth(t, ctx)
		for _, name := range functionIDs {
			for _, s := range f.statements(t, name) {
				for _, a := range s.Actions {
					// Query signals read an Athena query's execution;
					// nothing may start, stop or read the results of one.
					// Only in the configured workgroups (default primary):
					// every workgroup would expose every query's text.
					if a == "athena:GetQueryExecution" && name == "Planner" {
						if len(s.Resources) != 1 || !strings.HasSuffix(s.Resources[0], ":workgroup/primary") {
							t.Errorf("%s planner reads Athena executions on %v, want the workgroup primary only", mode, s.Resources)
						}
						continue
					}
					if a == "*" || strings.HasPrefix(a, "athena:") || strings.HasPrefix(a, "redshift") || strings.HasPrefix(a, "s3:*") || strings.HasPrefix(a, "glue:*") {
						t.Errorf("%s %s has %s", mode, name, a)
					}
				}
				if (s.hasAction("s3:") || s.hasAction("glue:")) && contains(s.Resources, "*") {
					t.Errorf("%s %s: %v on resource *", mode, name, s.Actions)
				}
			}
		}
	}
}

// TestIcekeeperStack_QuerySignalRulesTargetThePlanner: with query signals
// on (the default) the custom query event on icekeeper's bus and Athena's
// succeeded DML queries on the default bus reach the planner, which may
// read Athena executions; with them off neither rule nor the permission
// exists.
func TestIcekeeperStack_QuerySignalRulesTargetThePlanner(t *testing.T) {
	f := mustSynth(t, activeContext())
	f.tpl.HasResourceProperties(jsii.String("AWS::Events::Rule"), map[string]any{
		"EventPattern": map[string]any{"source": []any{"icekeeper"}, "detail-type": []any{"Icekeeper Query Observed"}},
	})
	f.tpl.HasResourceProperties(jsii.String("AWS::Events::Rule"), map[string]any{
		"EventPattern": map[string]any{"source": []any{"aws.athena"}, "detail-type": []any{"Athena Query State Change"},
			"detail": map[string]any{"currentState": []any{"SUCCEEDED"}, "statementType": []any{"DML"}}},
	})
	if !f.actions(t, "Planner")["athena:GetQueryExecution"] {
		t.Error("the planner cannot read Athena executions")
	}
	ctx := activeContext()
	ctx[CtxQuerySignals] = false
	off := mustSynth(t, ctx)
	if off.actions(t, "Planner")["athena:GetQueryExecution"] {
		t.Error("querySignals=false still grants athena:GetQueryExecution")
	}
	for id, r := range off.resources {
		if r["Type"] == "AWS::Events::Rule" && (strings.Contains(flat(r), "Athena Query State Change") || strings.Contains(flat(r), "Icekeeper Query Observed")) {
			t.Errorf("querySignals=false still has the query signal rule %s", id)
		}
	}
}

// TestIcekeeperStack_ContinuationsWakeThePlanner: the committer may put
// its "Icekeeper Compaction Continues" event on icekeeper's bus, and a rule
// there wakes the planner for the compaction's next job; in mode off, where
// nothing is compacted, neither exists.
func TestIcekeeperStack_ContinuationsWakeThePlanner(t *testing.T) {
	f := mustSynth(t, activeContext())
	f.tpl.HasResourceProperties(jsii.String("AWS::Events::Rule"), map[string]any{
		"EventPattern": map[string]any{"source": []any{"icekeeper"}, "detail-type": []any{"Icekeeper Compaction Continues"}},
	})
	if !f.actions(t, "Committer")["events:PutEvents"] {
		t.Error("the committer cannot announce a compaction's next job")
	}
	ctx := activeContext()
	ctx[CtxMode] = "off"
	off := mustSynth(t, ctx)
	if off.actions(t, "Committer")["events:PutEvents"] {
		t.Error("mode off: the committer may put events")
	}
	for id, r := range off.resources {
		if r["Type"] == "AWS::Events::Rule" && strings.Contains(flat(r), "Icekeeper Compaction Continues") {
			t.Errorf("mode off still has the continuation rule %s", id)
		}
	}
}

// TestIcekeeperStack_ExpiryWakeUps: in mode active the planner may create
// schedules in the stack's schedule group only, and pass the scheduler
// its own role only to EventBridge Scheduler; that role trusts the
// scheduler for this account's schedules and may only put events on
// icekeeper's bus, where the continuation rule wakes the planner. The
// other functions get no scheduler action. With expiryWakeUps false, or
// in mode advisory, there is no group, no role and no setting.
func TestIcekeeperStack_ExpiryWakeUps(t *testing.T) {
	f := mustSynth(t, activeContext())
	group := f.idOf(t, "AWS::Scheduler::ScheduleGroup", "ExpiryWakeUps")
	role := f.idOf(t, "AWS::IAM::Role", "ExpiryWakeUpsRole")
	var create, pass *stmt
	for _, st := range f.statements(t, "Planner") {
		st := st
		switch {
		case slices.Contains(st.Actions, "scheduler:CreateSchedule"):
			create = &st
		case slices.Contains(st.Actions, "iam:PassRole"):
			pass = &st
		}
	}
	if create == nil || len(create.Actions) != 1 || len(create.Resources) != 1 || create.Resources[0] != "arn:aws:scheduler:eu-west-1:123456789012:schedule/${"+group+"}/*" {
		t.Fatalf("the planner's CreateSchedule statement %+v, want the stack's group only", create)
	}
	if pass == nil || len(pass.Resources) != 1 || pass.Resources[0] != "${"+role+".Arn}" || !strings.Contains(flat(pass.Condition), "scheduler.amazonaws.com") {
		t.Fatalf("the planner's PassRole statement %+v, want the wake-ups' role, passed to the scheduler only", pass)
	}
	for _, fn := range []string{"Rewriter", "Committer"} {
		for a := range f.actions(t, fn) {
			if strings.HasPrefix(a, "scheduler:") || a == "iam:PassRole" {
				t.Errorf("%s may %s", fn, a)
			}
		}
	}
	trust := flat(props(f.resources[role])["AssumeRolePolicyDocument"])
	if !strings.Contains(trust, "scheduler.amazonaws.com") || !strings.Contains(trust, "aws:SourceAccount") {
		t.Errorf("the wake-ups' role trusts %s, want EventBridge Scheduler for this account", trust)
	}
	var roleActions []string
	for _, p := range f.ofType("AWS::IAM::Policy") {
		if slices.Contains(strs(props(p)["Roles"]), "${"+role+"}") {
			for _, st := range props(p)["PolicyDocument"].(map[string]any)["Statement"].([]any) {
				m := st.(map[string]any)
				roleActions = append(roleActions, strs(m["Action"])...)
				if r := strs(m["Resource"]); len(r) != 1 || r[0] != "arn:aws:events:eu-west-1:123456789012:event-bus/default" {
					t.Errorf("the wake-ups' role reaches %v, want the bus only", r)
				}
			}
		}
	}
	if !slices.Equal(roleActions, []string{"events:PutEvents"}) {
		t.Errorf("the wake-ups' role may %v, want events:PutEvents only", roleActions)
	}
	for name, mutate := range map[string]func(map[string]any){
		"expiryWakeUps false": func(c map[string]any) { c[CtxExpiryWakeUps] = false },
		"advisory":            func(c map[string]any) { c[CtxMode] = "advisory" },
	} {
		ctx := activeContext()
		mutate(ctx)
		g := mustSynth(t, ctx)
		if n := len(g.ofType("AWS::Scheduler::ScheduleGroup")); n != 0 {
			t.Errorf("%s: %d schedule groups", name, n)
		}
		if g.actions(t, "Planner")["scheduler:CreateSchedule"] {
			t.Errorf("%s: the planner may create schedules", name)
		}
		_, p := g.function(t, "Planner")
		if _, ok := p["Environment"].(map[string]any)["Variables"].(map[string]any)[envvars.WakeUpGroup]; ok {
			t.Errorf("%s: the planner is told of a schedule group", name)
		}
	}
}

func TestIcekeeperStack_TableWritesAreScopedPerFunction(t *testing.T) {
	f := mustSynth(t, activeContext())
	ns := partition + ":s3:::lake/warehouse/analytics.db/*/"
	tbl := partition + ":s3:::lake/warehouse/sales.db/orders/"
	byAction := func(name, action string) []string {
		var out []string
		for _, s := range f.statements(t, name) {
			if contains(s.Actions, action) && s.Effect == "Allow" {
				for _, r := range s.Resources {
					if strings.Contains(r, ":s3:::lake/") {
						out = append(out, r)
					}
				}
			}
		}
		return out
	}
	// Allow statements only: the Deny on metadata files is
	// TestIcekeeperStack_NoFunctionMayDeleteATableMetadataFile's.
	cases := []struct {
		name, action string
		want         []string
	}{
		{"Planner", "s3:GetObject", []string{ns + "*", tbl + "*"}},
		{"Planner", "s3:PutObject", nil},
		{"Planner", "s3:DeleteObject", nil},
		{"Rewriter", "s3:GetObject", []string{ns + "*", tbl + "*"}},
		{"Rewriter", "s3:PutObject", []string{ns + "data/*", tbl + "data/*"}},
		{"Rewriter", "s3:DeleteObject", []string{ns + "data/*", tbl + "data/*", ns + "metadata/*", tbl + "metadata/*"}},
		// The committer writes metadata, and the delete files that rebase
		// deletes committed during a compaction (shared/commit/rebase.go).
		{"Committer", "s3:PutObject", []string{ns + "metadata/*", tbl + "metadata/*", ns + "data/*", tbl + "data/*"}},
		{"Committer", "s3:DeleteObject", []string{ns + "data/*", tbl + "data/*", ns + "metadata/*", tbl + "metadata/*"}},
	}
	for _, c := range cases {
		if got := byAction(c.name, c.action); !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s %s on table locations: %v, want %v", c.name, c.action, got, c.want)
		}
	}
	for _, s := range f.statements(t, "Rewriter") {
		if !contains(s.Actions, "s3:ListBucket") {
			continue
		}
		cond := flat(s.Condition)
		switch s.Sid {
		case "DeletionPartsList": // icekeeper's own bucket, a record's parts only
			if cond != `{"StringLike":{"s3:prefix":["jobs/*/deletions/","jobs/*/deletions/*"]}}` {
				t.Errorf("listing of deletion parts not scoped: %s", cond)
			}
		case "ListingMarkersList": // icekeeper's own bucket, a listing's markers only
			if cond != `{"StringLike":{"s3:prefix":["jobs/*/listing/","jobs/*/listing/*"]}}` {
				t.Errorf("listing of listing markers not scoped: %s", cond)
			}
		default:
			if !strings.Contains(cond, "warehouse/analytics.db/*") || !strings.Contains(cond, "warehouse/sales.db/orders/*") {
				t.Errorf("listing not scoped to the granted prefixes: %s", cond)
			}
		}
	}
}

func TestIcekeeperStack_ModeOffHasNoTableAccess(t *testing.T) {
	ctx := activeContext()
	ctx[CtxMode] = "off"
	f := mustSynth(t, ctx)
	for _, name := range functionIDs {
		if r := f.tableResources(t, name); len(r) > 0 {
			t.Errorf("mode off: %s may reach tables: %v", name, r)
		}
		for a := range f.actions(t, name) {
			if strings.HasPrefix(a, "glue:") {
				t.Errorf("mode off: %s has %s", name, a)
			}
		}
	}
	// The sweep, orphan and summary schedules and the commit rule.
	assert(t, "mode off rules", func() { f.tpl.ResourceCountIs(jsii.String("AWS::Events::Rule"), jsii.Number(4)) })
}

func TestIcekeeperStack_AdvisoryOnlyLetsThePlannerRead(t *testing.T) {
	ctx := activeContext()
	ctx[CtxMode] = "advisory"
	f := mustSynth(t, ctx)
	if len(f.tableResources(t, "Planner")) == 0 {
		t.Error("advisory: the planner cannot read tables")
	}
	for _, name := range []string{"Rewriter", "Committer"} {
		if r := f.tableResources(t, name); len(r) > 0 {
			t.Errorf("advisory: %s may reach tables: %v", name, r)
		}
	}
	for _, s := range f.statements(t, "Planner") {
		if contains(s.Actions, "s3:PutObject") {
			for _, r := range s.Resources {
				if strings.Contains(r, ":s3:::lake") {
					t.Errorf("advisory: planner may write %s", r)
				}
			}
		}
	}
}

func TestIcekeeperStack_ActiveWithoutGrantsFailsClearly(t *testing.T) {
	ctx := activeContext()
	delete(ctx, CtxGrants)
	_, err := synth(t, ctx)
	if err == nil || !strings.Contains(err.Error(), "mode=active needs a non-empty grant list") {
		t.Fatalf("err = %v, want the grant list refusal", err)
	}
	s := DefaultSettings()
	s.Mode = ModeActive
	if _, err := NewIcekeeperStack(awscdk.NewApp(nil), "Direct", &IcekeeperStackProps{Settings: s}); err == nil || !strings.Contains(err.Error(), CtxGrants) {
		t.Fatalf("NewIcekeeperStack err = %v, want it to name %s", err, CtxGrants)
	}
}

func TestSettings_RejectUnsafeOrIncompleteSettings(t *testing.T) {
	cases := map[string]struct {
		ctx  map[string]any
		want string
	}{
		"grant without location":  {map[string]any{CtxMode: "advisory", CtxGrants: "sales.orders"}, `grant "sales.orders" has no S3 location`},
		"credential property":     {map[string]any{CtxCatalogProperties: "s3.secret-access-key=x"}, "looks like a credential"},
		"managed env override":    {map[string]any{CtxEnvironment: `{"ICEKEEPER_MODE":"active"}`}, "ICEKEEPER_MODE is set by the stack"},
		"unknown env":             {map[string]any{CtxEnvironment: `{"ICEKEEPER_NOPE":"1"}`}, "ICEKEEPER_NOPE is not a variable"},
		"takeover too short":      {map[string]any{CtxCommitTakeover: "10m"}, "must exceed committerTimeout"},
		"timeout over 15m":        {map[string]any{CtxRewriterTimeout: "20m"}, "rewriterTimeout"},
		"bad mode":                {map[string]any{CtxMode: "on"}, `mode: "on"`},
		"bad grant":               {map[string]any{CtxGrants: "a..b"}, "malformed grant"},
		"reserved below max":      {map[string]any{CtxRewriterConcurrency: 10, CtxRewriterReserved: 4}, "the poller would be throttled"},
		"lease shorter than task": {map[string]any{CtxLeaseTTL: "18m"}, "a job would lose its table while a task or its retry still runs"},
		"lease within takeover":   {map[string]any{CtxLeaseTTL: "25m"}, "must find a crashed committer past its takeover window"},
		"max concurrency of 1":    {map[string]any{CtxRewriterConcurrency: 1}, "want 2 to 1000"},
		"ephemeral over 10 GB":    {map[string]any{CtxRewriterEphemeral: 20480}, "want 512 to 10240 MB"},
		"rewriter below 1 GB":     {map[string]any{CtxRewriterMemory: 512}, "rewriterMemoryMb: 512: want at least 1024 MB"},
		// AWS recommends maxReceiveCount >= 5 on a Lambda event source's
		// queue (https://docs.aws.amazon.com/lambda/latest/dg/sqs-retries.html).
		"fewer than 5 attempts":      {map[string]any{CtxMaxTaskAttempts: 3}, "maxTaskAttempts: 3: want 5 to 1000"},
		"lease shorter than a crash": {map[string]any{CtxLeaseTTL: "17m"}, "a crashed rewriter's task would come back after the job lost its table"},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := synth(t, c.ctx)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("err = %v, want %q", err, c.want)
			}
		})
	}
}

func TestSettings_ReadCommandLineStrings(t *testing.T) {
	f := mustSynth(t, map[string]any{
		CtxMode: "active", CtxGrants: "demo", CtxCatalogType: "rest", CtxCatalogURI: "http://rest:8181",
		CtxCatalogSigV4: "false", CtxTableLocations: `{"demo.*":"s3://wh/demo"}`,
		CtxRewriterMemory: "4096", CtxRewriterConcurrency: "3", CtxRewriterReserved: "5", CtxArchitecture: "x86_64",
	})
	_, rw := f.function(t, "Rewriter")
	if rw["MemorySize"] != 4096.0 || rw["ReservedConcurrentExecutions"] != 5.0 || flat(rw["Architectures"]) != `["x86_64"]` {
		t.Errorf("rewriter memory %v reserved %v arch %v", rw["MemorySize"], rw["ReservedConcurrentExecutions"], flat(rw["Architectures"]))
	}
	for a := range f.actions(t, "Committer") {
		if strings.HasPrefix(a, "glue:") {
			t.Errorf("a non-Glue REST catalog got %s", a)
		}
	}
	var reads []string
	for _, s := range f.statements(t, "Committer") {
		if contains(s.Actions, "s3:GetObject") {
			reads = append(reads, s.Resources...)
		}
	}
	if !contains(reads, partition+":s3:::wh/demo/*/*") {
		t.Errorf("explicit namespace location not used: %v", reads)
	}
	// Sweep, orphans, summary, commit, S3 metadata and the two query
	// signal rules (and the continuation).
	assert(t, "no Glue rule for a REST catalog", func() { f.tpl.ResourceCountIs(jsii.String("AWS::Events::Rule"), jsii.Number(8)) })
}

// matches is EventBridge's matching for the pattern features the stack
// uses: lists of exact strings, {"wildcard": ...} and nested objects.
// It runs without Java; eventrules_test.go matches every rule with
// event-ruler, the library EventBridge's matching is built on.
func matches(pattern, event any) bool {
	switch p := pattern.(type) {
	case map[string]any:
		e, ok := event.(map[string]any)
		if !ok {
			return false
		}
		for k, sub := range p {
			if !matches(sub, e[k]) {
				return false
			}
		}
		return true
	case []any:
		s, ok := event.(string)
		if !ok {
			return false
		}
		for _, alt := range p {
			switch a := alt.(type) {
			case string:
				if a == s {
					return true
				}
			case map[string]any:
				if w, ok := a["wildcard"].(string); ok {
					if wildcard(w, s) {
						return true
					}
				}
				if x, ok := a["suffix"].(string); ok && strings.HasSuffix(s, x) {
					return true
				}
			}
		}
	}
	return false
}

// wildcard matches s against p where * matches any run of characters,
// slashes included (EventBridge's wildcard).
func wildcard(p, s string) bool {
	parts := strings.Split(p, "*")
	if len(parts) == 1 {
		return p == s
	}
	if !strings.HasPrefix(s, parts[0]) {
		return false
	}
	s = s[len(parts[0]):]
	for _, part := range parts[1 : len(parts)-1] {
		j := strings.Index(s, part)
		if j < 0 {
			return false
		}
		s = s[j+len(part):]
	}
	return strings.HasSuffix(s, parts[len(parts)-1])
}

func TestIcekeeperStack_RulesMatchThePlannersSampleEvents(t *testing.T) {
	f := mustSynth(t, map[string]any{CtxMode: "active", CtxGrants: "demo.*", CtxCatalogWarehouse: "s3://lakehouse/warehouse"})
	rules := map[string]map[string]any{}
	for id, r := range f.ofType("AWS::Events::Rule") {
		p := props(r)
		targets := flat(p["Targets"])
		plannerID, _ := f.function(t, "Planner")
		if !strings.Contains(targets, plannerID) {
			t.Errorf("rule %s does not target the planner: %s", id, targets)
		}
		rules[id] = p
	}
	sample := func(name string) map[string]any {
		raw, err := os.ReadFile(filepath.Join("..", "events", name))
		if err != nil {
			t.Fatal(err)
		}
		var ev map[string]any
		if err := json.Unmarshal(raw, &ev); err != nil {
			t.Fatal(err)
		}
		return ev
	}
	for _, c := range []struct{ file, rule string }{
		{"glue-table-state-change.json", "GlueTableChanges"},
		{"glue-database-state-change.json", "GlueTableChanges"},
		{"s3-metadata-object-created.json", "TableMetadataWritten"},
		{"icekeeper-commit.json", "CommitEvents"},
		{"icekeeper-continue.json", "ContinueEvents"},
	} {
		ev := sample(c.file)
		matched := ""
		for id, p := range rules {
			if p["EventPattern"] != nil && matches(p["EventPattern"], ev) {
				matched += id + " "
			}
		}
		if !strings.HasPrefix(matched, c.rule) {
			t.Errorf("%s matched rules %q, want %s", c.file, matched, c.rule)
		}
	}
	sched := sample("scheduled.json")
	if sched["source"] != SourceSchedule || sched["detail-type"] != DetailTypeSchedule {
		t.Errorf("scheduled sample is %v/%v, not what an EventBridge schedule sends", sched["source"], sched["detail-type"])
	}
	for id, p := range rules {
		if strings.HasPrefix(id, "SweepSchedule") && p["ScheduleExpression"] != "rate(1 hour)" {
			t.Errorf("sweep schedule %v, want rate(1 hour)", p["ScheduleExpression"])
		}
	}
	// Compressed metadata files wake the planner too.
	for _, key := range []string{"warehouse/demo.db/events/metadata/00008-x.gz.metadata.json", "warehouse/demo.db/events/metadata/00008-x.metadata.json.gz"} {
		ev := map[string]any{"source": "aws.s3", "detail-type": "Object Created", "detail": map[string]any{"bucket": map[string]any{"name": "lakehouse"}, "object": map[string]any{"key": key}}}
		matched := false
		for _, p := range rules {
			matched = matched || p["EventPattern"] != nil && matches(p["EventPattern"], ev)
		}
		if !matched {
			t.Errorf("no rule matches %s", key)
		}
	}
	// A data file, another database, an ungranted location, a Glue
	// partition change and a dropped table do not wake the planner.
	for _, ev := range []map[string]any{
		{"source": "aws.s3", "detail-type": "Object Created", "detail": map[string]any{"bucket": map[string]any{"name": "lakehouse"}, "object": map[string]any{"key": "warehouse/demo.db/events/data/x.parquet"}}},
		{"source": "aws.s3", "detail-type": "Object Created", "detail": map[string]any{"bucket": map[string]any{"name": "lakehouse"}, "object": map[string]any{"key": "warehouse/other.db/t/metadata/1.metadata.json"}}},
		{"source": "aws.glue", "detail-type": "Glue Data Catalog Table State Change", "detail": map[string]any{"databaseName": "other", "tableName": "t", "typeOfChange": "UpdateTable"}},
		{"source": "aws.glue", "detail-type": "Glue Data Catalog Table State Change", "detail": map[string]any{"databaseName": "demo", "tableName": "events", "typeOfChange": "CreatePartition"}},
		{"source": "aws.glue", "detail-type": "Glue Data Catalog Database State Change", "detail": map[string]any{"databaseName": "demo", "changedTables": []any{"events"}, "typeOfChange": "DeleteTable"}},
	} {
		for id, p := range rules {
			if p["EventPattern"] != nil && matches(p["EventPattern"], ev) {
				t.Errorf("rule %s matches %v", id, ev)
			}
		}
	}
}

// emittedNames are the metric names that appear as string literals in the
// root module's shared/ code.
func emittedNames(t *testing.T) map[string]bool {
	t.Helper()
	out := map[string]bool{}
	err := filepath.Walk(filepath.Join("..", "shared"), func(path string, info os.FileInfo, err error) error {
		if err != nil || info.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return err
		}
		file, err := parser.ParseFile(token.NewFileSet(), path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(file, func(n ast.Node) bool {
			if lit, ok := n.(*ast.BasicLit); ok && lit.Kind == token.STRING {
				if v, err := strconv.Unquote(lit.Value); err == nil {
					out[v] = true
				}
			}
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestIcekeeperStack_Alarms(t *testing.T) {
	f := mustSynth(t, activeContext())
	alarms := f.ofType("AWS::CloudWatch::Alarm")
	find := func(prefix string) map[string]any {
		for id, r := range alarms {
			if strings.HasPrefix(id, prefix) {
				return props(r)
			}
		}
		t.Errorf("no alarm %s", prefix)
		return map[string]any{}
	}
	for _, dlq := range []string{"TasksDLQ", "CommitsDLQ"} {
		p := find(dlq + "NotEmpty")
		if p["MetricName"] != "ApproximateNumberOfMessagesVisible" || p["Threshold"] != 0.0 || p["ComparisonOperator"] != "GreaterThanThreshold" || !strings.Contains(flat(p["Dimensions"]), dlq) {
			t.Errorf("%s alarm: %s", dlq, flat(p))
		}
	}
	emitted := emittedNames(t)
	for alarm, metric := range map[string]string{
		"OptInWithoutGrant": MetricOptInWithoutGrant, "InvalidProperties": MetricInvalidProperties,
		"MaintenanceRefused": MetricMaintenanceRefused, "JobsFailed": MetricJobsFailed, "JobsAborted": MetricJobsAborted,
		"CommitConflictRate": MetricCommitConflicts, "CommitRetryRate": MetricCommitRetries,
		"ConflictAbortsPerTable": MetricConflictAborts,
	} {
		p := find(alarm)
		want := "SELECT SUM(" + metric + ") FROM Icekeeper"
		if !strings.Contains(flat(p["Metrics"]), want) {
			t.Errorf("%s alarm metrics %s, want %q", alarm, flat(p["Metrics"]), want)
		}
		if !emitted[metric] {
			t.Errorf("alarm %s watches %s, which no code under shared/ emits", alarm, metric)
		}
	}
	if p := find("ConflictAbortsPerTable"); !strings.Contains(flat(p["Metrics"]), "GROUP BY") || !strings.Contains(flat(p["Metrics"]), "Table") {
		t.Errorf("ConflictAbortsPerTable alarm is not per table: %s", flat(p["Metrics"]))
	}
	if p := find("OptInWithoutGrant"); p["Threshold"] != 0.0 || p["ComparisonOperator"] != "GreaterThanThreshold" {
		t.Errorf("OptInWithoutGrant alarm is not > 0: %s", flat(p))
	}
	for _, name := range functionIDs {
		id, _ := f.function(t, name)
		for _, kind := range []string{"Errors", "Throttles", "DurationNearTimeout"} {
			p := find(name + kind)
			if !strings.Contains(flat(p["Dimensions"]), `{"Ref":"`+id+`"}`) {
				t.Errorf("%s%s alarm is not on the %s function: %s", name, kind, name, flat(p["Dimensions"]))
			}
			if len(strs(p["AlarmActions"])) != 1 {
				t.Errorf("%s%s alarm has no action", name, kind)
			}
		}
	}
	_, rw := f.function(t, "Rewriter")
	if p := find("RewriterDurationNearTimeout"); p["ExtendedStatistic"] != "p99" || p["Threshold"] != 0.8*rw["Timeout"].(float64)*1000 {
		t.Errorf("rewriter duration alarm %s, want p99 > 80%% of %vs", flat(p), rw["Timeout"])
	}
}

func TestIcekeeperStack_AlarmAndDashboardMetricsAreTheEmittedNames(t *testing.T) {
	emitted := emittedNames(t)
	for _, m := range EmittedMetrics() {
		if !emitted[m] {
			t.Errorf("metric %s is not a string in shared/: the code does not emit it under that name", m)
		}
	}
	if !emitted[MetricNamespace] {
		t.Errorf("namespace %s not found in shared/", MetricNamespace)
	}
	if !emitted["Table"] {
		t.Error(`dimension "Table" (used by the per-table SEARCH) not found in shared/`)
	}
}

// TestIcekeeperStack_EveryWidgetAndAlarmFindsAnEmittedMetric checks the
// dashboard and the alarms against the metrics the code really emits, as
// recorded from the end-to-end tests' EMF lines in
// testdata/emitted-metrics.json (tests/emitted_metrics_test.go keeps that
// file equal to what a full run emits). A Metrics Insights SUM over the
// namespace must name an emitted metric; a SEARCH must name one emitted
// with exactly its dimension set (and Function value), since a SEARCH
// schema matches only that set.
func TestIcekeeperStack_EveryWidgetAndAlarmFindsAnEmittedMetric(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "emitted-metrics.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sigs []struct {
		Name       string   `json:"name"`
		Dimensions []string `json:"dimensions"`
		Function   string   `json:"function"`
	}
	if err := json.Unmarshal(raw, &sigs); err != nil {
		t.Fatal(err)
	}
	names := map[string]bool{}
	exact := map[string]bool{}
	for _, sg := range sigs {
		names[sg.Name] = true
		exact[sg.Name+"{"+strings.Join(sg.Dimensions, ",")+"}"+sg.Function] = true
	}
	f := mustSynth(t, activeContext())
	var texts []string
	for _, r := range f.ofType("AWS::CloudWatch::Dashboard") {
		texts = append(texts, flat(props(r)["DashboardBody"]))
	}
	for _, r := range f.ofType("AWS::CloudWatch::Alarm") {
		texts = append(texts, flat(props(r)))
	}
	all := strings.ReplaceAll(strings.Join(texts, "\n"), `\"`, `"`)
	sums := regexp.MustCompile(`SELECT SUM\((\w+)\) FROM `+MetricNamespace).FindAllStringSubmatch(all, -1)
	searches := regexp.MustCompile(`SEARCH\('\{`+MetricNamespace+`,([\w,]+)\} Function="(\w+)" MetricName="(\w+)"'`).FindAllStringSubmatch(all, -1)
	if len(sums) == 0 || len(searches) == 0 {
		t.Fatalf("found %d SUM and %d SEARCH references; the patterns no longer match the stack", len(sums), len(searches))
	}
	for _, m := range sums {
		if !names[m[1]] {
			t.Errorf("SELECT SUM(%s): no end-to-end test emitted %s", m[1], m[1])
		}
	}
	for _, m := range searches {
		dims := strings.Split(m[1], ",")
		sort.Strings(dims)
		if key := m[3] + "{" + strings.Join(dims, ",") + "}" + m[2]; !exact[key] {
			t.Errorf("SEARCH %s with dimensions {%s} and Function=%s matches nothing the code emits", m[3], m[1], m[2])
		}
	}
	// A Metrics Insights query grouped by table needs the metric emitted
	// with the dimension Table.
	perTable := map[string]bool{}
	for _, sg := range sigs {
		if slices.Contains(sg.Dimensions, "Table") {
			perTable[sg.Name] = true
		}
	}
	for _, m := range regexp.MustCompile(`SELECT \w+\((\w+)\) FROM `+MetricNamespace+` GROUP BY "Table"`).FindAllStringSubmatch(all, -1) {
		if !perTable[m[1]] {
			t.Errorf("%s: %s is not emitted with the dimension Table", m[0], m[1])
		}
	}
}

// perTableReads are the metrics the alarms and the dashboard read per
// table: a SEARCH over a dimension set with Table, or a Metrics Insights
// query grouped by Table.
func perTableReads(t *testing.T, f *fixture) map[string]bool {
	t.Helper()
	var texts []string
	for _, r := range f.ofType("AWS::CloudWatch::Dashboard") {
		texts = append(texts, flat(props(r)["DashboardBody"]))
	}
	for _, r := range f.ofType("AWS::CloudWatch::Alarm") {
		texts = append(texts, flat(props(r)))
	}
	all := strings.ReplaceAll(strings.Join(texts, "\n"), `\"`, `"`)
	out := map[string]bool{}
	for _, m := range regexp.MustCompile(`SEARCH\('\{`+MetricNamespace+`,([\w,]+)\} Function="\w+" MetricName="(\w+)"'`).FindAllStringSubmatch(all, -1) {
		if slices.Contains(strings.Split(m[1], ","), "Table") {
			out[m[2]] = true
		}
	}
	for _, m := range regexp.MustCompile(`SELECT \w+\((\w+)\) FROM `+MetricNamespace+` GROUP BY "Table"`).FindAllStringSubmatch(all, -1) {
		out[m[1]] = true
	}
	return out
}

// TestIcekeeperStack_EveryPerTableMetricIsReadPerTable: a metric emitted
// with the dimension Table is one custom metric per table, which
// CloudWatch bills each month
// (https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format.html);
// so every per-table signature of the contract must be one an alarm or the
// dashboard reads per table.
func TestIcekeeperStack_EveryPerTableMetricIsReadPerTable(t *testing.T) {
	reads := perTableReads(t, mustSynth(t, activeContext()))
	if len(reads) == 0 {
		t.Fatal("no per-table read found; the patterns no longer match the stack")
	}
	n := 0
	for _, sg := range contractSignatures(t) {
		if !slices.Contains(sg.Dimensions, "Table") {
			continue
		}
		n++
		if !reads[sg.Name] {
			t.Errorf("%s is emitted per table (dimensions %v) but no alarm or dashboard widget reads it per table: drop the Table dimension (shared/metrics.Aggregated or LogOnly)", sg.Name, sg.Dimensions)
		}
	}
	if n == 0 {
		t.Error("the contract has no per-table metric, but the ConflictAbortsPerTable alarm groups by table")
	}
}

// TestIcekeeperStack_DashboardLogTablesReadEmittedValues: the dashboard's
// Logs Insights tables read fields the planner's records carry (names that
// are strings in shared/), from the planner's log group.
func TestIcekeeperStack_DashboardLogTablesReadEmittedValues(t *testing.T) {
	emitted := emittedNames(t)
	for _, q := range [][]string{HealthByTableQuery, LedgerByTableQuery} {
		text := strings.Join(q, " | ")
		fields := regexp.MustCompile(`(?:max|ispresent)\((\w+)\)`).FindAllStringSubmatch(text, -1)
		if len(fields) < 3 {
			t.Fatalf("query %q reads %d fields; the pattern no longer matches", text, len(fields))
		}
		for _, m := range fields {
			if !emitted[m[1]] {
				t.Errorf("query %q reads %s, which no code under shared/ emits", text, m[1])
			}
		}
		if !strings.Contains(text, "by Table") {
			t.Errorf("query %q is not per table", text)
		}
	}
	f := mustSynth(t, activeContext())
	planner, _ := f.function(t, "Planner")
	var body string
	for _, r := range f.ofType("AWS::CloudWatch::Dashboard") {
		body = flat(props(r)["DashboardBody"])
	}
	logs := ""
	for id, r := range f.ofType("AWS::Lambda::Function") {
		if id == planner {
			logs = flat(props(r)["LoggingConfig"])
		}
	}
	var group string
	if m := regexp.MustCompile(`"Ref":"(PlannerLogs\w+)"`).FindStringSubmatch(logs); m != nil {
		group = m[1]
	}
	if group == "" || strings.Count(body, "SOURCE '${"+group+"}'") != 2 {
		t.Errorf("the dashboard's two log tables do not read the planner's log group %q (logging config %s)", group, logs)
	}
	for _, want := range []string{"stats max(HealthScore) as score", "stats max(MaintenanceCostWeekUSD) as cost_usd"} {
		if !strings.Contains(body, want) {
			t.Errorf("dashboard lacks the log query %q", want)
		}
	}
}

// contractSignatures reads testdata/emitted-metrics.json.
func contractSignatures(t *testing.T) []contractSignature {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join("testdata", "emitted-metrics.json"))
	if err != nil {
		t.Fatal(err)
	}
	var sigs []contractSignature
	if err := json.Unmarshal(raw, &sigs); err != nil {
		t.Fatal(err)
	}
	return sigs
}

// contractSignature is one entry of the metric contract.
type contractSignature struct {
	Name       string   `json:"name"`
	Dimensions []string `json:"dimensions"`
	Function   string   `json:"function"`
}

func TestIcekeeperStack_Dashboard(t *testing.T) {
	f := mustSynth(t, activeContext())
	var body string
	for _, r := range f.ofType("AWS::CloudWatch::Dashboard") {
		body = flat(props(r)["DashboardBody"])
	}
	for _, want := range []string{
		`SEARCH('{Icekeeper,Function} Function=\"planner\" MetricName=\"HealthScore\"'`, `MetricName=\"SmallFiles\"`, `MetricName=\"DeleteFiles\"`,
		`SEARCH('{Icekeeper,Function,Table} Function=\"committer\" MetricName=\"ConflictAborts\"'`,
		"ApproximateNumberOfMessagesVisible", "ApproximateAgeOfOldestMessage",
		"SELECT SUM(JobsPlanned) FROM Icekeeper", "SELECT SUM(JobsCommitted) FROM Icekeeper",
		"SELECT SUM(BytesIn) FROM Icekeeper", "SELECT SUM(BytesOut) FROM Icekeeper", "SELECT SUM(RowsRewritten) FROM Icekeeper",
		"max(MaintenanceCostWeekUSD) as cost_usd", "max(QueryCostSavedWeekUSD) as saved_usd", "max(MaintenanceBackedOff) as backed_off by Table",
	} {
		if !strings.Contains(body, want) {
			t.Errorf("dashboard lacks %s", want)
		}
	}
	ctx := activeContext()
	ctx[CtxAlarms] = false
	off := mustSynth(t, ctx)
	assert(t, "alarms=false", func() { off.tpl.ResourceCountIs(jsii.String("AWS::CloudWatch::Alarm"), jsii.Number(0)) })
}

func TestGrants_ParseLikeOptIn(t *testing.T) {
	g, err := ParseGrants(" sales.orders, analytics , lake.raw.* ,,")
	if err != nil {
		t.Fatal(err)
	}
	if got := g.String(); got != "analytics.*,lake.raw.*,sales.orders" {
		t.Errorf("String() = %s", got)
	}
	if got := fmt.Sprint(g.Databases()); got != "[analytics lake.raw sales]" {
		t.Errorf("Databases() = %s", got)
	}
	for _, bad := range []string{"a..b", "*", ".x", "a.*.b"} {
		if _, err := ParseGrants(bad); err == nil {
			t.Errorf("ParseGrants(%q) accepted", bad)
		}
	}
}

// cdkFeatureFlags reads cdk.json's context: the CDK's feature flags.
func cdkFeatureFlags(t *testing.T) map[string]any {
	t.Helper()
	raw, err := os.ReadFile("cdk.json")
	if err != nil {
		t.Fatal(err)
	}
	var doc struct {
		Context map[string]any `json:"context"`
	}
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatal(err)
	}
	return doc.Context
}

// Test-only context keys: the account and region to synthesize in.
const (
	ctxTestAccount = "test:account"
	ctxTestRegion  = "test:region"
	// ctxTestAgnostic (true): an environment-agnostic stack.
	ctxTestAgnostic = "test:agnostic"
)

// policiesFiles are what the root module's end-to-end tests evaluate every
// AWS call they make against (tests/iam_test.go): each function's policy
// statements, synthesized for the emulator's account and region, with
// icekeeper's own resources as placeholders (${Bucket}, ${Leases},
// ${Tasks}, ...: the ARN of that resource) that the tests fill with their
// own. policies.json is for a Glue catalog with the tests' grant,
// policies-s3tables.json for an S3 table bucket (the tests' S3 Tables
// stand-in) with the same grant.
var policiesFiles = map[string]func() map[string]any{
	filepath.Join("testdata", "policies.json"): func() map[string]any {
		ctx := activeContext()
		ctx[CtxGrants] = "demo.*"
		return ctx
	},
	filepath.Join("testdata", "policies-s3tables.json"): func() map[string]any {
		ctx := s3tablesContext()
		ctx[CtxGrants] = "demo.*"
		ctx[CtxCatalogURI] = "https://s3tables.us-east-1.amazonaws.com/iceberg"
		ctx[CtxCatalogWarehouse] = "arn:aws:s3tables:us-east-1:000000000000:bucket/lake"
		return ctx
	},
}

// TestIcekeeperStack_PoliciesTheEndToEndTestsCheck writes (with
// ICEKEEPER_UPDATE_POLICIES=1) or checks each of policiesFiles.
func TestIcekeeperStack_PoliciesTheEndToEndTestsCheck(t *testing.T) {
	for file, context := range policiesFiles {
		t.Run(filepath.Base(file), func(t *testing.T) { checkPolicies(t, file, context()) })
	}
}

func checkPolicies(t *testing.T, policiesFile string, ctx map[string]any) {
	ctx[CtxPrefix] = "icekeeper" // the tests' ICEKEEPER_PREFIX
	ctx[ctxTestAccount], ctx[ctxTestRegion] = "000000000000", "us-east-1"
	f := mustSynth(t, ctx)
	placeholder := regexp.MustCompile(`\$\{([A-Za-z]+?)[0-9A-F]{8}\.Arn\}`)
	type exported struct {
		Sid       string   `json:"sid"`
		Effect    string   `json:"effect"`
		Actions   []string `json:"actions"`
		Resources []string `json:"resources"`
		Condition any      `json:"condition,omitempty"`
	}
	out := map[string][]exported{}
	for _, fn := range functionIDs {
		for _, st := range f.statements(t, fn) {
			var res []string
			for _, r := range st.Resources {
				res = append(res, placeholder.ReplaceAllString(r, "$${$1}"))
			}
			out[fn] = append(out[fn], exported{Sid: st.Sid, Effect: st.Effect, Actions: st.Actions, Resources: res, Condition: st.Condition})
		}
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	b = append(b, '\n')
	if os.Getenv("ICEKEEPER_UPDATE_POLICIES") != "" {
		if err := os.WriteFile(policiesFile, b, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	old, err := os.ReadFile(policiesFile)
	if err != nil || !bytes.Equal(old, b) {
		t.Fatalf("%s is out of date with the stack (run ICEKEEPER_UPDATE_POLICIES=1 go test ./infra, then the root tests): %v", policiesFile, err)
	}
}

// TestIcekeeperStack_SchedulesSendThePlannersScheduledEvents: the orphan
// schedule's and the weekly summary's target inputs, with EventBridge's
// placeholders filled, are the samples events/orphan-schedule.json and
// events/summary-schedule.json (source, detail-type and detail), which
// the planner decodes as an orphan sweep and a summary (events tests);
// each schedule is the setting's, each rule's one target the planner.
func TestIcekeeperStack_SchedulesSendThePlannersScheduledEvents(t *testing.T) {
	f := mustSynth(t, activeContext())
	planner, _ := f.function(t, "Planner")
	for _, tc := range []struct{ rule, sample, schedule string }{
		{"OrphanSchedule", "orphan-schedule.json", "rate(7 days)"},
		{"SummarySchedule", "summary-schedule.json", "cron(0 6 ? * MON *)"},
	} {
		var sample map[string]any
		if err := json.Unmarshal(mustReadFile(t, filepath.Join("..", "events", tc.sample)), &sample); err != nil {
			t.Fatal(err)
		}
		found := 0
		for id, r := range f.ofType("AWS::Events::Rule") {
			if !strings.HasPrefix(id, tc.rule) {
				continue
			}
			found++
			p := props(r)
			if p["ScheduleExpression"] != tc.schedule {
				t.Errorf("%s: schedule %v, want %s", tc.rule, p["ScheduleExpression"], tc.schedule)
			}
			targets := p["Targets"].([]any)
			if len(targets) != 1 || flat(targets[0].(map[string]any)["Arn"]) != "${"+planner+".Arn}" {
				t.Errorf("%s: targets %v, want the planner %s alone", tc.rule, targets, planner)
			}
			input, _ := targets[0].(map[string]any)["InputTransformer"].(map[string]any)
			tmpl, _ := input["InputTemplate"].(string)
			raw := strings.NewReplacer("<id>", `"e-1"`, "<time>", `"2026-11-30T03:00:00Z"`).Replace(tmpl)
			var got map[string]any
			if err := json.Unmarshal([]byte(raw), &got); err != nil {
				t.Fatalf("%s: target input %s: %v", tc.rule, raw, err)
			}
			for _, k := range []string{"source", "detail-type", "detail"} {
				if !reflect.DeepEqual(got[k], sample[k]) {
					t.Errorf("%s: %s: the rule sends %v, the planner's sample has %v", tc.rule, k, got[k], sample[k])
				}
			}
		}
		if found != 1 {
			t.Fatalf("%d %s rules, want 1", found, tc.rule)
		}
	}
}

// TestIcekeeperStack_ThePlannerWritesTheSummaryAndReadsOnlyItsInputs:
// the planner may put the summary's event on the bus and write objects
// under summary/ (and its plans and reports, and the location index, as
// before), nowhere else in the bucket; it reads the maintenance log, the
// health reports and the location index, and lists only under the first
// two's prefixes.
func TestIcekeeperStack_ThePlannerWritesTheSummaryAndReadsOnlyItsInputs(t *testing.T) {
	f := mustSynth(t, activeContext())
	var puts, gets []string
	events, listed := false, false
	for _, s := range f.statements(t, "Planner") {
		if s.Effect != "Allow" {
			continue
		}
		for _, a := range s.Actions {
			switch a {
			case "s3:PutObject":
				puts = append(puts, s.Resources...)
			case "s3:GetObject":
				gets = append(gets, s.Resources...)
			case "events:PutEvents":
				for _, r := range s.Resources {
					events = events || strings.HasSuffix(r, ":event-bus/default")
				}
			case "s3:ListBucket":
				if s.Sid == "SummaryInputsList" {
					listed = reflect.DeepEqual(s.Condition, map[string]any{"StringLike": map[string]any{"s3:prefix": []any{"log/*", "health/*"}}})
				}
			}
		}
	}
	sort.Strings(puts)
	sort.Strings(gets)
	// Keys in icekeeper's bucket (${Bucket….Arn}/key), the key alone.
	inBucket := func(rs []string) []string {
		var out []string
		for _, r := range rs {
			if strings.HasPrefix(r, "${Bucket") {
				out = append(out, r[strings.Index(r, "}")+1:])
			}
		}
		return out
	}
	bucketPuts, bucketGets := inBucket(puts), inBucket(gets)
	if want := []string{"/health/*", "/jobs/*", "/locations/*", "/summary/*", "/sweeps/*"}; !slices.Equal(bucketPuts, want) {
		t.Errorf("the planner writes %v in the bucket, want %v", bucketPuts, want)
	}
	if want := []string{"/health/*", "/locations/*", "/log/*", "/sweeps/*"}; !slices.Equal(bucketGets, want) {
		t.Errorf("the planner reads %v in the bucket, want %v", bucketGets, want)
	}
	if !events || !listed {
		t.Errorf("PutEvents on the default bus %v; listing limited to log/ and health/ %v", events, listed)
	}
}

func mustReadFile(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// TestIcekeeperStack_NoFunctionMayDeleteATableMetadataFile: the rewriter
// and the committer, which may delete under metadata/, are denied deleting
// any table metadata file (plain or compressed) and version hint anywhere
// in the warehouse buckets; the planner deletes nothing anyway.
func TestIcekeeperStack_NoFunctionMayDeleteATableMetadataFile(t *testing.T) {
	f := mustSynth(t, activeContext())
	var want []string
	for _, m := range []string{"*.metadata.json", "*.metadata.json.gz", "*.metadata.json.zstd", "*version-hint.text"} {
		want = append(want, partition+":s3:::lake/"+m)
	}
	sort.Strings(want)
	for _, fn := range []string{"Rewriter", "Committer"} {
		var got []string
		for _, s := range f.statements(t, fn) {
			if s.Effect == "Deny" && reflect.DeepEqual(s.Actions, []string{"s3:DeleteObject"}) && s.Condition == nil {
				got = append(got, s.Resources...)
			}
		}
		sort.Strings(got)
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s denied deletes %v, want %v", fn, got, want)
		}
	}
}

// TestIcekeeperStack_TheCommitterMayProbeOnlyItsJobRecords: besides the
// folders it lists, the committer may list its own bucket with exactly a
// job's deletions.json or listing.json as the prefix (how package blob
// tells such a record missing from a read denied: S3 answers a missing
// key 403 without s3:ListBucket), nothing wider.
func TestIcekeeperStack_TheCommitterMayProbeOnlyItsJobRecords(t *testing.T) {
	f := mustSynth(t, activeContext())
	found := false
	for _, s := range f.statements(t, "Committer") {
		if s.Sid != "JobRecordsProbe" {
			continue
		}
		found = true
		if !reflect.DeepEqual(s.Actions, []string{"s3:ListBucket"}) || s.Effect != "Allow" {
			t.Errorf("JobRecordsProbe: %s %v", s.Effect, s.Actions)
		}
		if cond := flat(s.Condition); cond != `{"StringLike":{"s3:prefix":["jobs/*/deletions.json","jobs/*/listing.json"]}}` {
			t.Errorf("JobRecordsProbe not scoped to the two records: %s", cond)
		}
		if len(s.Resources) != 1 || strings.Contains(s.Resources[0], "lake") {
			t.Errorf("JobRecordsProbe on %v, want icekeeper's bucket", s.Resources)
		}
	}
	if !found {
		t.Fatal("the committer has no JobRecordsProbe statement")
	}
}

// TestIcekeeperStack_AthenaSignalsComeOnlyFromTheConfiguredWorkGroups:
// athenaWorkGroups scopes both the planner's GetQueryExecution and the
// Athena rule's workgroupName; an invalid name is refused.
func TestIcekeeperStack_AthenaSignalsComeOnlyFromTheConfiguredWorkGroups(t *testing.T) {
	ctx := activeContext()
	ctx[CtxAthenaWorkGroups] = "analysts,etl.v2"
	f := mustSynth(t, ctx)
	var got []string
	for _, s := range f.statements(t, "Planner") {
		if contains(s.Actions, "athena:GetQueryExecution") {
			got = append(got, s.Resources...)
		}
	}
	want := []string{partition + ":athena:eu-west-1:123456789012:workgroup/analysts", partition + ":athena:eu-west-1:123456789012:workgroup/etl.v2"}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("GetQueryExecution on %v, want %v", got, want)
	}
	rule := false
	for _, r := range f.ofType("AWS::Events::Rule") {
		p := flat(props(r)["EventPattern"])
		if strings.Contains(p, "aws.athena") {
			rule = true
			if !strings.Contains(p, `"workgroupName":["analysts","etl.v2"]`) {
				t.Errorf("Athena rule pattern %s does not filter on the workgroups", p)
			}
		}
	}
	if !rule {
		t.Error("no Athena rule")
	}
	bad := activeContext()
	bad[CtxAthenaWorkGroups] = "a/b"
	if _, err := settingsFrom(t, bad); err == nil || !strings.Contains(err.Error(), CtxAthenaWorkGroups) {
		t.Errorf("workgroup a/b: %v, want a refusal naming %s", err, CtxAthenaWorkGroups)
	}
}

// TestSettings_TheGlueRESTEndpointsWarehouseIsTheCatalogID: with Glue's
// Iceberg REST endpoint, an s3:// catalogWarehouse is refused naming
// warehouseLocation (the endpoint's warehouse is the account id); the
// account id with warehouseLocation is accepted.
func TestSettings_TheGlueRESTEndpointsWarehouseIsTheCatalogID(t *testing.T) {
	glueREST := func(warehouse string) map[string]any {
		ctx := activeContext()
		ctx[CtxCatalogType], ctx[CtxCatalogURI] = "rest", "https://glue.eu-west-1.amazonaws.com/iceberg"
		ctx[CtxCatalogSigV4], ctx[CtxCatalogSigningName] = "true", "glue"
		ctx[CtxCatalogWarehouse] = warehouse
		return ctx
	}
	_, err := settingsFrom(t, glueREST("s3://lake/warehouse"))
	if err == nil || !strings.Contains(err.Error(), CtxWarehouseLocation) || !strings.Contains(err.Error(), "catalog id") {
		t.Errorf("an s3:// warehouse on the Glue REST endpoint: %v, want a refusal naming %s", err, CtxWarehouseLocation)
	}
	ok := glueREST("123456789012")
	ok[CtxWarehouseLocation] = "s3://lake/warehouse"
	dir := t.TempDir()
	writeBootstraps(t, dir)
	ok[CtxAssetDir] = dir
	if _, err := settingsFrom(t, ok); err != nil {
		t.Errorf("the account id and a warehouseLocation: %v", err)
	}
}
