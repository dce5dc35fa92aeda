package orphans

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/icekeeper/icekeeper/shared/catalogs"
	"github.com/icekeeper/icekeeper/shared/harness/sampletable"
)

// fixture is a sqlite catalog and its warehouse in a temporary folder.
type fixture struct {
	cat catalog.Catalog
	dir string // local folder of the warehouse
}

func setup(t testing.TB) fixture {
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

func (f fixture) create(t testing.TB, name string, o sampletable.Options) *table.Table {
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

// gzipped is body compressed with gzip.
func gzipped(t *testing.T, body []byte) []byte {
	t.Helper()
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	if _, err := w.Write(body); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

// TestFind_ReportsWhatLooksLikeMetadataWhateverItsAge: unreferenced files
// that look like table metadata are reported however young (compressed
// names, a version hint, anything in a metadata/ folder other than the
// table's own), and nothing else is.
func TestFind_ReportsWhatLooksLikeMetadataWhateverItsAge(t *testing.T) {
	t.Parallel()
	f := setup(t)
	tbl := f.create(t, "looks", sample(2))
	root := localPath(tbl.Location())
	want := []string{"data/a/00001-x.gz.metadata.json", "data/b/00001-x.metadata.json.gz", "data/c/version-hint.text",
		"data/d/metadata/snap-1.avro", "metadata/00009-young.metadata.json"}
	for _, rel := range append([]string{"data/young.parquet", "metadata/young-m0.avro"}, want...) {
		write(t, filepath.Join(root, rel), []byte("x"), time.Minute)
	}
	found, err := Find(context.Background(), tbl, Prefix{}, time.Now().Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(found.Orphans) != 0 {
		t.Fatalf("young orphans reported: %v", found.Orphans)
	}
	var got []string
	for _, p := range found.Metadata {
		got = append(got, strings.TrimPrefix(p, root+"/"))
	}
	if !slices.Equal(got, want) {
		t.Fatalf("metadata-looking files %q, want %q", got, want)
	}
}

// TestFind_NeverTakesAMetadataFileForAnOrphan: a table metadata file
// (plain or compressed, under any of its names) or a version hint that
// nothing references and that is far older than the safety age is
// reported as metadata and never as an orphan, so no cleanup deletes it
// (the stack denies those deletes too); an old unreferenced data file
// next to them is an orphan.
func TestFind_NeverTakesAMetadataFileForAnOrphan(t *testing.T) {
	t.Parallel()
	f := setup(t)
	tbl := f.create(t, "kept", sample(2))
	root := localPath(tbl.Location())
	kept := []string{"metadata/00001-old.metadata.json", "metadata/00002-old.gz.metadata.json",
		"metadata/00003-old.metadata.json.gz", "metadata/00004-old.metadata.json.zstd"}
	// The table's own version hint is referenced; one elsewhere is not.
	for _, rel := range append([]string{"data/old.parquet", "metadata/version-hint.text", "data/x/version-hint.text"}, kept...) {
		write(t, filepath.Join(root, rel), []byte("x"), 30*24*time.Hour)
	}
	found, err := Find(context.Background(), tbl, Prefix{}, time.Now().Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	var orphans []string
	for _, o := range found.Orphans {
		orphans = append(orphans, strings.TrimPrefix(o.Path, root+"/"))
	}
	if !slices.Equal(orphans, []string{"data/old.parquet"}) {
		t.Fatalf("orphans %q, want only data/old.parquet", orphans)
	}
	for _, rel := range append(kept, "data/x/version-hint.text") {
		if !slices.Contains(found.Metadata, root+"/"+rel) {
			t.Errorf("%s not reported as metadata: %q", rel, found.Metadata)
		}
	}
}

// TestShared_RefusesMetadataThatIsNotTheTables: a metadata file of the
// table itself, plain or gzip whatever its name, is accepted; another
// table's, one that cannot be parsed, and a version hint are refused with
// ErrRefused naming the file; so are a root location, an unsupported
// scheme and a nil catalog.
func TestShared_RefusesMetadataThatIsNotTheTables(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	tbl := f.create(t, "shared", sample(2))
	other := f.create(t, "other", sample(2))
	root := localPath(tbl.Location())
	own, err := os.ReadFile(localPath(tbl.MetadataLocation()))
	if err != nil {
		t.Fatal(err)
	}
	theirs, err := os.ReadFile(localPath(other.MetadataLocation()))
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name   string
		body   []byte
		refuse bool
	}{
		{"metadata/00007-own.metadata.json", own, false},
		{"metadata/00008-own.metadata.json.gz", gzipped(t, own), false},
		{"metadata/00009-own.metadata.json", gzipped(t, own), false}, // gzip by its magic bytes
		{"metadata/00010-theirs.gz.metadata.json", gzipped(t, theirs), true},
		{"data/x/metadata/00000-theirs.metadata.json", theirs, true},
		{"metadata/00011-broken.metadata.json", []byte("{not json"), true},
		{"data/x/metadata/version-hint.text", []byte("1"), true},
		{"data/x/metadata/snap-1.avro", []byte("avro"), true},
	} {
		p := filepath.Join(root, c.name)
		write(t, p, c.body, time.Minute)
		err := Shared(ctx, tbl, []string{p}, f.cat)
		if got := errors.Is(err, ErrRefused); got != c.refuse || c.refuse && !strings.Contains(err.Error(), p) {
			t.Errorf("%s: %v, want refused %v naming it", c.name, err, c.refuse)
		}
		os.Remove(p)
	}
	if err := Shared(ctx, tbl, nil, f.cat); err != nil {
		t.Fatalf("the table's own location: %v", err)
	}
	if err := Shared(ctx, tbl, nil, nil); !errors.Is(err, ErrRefused) {
		t.Fatalf("no catalog: %v, want ErrRefused", err)
	}
	for _, loc := range []string{"gs://b/t", "s3://b", "file:///"} {
		meta, err := table.NewMetadata(sampletable.Schema(), iceberg.UnpartitionedSpec, table.UnsortedSortOrder, loc, nil)
		if err != nil {
			t.Fatal(err)
		}
		odd := table.New(table.Identifier{"ns", "odd"}, meta, loc+"/metadata/v1.metadata.json", nil, nil)
		if err := Shared(ctx, odd, nil, f.cat); !errors.Is(err, ErrRefused) {
			t.Errorf("location %s: %v, want ErrRefused", loc, err)
		}
	}
}

// TestShared_RefusesATableOfTheCatalogInsideOrAroundTheLocation: a table
// of the catalog located inside this one's location, one whose
// write.metadata.path is inside it, and one whose location holds it are
// each refused naming the table; a table elsewhere is not.
func TestShared_RefusesATableOfTheCatalogInsideOrAroundTheLocation(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	for _, c := range []struct {
		name   string
		opts   func(loc string) sampletable.Options
		refuse bool
	}{
		{"elsewhere", func(string) sampletable.Options { return sampletable.Options{FormatVersion: 2} }, false},
		{"inside", func(loc string) sampletable.Options {
			return sampletable.Options{FormatVersion: 2, Location: loc + "/data/inside"}
		}, true},
		{"metadata_inside", func(loc string) sampletable.Options {
			return sampletable.Options{FormatVersion: 2, Properties: map[string]string{"write.metadata.path": loc + "/metadata/other"}}
		}, true},
		{"around", func(loc string) sampletable.Options {
			return sampletable.Options{FormatVersion: 2, Location: strings.TrimSuffix(loc, "/events")}
		}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			f := setup(t)
			tbl := f.create(t, "events", sample(2))
			f.create(t, c.name, c.opts(tbl.Location()))
			err := Shared(ctx, tbl, nil, f.cat)
			if errors.Is(err, ErrRefused) != c.refuse || c.refuse && !strings.Contains(err.Error(), "ns."+c.name) {
				t.Fatalf("%v, want refused %v naming ns.%s", err, c.refuse, c.name)
			}
		})
	}
}
