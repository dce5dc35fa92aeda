package tests

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/icekeeper/icekeeper/shared/catalogs"
	"github.com/icekeeper/icekeeper/shared/harness/fingerprint"
	"github.com/icekeeper/icekeeper/shared/harness/sampletable"
	"github.com/icekeeper/icekeeper/shared/plan"
)

// otherCatalog is a second sqlite catalog over the same warehouse: a table
// in it is one the committer cannot see.
func (e *env) otherCatalog() catalog.Catalog {
	e.t.Helper()
	cat, err := catalogs.Open(e.ctx, catalogs.Config{Type: "sql", Name: "other", URI: "file:" + filepath.Join(e.t.TempDir(), "other.db"), Warehouse: e.cfg.Catalog.Warehouse}, aws.Config{})
	if err != nil {
		e.t.Fatal(err)
	}
	return cat
}

// ageTree sets every file under the local folder dir to age old.
func ageTree(t *testing.T, dir string, age time.Duration) {
	t.Helper()
	when := time.Now().Add(-age)
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		return os.Chtimes(p, when, when)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// localFilesUnder lists the files under the local folder dir.
func localFilesUnder(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() {
			out = append(out, p)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// otherTable is a table whose files lie under the table under test's
// location, and what must hold of it after a refused cleanup.
type otherTable struct {
	cat   catalog.Catalog
	ident table.Identifier
	// dirs are the local folders that hold its files.
	dirs  []string
	files []string
	rows  fingerprint.Fingerprint
}

func (e *env) newOther(cat catalog.Catalog, ident table.Identifier, o sampletable.Options, dirs ...string) *otherTable {
	e.t.Helper()
	tbl, err := sampletable.Create(e.ctx, cat, ident, o)
	if err != nil {
		e.t.Fatal(err)
	}
	ot := &otherTable{cat: cat, ident: ident, dirs: dirs}
	if ot.rows, err = fingerprint.Table(e.ctx, tbl); err != nil {
		e.t.Fatal(err)
	}
	return ot
}

// settle ages the other table's files, then has it commit twice more (new,
// young metadata files), and records its files.
func (o *otherTable) settle(t *testing.T, ctx context.Context) {
	t.Helper()
	for _, d := range o.dirs {
		ageTree(t, d, 96*time.Hour)
	}
	for i := range 2 {
		tbl, err := o.cat.LoadTable(ctx, o.ident)
		if err != nil {
			t.Fatal(err)
		}
		tx := tbl.NewTransaction()
		if err := tx.SetProperties(iceberg.Properties{"touched": strings.Repeat("x", i+1)}); err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
	}
	o.files = nil
	for _, d := range o.dirs {
		o.files = append(o.files, localFilesUnder(t, d)...)
	}
}

// requireIntact fails unless every file of the other table is there and
// its rows read the same.
func (o *otherTable) requireIntact(t *testing.T, ctx context.Context) {
	t.Helper()
	for _, p := range o.files {
		if !exists(p) {
			t.Fatalf("a file of the other table was removed: %s", p)
		}
	}
	tbl, err := o.cat.LoadTable(ctx, o.ident)
	if err != nil {
		t.Fatal(err)
	}
	if got, err := fingerprint.Table(ctx, tbl); err != nil || got != o.rows {
		t.Fatalf("the other table's rows %s (%v), want %s", got, err, o.rows)
	}
}

// requireRefused plans a cleanup of the table under test and wants it
// refused with a reason containing each of names; nothing is removed.
func (e *env) requireRefused(stray string, names ...string) {
	e.t.Helper()
	r, err := e.planner.PlanOrphanCleanup(asFunction(e.ctx, "Planner"), e.name(), "test", 0)
	if err != nil || r.Outcome != plan.OutcomeNothingToDo || !strings.HasPrefix(r.Reason, plan.ReasonOrphansRefused) {
		e.t.Fatalf("plan: %+v %v, want refused", r, err)
	}
	for _, n := range names {
		if !strings.Contains(r.Reason, n) {
			e.t.Fatalf("refusal %q does not name %s", r.Reason, n)
		}
	}
	if !exists(stray) {
		e.t.Fatal("a refused cleanup removed a file")
	}
}

// TestOrphans_ANestedTableThatKeepsOnlyYoungMetadataIsNotCleanedAway: a
// table of another catalog lives inside this table's data/ folder; it
// deletes its old metadata files after each commit, so all it has are
// young ones, while its data and manifests are old. The cleanup is refused
// naming its metadata, and its files and rows stay.
func TestOrphans_ANestedTableThatKeepsOnlyYoungMetadataIsNotCleanedAway(t *testing.T) {
	e := setup(t)
	tbl := e.createTable(smallTable)
	loc := strings.TrimSuffix(tbl.Location(), "/") + "/data/nested"
	other := e.newOther(e.otherCatalog(), table.Identifier{"elsewhere", "nested"}, sampletable.Options{FormatVersion: 2, Partitions: 1, Files: 3, RowsPerFile: 10,
		Location: loc, Properties: map[string]string{"write.metadata.delete-after-commit.enabled": "true", "write.metadata.previous-versions-max": "1"}},
		strings.TrimPrefix(loc, "file://"))
	other.settle(t, e.ctx)
	stray := e.plant("data/region=region-00/00000-0-stray.parquet", 96*time.Hour)
	e.requireRefused(stray, strings.TrimPrefix(loc, "file://")+"/metadata/")
	other.requireIntact(t, e.ctx)
}

// TestOrphans_ANestedTableWithGzipMetadataIsNotCleanedAway: a table of
// another catalog inside this table's location writes gzip metadata
// (*.gz.metadata.json), all of it old: the cleanup is refused naming it,
// and its files and rows stay.
func TestOrphans_ANestedTableWithGzipMetadataIsNotCleanedAway(t *testing.T) {
	e := setup(t)
	tbl := e.createTable(smallTable)
	loc := strings.TrimSuffix(tbl.Location(), "/") + "/data/gz"
	other := e.newOther(e.otherCatalog(), table.Identifier{"elsewhere", "gz"}, sampletable.Options{FormatVersion: 2, Partitions: 1, Files: 3, RowsPerFile: 10,
		Location: loc, Properties: map[string]string{"write.metadata.compression-codec": "gzip"}},
		strings.TrimPrefix(loc, "file://"))
	other.settle(t, e.ctx)
	ageTree(t, strings.TrimPrefix(loc, "file://"), 96*time.Hour)
	gz := 0
	for _, p := range other.files {
		if strings.HasSuffix(p, ".gz.metadata.json") {
			gz++
		}
	}
	if gz == 0 {
		t.Fatalf("no gzip metadata file among %v", other.files)
	}
	stray := e.plant("data/region=region-00/00000-0-stray.parquet", 96*time.Hour)
	e.requireRefused(stray, strings.TrimPrefix(loc, "file://")+"/metadata/", ".gz.metadata.json")
	other.requireIntact(t, e.ctx)
}

// TestOrphans_ASiblingWritingItsDataInsideTheLocationIsNotCleanedAway: a
// table of the same catalog, at a location of its own, writes its data
// files inside this table's data/ folder (write.data.path): the cleanup is
// refused naming that table, and its files and rows stay.
func TestOrphans_ASiblingWritingItsDataInsideTheLocationIsNotCleanedAway(t *testing.T) {
	e := setup(t)
	tbl := e.createTable(smallTable)
	dataPath := strings.TrimSuffix(tbl.Location(), "/") + "/data/sibling-data"
	other := e.newOther(e.cat, table.Identifier{"demo", "sibling"}, sampletable.Options{FormatVersion: 2, Partitions: 1, Files: 3, RowsPerFile: 10},
		strings.TrimPrefix(dataPath, "file://"))
	moveData(t, e.ctx, e.cat, other.ident, dataPath)
	other.settle(t, e.ctx)
	if len(other.files) == 0 {
		t.Fatalf("the sibling wrote no data file under %s", dataPath)
	}
	stray := e.plant("data/region=region-00/00000-0-stray.parquet", 96*time.Hour)
	e.requireRefused(stray, "demo.sibling", "write.data.path")
	other.requireIntact(t, e.ctx)
}

// moveData copies the live data files of the table to dataPath, has the
// table reference the copies instead, and sets its write.data.path there,
// as a writer honouring write.data.path would have written them
// (iceberg-go's appends do not).
func moveData(t *testing.T, ctx context.Context, cat catalog.Catalog, ident table.Identifier, dataPath string) {
	t.Helper()
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		t.Fatal(err)
	}
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var from, to []iceberg.DataFile
	for i, task := range tasks {
		src := task.File
		dst := fmt.Sprintf("%s/%05d-%s", dataPath, i, filepath.Base(src.FilePath()))
		body, err := os.ReadFile(strings.TrimPrefix(src.FilePath(), "file://"))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.MkdirAll(filepath.Dir(strings.TrimPrefix(dst, "file://")), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(strings.TrimPrefix(dst, "file://"), body, 0o644); err != nil {
			t.Fatal(err)
		}
		b, err := iceberg.NewDataFileBuilder(tbl.Spec(), iceberg.EntryContentData, dst, iceberg.ParquetFile, src.Partition(), nil, nil, src.Count(), src.FileSizeBytes())
		if err != nil {
			t.Fatal(err)
		}
		from, to = append(from, src), append(to, b.Build())
	}
	tx := tbl.NewTransaction()
	if err := tx.ReplaceDataFilesWithDataFiles(ctx, from, to, nil); err != nil {
		t.Fatal(err)
	}
	if err := tx.SetProperties(iceberg.Properties{"write.data.path": dataPath}); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
}
