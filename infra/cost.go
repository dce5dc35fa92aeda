package main

import (
	"fmt"
	"math"
	"regexp"
	"slices"
	"strings"
)

// The monthly CloudWatch cost of a deployment's metrics, alarms, dashboard
// and logs, computed from the metric contract (testdata/emitted-metrics.json),
// the synthesized stack's alarms and dashboards, and CloudWatch's published
// prices. README.md ("What observability costs") shows the result for 10,
// 100 and 1,000 tables; cost_test.go recomputes it and fails when the README
// disagrees, and `make metrics-cost` prints it.

// CloudWatchPrices are CloudWatch's list prices in US East (N. Virginia),
// standard resolution, standard log class, from
// https://aws.amazon.com/cloudwatch/pricing/ (read 2026-12-02). The stored
// copy of that page the search tool returns shows its free tier (10 custom
// metrics, 10 standard alarm metrics "only applicable to Standard resolution
// alarms that list metrics directly and don't use a Metrics Insights
// query", 3 dashboards of up to 50 metrics, 5 GB of logs); the paid tier
// figures below are the page's as quoted by secondary sources (custom
// metric tiers and $3 per dashboard: github.com/nishinoshake/aws-rough
// issue 37, quoting aws.amazon.com/jp/cloudwatch/pricing; logs and alarms:
// c3x.dev, "us-east-1, June 2026"). Check them against the page before
// relying on the figures. Prices vary by region.
type CloudWatchPrices struct {
	// MetricTiers: USD per custom metric-month, by tier (the first
	// UpTo metrics at USD, and so on; UpTo 0 is the last tier). "All
	// custom metrics charges are prorated by the hour and metered only
	// when you send metrics to CloudWatch" (the pricing page): the model
	// takes the upper bound, every metric sent in every hour.
	MetricTiers []PriceTier
	// AlarmMetric: USD per standard-resolution alarm metric-month. A
	// Metrics Insights alarm is priced here as one alarm metric per time
	// series its query analyzes (an assumption: the free tier's wording
	// sets such alarms apart, and the stored page does not show their
	// price).
	AlarmMetric float64
	// Dashboard: USD per custom dashboard-month.
	Dashboard float64
	// LogIngestionGB: USD per GB of log data ingested (EMF lines are log
	// data: "Charges are incurred for logs ingestion and archival, and
	// custom metrics that are generated",
	// https://docs.aws.amazon.com/AmazonCloudWatch/latest/monitoring/CloudWatch_Embedded_Metric_Format.html).
	LogIngestionGB float64
	// LogStorageGBMonth: USD per GB-month of log data stored.
	LogStorageGBMonth float64
	// LogsInsightsGB: USD per GB of log data a Logs Insights query scans
	// (each refresh of a dashboard's log widget runs one query:
	// https://docs.aws.amazon.com/AmazonCloudWatch/latest/logs/CWL_QuerySyntax.html).
	LogsInsightsGB float64
}

// PriceTier is one tier of a tiered price.
type PriceTier struct {
	UpTo int // metrics in this tier; 0: every further one
	USD  float64
}

// DefaultPrices are CloudWatchPrices' figures (see there).
var DefaultPrices = CloudWatchPrices{
	MetricTiers:       []PriceTier{{10_000, 0.30}, {240_000, 0.10}, {750_000, 0.05}, {0, 0.02}},
	AlarmMetric:       0.10,
	Dashboard:         3.00,
	LogIngestionGB:    0.50,
	LogStorageGBMonth: 0.03,
	LogsInsightsGB:    0.005,
}

// metricsCost is the monthly price of n custom metrics under tiers.
func (p CloudWatchPrices) metricsCost(n int) float64 {
	usd, left := 0.0, n
	for _, t := range p.MetricTiers {
		take := left
		if t.UpTo > 0 {
			take = min(left, t.UpTo)
		}
		usd += float64(take) * t.USD
		left -= take
		if left == 0 {
			break
		}
	}
	return usd
}

// CostAssumptions are what the model cannot read from the contract or the
// stack: how many values each dimension takes and how many bytes the
// functions log. Every one is an upper bound or a stated guess.
type CostAssumptions struct {
	// DimensionValues: for a dimension other than Function (one value
	// per signature, the contract's function) and Table (the table
	// count), the most values it takes per metric name; a metric not
	// listed takes one value per dimension.
	DimensionValues map[string]map[string]int
	// SweepsPerMonth: planner sweeps a month (the default schedule is
	// rate(1 hour): 730).
	SweepsPerMonth float64
	// PlannerBytesPerTableSweep: what the planner logs per table per
	// sweep (its EMF lines, health gauges included, and its slog lines).
	PlannerBytesPerTableSweep float64
	// JobsPerTableMonth and BytesPerJob: the maintenance jobs a table
	// runs a month and what the three functions log per job.
	JobsPerTableMonth, BytesPerJob float64
	// FixedBytesMonth: logging that does not grow with the tables (the
	// Lambda platform's START/END/REPORT lines of each sweep, events).
	FixedBytesMonth float64
	// RetainedMonths: months a log byte is stored (logRetentionDays/30).
	RetainedMonths float64
	// DashboardViewsMonth: dashboard loads a month; each runs the log
	// widgets over the dashboard's interval (DashboardIntervalDays).
	DashboardViewsMonth, DashboardIntervalDays float64
}

// DefaultAssumptions: hourly sweeps, 4 KiB per table per sweep (a sweep
// in active mode logs about 1.6 KiB per table, EMF and JSON log lines
// together, and a test fails above 4 KiB:
// tests/metrics_test.go, TestMetrics_ThePlannersLogPerTableIsWithinTheCostModel),
// one job a day per table at 32 KiB of logs (a guess), logs kept 30 days,
// the dashboard opened once a day over its default one-day interval.
var DefaultAssumptions = CostAssumptions{
	SweepsPerMonth:            730,
	PlannerBytesPerTableSweep: 4 << 10,
	JobsPerTableMonth:         30,
	BytesPerJob:               32 << 10,
	FixedBytesMonth:           730 * (2 << 10),
	RetainedMonths:            1,
	DashboardViewsMonth:       30,
	DashboardIntervalDays:     1,
}

// Signature is one entry of the metric contract: a metric name, its exact
// dimension set and the Function dimension's value.
type Signature struct {
	Name       string   `json:"name"`
	Dimensions []string `json:"dimensions"`
	Function   string   `json:"function,omitempty"`
}

// ObservedStack is what the cost model reads from the synthesized stack.
type ObservedStack struct {
	// StandardAlarms: alarms on one metric (no Metrics Insights query).
	StandardAlarms int
	// InsightsQueries: the Metrics Insights query of each alarm that
	// has one.
	InsightsQueries []string
	// Dashboards: custom dashboards.
	Dashboards int
	// LogWidgets: Logs Insights widgets on the dashboards.
	LogWidgets int
}

// MonthlyCost is one deployment's CloudWatch bill a month, in USD.
type MonthlyCost struct {
	Tables                                   int
	CustomMetrics                            int
	AlarmMetrics                             int
	Metrics, Alarms, Dashboards, Logs, Total float64
}

// PerTable is the total divided by the tables.
func (c MonthlyCost) PerTable() float64 { return c.Total / float64(c.Tables) }

// seriesOf is how many CloudWatch metrics one signature makes with tables
// tables.
func (a CostAssumptions) seriesOf(s Signature, tables int) int {
	n := 1
	for _, d := range s.Dimensions {
		switch d {
		case "Function":
		case "Table":
			n *= tables
		default:
			if v := a.DimensionValues[d][s.Name]; v > 0 {
				n *= v
			}
		}
	}
	return n
}

var insightsMetric = regexp.MustCompile(`SELECT \w+\((\w+)\) FROM \w+`)

// Cost computes the monthly bill of a deployment of tables tables.
func Cost(sigs []Signature, st ObservedStack, tables int, p CloudWatchPrices, a CostAssumptions) (MonthlyCost, error) {
	c := MonthlyCost{Tables: tables}
	series := map[string]int{}
	for _, s := range sigs {
		n := a.seriesOf(s, tables)
		c.CustomMetrics += n
		series[s.Name] += n
	}
	c.Metrics = p.metricsCost(c.CustomMetrics)
	c.AlarmMetrics = st.StandardAlarms
	for _, q := range st.InsightsQueries {
		m := insightsMetric.FindStringSubmatch(q)
		if m == nil {
			return c, fmt.Errorf("cost: Metrics Insights query %q names no metric", q)
		}
		if series[m[1]] == 0 {
			return c, fmt.Errorf("cost: Metrics Insights query %q reads %s, which the contract does not list", q, m[1])
		}
		c.AlarmMetrics += series[m[1]]
	}
	c.Alarms = float64(c.AlarmMetrics) * p.AlarmMetric
	c.Dashboards = float64(st.Dashboards) * p.Dashboard
	const gb = 1e9
	t := float64(tables)
	planner := t * a.SweepsPerMonth * a.PlannerBytesPerTableSweep
	ingested := planner + t*a.JobsPerTableMonth*a.BytesPerJob + a.FixedBytesMonth
	scanned := float64(st.LogWidgets) * a.DashboardViewsMonth * planner * a.DashboardIntervalDays / 30
	c.Logs = ingested/gb*(p.LogIngestionGB+a.RetainedMonths*p.LogStorageGBMonth) + scanned/gb*p.LogsInsightsGB
	c.Total = c.Metrics + c.Alarms + c.Dashboards + c.Logs
	return c, nil
}

// CostTable is the README's table of the monthly cost of 10, 100 and
// 1,000 tables.
func CostTable(costs []MonthlyCost) string {
	var b strings.Builder
	b.WriteString("| tables | custom metrics | metrics | alarm metrics | alarms | dashboard | logs | total a month | per table |\n")
	b.WriteString("|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n")
	usd := func(v float64) string { return fmt.Sprintf("$%.2f", math.Round(v*100)/100) }
	for _, c := range costs {
		fmt.Fprintf(&b, "| %s | %d | %s | %d | %s | %s | %s | %s | %s |\n",
			thousands(c.Tables), c.CustomMetrics, usd(c.Metrics), c.AlarmMetrics, usd(c.Alarms), usd(c.Dashboards), usd(c.Logs), usd(c.Total), usd(c.PerTable()))
	}
	return b.String()
}

func thousands(n int) string {
	s := fmt.Sprint(n)
	for i := len(s) - 3; i > 0; i -= 3 {
		s = s[:i] + "," + s[i:]
	}
	return s
}

// PerTableSignatures are the contract's signatures with the dimension
// Table.
func PerTableSignatures(sigs []Signature) []Signature {
	var out []Signature
	for _, s := range sigs {
		if slices.Contains(s.Dimensions, "Table") {
			out = append(out, s)
		}
	}
	return out
}
