package main

import (
	"fmt"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awsevents"
	"github.com/aws/aws-cdk-go/awscdk/v2/awseventstargets"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// Event sources and detail types, as the planner accepts them
// (events/events.go).
const (
	SourceSchedule     = "aws.events"
	DetailTypeSchedule = "Scheduled Event"
	SourceGlue         = "aws.glue"
	DetailTypeGlue     = "Glue Data Catalog Table State Change"
	DetailTypeGlueDB   = "Glue Data Catalog Database State Change"
	SourceS3           = "aws.s3"
	DetailTypeS3       = "Object Created"
	SourceCommit       = "icekeeper"
	DetailTypeCommit   = "Iceberg Table Committed"
	DetailTypeQuery    = "Icekeeper Query Observed"
	DetailTypeContinue = "Icekeeper Compaction Continues"
	SourceAthena       = "aws.athena"
	DetailTypeAthena   = "Athena Query State Change"
	// ActionOrphans is the detail.icekeeper_action of the orphan
	// schedule's events.
	ActionOrphans = "orphans"
	// ActionSummary is the detail.icekeeper_action of the weekly
	// summary schedule's events.
	ActionSummary = "summary"
)

// Rules are the EventBridge rules that wake the planner. Glue and S3 are
// empty when they would match nothing, and hold several rules when one
// pattern would pass EventBridge's 2,048 characters (see newRules).
type Rules struct {
	Sweep, Orphans, Summary, Commit, Continue, Queries, Athena awsevents.Rule
	Glue, S3                                                   []awsevents.Rule
}

// MaxWildcardRules is how many of the account's 30 wildcard rules an
// event bus may hold (a quota that cannot be raised,
// https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-quota.html)
// the stack takes for its S3 rules; the rest stay the account's.
const MaxWildcardRules = 5

// s3Details are the detail patterns of the S3 rules: the granted
// locations' metadata keys as wildcards, packed into as few patterns of at
// most EventPatternLimit characters as they fit. When that takes more than
// MaxWildcardRules rules, the patterns widen to every metadata file of the
// locations' buckets (suffix filters, no wildcard); the planner still
// wakes only granted tables (it resolves each location and skips the
// rest), at the price of an invocation per ungranted table's commit in
// those buckets. EventBridge's suffix and wildcard filters: "Content
// filtering in Amazon EventBridge event patterns",
// https://docs.aws.amazon.com/eventbridge/latest/userguide/eb-create-pattern-operators.html.
func s3Details(locs []Location) []map[string]any {
	if len(locs) == 0 {
		return nil
	}
	byKey := map[string]Location{}
	var keys []any
	for _, l := range locs {
		for _, k := range []string{l.MetadataKeyPattern(), l.GzipMetadataKeyPattern()} {
			byKey[k] = l
			keys = append(keys, map[string]any{"wildcard": k})
		}
	}
	detail := func(chunk []any) map[string]any {
		var chunkLocs []Location
		for _, k := range chunk {
			chunkLocs = append(chunkLocs, byKey[k.(map[string]any)["wildcard"].(string)])
		}
		return map[string]any{"bucket": map[string]any{"name": toAny(Buckets(chunkLocs))}, "object": map[string]any{"key": chunk}}
	}
	chunks := packPatterns(keys, func(chunk []any) any {
		return renderedPattern(SourceS3, []string{DetailTypeS3}, detail(chunk))
	})
	var out []map[string]any
	if len(chunks) <= MaxWildcardRules {
		for _, c := range chunks {
			out = append(out, detail(c))
		}
		return out
	}
	suffixes := []any{map[string]any{"suffix": ".metadata.json"}, map[string]any{"suffix": ".metadata.json.gz"}}
	wide := func(chunk []any) map[string]any {
		return map[string]any{"bucket": map[string]any{"name": chunk}, "object": map[string]any{"key": suffixes}}
	}
	for _, c := range packPatterns(toAny(Buckets(locs)), func(chunk []any) any {
		return renderedPattern(SourceS3, []string{DetailTypeS3}, wide(chunk))
	}) {
		out = append(out, wide(c))
	}
	return out
}

// S3RulesWidened reports whether the S3 rules match every metadata file of
// the granted locations' buckets instead of the locations themselves
// (s3Details).
func S3RulesWidened(locs []Location) bool {
	for _, d := range s3Details(locs) {
		keys, _ := d["object"].(map[string]any)["key"].([]any)
		for _, k := range keys {
			if _, ok := k.(map[string]any)["suffix"]; ok {
				return true
			}
		}
	}
	return false
}

// renderedPattern is an event pattern as the CDK renders it into the
// template, for measuring.
func renderedPattern(source string, detailTypes []string, detail map[string]any) any {
	return map[string]any{"source": []string{source}, "detail-type": detailTypes, "detail": detail}
}

// packPatterns splits values, in order, into the fewest consecutive
// chunks whose pattern (render(chunk)) stays within EventPatternLimit. A
// single value whose pattern is over the limit gets a chunk of its own
// (CheckLimits then reports it).
func packPatterns(values []any, render func([]any) any) [][]any {
	var out [][]any
	var cur []any
	for _, v := range values {
		next := append(append([]any(nil), cur...), v)
		if len(cur) > 0 && EventPatternSize(render(next)) > EventPatternLimit {
			out = append(out, cur)
			next = []any{v}
		}
		cur = next
	}
	if len(cur) > 0 {
		out = append(out, cur)
	}
	return out
}

// ruleID is the construct id of the i-th rule of a kind: the first keeps
// the kind's name (and so its logical id prefix), later ones are numbered.
func ruleID(kind string, i int) string {
	if i == 0 {
		return kind
	}
	return fmt.Sprintf("%s%d", kind, i+1)
}

func toAny[T any](xs []T) []any {
	out := make([]any, len(xs))
	for i, x := range xs {
		out[i] = x
	}
	return out
}

// actionTarget is the planner as a schedule's target, given a constant
// event (EventBridge User Guide, "Configuring target input"): a scheduled
// event whose detail.icekeeper_action names what to do (events.Decode).
func actionTarget(fns Lambdas, action string) awsevents.IRuleTarget {
	return awseventstargets.NewLambdaFunction(fns.Planner, &awseventstargets.LambdaFunctionProps{
		RetryAttempts: jsii.Number(2),
		MaxEventAge:   awscdk.Duration_Hours(jsii.Number(2)),
		Event: awsevents.RuleTargetInput_FromObject(map[string]any{
			"version": "0", "id": awsevents.EventField_EventId(), "detail-type": DetailTypeSchedule, "source": SourceSchedule,
			"time": awsevents.EventField_Time(), "detail": map[string]any{"icekeeper_action": action},
		}),
	})
}

// newRules creates the rules that target the planner:
//
//   - the sweep schedule (a "Scheduled Event" from aws.events), always;
//   - the orphan schedule, always (a constant scheduled event whose detail
//     names the orphan cleanup);
//   - the weekly summary's schedule, always (a constant scheduled event
//     whose detail names the summary; the planner writes the summary to
//     the bucket's summary/ and puts its event);
//   - Glue table and database state changes, for a Glue catalog, filtered
//     to the granted databases and to the calls that change a table's data
//     (UpdateTable, CreateTable; partition calls and drops wake nothing),
//     not in mode off, where nothing is granted to look at. Shapes: the AWS
//     Glue Developer Guide, "Automating AWS Glue with EventBridge", and the
//     samples in events/ (events/SOURCES.md);
//   - S3 "Object Created" for table metadata files (*/metadata/*.metadata.json)
//     under the granted locations, not in mode off. The warehouse buckets
//     must send events to EventBridge (a bucket setting this stack does not
//     own; see infra/README.md);
//   - the custom commit event (source icekeeper, detail-type "Iceberg Table
//     Committed") on ICEKEEPER_EVENT_BUS, always;
//   - the committer's continuation (source icekeeper, detail-type
//     "Icekeeper Compaction Continues") on ICEKEEPER_EVENT_BUS, not in mode
//     off, where nothing is compacted: a
//     committed compaction that left groups for later jobs wakes the
//     planner for the next one;
//   - query signals, when querySignals is on and not in mode off: the
//     custom query event (detail-type "Icekeeper Query Observed") on
//     ICEKEEPER_EVENT_BUS, and Athena's "Athena Query State Change" for
//     succeeded DML queries on the default bus, where AWS services send
//     their events (Amazon Athena User Guide, "Monitor Athena query events
//     with EventBridge").
//
// Mode off keeps the schedule and the commit rule so the wiring is visible
// (the planner counts each trigger as TriggersIgnored) without waking it on
// every warehouse write.
func newRules(scope constructs.Construct, s Settings, fns Lambdas, bus awsevents.IEventBus) (Rules, error) {
	target := awseventstargets.NewLambdaFunction(fns.Planner, &awseventstargets.LambdaFunctionProps{
		RetryAttempts: jsii.Number(2),
		MaxEventAge:   awscdk.Duration_Hours(jsii.Number(2)),
	})
	var r Rules
	r.Sweep = awsevents.NewRule(scope, jsii.String("SweepSchedule"), &awsevents.RuleProps{
		Description: jsii.String("icekeeper: sweep the granted tables"),
		Schedule:    awsevents.Schedule_Expression(jsii.String(s.SweepSchedule)),
		Targets:     &[]awsevents.IRuleTarget{target},
	})
	// The orphan schedule's target gets a constant event (EventBridge User
	// Guide, "Configuring target input"): a scheduled event whose detail
	// names the orphan cleanup (events.ActionOrphans).
	orphanTarget := actionTarget(fns, ActionOrphans)
	r.Orphans = awsevents.NewRule(scope, jsii.String("OrphanSchedule"), &awsevents.RuleProps{
		Description: jsii.String("icekeeper: orphan cleanup sweep over the tables that asked for it"),
		Schedule:    awsevents.Schedule_Expression(jsii.String(s.OrphanSchedule)),
		Targets:     &[]awsevents.IRuleTarget{orphanTarget},
	})
	// The weekly summary: a constant scheduled event as the orphan
	// schedule's, naming the summary (events.ActionSummary).
	summaryTarget := actionTarget(fns, ActionSummary)
	r.Summary = awsevents.NewRule(scope, jsii.String("SummarySchedule"), &awsevents.RuleProps{
		Description: jsii.String("icekeeper: the weekly summary (summary/ in the bucket, and an event)"),
		Schedule:    awsevents.Schedule_Expression(jsii.String(s.SummarySchedule)),
		Targets:     &[]awsevents.IRuleTarget{summaryTarget},
	})
	r.Commit = awsevents.NewRule(scope, jsii.String("CommitEvents"), &awsevents.RuleProps{
		Description: jsii.String("icekeeper: a writer announced an Iceberg commit"),
		EventBus:    bus,
		EventPattern: &awsevents.EventPattern{
			Source:     jsii.Strings(SourceCommit),
			DetailType: jsii.Strings(DetailTypeCommit),
		},
		Targets: &[]awsevents.IRuleTarget{target},
	})
	if !s.TableAccess() {
		return r, nil
	}
	r.Continue = awsevents.NewRule(scope, jsii.String("ContinueEvents"), &awsevents.RuleProps{
		Description: jsii.String("icekeeper: a committed compaction left groups for its next job"),
		EventBus:    bus,
		EventPattern: &awsevents.EventPattern{
			Source:     jsii.Strings(SourceCommit),
			DetailType: jsii.Strings(DetailTypeContinue),
		},
		Targets: &[]awsevents.IRuleTarget{target},
	})
	if s.QuerySignals {
		r.Queries = awsevents.NewRule(scope, jsii.String("QuerySignals"), &awsevents.RuleProps{
			Description: jsii.String("icekeeper: an engine observed a query (what it filtered on, what it scanned)"),
			EventBus:    bus,
			EventPattern: &awsevents.EventPattern{
				Source:     jsii.Strings(SourceCommit),
				DetailType: jsii.Strings(DetailTypeQuery),
			},
			Targets: &[]awsevents.IRuleTarget{target},
		})
		r.Athena = awsevents.NewRule(scope, jsii.String("AthenaQueries"), &awsevents.RuleProps{
			Description: jsii.String("icekeeper: an Athena query succeeded (read back as a query signal)"),
			EventPattern: &awsevents.EventPattern{
				Source:     jsii.Strings(SourceAthena),
				DetailType: jsii.Strings(DetailTypeAthena),
				// detail.workgroupName: the query's workgroup (Amazon
				// Athena User Guide, "Monitor Athena query events with
				// EventBridge": https://docs.aws.amazon.com/athena/latest/ug/athena-events.html);
				// only those the planner may read back.
				Detail: &map[string]any{"currentState": []string{"SUCCEEDED"}, "statementType": []string{"DML"}, "workgroupName": s.AthenaWorkGroups},
			},
			Targets: &[]awsevents.IRuleTarget{target},
		})
	}
	if dbs := s.Grants.Databases(); s.GlueCatalog() && len(dbs) > 0 {
		// One rule per chunk of databases that keeps its pattern within
		// EventBridge's 2,048 characters (EventPatternLimit).
		glue := func(chunk []any) map[string]any {
			return map[string]any{"databaseName": chunk, "typeOfChange": []any{"UpdateTable", "CreateTable"}}
		}
		chunks := packPatterns(toAny(dbs), func(chunk []any) any {
			return renderedPattern(SourceGlue, []string{DetailTypeGlue, DetailTypeGlueDB}, glue(chunk))
		})
		for i, chunk := range chunks {
			r.Glue = append(r.Glue, awsevents.NewRule(scope, jsii.String(ruleID("GlueTableChanges", i)), &awsevents.RuleProps{
				Description: jsii.String("icekeeper: a granted Glue table changed"),
				EventPattern: &awsevents.EventPattern{
					Source:     jsii.Strings(SourceGlue),
					DetailType: jsii.Strings(DetailTypeGlue, DetailTypeGlueDB),
					Detail:     &map[string]any{"databaseName": chunk, "typeOfChange": []string{"UpdateTable", "CreateTable"}},
				},
				Targets: &[]awsevents.IRuleTarget{target},
			}))
		}
	}
	locs, err := s.Locations()
	if err != nil {
		return r, err
	}
	for i, detail := range s3Details(locs) {
		r.S3 = append(r.S3, awsevents.NewRule(scope, jsii.String(ruleID("TableMetadataWritten", i)), &awsevents.RuleProps{
			Description: jsii.String("icekeeper: a new metadata file under a granted table location"),
			EventPattern: &awsevents.EventPattern{
				Source:     jsii.Strings(SourceS3),
				DetailType: jsii.Strings(DetailTypeS3),
				Detail:     &detail,
			},
			Targets: &[]awsevents.IRuleTarget{target},
		}))
	}
	return r, nil
}
