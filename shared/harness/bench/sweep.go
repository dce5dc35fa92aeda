package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/events"
	"github.com/icekeeper/icekeeper/shared/catalogs"
	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/harness/awsrequests"
	"github.com/icekeeper/icekeeper/shared/harness/catalogcalls"
	"github.com/icekeeper/icekeeper/shared/harness/localcloud"
	"github.com/icekeeper/icekeeper/shared/harness/s3requests"
	"github.com/icekeeper/icekeeper/shared/harness/stages"
	"github.com/icekeeper/icekeeper/shared/metrics"
	plannerstage "github.com/icekeeper/icekeeper/shared/stage/planner"
)

// Fleet shape of the sweep measurement: tables per namespace (a Glue
// GetTables page holds at most 100 tables, so a namespace is one page) and
// synthetic data files per table (one manifest each).
const (
	SweepTablesPerNamespace = 100
	SweepFilesPerTable      = 20
)

// SweepPoint is one measured scheduled sweep over a fleet of synthetic
// tables (metadata written directly, on the emulator's S3, in a sql
// catalog), run by the planner function's handler in its own process in
// mode active with the default sweep budget.
type SweepPoint struct {
	Tables     int `json:"tables"`
	Namespaces int `json:"namespaces"`
	// Concurrency is the sweep's ICEKEEPER_SWEEP_CONCURRENCY (0: the
	// default); the latencies are those held (Options).
	Concurrency    int           `json:"concurrency,omitempty"`
	S3Latency      time.Duration `json:"s3_latency_ns,omitempty"`
	CatalogLatency time.Duration `json:"catalog_latency_ns,omitempty"`
	AWSLatency     time.Duration `json:"aws_latency_ns,omitempty"`
	// Visited are the distinct tables the sweep's outcome names; Repeated
	// the tables it names more than once (a sweep visits each once).
	// With a planner timeout a sweep short of time is invoked again from
	// its cursor until it has visited every table: Invocations counts
	// them, Deferred the tables the first left, and the counts, times and
	// outcomes below are the invocations' sums.
	Visited     int `json:"visited"`
	Repeated    int `json:"repeated"`
	Invocations int `json:"invocations,omitempty"`
	Deferred    int `json:"deferred,omitempty"`
	// PlannerTimeout is the invocations' deadline (0: none).
	PlannerTimeout time.Duration `json:"planner_timeout_ns,omitempty"`
	// Actions counts the outcome's tables by action, and skips by reason
	// ("skipped:budget_max_jobs").
	Actions map[string]int `json:"actions"`
	Errors  []string       `json:"errors,omitempty"`
	// Catalog counts the dispatcher's catalog calls, and what they are
	// on Glue.
	Catalog catalogcalls.Counts `json:"catalog"`
	Wall    time.Duration       `json:"wall_ns"`
	CPU     time.Duration       `json:"cpu_ns"`
	PeakRSS int64               `json:"peak_rss_bytes"`
	Setup   time.Duration       `json:"setup_ns"`
	// ResponseBytes is the planner function's JSON response; LogBytes
	// what it logged (slog and EMF lines).
	ResponseBytes int   `json:"response_bytes"`
	LogBytes      int64 `json:"log_bytes"`
	// Goroutines and OpenFiles are the planner process's at the end.
	Goroutines int `json:"goroutines"`
	OpenFiles  int `json:"open_files"`
	// AWS are icekeeper's own requests (DynamoDB, SQS, EventBridge, its
	// bucket's reports and plans); TableS3 the tables' metadata requests.
	AWS     awsrequests.Counts `json:"aws"`
	TableS3 s3requests.Counts  `json:"table_s3"`
	// OnS3: the tables live on the emulator's S3 (--storage s3) and
	// TableS3 counted their requests; else on local disk, not counted.
	OnS3 bool `json:"on_s3"`
}

// SweepArgs are the sweep child's arguments: the latency its catalog
// holds for each Glue request (catalogcalls.Counter.SetLatency).
type SweepArgs struct {
	CatalogLatency time.Duration `json:"catalog_latency_ns,omitempty"`
	// Timeout is the invocation's deadline from its start (0: none).
	Timeout time.Duration `json:"timeout_ns,omitempty"`
}

// SweepOut is what the sweep child saw.
type SweepOut struct {
	Visited int `json:"visited"`
	// Deferred are the granted tables the sweep left for the next one
	// for lack of time.
	Deferred      int                 `json:"deferred,omitempty"`
	Repeated      int                 `json:"repeated"`
	Actions       map[string]int      `json:"actions"`
	Errors        []string            `json:"errors,omitempty"`
	Catalog       catalogcalls.Counts `json:"catalog"`
	ResponseBytes int                 `json:"response_bytes"`
	LogBytes      int64               `json:"log_bytes"`
	// Goroutines and OpenFiles are the planner process's at the sweep's
	// end: what its clients keep (idle connections) grows with them.
	Goroutines int `json:"goroutines"`
	OpenFiles  int `json:"open_files"`
}

// sweepChild is one planner invocation on the sweep schedule's event, as
// the Lambda function runs it (handler, dispatcher, catalog, stores).
func sweepChild(ctx context.Context, a SweepArgs) (SweepOut, error) {
	deps, cat, err := childDeps(ctx, stages.PlannerNeeds)
	if err != nil {
		return SweepOut{}, err
	}
	logs := &LogCounter{}
	deps.Log = slog.New(slog.NewJSONHandler(logs, nil))
	deps.Metrics = metrics.NewEmitter(logs, "", nil)
	cc := catalogcalls.Wrap(cat)
	cc.SetLatency(a.CatalogLatency)
	disp, err := deps.Dispatcher(cc)
	if err != nil {
		return SweepOut{}, err
	}
	raw, err := json.Marshal(map[string]any{"version": "0", "id": "bench-sweep", "source": events.SourceSchedule, "detail-type": events.DetailTypeSchedule, "detail": map[string]any{}})
	if err != nil {
		return SweepOut{}, err
	}
	if a.Timeout > 0 {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, a.Timeout)
		defer cancel()
	}
	resp, err := plannerstage.Handler{Dispatch: disp, Metrics: deps.Metrics, Log: deps.Log}.Handle(ctx, raw)
	if err != nil {
		return SweepOut{}, err
	}
	body, err := json.Marshal(resp)
	if err != nil {
		return SweepOut{}, err
	}
	out := SweepOut{Actions: map[string]int{}, ResponseBytes: len(body), LogBytes: logs.Bytes(),
		Catalog: cc.Counts(), Deferred: resp.Deferred}
	seen := map[string]int{}
	for _, o := range resp.Tables {
		seen[o.Table]++
		key := string(o.Action)
		if o.Skip != "" {
			key += ":" + o.Skip
		}
		out.Actions[key]++
	}
	out.Goroutines = runtime.NumGoroutine()
	if fds, err := os.ReadDir("/proc/self/fd"); err == nil {
		out.OpenFiles = len(fds)
	}
	out.Visited = len(seen)
	for _, n := range seen {
		if n > 1 {
			out.Repeated++
		}
	}
	out.Errors = resp.Errors
	if len(out.Errors) > 5 {
		out.Errors = append(out.Errors[:5], fmt.Sprintf("... and %d more", len(resp.Errors)-5))
	}
	return out, nil
}

// sweepNamespaces names the namespaces of a fleet of n tables.
func sweepNamespaces(n int) []string {
	var out []string
	for i := 0; i*SweepTablesPerNamespace < n; i++ {
		out = append(out, fmt.Sprintf("fleet%d_%03d", n, i))
	}
	return out
}

// RunSweeps measures a scheduled sweep over fleets of each size: n opted-in
// synthetic tables of SweepFilesPerTable files each (one manifest), 100 to
// a namespace, every namespace granted, in their own sql catalog with its
// warehouse on the emulator's S3 behind a request counter. The sweep runs
// in a child process through the planner function's handler, its AWS
// requests through o's counter.
func RunSweeps(ctx context.Context, o Options, sizes []int) ([]SweepPoint, error) {
	o.defaults()
	var out []SweepPoint
	pts, err := measureEach(ctx, "sweep of %d tables", sizes, func(cloud *localcloud.Cloud, counter *awsrequests.Proxy, n int) ([]SweepPoint, error) {
		return runSweep(ctx, o, cloud, counter, n)
	})
	for _, p := range pts {
		out = append(out, p...)
	}
	return out, err
}

// measureEach starts the emulator and a counter of the AWS requests sent
// to it, and measures each size with them.
func measureEach[P any](ctx context.Context, what string, sizes []int, measure func(*localcloud.Cloud, *awsrequests.Proxy, int) (P, error)) ([]P, error) {
	cloud, err := localcloud.Listen("127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	defer cloud.Close()
	counter, err := awsrequests.Start(cloud.URL)
	if err != nil {
		return nil, err
	}
	defer counter.Close()
	var out []P
	for _, n := range sizes {
		p, err := measure(cloud, counter, n)
		if err != nil {
			return out, fmt.Errorf(what+": %w", n, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// runSweep writes a fleet of n tables and sweeps it once at each of
// o.SweepConcurrency, each sweep on fresh pipeline resources (its own
// lease and jobs tables and bucket, so that no sweep finds the health
// reports or the cooldowns of the one before), with the latencies held.
func runSweep(ctx context.Context, o Options, cloud *localcloud.Cloud, counter *awsrequests.Proxy, n int) ([]SweepPoint, error) {
	var storage *s3Storage
	if o.Storage == "s3" {
		var err error
		if storage, err = newS3Storage(ctx, cloud); err != nil {
			return nil, err
		}
		defer storage.close()
	}
	cat, cc, err := openCatalogIn(ctx, filepath.Join(o.Dir, fmt.Sprintf("fleet-%d", n)), storage)
	if err != nil {
		return nil, err
	}
	nss := sweepNamespaces(n)
	start := time.Now()
	for i := 0; i < n; i++ {
		if i%1000 == 0 {
			o.progress("sweep at scale: writing table %d of %d", i+1, n)
		}
		ident := table.Identifier{nss[i/SweepTablesPerNamespace], fmt.Sprintf("t%05d", i)}
		if _, err := syntheticTable(ctx, cat, ident, SweepFilesPerTable); err != nil {
			return nil, fmt.Errorf("table %v: %w", ident, err)
		}
	}
	setup := time.Since(start)
	concurrencies := o.SweepConcurrency
	if len(concurrencies) == 0 {
		concurrencies = []int{0}
	}
	var out []SweepPoint
	for _, conc := range concurrencies {
		pt := SweepPoint{Tables: n, Namespaces: len(nss), OnS3: storage != nil, Setup: setup, Concurrency: conc,
			S3Latency: o.S3Latency, CatalogLatency: o.CatalogLatency, AWSLatency: o.AWSLatency}
		if storage == nil {
			pt.S3Latency = 0 // the tables are on local disk; icekeeper's own bucket is held below
		}
		if err := sweepOnce(ctx, o, cloud, counter, storage, cc, nss, &pt); err != nil {
			return out, err
		}
		out = append(out, pt)
	}
	return out, nil
}

// sweepOnce runs one sweep over the fleet in the child and fills in pt.
func sweepOnce(ctx context.Context, o Options, cloud *localcloud.Cloud, counter *awsrequests.Proxy, storage *s3Storage, cc catalogs.Config, nss []string, pt *SweepPoint) error {
	_, env, err := pipelineEnv(ctx, cc, cloud, strings.Join(nss, ","))
	if err != nil {
		return err
	}
	env = append(env, "AWS_ENDPOINT_URL="+counter.URL) // the last one wins
	if pt.Concurrency > 0 {
		env = append(env, config.EnvSweepConcurrency+"="+strconv.Itoa(pt.Concurrency))
	}
	o.progress("sweep at scale: sweeping %d tables, %d at once", pt.Tables, pt.Concurrency)
	counter.Reset()
	if storage != nil {
		storage.counter.Reset()
		storage.counter.SetLatency(o.S3Latency)
		defer storage.counter.SetLatency(0)
	}
	counter.SetLatency(awsrequests.S3, o.S3Latency)
	for _, svc := range []string{awsrequests.DynamoDB, awsrequests.SQS, awsrequests.EventBridge} {
		counter.SetLatency(svc, o.AWSLatency)
	}
	defer func() {
		for _, svc := range []string{awsrequests.S3, awsrequests.DynamoDB, awsrequests.SQS, awsrequests.EventBridge} {
			counter.SetLatency(svc, 0)
		}
	}()
	pt.PlannerTimeout = o.PlannerTimeout
	pt.Actions = map[string]int{}
	for covered := 0; covered < pt.Tables; {
		if pt.Invocations == maxSweepInvocations {
			return fmt.Errorf("%d invocations at a %s timeout covered %d of %d tables", pt.Invocations, o.PlannerTimeout, covered, pt.Tables)
		}
		p, err := runChild(ctx, o.Self, coordinatorEnv(o, env), "sweep", SweepArgs{CatalogLatency: o.CatalogLatency, Timeout: o.PlannerTimeout})
		if err != nil {
			return err
		}
		var so SweepOut
		if err := decodeOut(p, &so); err != nil {
			return err
		}
		if pt.Invocations == 0 {
			pt.Deferred = so.Deferred
		}
		pt.Invocations++
		covered += so.Visited
		pt.Visited += so.Visited
		pt.Repeated += so.Repeated
		pt.Errors = append(pt.Errors, so.Errors...)
		for k, v := range so.Actions {
			pt.Actions[k] += v
		}
		pt.Catalog = pt.Catalog.Add(so.Catalog)
		pt.ResponseBytes, pt.LogBytes = max(pt.ResponseBytes, so.ResponseBytes), pt.LogBytes+so.LogBytes
		pt.Goroutines, pt.OpenFiles = so.Goroutines, so.OpenFiles
		pt.Wall, pt.CPU, pt.PeakRSS = pt.Wall+p.Wall, pt.CPU+p.CPU, max(pt.PeakRSS, p.PeakRSS)
		if so.Deferred == 0 {
			break
		}
	}
	pt.AWS = counter.Counts()
	if storage != nil {
		pt.TableS3 = storage.counter.Counts()
	}
	return nil
}

// maxSweepInvocations bounds the invocations a split sweep is given to
// cover its fleet.
const maxSweepInvocations = 10

// SweepsPerMonth: the stack's sweep schedule runs hourly (README, "the
// hourly sweep"); a month is 730 hours.
const SweepsPerMonth = 730

// PlannerMemoryGB is the planner function's memory in the stack (1024 MB).
const PlannerMemoryGB = 1.0

// sweepCost prices one sweep's line items in dollars.
func sweepCost(p SweepPoint) (items []lineItem) {
	var gets, puts int64
	for op, k := range p.AWS.Calls {
		if name, ok := strings.CutPrefix(op, awsrequests.S3+":"); ok {
			switch s3requests.ClassOf(name) {
			case s3requests.ClassGet:
				gets += k
			case s3requests.ClassPut:
				puts += k
			}
		}
	}
	tGets, tPuts := p.TableS3.Class(s3requests.ClassGet), p.TableS3.Class(s3requests.ClassPut)
	logs := p.LogBytes + LambdaLogLinesBytes
	return []lineItem{
		{"Lambda duration", p.Wall.Seconds() * PlannerMemoryGB * LambdaArmGBSecond, fmt.Sprintf("%.1f s at %.0f MB", p.Wall.Seconds(), PlannerMemoryGB*1024), false},
		{"Lambda requests", float64(max(p.Invocations, 1)) * LambdaRequest, fmt.Sprintf("%d invocations", max(p.Invocations, 1)), false},
		{"S3, tables' metadata", float64(tGets)*S3Get + float64(tPuts)*S3Put, fmt.Sprintf("%d GET-class, %d PUT-class", tGets, tPuts), false},
		{"S3, reports and plans", float64(gets)*S3Get + float64(puts)*S3Put, fmt.Sprintf("%d GET-class, %d PUT-class", gets, puts), false},
		{"DynamoDB", p.AWS.WriteUnits*DynamoDBWriteUnit + p.AWS.ReadUnits*DynamoDBReadUnit, fmt.Sprintf("%.0f write, %.0f read request units (%d calls)", p.AWS.WriteUnits, p.AWS.ReadUnits, p.AWS.Service(awsrequests.DynamoDB)), false},
		{"SQS", float64(p.AWS.SQSRequests) * SQSRequest, fmt.Sprintf("%d requests", p.AWS.SQSRequests), false},
		{"EventBridge", float64(p.AWS.Events) * EventBridgeEvent, fmt.Sprintf("%d events", p.AWS.Events), false},
		{"CloudWatch Logs ingestion", float64(logs) / 1e9 * LogsIngestedGB, fmt.Sprintf("%d bytes", logs), false},
		{"Glue Data Catalog requests (a Glue catalog)", float64(p.Catalog.GlueRequests) * GlueRequest, fmt.Sprintf("%d requests", p.Catalog.GlueRequests), false},
	}
}

// sweeps renders the sweep measurements.
func (r Report) sweeps() string {
	if len(r.Sweeps) == 0 {
		return ""
	}
	var b strings.Builder
	where := "on local disk (the tables' own requests not counted: --storage s3 counts them)"
	if r.Sweeps[0].OnS3 {
		where = "on the emulator's S3 (every request counted)"
	}
	fmt.Fprintf(&b, "### Sweeps at fleet scale\n\nOne scheduled sweep (the planner function's handler on the schedule's event, mode active, the default budget of %d jobs) over n opted-in, granted synthetic tables, %d to a namespace, each with %d data files in one manifest written directly, in a sql catalog with the warehouse %s. Catalog calls: on Glue a ListTables is a GetTables call per 100 tables, a LoadTable a GetTable, a commit a GetTable and an UpdateTable (package catalogcalls).\n\n",
		10, SweepTablesPerNamespace, SweepFilesPerTable, where)
	if p := r.Sweeps[0]; p.S3Latency > 0 || p.CatalogLatency > 0 || p.AWSLatency > 0 {
		fmt.Fprintf(&b, "Each request was held as a real account's would take: S3 %s (the tables' and icekeeper's own), each Glue request a catalog call stands for %s, DynamoDB, SQS and EventBridge %s.\n\n", p.S3Latency, p.CatalogLatency, p.AWSLatency)
	}
	if p := r.Sweeps[0]; p.PlannerTimeout > 0 {
		fmt.Fprintf(&b, "Each planner invocation ended at a %s deadline, as Lambda ends it at the function's timeout: a sweep short of time planned from what it visited and left a cursor, and the planner was invoked again from it until every table was visited; the rows give the invocations' sums.\n\n", p.PlannerTimeout)
	}
	b.WriteString("| tables | at once | visited (repeated) | invocations (tables the first left) | wall s | CPU s | ms per table | peak RSS MB | goroutines, open files at the end | response KB | ListTables | LoadTable | Glue requests | tables' S3 GET | icekeeper S3 PUT | DynamoDB calls | SQS requests | outcome |\n|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|\n")
	for _, p := range r.Sweeps {
		var acts []string
		for k, v := range p.Actions {
			acts = append(acts, fmt.Sprintf("%s %d", k, v))
		}
		sort.Strings(acts)
		conc := "default"
		if p.Concurrency > 0 {
			conc = strconv.Itoa(p.Concurrency)
		}
		fmt.Fprintf(&b, "| %d | %s | %d (%d) | %d (%d) | %.1f | %.1f | %.2f | %.0f | %d, %d | %.0f | %d | %d | %d | %d | %d | %d | %d | %s |\n", p.Tables, conc, p.Visited, p.Repeated, max(p.Invocations, 1), p.Deferred, p.Wall.Seconds(), p.CPU.Seconds(),
			float64(p.Wall.Milliseconds())/float64(max(p.Tables, 1)), float64(p.PeakRSS)/(1<<20), p.Goroutines, p.OpenFiles, float64(p.ResponseBytes)/1024, p.Catalog.Call(catalogcalls.ListTables), p.Catalog.Call(catalogcalls.LoadTable), p.Catalog.GlueRequests,
			p.TableS3.Class(s3requests.ClassGet), p.AWS.Calls["s3:"+s3requests.PutObject], p.AWS.Service(awsrequests.DynamoDB), p.AWS.SQSRequests, strings.Join(acts, ", "))
	}
	fmt.Fprintf(&b, "\nThe bill of one sweep and of a month of hourly sweeps (%d), at US East list prices (bill.go, report.go):\n\n| tables | at once | ", SweepsPerMonth)
	items := sweepCost(r.Sweeps[0])
	for _, it := range items {
		b.WriteString(it.what + " | ")
	}
	b.WriteString("per sweep | per month |\n|---|---|")
	for range items {
		b.WriteString("---|")
	}
	b.WriteString("---|---|\n")
	for _, p := range r.Sweeps {
		conc := "default"
		if p.Concurrency > 0 {
			conc = strconv.Itoa(p.Concurrency)
		}
		fmt.Fprintf(&b, "| %d | %s | ", p.Tables, conc)
		var total float64
		for _, it := range sweepCost(p) {
			total += it.dollars
			fmt.Fprintf(&b, "$%.5f | ", it.dollars)
		}
		fmt.Fprintf(&b, "$%.4f | $%.2f |\n", total, total*SweepsPerMonth)
	}
	b.WriteString("\n")
	return b.String()
}
