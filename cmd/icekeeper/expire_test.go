package main

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/expire"
	"github.com/icekeeper/icekeeper/shared/harness/sampletable"
)

// TestExpire_DryRunThenExpireThroughThePipeline: after a compaction, with
// a retention that makes old snapshots due, `expire --dry-run` says what
// would go and changes nothing; `expire --local` expires them through the
// pipeline; a second dry run finds nothing due (exit code 3).
func TestExpire_DryRunThenExpireThroughThePipeline(t *testing.T) {
	cat, uri, wh := localSQLCatalog(t, "")
	ident := table.Identifier{"shop", "orders"}
	ctx := context.Background()
	if _, err := sampletable.Create(ctx, cat, ident, sampletable.Options{FormatVersion: 2, Partitions: 2, Files: 6, RowsPerFile: 40, PositionDeletes: true}); err != nil {
		t.Fatal(err)
	}
	flags := []string{"--catalog", "sql", "--catalog-name", "local", "--uri", uri, "--warehouse", wh}
	if _, err := runCLI(t, append([]string{"compact", "shop.orders", "--local", "-q"}, flags...)...); err != nil {
		t.Fatal(err)
	}
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	txn := tbl.NewTransaction()
	if err := txn.SetProperties(iceberg.Properties{expire.MinSnapshotsToKeepKey: "1", expire.MaxSnapshotAgeMsKey: "1"}); err != nil {
		t.Fatal(err)
	}
	if tbl, err = txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	snapshots := len(tbl.Metadata().Snapshots())
	time.Sleep(5 * time.Millisecond)

	out, err := runCLI(t, append([]string{"expire", "shop.orders", "--dry-run"}, flags...)...)
	if err != nil || !strings.Contains(out, "would expire") || !strings.Contains(out, "dry run: nothing was changed") {
		t.Fatalf("dry run: %v\n%s", err, out)
	}
	if tbl, _ = cat.LoadTable(ctx, ident); len(tbl.Metadata().Snapshots()) != snapshots {
		t.Fatal("the dry run changed the table")
	}
	out, err = runCLI(t, append([]string{"expire", "shop.orders", "--local", "-q"}, flags...)...)
	if err != nil || !strings.Contains(out, "committed: expired") {
		t.Fatalf("expire: %v\n%s", err, out)
	}
	if tbl, _ = cat.LoadTable(ctx, ident); len(tbl.Metadata().Snapshots()) != 1 {
		t.Fatalf("%d snapshots left, want 1", len(tbl.Metadata().Snapshots()))
	}
	out, err = runCLI(t, append([]string{"expire", "shop.orders", "--dry-run"}, flags...)...)
	if exitCode(err) != exitNothingToDo || !strings.Contains(out, "nothing is due") || !strings.Contains(out, "nothing ever comes due") {
		t.Fatalf("second dry run: exit %d, %v\n%s", exitCode(err), err, out)
	}

	// An hour's retention and one more append: the replaced snapshot
	// comes due an hour (and a millisecond) after it was committed.
	txn = tbl.NewTransaction()
	if err := txn.SetProperties(iceberg.Properties{expire.MaxSnapshotAgeMsKey: "3600000"}); err != nil {
		t.Fatal(err)
	}
	if tbl, err = txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	replaced := tbl.CurrentSnapshot().TimestampMs
	if _, err = sampletable.AppendRows(ctx, tbl, 50_000, 2, 10); err != nil {
		t.Fatal(err)
	}
	out, err = runCLI(t, append([]string{"expire", "shop.orders", "--dry-run"}, flags...)...)
	want := time.UnixMilli(replaced + 3_600_000 + 1).UTC().Format(time.RFC3339)
	if exitCode(err) != exitNothingToDo || !strings.Contains(out, "the next comes due at "+want) {
		t.Fatalf("third dry run: exit %d, %v, want the next due at %s\n%s", exitCode(err), err, want, out)
	}
}

// TestRewriteManifests_RunsAManifestRewriteJob: a table with a manifest
// per append and commit.manifest.min-count-to-merge=2 is rewritten by
// `rewrite-manifests --local`; run again, nothing is left to do (exit 3).
func TestRewriteManifests_RunsAManifestRewriteJob(t *testing.T) {
	cat, uri, wh := localSQLCatalog(t, "")
	ident := table.Identifier{"shop", "orders"}
	ctx := context.Background()
	if _, err := sampletable.Create(ctx, cat, ident, sampletable.Options{FormatVersion: 2, Partitions: 2, Files: 6, RowsPerFile: 40, Properties: map[string]string{table.ManifestMinMergeCountKey: "2"}}); err != nil {
		t.Fatal(err)
	}
	flags := []string{"--catalog", "sql", "--catalog-name", "local", "--uri", uri, "--warehouse", wh}
	out, err := runCLI(t, append([]string{"rewrite-manifests", "shop.orders", "--local", "-q"}, flags...)...)
	if err != nil || !strings.Contains(out, "committed: rewrote 6 data manifests into 2") {
		t.Fatalf("rewrite-manifests: %v\n%s", err, out)
	}
	out, err = runCLI(t, append([]string{"rewrite-manifests", "shop.orders", "--local", "-q"}, flags...)...)
	if exitCode(err) != exitNothingToDo {
		t.Fatalf("second run: exit %d, %v\n%s", exitCode(err), err, out)
	}
}

// TestRemoveOrphans_DryRunThenRemove: an old stray file under data/ is
// listed by --dry-run (and kept), removed by remove-orphans --local; a
// safety age under a day is refused.
func TestRemoveOrphans_DryRunThenRemove(t *testing.T) {
	cat, uri, wh := localSQLCatalog(t, "")
	ident := table.Identifier{"shop", "orders"}
	ctx := context.Background()
	tbl, err := sampletable.Create(ctx, cat, ident, sampletable.Options{FormatVersion: 2, Partitions: 1, Files: 2, RowsPerFile: 10})
	if err != nil {
		t.Fatal(err)
	}
	stray := filepath.Join(strings.TrimPrefix(tbl.Location(), "file://"), "data", "stray.parquet")
	if err := os.WriteFile(stray, []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-100 * time.Hour)
	if err := os.Chtimes(stray, old, old); err != nil {
		t.Fatal(err)
	}
	flags := []string{"--catalog", "sql", "--catalog-name", "local", "--uri", uri, "--warehouse", wh}
	out, err := runCLI(t, append([]string{"remove-orphans", "shop.orders", "--dry-run", "--older-than", "48h"}, flags...)...)
	if err != nil || !strings.Contains(out, "1 orphan files older than 48h0m0s would be removed") || !strings.Contains(out, stray) {
		t.Fatalf("dry run: %v\n%s", err, out)
	}
	if _, err := os.Stat(stray); err != nil {
		t.Fatal("the dry run removed the file")
	}
	if _, err := runCLI(t, append([]string{"remove-orphans", "shop.orders", "--older-than", "12h", "--local", "-q"}, flags...)...); exitCode(err) == 0 {
		t.Fatal("a 12h safety age was accepted")
	}
	out, err = runCLI(t, append([]string{"remove-orphans", "shop.orders", "--local", "-q"}, flags...)...)
	if err != nil || !strings.Contains(out, "removed 1 orphan files") {
		t.Fatalf("remove-orphans: %v\n%s", err, out)
	}
	if _, err := os.Stat(stray); err == nil {
		t.Fatal("the orphan is still there")
	}
}

// TestMaintain_RunsEveryDueActionInOrder: on a table with small files,
// deletes and a short retention, maintain compacts and then expires (and
// rewrites manifests when due); run again, nothing is due (exit 3).
func TestMaintain_RunsEveryDueActionInOrder(t *testing.T) {
	cat, uri, wh := localSQLCatalog(t, "")
	ident := table.Identifier{"shop", "orders"}
	ctx := context.Background()
	if _, err := sampletable.Create(ctx, cat, ident, sampletable.Options{FormatVersion: 2, Partitions: 2, Files: 6, RowsPerFile: 40, PositionDeletes: true,
		Properties: map[string]string{expire.MinSnapshotsToKeepKey: "1", expire.MaxSnapshotAgeMsKey: "1"}}); err != nil {
		t.Fatal(err)
	}
	flags := []string{"--catalog", "sql", "--catalog-name", "local", "--uri", uri, "--warehouse", wh}
	out, err := runCLI(t, append([]string{"maintain", "shop.orders", "--local", "-q"}, flags...)...)
	if err != nil {
		t.Fatalf("maintain: %v\n%s", err, out)
	}
	compacted := strings.Index(out, "committed: new snapshot")
	expired := strings.Index(out, "committed: expired")
	if compacted < 0 || expired < compacted {
		t.Fatalf("want a compaction, then an expiry:\n%s", out)
	}
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	if n := len(tbl.Metadata().Snapshots()); n != 1 {
		t.Fatalf("%d snapshots left, want 1", n)
	}
	out, err = runCLI(t, append([]string{"maintain", "shop.orders", "--local", "-q"}, flags...)...)
	if exitCode(err) != exitNothingToDo {
		t.Fatalf("second maintain: exit %d, %v\n%s", exitCode(err), err, out)
	}
}
