package bench

import (
	"cmp"
	"fmt"
	"strings"

	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/fileio"
	"github.com/icekeeper/icekeeper/shared/harness/awsrequests"
	"github.com/icekeeper/icekeeper/shared/harness/s3requests"
)

// Bill is what one icekeeper job used of what AWS bills, beyond the
// rewriters' CPU (Measurement.CPU) and the table files' S3 requests
// (Measurement.Requests).
type Bill struct {
	// Invocations of each function (the task and commit queues' event
	// source mappings deliver one message an invocation).
	PlannerInvocations   int64 `json:"planner_invocations,omitempty"`
	RewriterInvocations  int64 `json:"rewriter_invocations,omitempty"`
	CommitterInvocations int64 `json:"committer_invocations,omitempty"`
	// LogBytes are what the functions logged (slog JSON and EMF lines) to
	// their stdout, which Lambda sends to CloudWatch Logs.
	LogBytes int64 `json:"log_bytes,omitempty"`
	// AWS are the requests the stages sent to every service but the table
	// files' S3 (its descriptors and plans are here).
	AWS *awsrequests.Counts `json:"aws,omitempty"`
	// Groups are the job's file groups: the queues' messages, the
	// descriptors and the job record's updates go with them.
	Groups int `json:"groups,omitempty"`
}

// Invocations is every function invocation of the job.
func (b Bill) Invocations() int64 {
	return b.PlannerInvocations + b.RewriterInvocations + b.CommitterInvocations
}

// List prices, US East (N. Virginia), besides those in report.go. AWS's
// own pricing pages for these services are not among the pages this
// project can read (searched 2026-12-03), so each comes from a secondary
// source that quotes them, with its date; they agree with each other.
const (
	// SQSRequest: $0.40 per million standard-queue requests, each 64 KB
	// of payload a request (cloudburn.io/blog/amazon-sqs-pricing, March
	// 2026; factualminds.com, June 2026).
	SQSRequest = 0.40 / 1e6
	// DynamoDBWriteUnit and DynamoDBReadUnit: on-demand, $0.625 per
	// million write request units and $0.125 per million read request
	// units since the 50% cut of November 2024
	// (airbyte.com/data-engineering-resources/dynamodb-pricing, July 2025).
	DynamoDBWriteUnit = 0.625 / 1e6
	DynamoDBReadUnit  = 0.125 / 1e6
	// EventBridgeEvent: $1.00 per million custom events, each 64 KB an
	// event (cloudburn.io/blog/amazon-eventbridge-pricing, March 2026).
	EventBridgeEvent = 1.00 / 1e6
	// SchedulerInvocation: EventBridge Scheduler's $1.00 per million
	// invocations, after 14 million free a month that the bills here do
	// not subtract (cloudburn.io/blog/amazon-eventbridge-pricing, March
	// 2026). Creating and deleting schedules is not billed.
	SchedulerInvocation = 1.00 / 1e6
	// GlueRequest: AWS Glue Data Catalog's $1.00 per million requests,
	// after the account's first million a month free, which the bills here
	// do not subtract (it is the account's, shared with every other Glue
	// client; aws.amazon.com/lake-formation/pricing's Data Catalog example,
	// read 2026-12-05). Paid only when the tables' catalog is Glue; the
	// harnesses' sql catalog stands in for it, its calls counted as Glue
	// requests by package catalogcalls.
	GlueRequest = 1.00 / 1e6
	// LogsIngestedGB: $0.50 per GB ingested by CloudWatch Logs (standard
	// class), as the README's "What observability costs" reads it.
	LogsIngestedGB = 0.50
	// LambdaLogLinesBytes is what Lambda itself logs per invocation (its
	// START, END and REPORT lines, about 300 bytes; an estimate).
	LambdaLogLinesBytes = 300
	// S3TablesBinpackGB, S3TablesObjects and S3TablesSortGB are S3 Tables'
	// compaction prices as issue 33 quotes AWS's S3 pricing page: $0.005
	// per GB processed and $0.002 per 1,000 objects for binpack, $0.01 per
	// GB for sort or z-order. The stored copies of that page stop before
	// S3 Tables, so they are not checked here.
	S3TablesBinpackGB = 0.005
	S3TablesObjects   = 0.002 / 1000
	S3TablesSortGB    = 0.01
	// LambdaGBPerVCPU is the memory that buys one vCPU on Lambda, in GB:
	// compute costs the same per vCPU-second at every memory size.
	LambdaGBPerVCPU = float64(LambdaMBPerVCPU) / 1024
	// StackCoordinatorMemoryMB is the memory the stack gives the planner
	// and the committer (infra's defaults).
	StackCoordinatorMemoryMB = 1024
)

// lineItem is one part of a job's bill in dollars, and whether it grows
// with the file groups (requests, invocations, logs) rather than with the
// bytes (compute, the table files' requests).
type lineItem struct {
	what     string
	dollars  float64
	how      string
	perGroup bool
}

// billOf prices one icekeeper measurement: every line item of the job.
func billOf(m Measurement, t TableResult, o Options) []lineItem {
	items := []lineItem{rewriterCompute(m, o), coordinatorCompute(m, o),
		{"Lambda requests", float64(m.Bill.Invocations()) * LambdaRequest, fmt.Sprintf("%d invocations", m.Bill.Invocations()), true},
	}
	// On local disk, estimated as the S3 run measures them: a GET per
	// data or delete file read, and each output file a multipart upload
	// (create, parts of fileio.DefaultPartBytes, complete).
	s3Gets := int64(t.InputFiles + t.DeleteFiles)
	part := int64(fileio.DefaultPartBytes)
	s3Puts := int64(m.FilesOut)*2 + (m.OutputB+part-1)/part
	s3How := fmt.Sprintf("the table's files, estimated (local disk): %d GETs, a GET a file read as the S3 run measures; %d PUT-class, %d MiB parts", s3Gets, s3Puts, part>>20)
	if c := m.Requests; c != nil {
		s3Gets, s3Puts = c.Class(s3requests.ClassGet), c.Class(s3requests.ClassPut)
		s3How = fmt.Sprintf("the table's files: %d GET-class, %d PUT-class", s3Gets, s3Puts)
	}
	items = append(items, lineItem{"S3 requests, table files", float64(s3Gets)*S3Get + float64(s3Puts)*S3Put, s3How, false})
	if a := m.Bill.AWS; a != nil {
		gets, puts := S3Classes(*a)
		items = append(items,
			lineItem{"S3 requests, plans and descriptors", float64(gets)*S3Get + float64(puts)*S3Put, fmt.Sprintf("%d GET-class, %d PUT-class", gets, puts), true},
			lineItem{"SQS", float64(a.SQSRequests) * SQSRequest, fmt.Sprintf("%d requests (%d calls)", a.SQSRequests, a.Service(awsrequests.SQS)), true},
			lineItem{"DynamoDB", a.WriteUnits*DynamoDBWriteUnit + a.ReadUnits*DynamoDBReadUnit, fmt.Sprintf("%.0f write and %.0f read request units (%d calls)", a.WriteUnits, a.ReadUnits, a.Service(awsrequests.DynamoDB)), true},
			lineItem{"EventBridge", float64(a.Events) * EventBridgeEvent, fmt.Sprintf("%d events", a.Events), true},
		)
	}
	logs := m.Bill.LogBytes + LambdaLogLinesBytes*m.Bill.Invocations()
	items = append(items, lineItem{"CloudWatch Logs ingestion", float64(logs) / 1e9 * LogsIngestedGB, fmt.Sprintf("%d bytes (the functions' %d, Lambda's lines %d)", logs, m.Bill.LogBytes, LambdaLogLinesBytes*m.Bill.Invocations()), true})
	return items
}

// rewriterCompute prices the rewriters by their time in the handler at
// their memory (what Lambda bills: GB-seconds of duration), or, for a run
// that did not record it, their CPU at a vCPU's memory.
func rewriterCompute(m Measurement, o Options) lineItem {
	mb := cmp.Or(o.RewriterMemoryMB, LambdaMBPerVCPU)
	if m.Billed <= 0 {
		return lineItem{"Lambda compute, rewriters", m.CPU.Seconds() * LambdaGBPerVCPU * LambdaArmGBSecond, fmt.Sprintf("%.1f CPU s at %d MB (a vCPU)", m.CPU.Seconds(), LambdaMBPerVCPU), false}
	}
	return lineItem{"Lambda compute, rewriters", m.Billed.Seconds() * float64(mb) / 1024 * LambdaArmGBSecond,
		fmt.Sprintf("%.1f s in the handler at %d MB (%.1f CPU s)", m.Billed.Seconds(), mb, m.CPU.Seconds()), false}
}

// coordinatorCompute prices the planner's and the committer's calls by
// their wall time at their memory (the stack's 1024 MB unless the run set
// another), or, for a run that did not record it, the harness's CPU.
func coordinatorCompute(m Measurement, o Options) lineItem {
	if m.CoordWall <= 0 {
		return lineItem{"Lambda compute, planner and committer", m.CoordCPU.Seconds() * LambdaGBPerVCPU * LambdaArmGBSecond, fmt.Sprintf("%.1f CPU s, an upper bound: the harness's process, the emulator's serving included", m.CoordCPU.Seconds()), false}
	}
	mb := cmp.Or(o.CoordinatorMemoryMB, StackCoordinatorMemoryMB)
	return lineItem{"Lambda compute, planner and committer", m.CoordWall.Seconds() * float64(mb) / 1024 * LambdaArmGBSecond,
		fmt.Sprintf("%.2f s of wall time at %d MB", m.CoordWall.Seconds(), mb), false}
}

// S3Classes sums the S3 requests among counts (the stages' plans and
// descriptors) by billing class: GET-class and PUT-class.
func S3Classes(counts awsrequests.Counts) (gets, puts int64) {
	for op, n := range counts.Calls {
		name, ok := strings.CutPrefix(op, awsrequests.S3+":")
		if !ok {
			continue
		}
		switch s3requests.ClassOf(name) {
		case s3requests.ClassGet:
			gets += n
		case s3requests.ClassPut:
			puts += n
		}
	}
	return gets, puts
}

// bill renders the whole bill per TB compacted for each table's
// icekeeper run with one rewriter, beside S3 Tables' and Glue's prices.
func (r Report) bill() string {
	var b strings.Builder
	header := false
	for _, t := range r.Tables {
		m, ok := t.Find("icekeeper", 1)
		if !ok || m.Bill.AWS == nil || m.InputB <= 0 {
			continue
		}
		if !header {
			header = true
			b.WriteString("### The whole bill, per TB compacted\n\n")
			b.WriteString("Each line item of one icekeeper job with one rewriter, counted in the run (every AWS request the stages sent went through a counter; the functions' logs were counted as they would reach CloudWatch Logs), priced at US East list prices (`shared/harness/bench/bill.go` cites each), and scaled to 1 TB of the same input: compute and the table files' S3 requests with the bytes (files of the same size), every other item with the file groups, as a deployment makes them (groups of up to 2 GiB, `ICEKEEPER_MAX_GROUP_BYTES`'s default: 466 a TB; the run's groups are smaller, since its tables are). Per-job items (the planner's and the committer's invocations) are scaled with the groups too, so they are overstated: a deployment's job has up to 50 groups. Fixed monthly costs are not in it: CloudWatch's custom metrics, alarms and dashboard (README, \"What observability costs\"), and the event source mappings' long polling of idle queues.\n\n")
		}
		scale := 1e12 / float64(m.InputB)
		perGroup := 1e12 / float64(config.DefaultMaxGroupBytes) / float64(max(m.Bill.Groups, 1))
		items := billOf(m, t, r.Options)
		var total float64
		fmt.Fprintf(&b, "#### %s deletes (v%d): %.0f MB in %d files, %d groups\n\n| item | per TB | counted in the run |\n|---|---|---|\n", t.Kind, formatVersion(t.Kind), float64(m.InputB)/1e6, t.InputFiles, m.Bill.Groups)
		for _, it := range items {
			k := scale
			if it.perGroup {
				k = perGroup
			}
			total += it.dollars * k
			fmt.Fprintf(&b, "| %s | $%.3f | %s |\n", it.what, it.dollars*k, it.how)
		}
		fmt.Fprintf(&b, "| **total** | **$%.2f** | |\n\n", total)
		tb := 1e12 / 1e9
		objects := float64(t.InputFiles) * scale
		fmt.Fprintf(&b, "Against: S3 Tables' managed compaction, binpack: $%.2f per TB ($%.3f a GB processed and $%.3f per 1,000 objects, %.0f objects a TB at this file size); sort or z-order: $%.2f per TB.",
			tb*S3TablesBinpackGB+objects*S3TablesObjects, S3TablesBinpackGB, S3TablesObjects*1000, objects, tb*S3TablesSortGB)
		for _, cores := range []int{2, 1} {
			sp, ok := t.Find(EngineSpark, cores)
			if !ok || sp.InputB <= 0 {
				continue
			}
			// A DPU is 4 vCPUs; Glue bills DPU-hours. Assumed: Glue's
			// Spark spends what this machine's Spark spent per byte, and
			// keeps a DPU's 4 vCPUs busy the whole time (a lower bound of
			// its DPU-hours: startup and idle executors come on top).
			cpuPerTB := sp.CPU.Seconds() * 1e12 / float64(sp.InputB)
			fmt.Fprintf(&b, " AWS Glue's table optimizers at $%.2f per DPU-hour, if Glue's Spark spent what Spark spent here (local[%d]: %.0f CPU s per TB) with a DPU's 4 vCPUs busy throughout: at least $%.2f per TB.", GlueDPUHour, cores, cpuPerTB, cpuPerTB/(4*3600)*GlueDPUHour)
			break
		}
		b.WriteString("\n\n")
	}
	return b.String()
}
