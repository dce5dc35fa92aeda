package tests

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/eventbridge"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/icekeeper/icekeeper/shared/audit"
	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/harness/fingerprint"
	"github.com/icekeeper/icekeeper/shared/harness/sampletable"
	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/metrics"
	"github.com/icekeeper/icekeeper/shared/optin"
	"github.com/icekeeper/icekeeper/shared/plan"
	plannerstage "github.com/icekeeper/icekeeper/shared/stage/planner"
	"github.com/icekeeper/icekeeper/shared/trigger"
)

// recordingEventBridge forwards to the emulator's EventBridge and records
// what was put. The emulator delivers EventBridge targets only to
// localhost:4566, so a test cannot route the audit event to a queue and
// read it back; it checks what the real client sent and that the emulator
// accepted it.
type recordingEventBridge struct {
	mu      sync.Mutex
	next    audit.EventBridge
	entries []map[string]string
}

func (r *recordingEventBridge) PutEvents(ctx context.Context, in *eventbridge.PutEventsInput, opts ...func(*eventbridge.Options)) (*eventbridge.PutEventsOutput, error) {
	out, err := r.next.PutEvents(ctx, in, opts...)
	if err == nil {
		r.mu.Lock()
		for _, e := range in.Entries {
			r.entries = append(r.entries, map[string]string{"source": aws.ToString(e.Source), "detail-type": aws.ToString(e.DetailType), "detail": aws.ToString(e.Detail)})
		}
		r.mu.Unlock()
	}
	return out, err
}

func (r *recordingEventBridge) detailTypes() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []string
	for _, e := range r.entries {
		out = append(out, e["detail-type"]+" "+e["detail"])
	}
	return out
}

// syncBuffer collects EMF lines.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	recordEMF(p)
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// len is how many bytes were written.
func (s *syncBuffer) len() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Len()
}

// metricTotals sums each metric over every EMF line, by name and, when
// present, the Table member ("name" and "name/table"): the values
// published as CloudWatch metrics (named in a directive) and those the
// line carries for the log only (metrics.LogOnly), every numeric member.
func (s *syncBuffer) metricTotals(t *testing.T) map[string]float64 {
	s.mu.Lock()
	defer s.mu.Unlock()
	out := map[string]float64{}
	for _, line := range strings.Split(strings.TrimSpace(s.b.String()), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		if err := json.Unmarshal([]byte(line), &m); err != nil {
			t.Fatalf("EMF line is not JSON: %q", line)
		}
		for name, raw := range m {
			v, ok := raw.(float64)
			if !ok {
				continue
			}
			out[name] += v
			if tbl, ok := m["Table"].(string); ok {
				out[name+"/"+tbl] += v
			}
		}
	}
	return out
}

type dispatchEnv struct {
	*env
	events  *recordingEventBridge
	planner plannerstage.Handler
}

func setupDispatch(t *testing.T, mode config.Mode, grants string, mutate ...func(*config.Config)) *dispatchEnv {
	t.Helper()
	e := setup(t, append([]func(*config.Config){func(c *config.Config) { c.Mode, c.Grants = mode, grants }}, mutate...)...)
	d := &dispatchEnv{env: e, events: &recordingEventBridge{next: cloud.Clients.Events}}
	e.deps.Events = d.events
	disp, err := e.deps.Dispatcher(e.cat)
	if err != nil {
		t.Fatalf("dispatcher: %v", err)
	}
	// The committer announces a compaction's next job on the same bus.
	if e.committer, err = e.deps.Committer(e.cat); err != nil {
		t.Fatalf("committer: %v", err)
	}
	d.planner = plannerstage.Handler{Dispatch: disp, Metrics: e.deps.Metrics, Log: e.deps.Log}
	return d
}

var optedIn = map[string]string{optin.PropertyEnabled: "true"}

// commitEventRunsJob hands the planner a commit event of the table, wants
// a job of kind planned, runs it through the rewriters and the committer,
// and wants it committed with the rows want.
func (d *dispatchEnv) commitEventRunsJob(name string, kind jobs.Kind, want fingerprint.Fingerprint) trigger.TableOutcome {
	d.t.Helper()
	o := outcomeOf(d.t, d.handle(commitEvent(name)), name)
	if o.Action != trigger.ActionPlanned || d.job(o.Plan.JobID).Kind != kind {
		d.t.Fatalf("want a job of kind %s: %+v", kind, o)
	}
	d.drainTasks()
	d.drainCommits()
	d.requireCommitted(o.Plan.JobID, want)
	return o
}

func (d *dispatchEnv) createNamed(name string, o sampletable.Options) *table.Table {
	d.t.Helper()
	ident := strings.Split(name, ".")
	tbl, err := sampletable.Create(d.ctx, d.cat, ident, o)
	if err != nil {
		d.t.Fatalf("create %s: %v", name, err)
	}
	return tbl
}

func commitEvent(table string) []byte {
	ns, name, _ := strings.Cut(table, ".")
	b, _ := json.Marshal(map[string]any{"version": "0", "id": "e-" + table, "source": "icekeeper", "detail-type": "Iceberg Table Committed",
		"detail": map[string]string{"namespace": ns, "table": name}})
	return b
}

func (d *dispatchEnv) handle(raw []byte) plannerstage.Response {
	d.t.Helper()
	resp, err := d.planner.Handle(asFunction(d.ctx, "Planner"), raw)
	if err != nil {
		d.t.Fatalf("planner: %v (%+v)", err, resp)
	}
	return resp
}

func outcomeOf(t *testing.T, resp plannerstage.Response, table string) trigger.TableOutcome {
	t.Helper()
	for _, o := range resp.Tables {
		if o.Table == table {
			return o
		}
	}
	t.Fatalf("no outcome for %s in %+v", table, resp)
	return trigger.TableOutcome{}
}

func withProps(o sampletable.Options, props map[string]string) sampletable.Options {
	o.Properties = props
	return o
}

// TestTriggers_SampleEventsReachTheirTable: each sample event in events/
// leads to its table (demo.events) being planned.
func TestTriggers_SampleEventsReachTheirTable(t *testing.T) {
	// The S3 sample names an s3:// location: see
	// TestTriggers_S3EventResolvesTheTableByLocation.
	for _, file := range []string{"glue-table-state-change.json", "glue-database-state-change.json", "icekeeper-commit.json", "icekeeper-continue.json"} {
		t.Run(file, func(t *testing.T) {
			d := setupDispatch(t, config.ModeActive, "demo")
			d.createNamed("demo.events", withProps(smallTable, optedIn))
			raw := mustRead(t, filepath.Join("..", "events", file))
			resp := d.handle(raw)
			o := outcomeOf(t, resp, "demo.events")
			if o.Action != trigger.ActionPlanned || o.Plan == nil || o.Plan.JobID == "" {
				t.Fatalf("outcome %+v", o)
			}
		})
	}
}

// TestTriggers_S3EventResolvesTheTableByLocation keeps the table in the
// emulator's S3 and sends the S3 notification its commit would cause.
func TestTriggers_S3EventResolvesTheTableByLocation(t *testing.T) {
	bucket := testBucket(t, "lake")
	if _, err := cloud.Clients.S3.CreateBucket(t.Context(), &s3.CreateBucketInput{Bucket: aws.String(bucket)}); err != nil {
		t.Fatal(err)
	}
	d := setupDispatch(t, config.ModeActive, "demo", func(c *config.Config) {
		c.Catalog.Warehouse = "s3://" + bucket + "/warehouse"
		c.Catalog.Properties = map[string]string{"s3.endpoint": cloud.URL, "s3.region": "us-east-1", "s3.access-key-id": "test", "s3.secret-access-key": "test", "s3.force-virtual-addressing": "false"}
	})
	tbl := d.createNamed("demo.events", withProps(smallTable, optedIn))
	raw, err := os.ReadFile("../events/s3-metadata-object-created.json")
	if err != nil {
		t.Fatal(err)
	}
	key := strings.TrimPrefix(tbl.Location(), "s3://"+bucket+"/") + "/metadata/00009-abc.metadata.json"
	var ev map[string]any
	if err := json.Unmarshal(raw, &ev); err != nil {
		t.Fatal(err)
	}
	detail := ev["detail"].(map[string]any)
	detail["bucket"] = map[string]any{"name": bucket}
	detail["object"].(map[string]any)["key"] = key
	raw, _ = json.Marshal(ev)
	o := outcomeOf(t, d.handle(raw), "demo.events")
	if o.Action != trigger.ActionPlanned {
		t.Fatalf("outcome %+v", o)
	}
}

// TestTriggers_GluePartitionNoiseAndDropsPlanNothing: a Glue partition
// change on an opted-in, granted table and the drop of a table are
// acknowledged, counted as ignored, and neither reads nor plans the table.
func TestTriggers_GluePartitionNoiseAndDropsPlanNothing(t *testing.T) {
	d := setupDispatch(t, config.ModeActive, "demo")
	d.createNamed("demo.events", withProps(smallTable, optedIn))
	for _, raw := range []string{
		`{"source":"aws.glue","detail-type":"Glue Data Catalog Table State Change","detail":{"databaseName":"demo","tableName":"events","typeOfChange":"BatchCreatePartition","changedPartitions":["[x]"]}}`,
		`{"source":"aws.glue","detail-type":"Glue Data Catalog Database State Change","detail":{"databaseName":"demo","changedTables":["events"],"typeOfChange":"DeleteTable"}}`,
	} {
		resp := d.handle([]byte(raw))
		if resp.Rejected != "" {
			t.Fatalf("rejected: %s", resp.Rejected)
		}
		for _, o := range resp.Tables {
			if o.Action == trigger.ActionPlanned {
				t.Fatalf("planned on %s", raw)
			}
		}
	}
	if got := d.metrics.metricTotals(t)["TriggersIgnored"]; got != 2 {
		t.Fatalf("TriggersIgnored = %v, want 2", got)
	}
	if got := d.metrics.metricTotals(t)["JobsPlanned"]; got != 0 {
		t.Fatalf("JobsPlanned = %v, want 0", got)
	}
}

// TestTriggers_EventForATableWithAJobInFlightCountsALeaseSkip: a commit
// event arrives while a job holds the table's lease; the planner skips the
// table and counts it (LeaseSkips), planning nothing.
func TestTriggers_EventForATableWithAJobInFlightCountsALeaseSkip(t *testing.T) {
	d := setupDispatch(t, config.ModeActive, "demo")
	d.createNamed("demo.events", withProps(smallTable, optedIn))
	if r := d.plan(); r.Outcome != plan.OutcomePlanned {
		t.Fatalf("plan: %s", r.Outcome)
	}
	o := outcomeOf(t, d.handle(commitEvent("demo.events")), "demo.events")
	if o.Action == trigger.ActionPlanned || o.Plan == nil || o.Plan.Outcome != plan.OutcomeLeaseHeld {
		t.Fatalf("outcome %+v, want the lease held", o)
	}
	if got := d.metrics.metricTotals(t)["LeaseSkips"]; got != 1 {
		t.Fatalf("LeaseSkips = %v, want 1", got)
	}
}

// TestTriggers_OnlyAPlannedJobSpendsTheCooldown: an event for a granted
// table that is not opted in yet is skipped without using up the table's
// cooldown, so once the owner opts in the next event plans it (instead of
// "cooldown" for a table that was never planned).
func TestTriggers_OnlyAPlannedJobSpendsTheCooldown(t *testing.T) {
	d := setupDispatch(t, config.ModeActive, "demo")
	tbl := d.createNamed("demo.events", smallTable)
	if o := outcomeOf(t, d.handle(commitEvent("demo.events")), "demo.events"); o.Skip != trigger.SkipNotOptedIn {
		t.Fatalf("before opting in: %+v, want not_opted_in", o)
	}
	txn := tbl.NewTransaction()
	if err := txn.SetProperties(optedIn); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(d.ctx); err != nil {
		t.Fatal(err)
	}
	if o := outcomeOf(t, d.handle(commitEvent("demo.events")), "demo.events"); o.Action != trigger.ActionPlanned {
		t.Fatalf("after opting in: %+v, want planned", o)
	}
	if o := outcomeOf(t, d.handle(commitEvent("demo.events")), "demo.events"); o.Skip != trigger.SkipCooldown {
		t.Fatalf("right after the job: %+v, want cooldown", o)
	}
}

// TestTriggers_MalformedEventIsRejectedAndCounted.
func TestTriggers_MalformedEventIsRejectedAndCounted(t *testing.T) {
	d := setupDispatch(t, config.ModeActive, "demo")
	resp := d.handle([]byte(`{"source":"aws.glue","detail-type":"Glue Data Catalog Table State Change","detail":{"changedTables":["t"]}}`))
	if resp.Rejected == "" || len(resp.Tables) != 0 {
		t.Fatalf("resp %+v", resp)
	}
	if got := d.metrics.metricTotals(t)["EventsRejected"]; got != 1 {
		t.Fatalf("EventsRejected = %v, want 1", got)
	}
}

// TestTriggers_BurstOfCommitEventsCoalescesIntoOnePlanning: 100 commit
// events for one table, delivered concurrently to two planner instances,
// make exactly one planning; the rest are counted as coalesced.
func TestTriggers_BurstOfCommitEventsCoalescesIntoOnePlanning(t *testing.T) {
	d := setupDispatch(t, config.ModeActive, "demo")
	d.createNamed("demo.events", withProps(smallTable, optedIn))
	other, err := d.deps.Dispatcher(d.cat)
	if err != nil {
		t.Fatal(err)
	}
	planners := []plannerstage.Handler{d.planner, {Dispatch: other, Metrics: d.deps.Metrics}}
	var mu sync.Mutex
	actions := map[string]int{}
	var wg sync.WaitGroup
	for i := 0; i < 100; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			resp, err := planners[i%2].Handle(d.ctx, commitEvent("demo.events"))
			if err != nil {
				t.Errorf("event %d: %v", i, err)
				return
			}
			mu.Lock()
			for _, o := range resp.Tables {
				actions[string(o.Action)+":"+o.Skip]++
			}
			mu.Unlock()
		}()
	}
	wg.Wait()
	if actions["planned:"] != 1 || actions["skipped:cooldown"] != 99 {
		t.Fatalf("actions %v, want 1 planned and 99 coalesced", actions)
	}
	if got := d.metrics.metricTotals(t)["JobsPlanned"]; got != 1 {
		t.Fatalf("JobsPlanned = %v", got)
	}
}

// TestTriggers_DoubleKeyOptIn covers the four cases of the two keys; the
// property without a grant is loud: an audit event and a metric.
func TestTriggers_DoubleKeyOptIn(t *testing.T) {
	d := setupDispatch(t, config.ModeActive, "sales, ops.audit")
	d.createNamed("sales.orders", withProps(smallTable, optedIn)) // both keys
	d.createNamed("sales.quiet", smallTable)                      // grant only
	d.createNamed("hr.people", withProps(smallTable, optedIn))    // property only
	d.createNamed("hr.salaries", smallTable)                      // neither
	tests := map[string]struct {
		action trigger.Action
		skip   string
	}{
		"sales.orders": {trigger.ActionPlanned, ""},
		"sales.quiet":  {trigger.ActionSkipped, trigger.SkipNotOptedIn},
		"hr.people":    {trigger.ActionSkipped, trigger.SkipOptInWithoutGrant},
		"hr.salaries":  {trigger.ActionSkipped, trigger.SkipNotGranted},
	}
	for name, want := range tests {
		o := outcomeOf(t, d.handle(commitEvent(name)), name)
		if o.Action != want.action || o.Skip != want.skip {
			t.Errorf("%s: %+v, want %s %s", name, o, want.action, want.skip)
		}
	}
	// Loud every time it is seen.
	d.handle(commitEvent("hr.people"))
	put := d.events.detailTypes()
	if len(put) != 2 || !strings.HasPrefix(put[0], audit.DetailOptInWithoutGrant) || !strings.Contains(put[0], `"table":"hr.people"`) {
		t.Fatalf("audit events %v, want two opt-in-without-grant events for hr.people", put)
	}
	m := d.metrics.metricTotals(t)
	if m["OptInWithoutGrant/hr.people"] != 2 || m["OptInWithoutGrant"] != 2 {
		t.Fatalf("OptInWithoutGrant metrics %v", m)
	}
}

// TestTriggers_CredentialShapedPropertyIsRejected.
func TestTriggers_CredentialShapedPropertyIsRejected(t *testing.T) {
	d := setupDispatch(t, config.ModeActive, "sales")
	d.createNamed("sales.orders", withProps(smallTable, map[string]string{optin.PropertyEnabled: "true", "icekeeper.s3.secret-access-key": "hunter2"}))
	o := outcomeOf(t, d.handle(commitEvent("sales.orders")), "sales.orders")
	if o.Skip != trigger.SkipInvalidProperties || !strings.Contains(o.Reason, "icekeeper.s3.secret-access-key") {
		t.Fatalf("outcome %+v", o)
	}
	if put := d.events.detailTypes(); len(put) != 1 || !strings.HasPrefix(put[0], audit.DetailInvalidProperties) || strings.Contains(put[0], "hunter2") {
		t.Fatalf("audit events %v (and the value must never be echoed)", put)
	}
}

// TestTriggers_AdvisoryModeWritesNothingToTheTable: advisory mode reads
// metadata and publishes health (EMF gauges, a report in icekeeper's
// bucket) but makes no snapshot and writes no object under the table's
// location.
func TestTriggers_AdvisoryModeWritesNothingToTheTable(t *testing.T) {
	d := setupDispatch(t, config.ModeAdvisory, "demo")
	tbl := d.createNamed("demo.events", withProps(smallTable, optedIn))
	snap := tbl.CurrentSnapshot().SnapshotID
	before := filesUnder(t, strings.TrimPrefix(tbl.Location(), "file://"))

	for _, raw := range [][]byte{commitEvent("demo.events"), mustRead(t, "../events/scheduled.json")} {
		o := outcomeOf(t, d.handle(raw), "demo.events")
		if o.Action != trigger.ActionAssessed || o.ReportKey == "" || o.Plan != nil {
			t.Fatalf("outcome %+v", o)
		}
		report, err := d.deps.Blobs.Get(d.ctx, o.ReportKey)
		if err != nil || !strings.Contains(string(report), `"recommendations"`) {
			t.Fatalf("report %s: %v", report, err)
		}
	}
	after := filesUnder(t, strings.TrimPrefix(tbl.Location(), "file://"))
	if strings.Join(before, "\n") != strings.Join(after, "\n") {
		t.Fatalf("advisory mode wrote under the table location:\nbefore %v\nafter  %v", before, after)
	}
	if got := d.load().CurrentSnapshot().SnapshotID; got != snap {
		t.Fatalf("advisory mode committed: %d -> %d", snap, got)
	}
	if m := d.metrics.metricTotals(t); m["HealthScore/demo.events"] == 0 || m["DataFiles/demo.events"] == 0 {
		t.Fatalf("health gauges missing: %v", m)
	}
}

// TestTriggers_ModeOffDoesNothing: no catalog, no table access at all.
func TestTriggers_ModeOffDoesNothing(t *testing.T) {
	e := setup(t)
	deps := e.deps
	deps.Config.Mode = config.ModeOff
	deps.Metrics = metrics.NewEmitter(io.Discard, metrics.DefaultNamespace, time.Now)
	disp, err := deps.Dispatcher(nil)
	if err != nil {
		t.Fatal(err)
	}
	resp, err := plannerstage.Handler{Dispatch: disp, Log: e.deps.Log}.Handle(e.ctx, commitEvent("demo.events"))
	if err != nil || len(resp.Tables) != 1 || resp.Tables[0].Skip != trigger.SkipModeOff {
		t.Fatalf("resp %+v err %v", resp, err)
	}
}

// TestTriggers_SweepRanksByScoreWithinItsBudget: a sweep over three
// opted-in tables with different debt plans the two worst (the job budget
// is two) and skips the third, saying why; a byte budget smaller than any
// table's compaction skips them all.
func TestTriggers_SweepRanksByScoreWithinItsBudget(t *testing.T) {
	d := setupDispatch(t, config.ModeActive, "lake", func(c *config.Config) { c.SweepMaxJobs = 2 })
	d.createNamed("lake.mild", withProps(sampletable.Options{FormatVersion: 2, Partitions: 1, Files: 6, RowsPerFile: 50}, optedIn))
	d.createNamed("lake.bad", withProps(sampletable.Options{FormatVersion: 2, Partitions: 2, Files: 12, RowsPerFile: 50, PositionDeletes: true, EqualityDeletes: true}, optedIn))
	d.createNamed("lake.worse", withProps(sampletable.Options{FormatVersion: 2, Partitions: 4, Files: 20, RowsPerFile: 50, PositionDeletes: true, EqualityDeletes: true}, optedIn))
	d.createNamed("lake.private", sampletable.Options{FormatVersion: 2, Partitions: 1, Files: 30, RowsPerFile: 10})

	resp := d.handle(mustRead(t, "../events/scheduled.json"))
	// The two highest scores are planned; the lowest is over the budget.
	var eligible []trigger.TableOutcome
	for _, o := range resp.Tables {
		if o.Table != "lake.private" {
			eligible = append(eligible, o)
		}
	}
	sort.Slice(eligible, func(i, j int) bool { return eligible[i].Score > eligible[j].Score })
	if len(eligible) != 3 || eligible[0].Score == eligible[2].Score || eligible[1].Score == eligible[2].Score {
		t.Fatalf("want three eligible tables with the lowest score distinct: %+v", eligible)
	}
	for i, o := range eligible {
		if i < 2 && o.Action != trigger.ActionPlanned {
			t.Errorf("rank %d %s (score %v): %+v, want planned", i, o.Table, o.Score, o)
		}
		if i == 2 && o.Skip != trigger.SkipBudgetJobs {
			t.Errorf("rank 3 %s (score %v): %+v, want skipped for the job budget", o.Table, o.Score, o)
		}
	}
	if o := outcomeOf(t, resp, "lake.private"); o.Skip != trigger.SkipNotOptedIn {
		t.Errorf("lake.private: %+v", o)
	}
	if m := d.metrics.metricTotals(t); m["TablesSkipped"] != 2 {
		t.Errorf("TablesSkipped = %v, want 2", m["TablesSkipped"])
	}
	names := make([]string, 0, len(resp.Tables))
	for _, o := range resp.Tables {
		names = append(names, o.Table)
	}
	sort.Strings(names)
	if strings.Join(names, ",") != "lake.bad,lake.mild,lake.private,lake.worse" {
		t.Fatalf("sweep visited %v", names)
	}

	tight := setupDispatch(t, config.ModeActive, "lake", func(c *config.Config) { c.SweepMaxBytes = 1 })
	tight.createNamed("lake.bad", withProps(sampletable.Options{FormatVersion: 2, Partitions: 1, Files: 12, RowsPerFile: 50}, optedIn))
	if o := outcomeOf(t, tight.handle(mustRead(t, "../events/scheduled.json")), "lake.bad"); o.Skip != trigger.SkipBudgetBytes {
		t.Fatalf("byte budget: %+v", o)
	}
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func filesUnder(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.Walk(root, func(p string, info os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		if !info.IsDir() {
			out = append(out, p+" "+info.ModTime().String())
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(out)
	return out
}

// deadlineOnly is a context whose Deadline is at but which that deadline
// never cancels: the planner's invocation deadline as a sweep sees it,
// without its end cutting the test's own calls short.
type deadlineOnly struct {
	context.Context
	at time.Time
}

func (c deadlineOnly) Deadline() (time.Time, bool) { return c.at, true }

// heldCatalog holds every load for a while (S3's and Glue's latency, and
// many tables) and records the loads in order.
type heldCatalog struct {
	catalog.Catalog
	hold  time.Duration
	mu    sync.Mutex
	loads []string
}

func (c *heldCatalog) LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error) {
	time.Sleep(c.hold)
	c.mu.Lock()
	c.loads = append(c.loads, strings.Join(ident, "."))
	c.mu.Unlock()
	return c.Catalog.LoadTable(ctx, ident)
}

// TestTriggers_ASweepShortOfTimeLeavesACursorTheNextStartsFrom: a sweep
// whose invocation would end before it visited every granted table stops
// visiting with a third of its time left, says how many tables it left
// (the response and the SweepTablesDeferred metric), and writes the
// cursor to icekeeper's bucket (sweeps/schedule.json, through the
// planner's IAM policy); the next sweep starts at the first table it
// left. Loads are held 150 ms and the invocation has 900 ms: visits
// start while 300 ms are left, so the sixth, which cannot start before
// 750 ms, is always left, and the first always starts.
func TestTriggers_ASweepShortOfTimeLeavesACursorTheNextStartsFrom(t *testing.T) {
	d := setupDispatch(t, config.ModeActive, "lake", func(c *config.Config) { c.SweepConcurrency = 1 })
	var all []string
	for i := range 6 {
		name := fmt.Sprintf("lake.t%d", i)
		d.createNamed(name, sampletable.Options{FormatVersion: 2, Partitions: 1, Files: 1, RowsPerFile: 10})
		all = append(all, name)
	}
	slow := &heldCatalog{Catalog: d.cat, hold: 150 * time.Millisecond}
	disp, err := d.deps.Dispatcher(slow)
	if err != nil {
		t.Fatal(err)
	}
	h := plannerstage.Handler{Dispatch: disp, Metrics: d.deps.Metrics, Log: d.deps.Log}
	sweep := func(ctx context.Context) plannerstage.Response {
		t.Helper()
		resp, err := h.Handle(ctx, mustRead(t, "../events/scheduled.json"))
		if err != nil {
			t.Fatalf("planner: %v (%+v)", err, resp)
		}
		return resp
	}

	resp := sweep(deadlineOnly{asFunction(d.ctx, "Planner"), time.Now().Add(900 * time.Millisecond)})
	visited := len(resp.Tables)
	if visited == 0 || resp.Deferred != len(all)-visited || resp.Deferred == 0 {
		t.Fatalf("the sweep short of time visited %d tables and deferred %d, want some of 6 each: %+v", visited, resp.Deferred, resp)
	}
	if !slices.Equal(slow.loads, all[:visited]) {
		t.Errorf("loaded %v, want the first %d tables in name order", slow.loads, visited)
	}
	if m := d.metrics.metricTotals(t); m["SweepTablesDeferred"] != float64(resp.Deferred) {
		t.Errorf("SweepTablesDeferred = %v, want %d", m["SweepTablesDeferred"], resp.Deferred)
	}
	raw, err := d.deps.Blobs.Get(d.ctx, d.deps.Blobs.Key(trigger.SweepCursorPrefix+"schedule.json"))
	if err != nil {
		t.Fatalf("cursor: %v", err)
	}
	var cursor struct {
		After string `json:"after"`
	}
	if err := json.Unmarshal(raw, &cursor); err != nil || cursor.After != all[visited-1] {
		t.Fatalf("cursor %s (%v), want after %s", raw, err, all[visited-1])
	}

	// The next sweep, with time enough, starts at the first table left
	// and goes round.
	slow.loads = nil
	resp = sweep(asFunction(d.ctx, "Planner"))
	want := append(slices.Clone(all[visited:]), all[:visited]...)
	if resp.Deferred != 0 || !slices.Equal(slow.loads, want) {
		t.Errorf("the next sweep loaded %v (deferred %d), want %v", slow.loads, resp.Deferred, want)
	}
}
