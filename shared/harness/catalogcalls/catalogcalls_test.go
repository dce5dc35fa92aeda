package catalogcalls

import (
	"context"
	"errors"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/icekeeper/icekeeper/shared/catalogs"
)

// TestCounter_CountsEveryCallAndWhatItIsOnGlue loads, commits and lists
// through the counter and checks the counts, the Glue requests they make,
// and that the commit reached the catalog and the listing every table.
func TestCounter_CountsEveryCallAndWhatItIsOnGlue(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cat, err := catalogs.Open(ctx, catalogs.Config{Type: "sql", Name: "calls", URI: "file:" + filepath.Join(dir, "cat.db"), Warehouse: "file://" + filepath.Join(dir, "wh")}, aws.Config{})
	if err != nil {
		t.Fatal(err)
	}
	ns := table.Identifier{"ns"}
	if err := cat.CreateNamespace(ctx, ns, nil); err != nil {
		t.Fatal(err)
	}
	schema := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	const tables = 150 // two GetTables pages
	for i := range tables {
		if _, err := cat.CreateTable(ctx, table.Identifier{"ns", fmt.Sprintf("t%03d", i)}, schema); err != nil {
			t.Fatal(err)
		}
	}

	c := Wrap(cat)
	tbl, err := c.LoadTable(ctx, table.Identifier{"ns", "t000"})
	if err != nil {
		t.Fatal(err)
	}
	txn := tbl.NewTransaction()
	if err := txn.SetProperties(iceberg.Properties{"counted": "yes"}); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	listed := 0
	for _, err := range c.ListTables(ctx, ns) {
		if err != nil {
			t.Fatal(err)
		}
		listed++
	}
	// A caller that stops after the first table reads one page.
	for range c.ListTables(ctx, ns) {
		break
	}
	if _, err := c.CheckNamespaceExists(ctx, ns); err != nil {
		t.Fatal(err)
	}

	if listed != tables {
		t.Errorf("listed %d tables through the counter, want %d", listed, tables)
	}
	after, err := cat.LoadTable(ctx, table.Identifier{"ns", "t000"})
	if err != nil {
		t.Fatal(err)
	}
	if after.Properties()["counted"] != "yes" {
		t.Errorf("the commit through the counter did not reach the catalog: properties %v", after.Properties())
	}
	got := c.Counts()
	for method, want := range map[string]int64{LoadTable: 1, CommitTable: 1, ListTables: 2, CheckNamespaceExists: 1} {
		if got.Call(method) != want {
			t.Errorf("%s counted %d times, want %d (counts %v)", method, got.Call(method), want, got.Calls)
		}
	}
	// GetTable 1; GetTable and UpdateTable 2; GetTables 2 pages, then 1;
	// GetDatabase 1.
	if want := int64(1 + 2 + 2 + 1 + 1); got.GlueRequests != want {
		t.Errorf("Glue requests %d, want %d", got.GlueRequests, want)
	}
}

// TestCounter_LatencyEndsWithTheCallersContext: a call held for the
// catalog's latency fails with the caller's context when it ends
// meanwhile, as a network call would, and reaches no catalog.
func TestCounter_LatencyEndsWithTheCallersContext(t *testing.T) {
	ctx := context.Background()
	dir := t.TempDir()
	cat, err := catalogs.Open(ctx, catalogs.Config{Type: "sql", Name: "latency", URI: "file:" + filepath.Join(dir, "cat.db"), Warehouse: "file://" + filepath.Join(dir, "wh")}, aws.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.CreateNamespace(ctx, table.Identifier{"ns"}, nil); err != nil {
		t.Fatal(err)
	}
	c := Wrap(cat)
	c.SetLatency(time.Hour)
	ended, cancel := context.WithCancel(ctx)
	cancel()
	if _, err := c.LoadTable(ended, table.Identifier{"ns", "t"}); !errors.Is(err, context.Canceled) {
		t.Errorf("LoadTable held past its context: %v, want %v", err, context.Canceled)
	}
	for _, err := range c.ListTables(ended, table.Identifier{"ns"}) {
		if !errors.Is(err, context.Canceled) {
			t.Errorf("ListTables held past its context: %v, want %v", err, context.Canceled)
		}
	}
	if ok, err := c.CheckNamespaceExists(ended, table.Identifier{"ns"}); ok || !errors.Is(err, context.Canceled) {
		t.Errorf("CheckNamespaceExists held past its context: %v %v, want %v", ok, err, context.Canceled)
	}
	c.SetLatency(0)
	if ok, err := c.CheckNamespaceExists(ctx, table.Identifier{"ns"}); !ok || err != nil {
		t.Errorf("without latency the call reaches the catalog: %v %v", ok, err)
	}
}
