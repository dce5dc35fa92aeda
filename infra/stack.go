package main

import (
	"fmt"
	"strings"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// IcekeeperStackProps are the stack's settings plus the usual stack
// properties (name, environment).
type IcekeeperStackProps struct {
	awscdk.StackProps
	Settings Settings
}

// IcekeeperStack is one icekeeper deployment: its storage, queues,
// functions, the rules that wake the planner, alarms and a dashboard.
type IcekeeperStack struct {
	awscdk.Stack
	Storage   Storage
	Queues    Queues
	Functions Lambdas
	Rules     Rules
	Alarms    Alarms
	Dashboard awscloudwatch.Dashboard
	// WakeUps are the planner's expiry wake-ups' group and role (nil when
	// off).
	WakeUps *WakeUps
}

// NewIcekeeperStack validates props.Settings and builds the stack. It
// returns an error, creating nothing, when a setting is invalid: for
// example mode active without grants (the functions would refuse to start),
// a grant without an S3 location, or a missing function bootstrap.
//
//	settings, err := SettingsFromContext(app.Node())
//	stack, err := NewIcekeeperStack(app, "Icekeeper", &IcekeeperStackProps{Settings: settings})
func NewIcekeeperStack(scope constructs.Construct, id string, props *IcekeeperStackProps) (*IcekeeperStack, error) {
	if props == nil {
		props = &IcekeeperStackProps{Settings: DefaultSettings()}
	}
	s := props.Settings
	if err := s.Validate(); err != nil {
		return nil, err
	}
	sprops := props.StackProps
	if sprops.Description == nil {
		sprops.Description = jsii.String("icekeeper: autonomous maintenance for Apache Iceberg tables (mode " + s.Mode + ")")
	}
	stack := awscdk.NewStack(scope, jsii.String(id), &sprops)
	// What was deployed, readable from the template in the console.
	stack.TemplateOptions().SetMetadata(&map[string]any{"Icekeeper::Settings": s.Summary()})
	out := &IcekeeperStack{Stack: stack}
	out.Storage = newStorage(stack, s)
	out.Queues = newQueues(stack, s)
	bus := awsevents.EventBus_FromEventBusName(stack, jsii.String("Bus"), jsii.String(busName(s.EventBus)))
	out.WakeUps = newWakeUps(stack, stack, s)
	fns, err := newFunctions(stack, s, out.Storage, out.Queues, s.EventBus, out.WakeUps)
	if err != nil {
		return nil, err
	}
	out.Functions = fns
	iamScope, widened, err := s.IAMScope()
	if err != nil {
		return nil, err
	}
	if len(widened) > 0 {
		awscdk.Annotations_Of(stack).AddWarningV2(jsii.String("icekeeper:iam-scope"), jsii.String(fmt.Sprintf(
			"the grant list names too many tables for IAM's policy quotas: the IAM scope of %d databases (%s) is their whole database; the functions still maintain only the granted tables (grant whole namespaces to avoid this)",
			len(widened), strings.Join(widened, ", "))), nil)
	}
	if err := grantAccess(stack, iamScope, out.Storage, out.Queues, out.Functions, s.EventBus); err != nil {
		return nil, err
	}
	out.WakeUps.grant(stack, out.Functions)
	// The S3 rule's key patterns follow the IAM scope: the planner
	// ignores a location that is not a granted table.
	rules, err := newRules(stack, iamScope, out.Functions, bus)
	if err != nil {
		return nil, err
	}
	out.Rules = rules
	if locs, err := iamScope.Locations(); err == nil && S3RulesWidened(locs) {
		awscdk.Annotations_Of(stack).AddWarningV2(jsii.String("icekeeper:event-scope"), jsii.String(fmt.Sprintf(
			"the granted locations' metadata keys do not fit %d EventBridge rules of 2,048 characters: the S3 rules match every metadata file of the buckets %s; the planner still wakes only granted tables, at an invocation per ungranted table's commit there (grant whole namespaces, or use Glue or commit events, to avoid this)",
			MaxWildcardRules, strings.Join(Buckets(locs), ", "))), nil)
	}
	if s.Alarms {
		out.Alarms = newAlarms(stack, s, out.Queues, out.Functions)
		out.Dashboard = newDashboard(stack, out.Queues, out.Functions, out.Alarms)
	}
	if s.TableAccess() && s.CatalogType == "rest" && s.CatalogSigV4 && !s.GlueCatalog() && !s.S3Tables() {
		awscdk.Annotations_Of(stack).AddWarningV2(jsii.String("icekeeper:catalog-iam"), jsii.String(
			"catalog signing name "+s.CatalogSigningName+": the stack grants catalog permissions for Glue only; add this service's read permissions to the planner and committer roles and its commit permission to the committer's yourself, scoped to the granted tables (for S3 Tables, set the table bucket's ARN as catalogWarehouse and the stack grants them)"), nil)
	}
	awscdk.Tags_Of(stack).Add(jsii.String("icekeeper:mode"), jsii.String(s.Mode), nil)
	return out, nil
}

// busName is the bus name of ICEKEEPER_EVENT_BUS, which may be an ARN.
func busName(bus string) string {
	for i := len(bus) - 1; i >= 0; i-- {
		if bus[i] == '/' {
			return bus[i+1:]
		}
	}
	return bus
}
