package tests

import (
	"encoding/json"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/athena"
	athenatypes "github.com/aws/aws-sdk-go-v2/service/athena/types"

	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/harness/sampletable"
	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/optin"
	"github.com/icekeeper/icekeeper/shared/plan"
	"github.com/icekeeper/icekeeper/shared/signals"
	"github.com/icekeeper/icekeeper/shared/trigger"
)

func athenaEvent(queryID string) []byte {
	b, _ := json.Marshal(map[string]any{"version": "0", "id": "athena-" + queryID, "source": "aws.athena", "detail-type": "Athena Query State Change",
		"detail": map[string]string{"currentState": "SUCCEEDED", "previousState": "RUNNING", "statementType": "DML", "queryExecutionId": queryID, "workgroupName": "primary"}})
	return b
}

// TestSignals_QueryEventsAreRecordedForGrantedTables: the sample query
// event and a succeeded Athena query (started in the emulator's Athena,
// whose GetQueryExecution the planner reads back) are recorded as the
// table's signals in advisory mode; a query on a table outside the
// grants is dropped.
func TestSignals_QueryEventsAreRecordedForGrantedTables(t *testing.T) {
	d := setupDispatch(t, config.ModeAdvisory, "demo")
	d.createNamed("demo.events", smallTable)
	resp := d.handle(mustRead(t, filepath.Join("..", "events", "icekeeper-query.json")))
	if o := outcomeOf(t, resp, "demo.events"); o.Action != trigger.ActionObserved {
		t.Fatalf("query event outcome %+v", o)
	}

	ath := athena.NewFromConfig(cloud.Clients.Config)
	start := func(sql string) string {
		out, err := ath.StartQueryExecution(d.ctx, &athena.StartQueryExecutionInput{
			QueryString:           aws.String(sql),
			QueryExecutionContext: &athenatypes.QueryExecutionContext{Database: aws.String("demo")},
			WorkGroup:             aws.String("primary"),
		})
		if err != nil {
			t.Fatal(err)
		}
		return *out.QueryExecutionId
	}
	resp = d.handle(athenaEvent(start(`SELECT * FROM "events" WHERE "id" = 7 AND amount > 3 AND region IN ('region-01', 'region-09')`)))
	if o := outcomeOf(t, resp, "demo.events"); o.Action != trigger.ActionObserved {
		t.Fatalf("athena event outcome %+v", o)
	}
	resp = d.handle(athenaEvent(start(`SELECT * FROM sales.orders WHERE id = 1`)))
	if o := outcomeOf(t, resp, "sales.orders"); o.Skip != trigger.SkipNotGranted {
		t.Fatalf("ungranted table's outcome %+v", o)
	}

	store := signals.Store{DB: cloud.Clients.DynamoDB, TableName: d.cfg.JobsTable}
	days, err := store.Days(d.ctx, "demo.events", time.Now().AddDate(0, 0, -1), time.Now())
	if err != nil {
		t.Fatal(err)
	}
	if len(days) != 1 || days[0].Queries != 2 {
		t.Fatalf("days %+v, want one day of two queries", days)
	}
	// The sample event says it is a dashboard's; Athena's query ran in
	// the primary workgroup without a tag: ad hoc.
	if c := days[0].Classes; c["dashboard"].Queries != 1 || c["adhoc"].Queries != 1 {
		t.Errorf("classes %+v, want one dashboard and one ad hoc query", c)
	}
	if id := days[0].Columns["id"]; id.Filters != 2 || id.Point != 2 {
		t.Errorf("id %+v, want two point filters", id)
	}
	if amount := days[0].Columns["amount"]; amount.Filters != 2 || amount.Point != 0 {
		t.Errorf("amount %+v, want two range filters", amount)
	}
	// The partitions read: the event's own, and Athena's IN on the
	// identity partition column region (id, not a partition source,
	// names none).
	if p := days[0].Partitions; p["region=region-01"] != 2 || p["region=region-09"] != 1 || len(p) != 2 {
		t.Errorf("partitions %v, want region=region-01 twice and region=region-09 once", p)
	}
}

// TestSignals_TheAdvisoryReportCarriesTheRecommendedLayout: with enough
// query signals recorded on one column, the health report the planner
// publishes for the table recommends sorting by it, and the gauges say a
// change is recommended.
func TestSignals_TheAdvisoryReportCarriesTheRecommendedLayout(t *testing.T) {
	d := setupDispatch(t, config.ModeAdvisory, "demo")
	d.createNamed("demo.events", withProps(smallTable, optedIn))
	store := signals.Store{DB: cloud.Clients.DynamoDB, TableName: d.cfg.JobsTable}
	for i := range 30 {
		// Over the last two weeks: a change must be sustained.
		if err := store.Record(d.ctx, signals.Observation{Table: "demo.events", BytesScanned: 1 << 20, At: time.Now().AddDate(0, 0, -7*(i%2)),
			Filters: []signals.Filter{{Column: "amount", Predicate: signals.PredicateRange}}}); err != nil {
			t.Fatal(err)
		}
	}
	o := outcomeOf(t, d.handle(commitEvent("demo.events")), "demo.events")
	if o.Action != trigger.ActionAssessed || o.ReportKey == "" {
		t.Fatalf("outcome %+v", o)
	}
	raw, err := d.deps.Blobs.Get(d.ctx, o.ReportKey)
	if err != nil {
		t.Fatal(err)
	}
	var report struct {
		Recommendations []any                   `json:"recommendations"`
		Layout          *signals.Recommendation `json:"layout"`
	}
	if err := json.Unmarshal(raw, &report); err != nil {
		t.Fatal(err)
	}
	if l := report.Layout; l == nil || l.Layout != signals.LayoutSort || len(l.Columns) != 1 || l.Columns[0] != "amount" || !l.Change {
		t.Fatalf("layout %+v in %s", report.Layout, raw)
	}
	if m := d.metrics.metricTotals(t); m["LayoutChangeRecommended/demo.events"] != 1 {
		t.Fatalf("gauges %v, want a layout change recommended", m)
	}
}

// TestSignals_LayoutAutoChangesTheSortOrderThenCompactionSortsByIt: in
// active mode, for an owner who set icekeeper.layout.auto, the signals'
// recommendation becomes one visible commit that makes amount the sort
// order (and the strategy sort); the next visit compacts with a sort by
// it. Without the property, nothing changes the order.
func TestSignals_LayoutAutoChangesTheSortOrderThenCompactionSortsByIt(t *testing.T) {
	d := setupDispatch(t, config.ModeActive, "demo", func(c *config.Config) { c.MinInterval = 0 })
	props := map[string]string{optin.PropertyEnabled: "true", optin.PropertyLayoutAuto: "true"}
	d.createNamed("demo.events", withProps(smallTable, props))
	d.createNamed("demo.manual", withProps(smallTable, optedIn))
	store := signals.Store{DB: cloud.Clients.DynamoDB, TableName: d.cfg.JobsTable}
	for _, table := range []string{"demo.events", "demo.manual"} {
		for i := range 30 {
			// Over the last two weeks: a change must be sustained.
			at := time.Now().AddDate(0, 0, -7*(i%2))
			if err := store.Record(d.ctx, signals.Observation{Table: table, BytesScanned: 1 << 20, At: at,
				Filters: []signals.Filter{{Column: "amount", Predicate: signals.PredicateRange}}}); err != nil {
				t.Fatal(err)
			}
		}
	}
	before := d.fingerprint()
	o := outcomeOf(t, d.handle(commitEvent("demo.events")), "demo.events")
	if o.Action != trigger.ActionPlanned || o.Plan == nil {
		t.Fatalf("outcome %+v", o)
	}
	if j := d.job(o.Plan.JobID); j.Kind != jobs.KindChangeLayout {
		t.Fatalf("job %s is a %s, want a layout change", j.ID, j.Kind)
	}
	d.drainCommits()
	if j := d.job(o.Plan.JobID); j.State != jobs.Committed {
		t.Fatalf("layout change %s (%s)", j.State, j.Reason)
	}
	tbl := d.load()
	order := tbl.SortOrder()
	if order.Len() != 1 || order.Field(0).SourceID() != 3 || tbl.Properties()[optin.PropertyCompactionStrategy] != "sort" {
		t.Fatalf("sort order %s, strategy %q: want amount (field 3) and sort", order, tbl.Properties()[optin.PropertyCompactionStrategy])
	}
	if got := d.fingerprint(); got != before {
		t.Fatalf("the layout change changed rows: %s -> %s", before, got)
	}
	o = outcomeOf(t, d.handle(commitEvent("demo.events")), "demo.events")
	if o.Plan == nil || o.Plan.Strategy != optin.StrategySort || d.job(o.Plan.JobID).Kind != jobs.KindCompaction {
		t.Fatalf("second visit %+v, want a sort compaction", o.Plan)
	}

	o = outcomeOf(t, d.handle(commitEvent("demo.manual")), "demo.manual")
	if o.Plan != nil && d.job(o.Plan.JobID).Kind == jobs.KindChangeLayout {
		t.Fatal("a layout change was planned for a table whose owner did not set icekeeper.layout.auto")
	}
}

// TestSignals_AnOwnersOrderChangeBeforeTheCommitWins: the owner sets a
// sort order after icekeeper planned a layout change: the committer finds
// the order changed since planning and leaves it.
func TestSignals_AnOwnersOrderChangeBeforeTheCommitWins(t *testing.T) {
	e := setup(t)
	e.createTable(smallTable)
	r, err := e.planner.PlanLayoutChange(asFunction(e.ctx, "Planner"), e.name(), "test", plan.LayoutChange{Layout: "sort", Columns: []string{"amount"}, Why: "test"})
	if err != nil || r.Outcome != plan.OutcomePlanned {
		t.Fatalf("plan: %+v %v", r, err)
	}
	e.sortByID() // the owner's choice, meanwhile
	e.drainCommits()
	j := e.job(r.JobID)
	if j.State != jobs.Committed || !strings.Contains(j.Reason, "owner's order stands") {
		t.Fatalf("job %s (%s)", j.State, j.Reason)
	}
	if order := e.load().SortOrder(); order.Len() != 1 || order.Field(0).SourceID() != 1 {
		t.Fatalf("sort order %s, want the owner's (id)", order)
	}
	if s := e.load().Properties()[optin.PropertyCompactionStrategy]; s != "" {
		t.Fatalf("strategy %q set though the change was dropped", s)
	}
}

// sortOnePartitionAJob sorts the table by id and bounds its sort
// compactions (icekeeper.compaction.max-bytes-per-job) to one and a half
// of its largest partition's bytes: one partition a job.
func (e *env) sortOnePartitionAJob() {
	e.t.Helper()
	e.sortByID()
	per := map[string]int64{}
	for _, task := range e.liveTasks() {
		per[plan.PartitionString(task)] += task.File.FileSizeBytes()
	}
	var largest int64
	for _, b := range per {
		largest = max(largest, b)
	}
	e.setProperties(iceberg.Properties{optin.PropertyMaxBytesPerJob: strconv.FormatInt(largest+largest/2, 10)})
}

// TestSignals_ABoundedSortRewritesTheMostQueriedPartitionsFirst: a sort
// compaction bounded by icekeeper.compaction.max-bytes-per-job to about
// one partition a job takes the partition queries read most first (the
// signals' partitions: region-02, then region-00), leaves the rest for
// later visits, and gets through every partition in the end.
func TestSignals_ABoundedSortRewritesTheMostQueriedPartitionsFirst(t *testing.T) {
	e := setup(t)
	e.createTable(sampletable.Options{FormatVersion: 2, Partitions: 4, Files: 6, RowsPerFile: 50, Properties: map[string]string{optin.PropertyCompactionStrategy: "sort"}})
	e.sortOnePartitionAJob()
	store := signals.Store{DB: cloud.Clients.DynamoDB, TableName: e.cfg.JobsTable}
	for i := range 13 {
		part := "region=" + sampletable.Region(2)
		if i >= 10 {
			part = "region=" + sampletable.Region(0)
		}
		if err := store.Record(e.ctx, signals.Observation{Table: e.name(), At: time.Now(), Partitions: []string{part}}); err != nil {
			t.Fatal(err)
		}
	}
	var order []string
	for range 4 {
		res := e.plan()
		if res.Outcome != plan.OutcomePlanned {
			t.Fatalf("plan %d: %s (%s)", len(order)+1, res.Outcome, res.Reason)
		}
		groups := e.planOf(res.JobID).Groups
		if len(groups) != 1 || res.DeferredGroups != 3-len(order) {
			t.Fatalf("plan %d: %d groups, %d deferred; want one partition a job", len(order)+1, len(groups), res.DeferredGroups)
		}
		order = append(order, groups[0].Partition)
		before := e.fingerprint()
		e.drainTasks()
		e.drainCommits()
		e.requireCommitted(res.JobID, before)
	}
	t.Logf("order %v", order)
	if !strings.HasSuffix(order[0], sampletable.Region(2)) || !strings.HasSuffix(order[1], sampletable.Region(0)) {
		t.Fatalf("partitions rewritten in the order %v: want region-02 (most queried), then region-00", order)
	}
	if again := e.plan(); again.Outcome != plan.OutcomeNothingToDo {
		t.Fatalf("after four jobs: %s (%d groups)", again.Outcome, again.Groups)
	}
}
