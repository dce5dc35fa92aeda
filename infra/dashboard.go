package main

import (
	"fmt"
	"time"

	"github.com/aws/aws-cdk-go/awscdk/v2"
	"github.com/aws/aws-cdk-go/awscdk/v2/awscloudwatch"
	"github.com/aws/aws-cdk-go/awscdk/v2/interfaces/interfacesawscloudwatch"
	"github.com/aws/constructs-go/constructs/v10"
	"github.com/aws/jsii-runtime-go"
)

// planner is one planner metric as the planner publishes it: aggregated
// over the tables, dimension set {Function} with Function = planner (a
// SEARCH schema {Namespace,D1,...} matches only metrics with exactly those
// dimensions: CloudWatch User Guide, "Search expression syntax",
// https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/search-expression-syntax.html).
func planner(name, stat string) awscloudwatch.SearchExpression {
	return awscloudwatch.NewSearchExpression(&awscloudwatch.SearchExpressionProps{
		Expression: jsii.String(fmt.Sprintf(`SEARCH('{%s,Function} Function="planner" MetricName="%s"', '%s', 3600)`, MetricNamespace, name, stat)),
		Label:      jsii.String(name),
		Period:     awscdk.Duration_Hours(jsii.Number(1)),
	})
}

// perTable is every table's series of one of the few metrics published per
// table (shared/metrics.PerTable): a SEARCH over {Function, Table}.
func perTable(name, function, stat string) awscloudwatch.SearchExpression {
	return awscloudwatch.NewSearchExpression(&awscloudwatch.SearchExpressionProps{
		Expression: jsii.String(fmt.Sprintf(`SEARCH('{%s,Function,Table} Function="%s" MetricName="%s"', '%s', 3600)`, MetricNamespace, function, name, stat)),
		Label:      jsii.String(""),
		Period:     awscdk.Duration_Hours(jsii.Number(1)),
	})
}

// The per-table tables of the dashboard: CloudWatch Logs Insights queries
// over the planner's log group, whose EMF records carry each table's
// values (the Table member and the gauges, published or log-only) at no
// metric cost. Logs Insights discovers the fields of JSON log events and
// "stats ... by" groups them (https://docs.aws.amazon.com/AmazonCloudWatch/latest/logs/CWL_QuerySyntax-Stats.html);
// each refresh of such a widget starts a query, billed by the bytes it
// scans (https://docs.aws.amazon.com/AmazonCloudWatch/latest/logs/CWL_QuerySyntax.html),
// which is why the dashboard does not auto-refresh them.
var (
	// HealthByTableQuery: each table's worst health over the
	// dashboard's interval, worst first.
	HealthByTableQuery = []string{
		"filter ispresent(" + MetricHealthScore + ") and ispresent(Table)",
		"stats max(" + MetricHealthScore + ") as score, max(" + MetricSmallFiles + ") as small_files, max(" + MetricDeleteFiles + ") as delete_files, max(" + MetricDataFiles + ") as data_files, max(" + MetricSnapshots + ") as snapshots by Table",
		"sort score desc",
		"limit 100",
	}
	// LedgerByTableQuery: each table's last weighed week, the most
	// expensive maintenance first.
	LedgerByTableQuery = []string{
		"filter ispresent(" + MetricMaintenanceCostWeekUSD + ") and ispresent(Table)",
		"stats max(" + MetricMaintenanceCostWeekUSD + ") as cost_usd, max(" + MetricQueryCostSavedWeekUSD + ") as saved_usd, max(" + MetricMaintenanceBackedOff + ") as backed_off by Table",
		"sort cost_usd desc",
		"limit 100",
	}
)

// newDashboard lays out one dashboard in four rows: backlog (queue depths,
// age of the oldest task, dead-letter queues), throughput (jobs planned,
// committed, failed and aborted; bytes read and written, rows and groups
// rewritten; commit conflicts, task failures, skips; function invocations,
// errors and throttles), health (the worst table's HealthScore, SmallFiles
// and DeleteFiles, each table's conflict aborts, and a table of every
// table's health from the planner's log) and the ledger (a table of each
// table's maintenance cost and query cost saved of the last weighed week,
// and whether maintenance is backed off, from the planner's log).
func newDashboard(scope constructs.Construct, q Queues, fns Lambdas, alarms Alarms) awscloudwatch.Dashboard {
	five := awscdk.Duration_Minutes(jsii.Number(5))
	peak := &awscloudwatch.MetricOptions{Statistic: jsii.String("Maximum"), Period: five}
	sum := &awscloudwatch.MetricOptions{Statistic: jsii.String("Sum"), Period: five}
	graph := func(title string, width float64, left ...awscloudwatch.IMetric) awscloudwatch.GraphWidget {
		return awscloudwatch.NewGraphWidget(&awscloudwatch.GraphWidgetProps{
			Title: jsii.String(title), Width: jsii.Number(width), Height: jsii.Number(6), Left: &left,
		})
	}
	withLabel := func(m awscloudwatch.Metric, label string) awscloudwatch.IMetric {
		return m.With(&awscloudwatch.MetricOptions{Label: jsii.String(label)})
	}
	d := awscloudwatch.NewDashboard(scope, jsii.String("Dashboard"), &awscloudwatch.DashboardProps{
		DefaultInterval: awscdk.Duration_Days(jsii.Number(1)),
	})
	d.AddWidgets(awscloudwatch.NewTextWidget(&awscloudwatch.TextWidgetProps{
		Markdown: jsii.String("## Backlog"), Width: jsii.Number(24), Height: jsii.Number(1),
	}))
	d.AddWidgets(
		graph("Queue depth", 8,
			withLabel(q.Tasks.MetricApproximateNumberOfMessagesVisible(peak), "tasks waiting"),
			withLabel(q.Tasks.MetricApproximateNumberOfMessagesNotVisible(peak), "tasks in flight"),
			withLabel(q.Commits.MetricApproximateNumberOfMessagesVisible(peak), "commits waiting"),
			withLabel(q.Commits.MetricApproximateNumberOfMessagesNotVisible(peak), "commits in flight")),
		graph("Oldest message age (s)", 8,
			withLabel(q.Tasks.MetricApproximateAgeOfOldestMessage(peak), "tasks"),
			withLabel(q.Commits.MetricApproximateAgeOfOldestMessage(peak), "commits")),
		graph("Dead-letter queues", 8,
			withLabel(q.TasksDLQ.MetricApproximateNumberOfMessagesVisible(peak), "task DLQ"),
			withLabel(q.CommitsDLQ.MetricApproximateNumberOfMessagesVisible(peak), "commit DLQ"),
			withLabel(q.PlannerDLQ.MetricApproximateNumberOfMessagesVisible(peak), "planner event DLQ")),
	)
	d.AddWidgets(awscloudwatch.NewTextWidget(&awscloudwatch.TextWidgetProps{
		Markdown: jsii.String("## Throughput"), Width: jsii.Number(24), Height: jsii.Number(1),
	}))
	d.AddWidgets(
		graph("Jobs", 6,
			icekeeperSum(MetricJobsPlanned, 5*time.Minute), icekeeperSum(MetricJobsCommitted, 5*time.Minute),
			icekeeperSum(MetricJobsFailed, 5*time.Minute), icekeeperSum(MetricJobsAborted, 5*time.Minute),
			icekeeperSum(MetricLeaseSkips, 5*time.Minute)),
		graph("Rewritten", 6,
			icekeeperSum(MetricBytesIn, 5*time.Minute), icekeeperSum(MetricBytesOut, 5*time.Minute),
			icekeeperSum(MetricRowsRewritten, 5*time.Minute), icekeeperSum(MetricGroupsRewritten, 5*time.Minute)),
		graph("Expiry, manifests, orphans", 6,
			icekeeperSum(MetricSnapshotsExpired, 5*time.Minute), icekeeperSum(MetricExpiredFilesDeleted, 5*time.Minute),
			icekeeperSum(MetricBytesFreed, 5*time.Minute), icekeeperSum(MetricManifestsRewritten, 5*time.Minute),
			icekeeperSum(MetricOrphanFilesRemoved, 5*time.Minute)),
		graph("Commit conflicts, skips and rejections", 6,
			icekeeperSum(MetricCommitConflicts, 5*time.Minute), icekeeperSum(MetricCommitRetries, 5*time.Minute),
			icekeeperSum(MetricTaskFailures, 5*time.Minute), icekeeperSum(MetricGroupsFailed, 5*time.Minute),
			icekeeperSum(MetricTablesSkipped, 5*time.Minute), icekeeperSum(MetricEventsRejected, 5*time.Minute),
			icekeeperSum(MetricOptInWithoutGrant, 5*time.Minute)),
	)
	var invocations, errs []awscloudwatch.IMetric
	for _, name := range Functions() {
		fn := fns.ByName(name)
		invocations = append(invocations, withLabel(fn.MetricInvocations(sum), name))
		errs = append(errs, withLabel(fn.MetricErrors(sum), name+" errors"), withLabel(fn.MetricThrottles(sum), name+" throttles"))
	}
	d.AddWidgets(graph("Invocations", 12, invocations...), graph("Errors and throttles", 12, errs...))
	d.AddWidgets(awscloudwatch.NewTextWidget(&awscloudwatch.TextWidgetProps{
		Markdown: jsii.String("## Health (graphs: the worst table; the table: each table, from the planner's log)"), Width: jsii.Number(24), Height: jsii.Number(1),
	}))
	logs := &[]*string{fns.PlannerLogs.LogGroupName()}
	d.AddWidgets(
		graph("Worst table's HealthScore (0 = healthy)", 8, planner(MetricHealthScore, "Maximum")),
		graph("Worst table's SmallFiles and DeleteFiles", 8, planner(MetricSmallFiles, "Maximum"), planner(MetricDeleteFiles, "Maximum")),
		graph("ConflictAborts per table", 8, perTable(MetricConflictAborts, "committer", "Sum")),
	)
	d.AddWidgets(awscloudwatch.NewLogQueryWidget(&awscloudwatch.LogQueryWidgetProps{
		Title:         jsii.String("Tables by health (highest HealthScore over the interval; `icekeeper health TABLE` for one)"),
		LogGroupNames: logs,
		QueryLines:    jsii.Strings(HealthByTableQuery...),
		View:          awscloudwatch.LogQueryVisualizationType_TABLE,
		Width:         jsii.Number(24), Height: jsii.Number(8),
	}))
	d.AddWidgets(awscloudwatch.NewTextWidget(&awscloudwatch.TextWidgetProps{
		Markdown: jsii.String("## Ledger (per table: the last complete week the planner weighed, `icekeeper log TABLE --ledger` for the weeks)"), Width: jsii.Number(24), Height: jsii.Number(1),
	}))
	d.AddWidgets(awscloudwatch.NewLogQueryWidget(&awscloudwatch.LogQueryWidgetProps{
		Title:         jsii.String("Maintenance cost and query cost saved of the week (USD), backed off (1 = yes)"),
		LogGroupNames: logs,
		QueryLines:    jsii.Strings(LedgerByTableQuery...),
		View:          awscloudwatch.LogQueryVisualizationType_TABLE,
		Width:         jsii.Number(24), Height: jsii.Number(8),
	}))
	if len(alarms.All) > 0 {
		all := make([]interfacesawscloudwatch.IAlarmRef, 0, len(alarms.All))
		for _, a := range alarms.All {
			all = append(all, a)
		}
		d.AddWidgets(awscloudwatch.NewAlarmStatusWidget(&awscloudwatch.AlarmStatusWidgetProps{
			Title: jsii.String("Alarms"), Alarms: &all, Width: jsii.Number(24),
		}))
	}
	return d
}
