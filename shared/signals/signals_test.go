package signals

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/aws/aws-sdk-go-v2/service/dynamodb"

	"github.com/icekeeper/icekeeper/shared/harness/localcloud"
)

var noon = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)

func TestAggregate_OldDaysWeighLessByHalfLife(t *testing.T) {
	days := []Day{
		{Date: "2026-12-01", Queries: 10, Columns: map[string]ColumnDay{"id": {Filters: 10, Point: 10, BytesScanned: 1000}}},
		{Date: "2026-11-24", Queries: 40, Columns: map[string]ColumnDay{"ts": {Filters: 40, BytesScanned: 4000}, "id": {Filters: 8, Point: 0, BytesScanned: 800}}},
	}
	got, queries := Aggregate(days, noon, 7*24*time.Hour)
	// A week old weighs a half.
	if math.Abs(queries-(10+20)) > 1e-9 {
		t.Fatalf("decayed queries %v, want 30", queries)
	}
	if len(got) != 2 || got[0].Column != "ts" || math.Abs(got[0].BytesScanned-2000) > 1e-6 || math.Abs(got[0].Queries-20) > 1e-9 {
		t.Fatalf("ranking %+v, want ts first with 20 queries and 2000 bytes", got)
	}
	id := got[1]
	if math.Abs(id.Queries-14) > 1e-9 || math.Abs(id.BytesScanned-1400) > 1e-6 || math.Abs(id.PointShare-10.0/14) > 1e-9 {
		t.Fatalf("id %+v, want 14 queries, 1400 bytes, 10/14 point", id)
	}
	// Two weeks later the same days weigh a quarter as much.
	later, q2 := Aggregate(days, noon.Add(14*24*time.Hour), 7*24*time.Hour)
	if math.Abs(q2-queries/4) > 1e-9 || math.Abs(later[0].BytesScanned-got[0].BytesScanned/4) > 1e-6 {
		t.Fatalf("after two half-lives: %v queries, %+v", q2, later[0])
	}
}

func TestRecommend_SortZOrderAndNothing(t *testing.T) {
	sig := func(col string, score float64) ColumnSignal {
		return ColumnSignal{Column: col, Queries: 10, BytesScanned: score}
	}
	cases := map[string]struct {
		ranked  []ColumnSignal
		queries float64
		table   Table
		layout  string
		columns []string
		change  bool
	}{
		"too few queries":      {[]ColumnSignal{sig("id", 100)}, 5, Table{}, LayoutNone, nil, false},
		"one column leads":     {[]ColumnSignal{sig("id", 100), sig("ts", 10)}, 50, Table{}, LayoutSort, []string{"id"}, true},
		"two about equal":      {[]ColumnSignal{sig("id", 100), sig("ts", 90), sig("x", 10)}, 50, Table{}, LayoutZOrder, []string{"id", "ts"}, true},
		"partition source out": {[]ColumnSignal{sig("region", 500), sig("id", 100)}, 50, Table{PartitionSources: []string{"region"}}, LayoutSort, []string{"id"}, true},
		"already sorted":       {[]ColumnSignal{sig("id", 100), sig("ts", 10)}, 50, Table{SortColumns: []string{"id"}}, LayoutSort, []string{"id"}, false},
		"within the margin":    {[]ColumnSignal{sig("ts", 130), sig("id", 100)}, 50, Table{SortColumns: []string{"id"}}, LayoutSort, []string{"ts"}, false},
		"beyond the margin":    {[]ColumnSignal{sig("ts", 200), sig("id", 100)}, 50, Table{SortColumns: []string{"id"}}, LayoutSort, []string{"ts"}, true},
	}
	for name, c := range cases {
		r := Recommend(c.ranked, c.queries, c.table, DefaultGuard)
		if r.Layout != c.layout || r.Change != c.change || len(r.Columns) != len(c.columns) {
			t.Errorf("%s: %+v, want %s %v change %v", name, r, c.layout, c.columns, c.change)
			continue
		}
		for i := range c.columns {
			if r.Columns[i] != c.columns[i] {
				t.Errorf("%s: columns %v, want %v", name, r.Columns, c.columns)
			}
		}
	}
	r := Recommend([]ColumnSignal{{Column: "id", Queries: 30, BytesScanned: 1000}}, 30, Table{LookupFiles: map[string]float64{"id": 4}}, DefaultGuard)
	if r.ExpectedBytesSaved != 750 {
		t.Errorf("expected bytes saved %v, want 1000 x (1 - 1/4)", r.ExpectedBytesSaved)
	}
}

// TestRecommend_StableUnderNoisySignals: a table whose queries filter on
// id three times as often as on ts, observed day by day with random
// noise, keeps recommending id once the evidence is in; a table sorted by
// id whose queries favour ts only slightly never changes order.
func TestRecommend_StableUnderNoisySignals(t *testing.T) {
	r := rand.New(rand.NewPCG(21, 22))
	var days []Day
	changes, sortedChanges := 0, 0
	for d := range 60 {
		date := noon.AddDate(0, 0, d)
		day := Day{Date: DateOf(date), Columns: map[string]ColumnDay{}}
		for range 20 + r.IntN(20) {
			day.Queries++
			bytes := int64(1000 + r.IntN(1000))
			col := "ts"
			if r.Float64() < 0.75 {
				col = "id"
			}
			c := day.Columns[col]
			c.Filters++
			c.BytesScanned += bytes
			day.Columns[col] = c
		}
		days = append(days, day)
		ranked, q := Aggregate(days, date, DefaultHalfLife)
		rec := Recommend(ranked, q, Table{}, DefaultGuard)
		if d >= 3 && (rec.Layout != LayoutSort || rec.Columns[0] != "id") {
			changes++
		}
		// Sorted by ts, queries favour id 3:1 -> a change is due; sorted
		// by id with ts only a little behind -> never.
		near := Recommend([]ColumnSignal{{Column: "ts", Queries: 10, BytesScanned: 1100 + float64(r.IntN(200))}, {Column: "id", Queries: 10, BytesScanned: 1000}}, q, Table{SortColumns: []string{"id"}}, DefaultGuard)
		if near.Change {
			sortedChanges++
		}
	}
	if changes != 0 || sortedChanges != 0 {
		t.Fatalf("recommendation flipped %d times, the sorted table's order %d times", changes, sortedChanges)
	}
}

func TestObservation_ValidateRefusesMalformedSignals(t *testing.T) {
	for name, o := range map[string]Observation{
		"no namespace":      {Table: "orders"},
		"negative bytes":    {Table: "a.b", BytesScanned: -1},
		"unknown predicate": {Table: "a.b", Filters: []Filter{{Column: "id", Predicate: "between"}}},
		"no column":         {Table: "a.b", Filters: []Filter{{Predicate: PredicateEq}}},
	} {
		if err := o.Validate(); err == nil {
			t.Errorf("%s: accepted", name)
		}
	}
}

// TestStore_RecordsAndReadsDaysConcurrently: observations recorded from
// several goroutines (several planners) all count; a column filtered twice
// in one query counts once; days outside the window are not read.
func TestStore_RecordsAndReadsDaysConcurrently(t *testing.T) {
	cloud := localcloud.Start()
	t.Cleanup(cloud.Close)
	res, err := cloud.Provision(context.Background(), "signals", "", 3)
	if err != nil {
		t.Fatal(err)
	}
	s := Store{DB: cloud.Clients.DynamoDB, TableName: res.JobsTable}
	ctx := context.Background()
	var wg sync.WaitGroup
	for i := range 20 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			o := Observation{Table: "shop.orders", BytesScanned: 100, At: noon,
				Filters: []Filter{{Column: "id", Predicate: PredicateEq}, {Column: "id", Predicate: PredicateRange}, {Column: "order:date", Predicate: PredicateRange}}}
			if i%2 == 1 {
				o.Filters = o.Filters[2:]
			}
			if err := s.Record(ctx, o); err != nil {
				t.Error(err)
			}
		}()
	}
	wg.Wait()
	if err := s.Record(ctx, Observation{Table: "shop.orders", At: noon.AddDate(0, 0, -40), Filters: []Filter{{Column: "old", Predicate: PredicateEq}}}); err != nil {
		t.Fatal(err)
	}
	days, err := s.Days(ctx, "shop.orders", noon.AddDate(0, 0, -28), noon)
	if err != nil {
		t.Fatal(err)
	}
	if len(days) != 1 {
		t.Fatalf("%d days, want the one in the window: %+v", len(days), days)
	}
	d := days[0]
	if d.Date != "2026-12-01" || d.Queries != 20 || d.BytesScanned != 2000 {
		t.Fatalf("day %+v, want 20 queries and 2000 bytes on 2026-12-01", d)
	}
	if id := d.Columns["id"]; id.Filters != 10 || id.Point != 10 || id.BytesScanned != 1000 {
		t.Errorf("id %+v, want 10 filters, all point, 1000 bytes", id)
	}
	if od := d.Columns["order:date"]; od.Filters != 20 || od.Point != 0 || od.BytesScanned != 2000 {
		t.Errorf("order:date %+v, want 20 range filters, 2000 bytes", od)
	}
	if err := s.Record(ctx, Observation{Table: "orders"}); err == nil {
		t.Error("an observation without a namespace was recorded")
	}
}

// TestStore_RecordsThePartitionsQueriesRead: partitions count per day,
// once per query, at most MaxPartitions a query; their heat decays like
// the columns' and a partition's heat sums its fields' values.
func TestStore_RecordsThePartitionsQueriesRead(t *testing.T) {
	cloud := localcloud.Start()
	t.Cleanup(cloud.Close)
	ctx := context.Background()
	res, err := cloud.Provision(ctx, "signals-parts", "", 3)
	if err != nil {
		t.Fatal(err)
	}
	s := Store{DB: cloud.Clients.DynamoDB, TableName: res.JobsTable}
	for i := range 6 {
		o := Observation{Table: "shop.orders", At: noon, Partitions: []string{"region=eu", "region=eu"}}
		if i%3 == 0 {
			o.Partitions = append(o.Partitions, "day=2026-12-01")
		}
		if err := s.Record(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	var many []string
	for i := range MaxPartitions + 5 {
		many = append(many, fmt.Sprintf("id=%03d", i))
	}
	if err := s.Record(ctx, Observation{Table: "shop.orders", At: noon.AddDate(0, 0, -7), Partitions: many}); err != nil {
		t.Fatal(err)
	}
	days, err := s.Days(ctx, "shop.orders", noon.AddDate(0, 0, -28), noon)
	if err != nil {
		t.Fatal(err)
	}
	if len(days) != 2 {
		t.Fatalf("%d days", len(days))
	}
	if today := days[1].Partitions; today["region=eu"] != 6 || today["day=2026-12-01"] != 2 {
		t.Errorf("today's partitions %v, want region=eu 6 (once per query) and day=2026-12-01 2", today)
	}
	if old := days[0].Partitions; len(old) != MaxPartitions {
		t.Errorf("%d partitions recorded from one query, want at most %d", len(old), MaxPartitions)
	}
	heat := PartitionHeat(days, noon, DefaultHalfLife)
	if math.Abs(heat["region=eu"]-6) > 1e-9 || math.Abs(heat["id=000"]-0.5) > 1e-9 {
		t.Errorf("heat %v: want region=eu 6 and a week-old id=000 at a half", heat)
	}
	if h := Heat(heat, "region=eu/day=2026-12-01"); math.Abs(h-8) > 1e-9 {
		t.Errorf("heat of region=eu/day=2026-12-01 = %v, want 6+2", h)
	}
	if err := s.Record(ctx, Observation{Table: "shop.orders", Partitions: []string{"no-equals-sign"}}); err == nil {
		t.Error("a partition without field=value was recorded")
	}
}

// TestPartitionsOf_LiteralsOnIdentityPartitionColumns: = and IN literals
// name partitions only through identity fields (named as the spec names
// them); a transformed field or a column that is no partition source
// names none.
func TestPartitionsOf_LiteralsOnIdentityPartitionColumns(t *testing.T) {
	schema := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64},
		iceberg.NestedField{ID: 2, Name: "Region", Type: iceberg.PrimitiveTypes.String},
		iceberg.NestedField{ID: 3, Name: "ts", Type: iceberg.PrimitiveTypes.Timestamp})
	spec := iceberg.NewPartitionSpec(
		iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Name: "region_part", Transform: iceberg.IdentityTransform{}},
		iceberg.PartitionField{SourceIDs: []int{3}, FieldID: 1001, Name: "ts_day", Transform: iceberg.DayTransform{}})
	got := PartitionsOf(map[string][]string{"region": {"eu", "us", "eu"}, "id": {"42"}, "ts": {"2026-12-01"}}, schema, spec)
	if want := []string{"region_part=eu", "region_part=us"}; !slices.Equal(got, want) {
		t.Errorf("partitions %v, want %v", got, want)
	}
}

// TestStore_CountsEachWorkloadClassApart: each query counts in its class
// (an unknown or missing class as ad hoc), with its columns, and its bytes
// count per partition it read; OfClass and ClassCosts read them back, and a
// day recorded before classes counts as ad hoc.
func TestStore_CountsEachWorkloadClassApart(t *testing.T) {
	cloud := localcloud.Start()
	t.Cleanup(cloud.Close)
	ctx := context.Background()
	res, err := cloud.Provision(ctx, "signals-classes", "", 3)
	if err != nil {
		t.Fatal(err)
	}
	s := Store{DB: cloud.Clients.DynamoDB, TableName: res.JobsTable}
	rec := func(class, col string, bytes int64, parts ...string) {
		t.Helper()
		o := Observation{Table: "shop.orders", At: noon, Class: class, BytesScanned: bytes, Partitions: parts,
			Filters: []Filter{{Column: col, Predicate: PredicateEq}}}
		if err := s.Record(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	rec("dashboard", "region", 100, "day=1")
	rec("Dashboards", "region", 100, "day=1")
	rec("pipeline", "ts", 1000, "day=2")
	rec("", "id", 10)
	rec("nonsense", "id", 10)
	days, err := s.Days(ctx, "shop.orders", noon.AddDate(0, 0, -1), noon)
	if err != nil || len(days) != 1 {
		t.Fatalf("days %v, %v", days, err)
	}
	d := days[0]
	if d.Classes["dashboard"].Queries != 2 || d.Classes["dashboard"].Columns["region"].Point != 2 || d.Classes["pipeline"].BytesScanned != 1000 || d.Classes["adhoc"].Queries != 2 {
		t.Errorf("classes %+v", d.Classes)
	}
	if _, ok := d.Classes["dashboard"].Columns["ts"]; ok {
		t.Error("a pipeline's column counted for dashboards")
	}
	if d.PartitionBytes["day=1"] != 200 || d.PartitionBytes["day=2"] != 1000 {
		t.Errorf("partition bytes %v; want day=1 200, day=2 1000", d.PartitionBytes)
	}
	dash := OfClass(days, "dashboard")
	if len(dash) != 1 || dash[0].Queries != 2 || dash[0].BytesScanned != 200 || len(dash[0].Columns) != 1 {
		t.Errorf("dashboard's days %+v", dash)
	}
	costs := ClassCosts(days, noon, DefaultHalfLife)
	if costs["pipeline"] <= costs["dashboard"] || costs["agent"] != 0 {
		t.Errorf("costs %v", costs)
	}
	old := []Day{{Date: "2026-12-01", Queries: 3, BytesScanned: 30, Columns: map[string]ColumnDay{"id": {Filters: 3}}}}
	if got := OfClass(old, "adhoc"); len(got) != 1 || got[0].Queries != 3 {
		t.Errorf("a day without classes, as ad hoc: %+v", got)
	}
	if got := OfClass(old, "dashboard"); len(got) != 0 {
		t.Errorf("a day without classes, as dashboard: %+v", got)
	}
}

// TestStore_AQueryOnManyColumnsFitsOneUpdate: a query filtering 60
// columns and 16 partitions is recorded (its first MaxColumns columns by
// name), its update expression under DynamoDB's 4 KB.
func TestStore_AQueryOnManyColumnsFitsOneUpdate(t *testing.T) {
	var in *dynamodb.UpdateItemInput
	s := Store{DB: captureUpdate{in: &in}, TableName: "jobs"}
	o := Observation{Table: "shop.orders", At: noon, Class: "dashboard"}
	for i := range 60 {
		o.Filters = append(o.Filters, Filter{Column: fmt.Sprintf("a_rather_long_column_name_%02d", i), Predicate: PredicateRange})
	}
	for i := range MaxPartitions {
		o.Partitions = append(o.Partitions, fmt.Sprintf("region=r%02d", i))
	}
	if err := s.Record(context.Background(), o); err != nil {
		t.Fatal(err)
	}
	if n := len(*in.UpdateExpression); n > 4096 {
		t.Errorf("update expression of %d characters, over 4 KB", n)
	}
	var cols int
	for _, name := range in.ExpressionAttributeNames {
		if strings.HasPrefix(name, colPrefix) && strings.HasSuffix(name, ":f") {
			cols++
		}
	}
	if cols != MaxColumns {
		t.Errorf("%d columns recorded, want %d", cols, MaxColumns)
	}
}

type captureUpdate struct{ in **dynamodb.UpdateItemInput }

func (c captureUpdate) UpdateItem(_ context.Context, in *dynamodb.UpdateItemInput, _ ...func(*dynamodb.Options)) (*dynamodb.UpdateItemOutput, error) {
	*c.in = in
	return &dynamodb.UpdateItemOutput{}, nil
}

func (captureUpdate) Query(context.Context, *dynamodb.QueryInput, ...func(*dynamodb.Options)) (*dynamodb.QueryOutput, error) {
	return &dynamodb.QueryOutput{}, nil
}
