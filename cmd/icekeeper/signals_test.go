package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/harness/localcloud"
	"github.com/icekeeper/icekeeper/shared/harness/sampletable"
	"github.com/icekeeper/icekeeper/shared/signals"
)

// TestSignals_ShowsTheRankedColumnsAndTheRecommendedOrder: signals
// recorded for a table (queries filtering on amount far more than on id)
// rank amount first and recommend sorting by it; region, the partition
// source, is never recommended however often it is filtered.
func TestSignals_ShowsTheRankedColumnsAndTheRecommendedOrder(t *testing.T) {
	ctx := context.Background()
	cloud := localcloud.Start()
	defer cloud.Close()
	res, err := cloud.Provision(ctx, "cli-signals", "", 3)
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range map[string]string{"ICEKEEPER_JOBS_TABLE": res.JobsTable, "AWS_ENDPOINT_URL": cloud.URL, "AWS_REGION": "us-east-1", "AWS_ACCESS_KEY_ID": "test", "AWS_SECRET_ACCESS_KEY": "test"} {
		t.Setenv(k, v)
	}
	cat, uri, wh := localSQLCatalog(t, "")
	if _, err := sampletable.Create(ctx, cat, table.Identifier{"shop", "orders"}, sampletable.Options{FormatVersion: 2, Partitions: 2, Files: 3, RowsPerFile: 20}); err != nil {
		t.Fatal(err)
	}
	store := signals.Store{DB: cloud.Clients.DynamoDB, TableName: res.JobsTable}
	// 40 queries today and 40 eight days ago: the change is sustained
	// over the last two weeks (package sustain).
	for i := range 80 {
		at := time.Now()
		if i >= 40 {
			at = at.AddDate(0, 0, -8)
		}
		o := signals.Observation{Table: "shop.orders", BytesScanned: 1 << 20, At: at, Class: "dashboard", Filters: []signals.Filter{
			{Column: "region", Predicate: signals.PredicateEq}, {Column: "amount", Predicate: signals.PredicateRange}}}
		if i%8 == 0 {
			o.Filters = append(o.Filters, signals.Filter{Column: "id", Predicate: signals.PredicateEq})
		}
		if err := store.Record(ctx, o); err != nil {
			t.Fatal(err)
		}
	}
	flags := []string{"--catalog", "sql", "--catalog-name", "local", "--uri", uri, "--warehouse", wh}
	out, err := runCLI(t, append([]string{"signals", "shop.orders", "--json"}, flags...)...)
	if err != nil {
		t.Fatalf("signals: %v\n%s", err, out)
	}
	var r signalsReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("signals --json: %v\n%s", err, out)
	}
	// 40 of today's queries and 40 of eight days ago: a day weighs from
	// its noon, so today's count decays by up to 2^(-12h/168h) (0.95) late
	// in the UTC day, and the older ones weigh 0.44 to 0.49.
	if r.Queries < 55 || r.Queries > 60 || len(r.Columns) != 3 || r.Columns[2].Column != "id" {
		t.Fatalf("report %+v", r)
	}
	rec := r.Recommendation
	if rec.Layout != signals.LayoutSort || len(rec.Columns) != 1 || rec.Columns[0] != "amount" || !rec.Change {
		t.Fatalf("recommendation %+v, want a change to sort by amount", rec)
	}
	text, err := runCLI(t, append([]string{"signals", "shop.orders"}, flags...)...)
	if r.Class == nil || r.Class.Class != "dashboard" || len(r.Classes) != 1 || r.Classes[0].Class != "dashboard" {
		t.Fatalf("classes %+v %+v, want the dashboards' served", r.Class, r.Classes)
	}
	if err != nil || !strings.Contains(text, "recommended: change to sort amount") || !strings.Contains(text, "COLUMN") || !strings.Contains(text, "dashboard (served)") {
		t.Fatalf("signals: %v\n%s", err, text)
	}
}
