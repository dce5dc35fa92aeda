package tests

import (
	"context"
	"fmt"
	"iter"
	"testing"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/config"
	plannerstage "github.com/icekeeper/icekeeper/shared/stage/planner"
	"github.com/icekeeper/icekeeper/shared/trigger"
)

// withCrawledTable is a catalog that also lists a table that is not an
// Iceberg table (a Glue crawler's or an Athena CTAS's Parquet table in a
// granted database), whose load fails as iceberg-go's glue catalog fails
// it (catalog/glue/glue.go: "table %s.%s is not an iceberg table").
type withCrawledTable struct {
	catalog.Catalog
	ident table.Identifier
}

func (c withCrawledTable) LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error) {
	if fmt.Sprint(ident) == fmt.Sprint(c.ident) {
		return nil, fmt.Errorf("table %s.%s is not an iceberg table", ident[0], ident[1])
	}
	return c.Catalog.LoadTable(ctx, ident)
}

func (c withCrawledTable) ListTables(ctx context.Context, ns table.Identifier) iter.Seq2[table.Identifier, error] {
	return func(yield func(table.Identifier, error) bool) {
		for id, err := range c.Catalog.ListTables(ctx, ns) {
			if !yield(id, err) {
				return
			}
		}
		if fmt.Sprint(ns) == fmt.Sprint(c.ident[:1]) {
			yield(c.ident, nil)
		}
	}
}

// TestTriggers_ANonIcebergTableIsSkippedNotFailed: an event naming a
// non-Iceberg table of a granted database, and a sweep that lists it, skip
// it (not_iceberg) without failing the invocation, and still plan the
// Iceberg table beside it.
func TestTriggers_ANonIcebergTableIsSkippedNotFailed(t *testing.T) {
	d := setupDispatch(t, config.ModeActive, "demo")
	d.createNamed("demo.events", withProps(smallTable, optedIn))
	disp, err := d.deps.Dispatcher(withCrawledTable{Catalog: d.cat, ident: table.Identifier{"demo", "crawled"}})
	if err != nil {
		t.Fatal(err)
	}
	d.planner = plannerstage.Handler{Dispatch: disp, Metrics: d.deps.Metrics, Log: d.deps.Log}
	if o := outcomeOf(t, d.handle(commitEvent("demo.crawled")), "demo.crawled"); o.Action != trigger.ActionSkipped || o.Skip != trigger.SkipNotIceberg {
		t.Fatalf("event: %+v, want skipped %s", o, trigger.SkipNotIceberg)
	}
	resp := d.handle(mustRead(t, "../events/scheduled.json"))
	if o := outcomeOf(t, resp, "demo.crawled"); o.Action != trigger.ActionSkipped || o.Skip != trigger.SkipNotIceberg {
		t.Fatalf("sweep: %+v, want skipped %s", o, trigger.SkipNotIceberg)
	}
	if o := outcomeOf(t, resp, "demo.events"); o.Action != trigger.ActionPlanned {
		t.Fatalf("sweep: the Iceberg table beside it: %+v, want planned", o)
	}
}
