package main

import (
	"fmt"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatchactions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssns"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssnssubscriptions"
	"github.com/aws/aws-cdk-go/awscdk/v2/awssqs"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// MetricNamespace is the CloudWatch namespace of icekeeper's metrics
// (shared/metrics.DefaultNamespace).
const MetricNamespace = "Icekeeper"

// Metric names, as the code emits them (EMF, namespace Icekeeper; the
// contract is testdata/emitted-metrics.json). Each is published with the
// dimension Function (and Reason on skips and ignored triggers),
// aggregated over the tables; ConflictAborts alone also carries Table
// (shared/metrics.PerTable: the ConflictAbortsPerTable alarm groups it by
// table). The ledger gauges and most health gauges are values of the
// planner's log records only (shared/metrics.LogOnly), which the
// dashboard's Logs Insights tables read; EventsRejected carries Function
// only. stack_test.go checks that each name is a string in the root
// module's shared/ code.
const (
	// planner
	MetricJobsPlanned       = "JobsPlanned"
	MetricOptInWithoutGrant = "OptInWithoutGrant"
	MetricInvalidProperties = "InvalidProperties"
	MetricTablesSkipped     = "TablesSkipped"
	MetricEventsRejected    = "EventsRejected"
	MetricLeaseSkips        = "LeaseSkips"
	MetricHealthScore       = "HealthScore"
	MetricSmallFiles        = "SmallFiles"
	MetricDeleteFiles       = "DeleteFiles"
	// health gauges of the planner's log records only (the dashboard's
	// health table)
	MetricDataFiles = "DataFiles"
	MetricSnapshots = "Snapshots"
	// the ledger's gauges (planner, log records only: the dashboard's
	// ledger table)
	MetricMaintenanceCostWeekUSD = "MaintenanceCostWeekUSD"
	MetricQueryCostSavedWeekUSD  = "QueryCostSavedWeekUSD"
	MetricMaintenanceBackedOff   = "MaintenanceBackedOff"
	// rewriter
	MetricGroupsRewritten = "GroupsRewritten"
	MetricGroupsFailed    = "GroupsFailed"
	MetricTaskFailures    = "TaskFailures"
	MetricBytesIn         = "BytesIn"
	MetricBytesOut        = "BytesOut"
	MetricRowsRewritten   = "RowsRewritten"
	// committer
	MetricJobsCommitted   = "JobsCommitted"
	MetricJobsFailed      = "JobsFailed"
	MetricJobsAborted     = "JobsAborted"
	MetricCommitConflicts = "CommitConflicts"
	MetricCommitRetries   = "CommitRetries"
	MetricConflictAborts  = "ConflictAborts"
	// committer, snapshot expiry
	MetricSnapshotsExpired    = "SnapshotsExpired"
	MetricExpiredFilesDeleted = "ExpiredFilesDeleted"
	MetricBytesFreed          = "BytesFreed"
	// committer, manifest rewrite
	MetricManifestsRewritten = "ManifestsRewritten"
	// committer, orphan cleanup
	MetricOrphanFilesRemoved = "OrphanFilesRemoved"
	// planner: an orphan cleanup refused (the location is not the table's)
	MetricMaintenanceRefused = "MaintenanceRefused"
)

// EmittedMetrics lists every metric name the stack's alarms and dashboard
// use.
func EmittedMetrics() []string {
	return []string{
		MetricJobsPlanned, MetricOptInWithoutGrant, MetricInvalidProperties, MetricTablesSkipped, MetricEventsRejected,
		MetricLeaseSkips, MetricHealthScore, MetricSmallFiles, MetricDeleteFiles, MetricDataFiles, MetricSnapshots,
		MetricGroupsRewritten, MetricGroupsFailed, MetricTaskFailures, MetricBytesIn, MetricBytesOut, MetricRowsRewritten,
		MetricJobsCommitted, MetricJobsFailed, MetricJobsAborted, MetricCommitConflicts, MetricCommitRetries, MetricConflictAborts,
		MetricSnapshotsExpired, MetricExpiredFilesDeleted, MetricBytesFreed, MetricManifestsRewritten,
		MetricOrphanFilesRemoved, MetricMaintenanceRefused,
		MetricMaintenanceCostWeekUSD, MetricQueryCostSavedWeekUSD, MetricMaintenanceBackedOff,
	}
}

// Alarms are the stack's alarms and the topic they notify.
type Alarms struct {
	Topic awssns.Topic
	All   []awscloudwatch.Alarm
}

// icekeeperSum is the sum of one icekeeper metric over every dimension set
// it is emitted with (per function, per reason, per table for
// ConflictAborts), as a CloudWatch Metrics Insights query: alarms cannot
// use SEARCH, and an alarm on a metric must name its exact dimensions,
// which a sum over the namespace does not need.
func icekeeperSum(name string, period time.Duration) awscloudwatch.MathExpression {
	return awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
		Expression:   jsii.String(fmt.Sprintf("SELECT SUM(%s) FROM %s", name, MetricNamespace)),
		UsingMetrics: &map[string]awscloudwatch.IMetric{},
		Period:       seconds(period),
		Label:        jsii.String(name),
	})
}

// ConflictAbortsPerTable is how many jobs of one table aborted by
// concurrent commits in an hour raise ConflictAbortsPerTable: a table whose
// writers keep every job from landing.
const ConflictAbortsPerTable = 3

// newAlarms creates the SNS topic (with an optional e-mail subscription) and
// the alarms:
//
//   - each dead-letter queue holds a message;
//   - OptInWithoutGrant and InvalidProperties: a table owner asked for
//     something the deployment will not do;
//   - JobsFailed, JobsAborted, CommitConflicts and CommitRetries per hour at
//     or above their thresholds;
//   - ConflictAborts per table per hour at or above ConflictAbortsPerTable:
//     a multi-time-series Metrics Insights alarm (GROUP BY Table), whose
//     contributors are the tables (Amazon CloudWatch User Guide, "Create an
//     alarm based on a Multi Time Series Metrics Insights query");
//   - per function: any error, any throttle, p99 duration above the
//     configured share of the timeout.
func newAlarms(scope constructs.Construct, s Settings, q Queues, fns Lambdas) Alarms {
	topic := awssns.NewTopic(scope, jsii.String("AlarmTopic"), &awssns.TopicProps{
		DisplayName: jsii.String("icekeeper alarms"),
		EnforceSSL:  jsii.Bool(true),
	})
	if s.AlarmEmail != "" {
		topic.AddSubscription(awssnssubscriptions.NewEmailSubscription(jsii.String(s.AlarmEmail), nil))
	}
	a := Alarms{Topic: topic}
	action := awscloudwatchactions.NewSnsAction(topic)
	alarm := func(id, description string, metric awscloudwatch.IMetric, threshold float64, op awscloudwatch.ComparisonOperator) {
		al := awscloudwatch.NewAlarm(scope, jsii.String(id), &awscloudwatch.AlarmProps{
			AlarmDescription:   jsii.String(description),
			Metric:             metric,
			Threshold:          jsii.Number(threshold),
			ComparisonOperator: op,
			EvaluationPeriods:  jsii.Number(1),
			TreatMissingData:   awscloudwatch.TreatMissingData_NOT_BREACHING,
		})
		al.AddAlarmAction(action)
		a.All = append(a.All, al)
	}
	above := awscloudwatch.ComparisonOperator_GREATER_THAN_THRESHOLD
	atLeast := awscloudwatch.ComparisonOperator_GREATER_THAN_OR_EQUAL_TO_THRESHOLD

	for _, d := range []struct {
		id, what string
		queue    awssqs.Queue
	}{{"TasksDLQNotEmpty", "rewriter tasks", q.TasksDLQ}, {"CommitsDLQNotEmpty", "commit requests", q.CommitsDLQ}, {"PlannerDLQNotEmpty", "planner events", q.PlannerDLQ}} {
		alarm(d.id, fmt.Sprintf("icekeeper: %s reached the dead-letter queue after %d attempts; see the failed job's reason in the jobs table and redrive or purge", d.what, s.MaxTaskAttempts),
			d.queue.MetricApproximateNumberOfMessagesVisible(&awscloudwatch.MetricOptions{Statistic: jsii.String("Maximum"), Period: awscdk.Duration_Minutes(jsii.Number(5))}),
			0, above)
	}

	alarm("OptInWithoutGrant", "icekeeper: a table owner set icekeeper.maintenance.enabled=true but the table is not granted (ICEKEEPER_GRANTS); grant it or tell the owner (audit event \"Icekeeper Opt-in Without Grant\" has the table)",
		icekeeperSum(MetricOptInWithoutGrant, 5*time.Minute), 0, above)
	alarm("InvalidProperties", "icekeeper: a table carries rejected icekeeper.* properties (e.g. credential-shaped) and is not maintained",
		icekeeperSum(MetricInvalidProperties, 5*time.Minute), 0, above)
	alarm("MaintenanceRefused", "icekeeper: an orphan cleanup was refused because the table's location is not its own (shared with another table, or a root); see the planner's log for the table and the reason",
		icekeeperSum(MetricMaintenanceRefused, 5*time.Minute), 0, above)
	th := s.Thresholds
	alarm("JobsFailed", fmt.Sprintf("icekeeper: %d or more compaction jobs failed in an hour", th.JobsFailed),
		icekeeperSum(MetricJobsFailed, time.Hour), float64(th.JobsFailed), atLeast)
	alarm("JobsAborted", fmt.Sprintf("icekeeper: %d or more compaction jobs aborted in an hour (concurrent deletes or conflicts)", th.JobsAborted),
		icekeeperSum(MetricJobsAborted, time.Hour), float64(th.JobsAborted), atLeast)
	alarm("CommitConflictRate", fmt.Sprintf("icekeeper: %d or more catalog commit conflicts in an hour", th.CommitConflictsPerHour),
		icekeeperSum(MetricCommitConflicts, time.Hour), float64(th.CommitConflictsPerHour), atLeast)
	alarm("CommitRetryRate", fmt.Sprintf("icekeeper: %d or more commit retries in an hour", th.CommitRetriesPerHour),
		icekeeperSum(MetricCommitRetries, time.Hour), float64(th.CommitRetriesPerHour), atLeast)
	alarm("ConflictAbortsPerTable", fmt.Sprintf("icekeeper: a table had %d or more jobs aborted by concurrent commits in an hour (each contributor is a table); after two in a row it waits between attempts, and a busy writer may keep compaction from landing", ConflictAbortsPerTable),
		awscloudwatch.NewMathExpression(&awscloudwatch.MathExpressionProps{
			Expression:   jsii.String(fmt.Sprintf(`SELECT SUM(%s) FROM %s GROUP BY "Table" ORDER BY SUM() DESC`, MetricConflictAborts, MetricNamespace)),
			UsingMetrics: &map[string]awscloudwatch.IMetric{},
			Period:       seconds(time.Hour),
			Label:        jsii.String(MetricConflictAborts + " per table"),
		}), ConflictAbortsPerTable, atLeast)

	for _, name := range Functions() {
		fn := fns.ByName(name)
		id := capitalize(name)
		five := awscdk.Duration_Minutes(jsii.Number(5))
		alarm(id+"Errors", "icekeeper: the "+name+" function failed (see its log group)",
			fn.MetricErrors(&awscloudwatch.MetricOptions{Statistic: jsii.String("Sum"), Period: five}), 0, above)
		alarm(id+"Throttles", "icekeeper: the "+name+" function was throttled",
			fn.MetricThrottles(&awscloudwatch.MetricOptions{Statistic: jsii.String("Sum"), Period: five}), 0, above)
		timeout := s.FunctionSettings(name).Timeout
		limit := float64(timeout.Milliseconds()) * float64(th.DurationPercent) / 100
		alarm(id+"DurationNearTimeout", fmt.Sprintf("icekeeper: the %s function's p99 duration is above %d%% of its %s timeout", name, th.DurationPercent, timeout),
			fn.MetricDuration(&awscloudwatch.MetricOptions{Statistic: jsii.String("p99"), Period: awscdk.Duration_Minutes(jsii.Number(15))}), limit, above)
	}
	return a
}

func capitalize(s string) string {
	if s == "" {
		return s
	}
	return string(s[0]-'a'+'A') + s[1:]
}
