package main

import (
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/catalogs"
	"github.com/icekeeper/icekeeper/shared/harness/sampletable"
	"github.com/icekeeper/icekeeper/shared/health"
)

// healthCatalog creates the sample table shop.orders in a local sqlite
// catalog and returns the catalog flags that reach it and the table.
func healthCatalog(t *testing.T) ([]string, *table.Table) {
	t.Helper()
	dir := t.TempDir()
	uri, wh := "file:"+filepath.Join(dir, "cat.db"), "file://"+filepath.Join(dir, "wh")
	cat, err := catalogs.Open(context.Background(), catalogs.Config{Type: "sql", Name: "hc", URI: uri, Warehouse: wh}, configAWS())
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := sampletable.Create(context.Background(), cat, table.Identifier{"shop", "orders"},
		sampletable.Options{FormatVersion: 3, Partitions: 2, Files: 6, RowsPerFile: 50, PositionDeletes: true, EqualityDeletes: true})
	if err != nil {
		t.Fatal(err)
	}
	return []string{"--catalog", "sql", "--catalog-name", "hc", "--uri", uri, "--warehouse", wh}, tbl
}

func TestHealth_JSONReportsTheTable(t *testing.T) {
	flags, tbl := healthCatalog(t)
	out, err := runCLI(t, append([]string{"health", "shop.orders", "--json"}, flags...)...)
	if err != nil {
		t.Fatalf("health: %v\n%s", err, out)
	}
	var r health.Report
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("health --json: %v\n%s", err, out)
	}
	if r.Table != "shop.orders" || r.SnapshotID != tbl.CurrentSnapshot().SnapshotID || r.MetadataLocation != tbl.MetadataLocation() {
		t.Fatalf("report of %q at %d (%s)", r.Table, r.SnapshotID, r.MetadataLocation)
	}
	if r.DataFiles != 12 || r.SmallFiles != 12 || r.DeletionVectors != 6 || r.EqualityDeleteFiles != 2 || r.Snapshots != 8 || len(r.Partitions) != 2 {
		t.Fatalf("report %+v", r)
	}
	if r.Partitions[0].Partition != "region=region-00" || r.Partitions[0].DataFiles != 6 {
		t.Fatalf("partitions %+v", r.Partitions)
	}
	if rec, ok := r.Recommends(health.ActionCompaction); !ok || rec.EstimatedFiles != 12 || r.Score <= 0 {
		t.Fatalf("score %v, recommendations %+v", r.Score, r.Recommendations)
	}
	if r.Orphans != nil {
		t.Fatalf("orphans listed without --orphans: %+v", r.Orphans)
	}
	// Per column and partition: how well the files are clustered (each
	// append wrote its own block of ids; region is the partition value).
	if !strings.Contains(out, `"overlap_depth"`) {
		t.Fatal("no overlap_depth in the JSON")
	}
	for _, c := range r.Partitions[0].Columns {
		if c.Column == "id" && (c.OverlapDepth != 1 || c.Files != 6) || c.Column == "region" && (c.OverlapDepth != 6 || !c.OneValue) {
			t.Fatalf("partition %s column %+v", r.Partitions[0].Partition, c)
		}
	}
	if len(r.Columns) == 0 {
		t.Fatal("no table-level columns")
	}
}

func TestHealth_ReadableReportAndOrphans(t *testing.T) {
	flags, tbl := healthCatalog(t)
	stray := filepath.Join(strings.TrimPrefix(tbl.Location(), "file://"), "data", "stray.parquet")
	if err := os.WriteFile(stray, []byte("orphan"), 0o644); err != nil {
		t.Fatal(err)
	}
	out, err := runCLI(t, append([]string{"health", "shop.orders", "--orphans", "--orphans-older-than", "0s"}, flags...)...)
	if err != nil {
		t.Fatalf("health: %v\n%s", err, out)
	}
	for _, want := range []string{"table shop.orders at snapshot", "health score", "small files", "region=region-01", "files per point lookup", "recommendations:", "compaction:", "remove_orphans:", stray} {
		if !strings.Contains(out, want) {
			t.Fatalf("output lacks %q:\n%s", want, out)
		}
	}
}

func TestHealth_MissingTableIsAClearError(t *testing.T) {
	flags, _ := healthCatalog(t)
	out, err := runCLI(t, append([]string{"health", "shop.missing", "--json"}, flags...)...)
	if err == nil || exitCode(err) != 1 || !strings.Contains(err.Error(), "shop.missing") || !strings.Contains(err.Error(), "no such table") {
		t.Fatalf("err %v (exit %d), out %q", err, exitCode(err), out)
	}
	if out != "" {
		t.Fatalf("printed %q for a missing table", out)
	}
}

func TestHealth_BadArgumentsGetTheUsageCode(t *testing.T) {
	for _, args := range [][]string{
		{"health"},
		{"health", "not-a-table"},
		{"health", "a.b", "c.d"},
		{"health", "a.b", "--orphans-older-than", "-1h"},
	} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			if _, err := runCLI(t, args...); exitCode(err) != 2 {
				t.Fatalf("exit code %d (%v), want 2", exitCode(err), err)
			}
		})
	}
}
