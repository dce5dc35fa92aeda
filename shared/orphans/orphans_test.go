package orphans

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/icekeeper/icekeeper/shared/catalogs"
	"github.com/icekeeper/icekeeper/shared/sampletable"
)

// fixture is a sqlite catalog and its warehouse in a temporary folder.
type fixture struct {
	cat catalog.Catalog
	dir string // local folder of the warehouse
}

func setup(t *testing.T) fixture {
	t.Helper()
	dir := t.TempDir()
	wh := filepath.Join(dir, "wh")
	cat, err := catalogs.Open(context.Background(), catalogs.Config{Type: "sql", Name: "orphans", URI: "file:" + filepath.Join(dir, "cat.db"), Warehouse: "file://" + wh}, aws.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return fixture{cat: cat, dir: wh}
}

func sample(v int) sampletable.Options {
	return sampletable.Options{FormatVersion: v, Partitions: 2, Files: 3, RowsPerFile: 20, PositionDeletes: true}
}

func (f fixture) create(t *testing.T, name string, o sampletable.Options) *table.Table {
	t.Helper()
	tbl, err := sampletable.Create(context.Background(), f.cat, table.Identifier{"ns", name}, o)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// write writes a file at a local path, aged by age.
func write(t *testing.T, p string, body []byte, age time.Duration) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(p, body, 0o644); err != nil {
		t.Fatal(err)
	}
	when := time.Now().Add(-age)
	if err := os.Chtimes(p, when, when); err != nil {
		t.Fatal(err)
	}
}

func localPath(uri string) string { return strings.TrimPrefix(uri, "file://") }

// TestDeletable_OnlyDataAndMetadataAndNeverAnAttemptInFlight.
func TestDeletable_OnlyDataAndMetadataAndNeverAnAttemptInFlight(t *testing.T) {
	const attempt = "0badc0de-0000-4000-8000-00000000" + "0000"
	loc := "s3://b/wh/t"
	orphans := []string{
		"s3://b/wh/t/data/p=1/00000-0-stray.parquet",
		"s3://b/wh/t/metadata/stray.avro",
		"s3://b/wh/t/data/p=1/00000-0-" + attempt + "-00001.parquet",
		"s3://b/wh/t/scratch/notes.txt",
		"s3://b/wh/t/database.txt",
	}
	del, elsewhere := Deletable(loc, orphans, []string{attempt})
	if !slices.Equal(del, orphans[:2]) || !slices.Equal(elsewhere, orphans[3:]) {
		t.Fatalf("deletable %v, elsewhere %v", del, elsewhere)
	}
}

// TestFind_ThePrefixesTogetherFindWhatTheWholeLocationDoes: the
// prefixes Prefixes splits a location into, each listed apart, find
// exactly the orphans listing the whole location finds (no file twice, none
// missed), whether the orphan sits at the location's top, directly in
// data/, in a partition folder, in a nested folder, in metadata/ or in
// another top-level folder; and a prefix outside the location is refused.
func TestFind_ThePrefixesTogetherFindWhatTheWholeLocationDoes(t *testing.T) {
	t.Parallel()
	f := setup(t)
	tbl := f.create(t, "prefixes", sample(2))
	root := strings.TrimPrefix(tbl.Location(), "file://")
	for _, rel := range []string{"top.bin", "data/direct.parquet", "data/region=region-01/stray.parquet",
		"data/region=region-02/deeper/stray.parquet", "data/new=1/a.parquet", "metadata/stray.avro", "scratch/notes/n.txt"} {
		p := filepath.Join(root, rel)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("stray"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	ctx := context.Background()
	all, err := Find(ctx, tbl, Prefix{}, time.Time{})
	if err != nil {
		t.Fatal(err)
	}
	whole, _ := Paths(all.Orphans)
	if len(whole) != 7 {
		t.Fatalf("whole location: %d orphans %q, want the 7 planted", len(whole), whole)
	}
	prefixes, err := Prefixes(ctx, tbl)
	if err != nil {
		t.Fatal(err)
	}
	if len(prefixes) < 6 {
		t.Fatalf("prefixes %+v: want the top, data/ (shallow), its partitions, metadata/ and scratch/", prefixes)
	}
	seen := map[string]int{}
	for _, p := range prefixes {
		found, err := Find(ctx, tbl, p, time.Time{})
		if err != nil {
			t.Fatalf("prefix %+v: %v", p, err)
		}
		for _, o := range found.Orphans {
			seen[o.Path]++
			if o.Bytes != int64(len("stray")) {
				t.Fatalf("%s: %d bytes", o.Path, o.Bytes)
			}
		}
	}
	for _, p := range whole {
		if seen[p] != 1 {
			t.Fatalf("%s found %d times by the prefixes, want once", p, seen[p])
		}
	}
	if len(seen) != len(whole) {
		t.Fatalf("the prefixes found %d files, the whole location %d", len(seen), len(whole))
	}
	if _, err := Find(ctx, tbl, Prefix{Path: filepath.Dir(root)}, time.Time{}); err == nil {
		t.Fatal("a prefix above the table's location was listed")
	}
}
