package soak

// The run's outcome: the goals, the alarms that would have fired, the
// bill, and the report as JSON and Markdown.

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/sqs"
	sqstypes "github.com/aws/aws-sdk-go-v2/service/sqs/types"

	"github.com/icekeeper/icekeeper/shared/harness/awsrequests"
	"github.com/icekeeper/icekeeper/shared/harness/bench"
	"github.com/icekeeper/icekeeper/shared/harness/catalogcalls"
)

// Result is what a run measured.
type Result struct {
	Options struct {
		Seed       uint64        `json:"seed"`
		Tables     int           `json:"tables"`
		Namespaces int           `json:"namespaces"`
		Scale      float64       `json:"scale"`
		Duration   time.Duration `json:"duration"`
		// TableProperties are the owner's tuning measured (Options').
		TableProperties map[string]string `json:"table_properties,omitempty"`
	} `json:"options"`
	Tables    []*tableState `json:"tables"`
	Simulated time.Duration `json:"simulated"`
	Wall      time.Duration `json:"wall"`
	Counts
	// JobEnds counts the jobs that did not commit, by kind, state and
	// reason.
	JobEnds map[string]int `json:"job_ends,omitempty"`
	// Functions are each function's invocations.
	Functions map[string]fnStats `json:"functions"`
	// PlannerOutcomes counts the planner's table outcomes: action, skip
	// reason, the plan's outcome.
	PlannerOutcomes map[string]int     `json:"planner_outcomes"`
	AWS             awsrequests.Counts `json:"aws"`
	// Catalog counts the functions' catalog calls and what they are on
	// Glue, the stack's default catalog.
	Catalog catalogcalls.Counts `json:"catalog"`
	// WakeUpsFired are the expiry wake-ups EventBridge Scheduler fired
	// (each an invocation of the planner), WakeUpsPending those still to
	// come at the end.
	WakeUpsFired   int64 `json:"wake_ups_fired"`
	WakeUpsPending int64 `json:"wake_ups_pending"`
	LogBytes       int64 `json:"log_bytes"`
	// Bill is the run's bill by line item, in dollars; PerTableDay the
	// whole of it per table per simulated day.
	Bill        map[string]float64 `json:"bill"`
	PerTableDay float64            `json:"bill_per_table_day"`
	// Alarms are the stack's alarms that would have fired, with when.
	Alarms []string `json:"alarms,omitempty"`
	// Goals are the measured goals, each met or not.
	Goals []Goal `json:"goals"`
	// Workloads are each workload's files and rewrites.
	Workloads []WorkloadStats `json:"workloads"`
	// LeakedFiles break the no-leak invariant; WriterOrphanFiles are the
	// writers' own failed attempts' files.
	LeakedFiles       []string `json:"leaked_files,omitempty"`
	WriterOrphanFiles []string `json:"writer_orphan_files,omitempty"`
	// Failures are every breached invariant (alarms included).
	Failures []string `json:"failures,omitempty"`
	Samples  []Sample `json:"samples"`
}

// Goal is one of the measured goals.
type Goal struct {
	What     string `json:"what"`
	Met      bool   `json:"met"`
	Measured string `json:"measured"`
}

// The stack's default alarm thresholds (infra/settings.go,
// DefaultSettings' Thresholds, and infra/alarms.go's
// ConflictAbortsPerTable). infra is its own module, so they are repeated
// here; each alarm sums its metric over an hour.
const (
	alarmJobsFailed       = 1
	alarmJobsAborted      = 5
	alarmCommitConflicts  = 10
	alarmCommitRetries    = 20
	alarmConflictAbortsPT = 3
)

// Lambda memory of each function (infra/settings.go, DefaultSettings).
var functionMB = map[string]float64{fnPlanner: 1024, fnRewriter: 1769, fnCommitter: 1024}

func (f *fleet) finish(ctx context.Context, r *Result) {
	r.Options.Seed, r.Options.Tables, r.Options.Namespaces, r.Options.Scale, r.Options.Duration = f.o.Seed, f.o.Tables, f.o.Namespaces, f.o.Scale, f.o.Duration
	r.Options.TableProperties = f.o.TableProperties
	r.Tables = f.tables
	r.Samples = f.samples
	last := f.samples[len(f.samples)-1]
	// The last sample was taken after the writers stopped.
	r.Counts = last.Counts
	r.Functions = f.inv.snapshot()
	f.inv.mu.Lock()
	r.PlannerOutcomes = maps.Clone(f.inv.outcomes)
	f.inv.mu.Unlock()
	r.AWS = f.counter.Counts()
	r.Catalog = f.calls.Counts()
	if f.wakeups != nil {
		r.WakeUpsFired, r.WakeUpsPending = f.wakeups.counts()
	}
	r.LogBytes = f.logs.Bytes()
	r.Alarms = append(r.Alarms, f.alarms(ctx, r)...)
	for _, a := range r.Alarms {
		r.Failures = append(r.Failures, "alarm: "+a)
	}
	f.bill(r)
	r.Goals = f.goals(r)
	ws, err := f.workloadStats(ctx, r.Samples)
	if err != nil {
		r.Failures = append(r.Failures, err.Error())
	}
	r.Workloads = ws
}

// alarms evaluates the stack's alarms against what the run emitted, hour
// by simulated hour, and its dead-letter queues and function errors.
func (f *fleet) alarms(ctx context.Context, r *Result) []string {
	var out []string
	type key struct {
		hour  int
		table string
	}
	hourly := map[int]map[string]float64{}
	perTable := map[key]float64{}
	sums := map[string]float64{}
	for _, l := range f.emf.all() {
		h := int(time.Duration(float64(l.at.Sub(f.clk.start))*f.o.Scale) / time.Hour)
		if hourly[h] == nil {
			hourly[h] = map[string]float64{}
		}
		for k, v := range l.values {
			hourly[h][k] += v
			sums[k] += v
		}
		perTable[key{h, l.table}] += l.values["ConflictAborts"]
	}
	hours := make([]int, 0, len(hourly))
	for h := range hourly {
		hours = append(hours, h)
	}
	sort.Ints(hours)
	for _, h := range hours {
		m := hourly[h]
		for _, a := range []struct {
			name, metric string
			at           float64
		}{
			{"JobsFailed", "JobsFailed", alarmJobsFailed},
			{"JobsAborted", "JobsAborted", alarmJobsAborted},
			{"CommitConflictRate", "CommitConflicts", alarmCommitConflicts},
			{"CommitRetryRate", "CommitRetries", alarmCommitRetries},
		} {
			if m[a.metric] >= a.at {
				out = append(out, fmt.Sprintf("%s in simulated hour %d: %s %.0f (threshold %.0f)", a.name, h, a.metric, m[a.metric], a.at))
			}
		}
	}
	for k, v := range perTable {
		if k.table != "" && v >= alarmConflictAbortsPT {
			out = append(out, fmt.Sprintf("ConflictAbortsPerTable in simulated hour %d: %s %.0f (threshold %d)", k.hour, k.table, v, alarmConflictAbortsPT))
		}
	}
	for _, name := range []string{"OptInWithoutGrant", "InvalidProperties", "MaintenanceRefused"} {
		if sums[name] > 0 {
			out = append(out, fmt.Sprintf("%s: %.0f", name, sums[name]))
		}
	}
	for _, fn := range []string{fnPlanner, fnRewriter, fnCommitter} {
		if s := r.Functions[fn]; s.Errors > 0 {
			out = append(out, fmt.Sprintf("%sErrors: %d invocations failed (%s)", fn, s.Errors, strings.Join(s.ErrorSamples, "; ")))
		}
	}
	for _, dlq := range []string{f.res.TaskDLQURL, f.res.CommitDLQURL} {
		n, err := f.dlqDepth(ctx, dlq)
		if err != nil {
			out = append(out, fmt.Sprintf("dead-letter queue of %s: %v", dlq, err))
		} else if n > 0 {
			out = append(out, fmt.Sprintf("dead-letter queue of %s holds %d messages", dlq, n))
		}
	}
	sort.Strings(out)
	return out
}

// bill prices the run as bench's bill prices a job (bench/bill.go cites
// each price): Lambda by invocation and by GB-second of each function's
// memory for the wall time its handler ran (an upper bound on a loaded
// 2-core machine), every AWS request the functions sent as counted,
// the event source mappings' receive and delete of each message delivered
// (they poll on the deployment's behalf and SQS bills those requests;
// their idle long polling is a fixed cost, not here), the logs, and the
// functions' catalog calls as Glue's Data Catalog requests. The
// table files' S3 requests are not in it (the warehouse is on local
// disk): compaction's share of them is in docs/PERFORMANCE.md's per-TB
// bill.
func (f *fleet) bill(r *Result) {
	b := map[string]float64{}
	var invocations, delivered int64
	for fn, s := range r.Functions {
		b["Lambda compute, "+fn] = s.Wall.Seconds() * functionMB[fn] / 1024 * bench.LambdaArmGBSecond
		invocations += s.Invocations
		delivered += s.Messages
	}
	b["Lambda requests"] = float64(invocations) * bench.LambdaRequest
	gets, puts := bench.S3Classes(r.AWS)
	b["S3 requests, plans and descriptors"] = float64(gets)*bench.S3Get + float64(puts)*bench.S3Put
	b["SQS"] = float64(r.AWS.SQSRequests+2*delivered) * bench.SQSRequest
	b["DynamoDB"] = r.AWS.WriteUnits*bench.DynamoDBWriteUnit + r.AWS.ReadUnits*bench.DynamoDBReadUnit
	// A wake-up is a scheduled invocation and the event it puts on the bus.
	b["EventBridge"] = float64(r.AWS.Events+r.WakeUpsFired) * bench.EventBridgeEvent
	if r.WakeUpsFired > 0 {
		b["EventBridge Scheduler"] = float64(r.WakeUpsFired) * bench.SchedulerInvocation
	}
	b["CloudWatch Logs ingestion"] = float64(r.LogBytes+bench.LambdaLogLinesBytes*invocations) / 1e9 * bench.LogsIngestedGB
	// The stack's default catalog is Glue, which bills the functions'
	// catalog calls (a sql catalog stands in for it here).
	b["Glue Data Catalog requests"] = float64(r.Catalog.GlueRequests) * bench.GlueRequest
	var total float64
	for _, v := range b {
		total += v
	}
	r.Bill = b
	days := r.Simulated.Hours() / 24
	if days > 0 && len(f.tables) > 0 {
		r.PerTableDay = total / float64(len(f.tables)) / days
	}
}

// goals checks the measured goals.
func (f *fleet) goals(r *Result) []Goal {
	var worstFile, worstStorage, worstScheduled float64
	var worstFileAt, worstStorageAt, worstScheduledAt string
	var stored, retained, scheduled int64
	for _, s := range r.Samples {
		if s.At < time.Hour {
			continue
		}
		for name, t := range s.Tables {
			if v := t.FileRatio(); v > worstFile {
				worstFile, worstFileAt = v, fmt.Sprintf("%s at %s", name, s.At.Truncate(time.Minute))
			}
			if v := t.StorageRatio(); v > worstStorage {
				worstStorage, worstStorageAt = v, fmt.Sprintf("%s at %s", name, s.At.Truncate(time.Minute))
			}
			if v := t.ScheduledStorageRatio(); v > worstScheduled {
				worstScheduled, worstScheduledAt = v, fmt.Sprintf("%s at %s", name, s.At.Truncate(time.Minute))
			}
		}
	}
	if n := len(r.Samples); n > 0 {
		last := r.Samples[n-1]
		stored, retained, scheduled = last.StoredBytes, last.RetainedBytes, last.ScheduledBytes
	}
	abortShare := float64(r.JobsAborted) / float64(max(r.JobsPlanned, 1))
	rowsOK := true
	for _, fl := range r.Failures {
		if strings.Contains(fl, "its writer's model") {
			rowsOK = false
		}
	}
	lost := 0
	for _, fl := range r.Failures {
		if strings.Contains(fl, "the writer's commit failed") {
			lost++
		}
	}
	return []Goal{
		{"after the first simulated hour every table stays within 2x its optimal file count", worstFile <= 2, fmt.Sprintf("worst %.2fx (%s)", worstFile, worstFileAt)},
		{"writers lose no commit", lost == 0, fmt.Sprintf("%d of %d writers' commits lost; %d retries", lost, r.WriterCommits, r.WriterRetries)},
		{"storage stays within 1.2x of live data plus what retention keeps", worstStorage <= 1.2, fmt.Sprintf("worst %.2fx (%s); the fleet at the end %.2fx", worstStorage, worstStorageAt, float64(stored)/float64(max(retained, 1)))},
		{"the same, retention counted until the next expiry the table's interval allows", worstScheduled <= 1.2, fmt.Sprintf("worst %.2fx (%s); the fleet at the end %.2fx", worstScheduled, worstScheduledAt, float64(stored)/float64(max(scheduled, 1)))},
		{"aborts under 1% of jobs", abortShare < 0.01, fmt.Sprintf("%d of %d jobs (%.2f%%)", r.JobsAborted, r.JobsPlanned, 100*abortShare)},
		{"at the end every table's rows equal its writer's model", rowsOK, fmt.Sprintf("%d tables checked", len(f.tables))},
	}
}

// Write writes the report into dir: soak.json, soak.md and soak.png.
func (r Result) Write(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	b, err := json.MarshalIndent(r, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "soak.json"), b, 0o644); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "soak.md"), []byte(r.Markdown()), 0o644); err != nil {
		return err
	}
	png, err := r.Plot()
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "soak.png"), png, 0o644)
}

// Markdown renders the report.
func (r Result) Markdown() string {
	var b strings.Builder
	counts := map[Workload]int{}
	versions := map[int]int{}
	parted, queried := 0, 0
	for _, t := range r.Tables {
		counts[t.Workload]++
		versions[t.Version]++
		if t.Parts > 0 {
			parted++
		}
		if t.Queried {
			queried++
		}
	}
	fmt.Fprintf(&b, "%d tables (seed %d) in %d namespaces: %d v2, %d v3; %d partitioned; %d queried. Workloads:", r.Options.Tables, r.Options.Seed, r.Options.Namespaces, versions[2], versions[3], parted, queried)
	for _, w := range workloads {
		fmt.Fprintf(&b, " %s %d,", w, counts[w])
	}
	fmt.Fprintf(&b, " over %s simulated (scale %gx) in %s wall.", r.Simulated.Truncate(time.Minute), r.Options.Scale, r.Wall.Round(time.Second))
	for _, k := range slices.Sorted(maps.Keys(r.Options.TableProperties)) {
		fmt.Fprintf(&b, " Every table sets `%s=%s`.", k, r.Options.TableProperties[k])
	}
	b.WriteString("\n\n")
	b.WriteString("| goal | met | measured |\n|---|---|---|\n")
	for _, g := range r.Goals {
		met := "yes"
		if !g.Met {
			met = "**no**"
		}
		fmt.Fprintf(&b, "| %s | %s | %s |\n", g.What, met, g.Measured)
	}
	if len(r.Workloads) > 0 {
		b.WriteString("\nBy workload:\n\n" + workloadsMarkdown(r.Workloads))
	}
	fmt.Fprintf(&b, "\nWriters: %d commits, %d retries because of icekeeper's commits. Jobs: %d planned, %d committed, %d aborted, %d failed; %d concurrent delete files rebased.\n\n",
		r.WriterCommits, r.WriterRetries, r.JobsPlanned, r.JobsCommitted, r.JobsAborted, r.JobsFailed, r.DeletesRebased)
	if r.WakeUpsFired+r.WakeUpsPending > 0 {
		fmt.Fprintf(&b, "Expiry wake-ups: %d fired, %d still to come at the end.\n\n", r.WakeUpsFired, r.WakeUpsPending)
	}
	if len(r.JobEnds) > 0 {
		b.WriteString("Jobs that did not commit:\n\n")
		for _, k := range slices.Sorted(maps.Keys(r.JobEnds)) {
			fmt.Fprintf(&b, "- %d: %s\n", r.JobEnds[k], k)
		}
		b.WriteString("\n")
	}
	b.WriteString("| function | invocations | errors | handler wall time |\n|---|---|---|---|\n")
	for _, fn := range []string{fnPlanner, fnRewriter, fnCommitter} {
		s := r.Functions[fn]
		fmt.Fprintf(&b, "| %s | %d | %d | %s |\n", fn, s.Invocations, s.Errors, s.Wall.Round(time.Millisecond))
	}
	outcomes := slices.Sorted(maps.Keys(r.PlannerOutcomes))
	b.WriteString("\nThe planner's table outcomes:")
	for i, k := range outcomes {
		sep := ","
		if i == 0 {
			sep = ""
		}
		fmt.Fprintf(&b, "%s %s %d", sep, k, r.PlannerOutcomes[k])
	}
	b.WriteString(".\n")
	methods := slices.Sorted(maps.Keys(r.Catalog.Calls))
	b.WriteString("\nThe functions' catalog calls:")
	for i, k := range methods {
		sep := ","
		if i == 0 {
			sep = ""
		}
		fmt.Fprintf(&b, "%s %s %d", sep, k, r.Catalog.Calls[k])
	}
	fmt.Fprintf(&b, "; on Glue, the stack's default catalog, %d Data Catalog requests.\n", r.Catalog.GlueRequests)
	var total float64
	items := make([]string, 0, len(r.Bill))
	for k := range r.Bill {
		items = append(items, k)
	}
	sort.Strings(items)
	b.WriteString("\n| bill item | whole run | per table per day |\n|---|---|---|\n")
	days := r.Simulated.Hours() / 24
	for _, k := range items {
		total += r.Bill[k]
		fmt.Fprintf(&b, "| %s | $%.4f | $%.6f |\n", k, r.Bill[k], r.Bill[k]/float64(max(len(r.Tables), 1))/max(days, 1e-9))
	}
	fmt.Fprintf(&b, "| **total** | **$%.4f** | **$%.6f** |\n\n", total, r.PerTableDay)
	writeS3Kinds(&b, r.AWS.S3Keys)
	if len(r.Samples) > 0 {
		s := r.Samples[len(r.Samples)-1]
		fmt.Fprintf(&b, "At the end: %d data files (%.2fx the optimum at the median, %.2fx at the 90th percentile, %.2fx the worst), %d delete files, %.1f MB stored for %.1f MB live, %.1f MB retained and %.1f MB retained until the next expiry the interval allows.\n\n",
			s.DataFiles, s.FileRatioMedian, s.FileRatioP90, s.FileRatioMax, s.DeleteFiles, float64(s.StoredBytes)/1e6, float64(s.LiveBytes)/1e6, float64(s.RetainedBytes)/1e6, float64(s.ScheduledBytes)/1e6)
	}
	fmt.Fprintf(&b, "Writers' own orphaned files (commit attempts that lost to icekeeper's commits): %d.\n\n", len(r.WriterOrphanFiles))
	if len(r.Alarms) == 0 {
		b.WriteString("Alarms that would have fired: none.\n\n")
	} else {
		b.WriteString("Alarms that would have fired:\n\n")
		for _, a := range r.Alarms {
			fmt.Fprintf(&b, "- %s\n", a)
		}
		b.WriteString("\n")
	}
	if len(r.Failures) == 0 {
		b.WriteString("Failures: none.\n")
	} else {
		b.WriteString("Failures:\n\n")
		for i, fl := range r.Failures {
			if i == 20 {
				fmt.Fprintf(&b, "- ... and %d more\n", len(r.Failures)-20)
				break
			}
			fmt.Fprintf(&b, "- %s\n", fl)
		}
	}
	return b.String()
}

// dlqDepth is how many messages a dead-letter queue holds.
func (f *fleet) dlqDepth(ctx context.Context, url string) (int, error) {
	out, err := f.cloud.Clients.SQS.GetQueueAttributes(ctx, &sqs.GetQueueAttributesInput{QueueUrl: aws.String(url), AttributeNames: []sqstypes.QueueAttributeName{sqstypes.QueueAttributeNameApproximateNumberOfMessages}})
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(out.Attributes[string(sqstypes.QueueAttributeNameApproximateNumberOfMessages)])
}

// writeS3Kinds lists the functions' S3 requests by the kind of object
// they name, the most first (at most 12), to show which objects the S3
// bill item pays for.
func writeS3Kinds(b *strings.Builder, kinds map[string]int64) {
	if len(kinds) == 0 {
		return
	}
	names := make([]string, 0, len(kinds))
	for k := range kinds {
		names = append(names, k)
	}
	sort.Slice(names, func(i, j int) bool {
		if kinds[names[i]] != kinds[names[j]] {
			return kinds[names[i]] > kinds[names[j]]
		}
		return names[i] < names[j]
	})
	b.WriteString("The functions' S3 requests by the kind of object (the most first):\n\n| request | count |\n|---|---|\n")
	for i, k := range names {
		if i == 12 {
			fmt.Fprintf(b, "| %d kinds more | |\n", len(names)-12)
			break
		}
		fmt.Fprintf(b, "| %s | %d |\n", k, kinds[k])
	}
	b.WriteString("\n")
}
