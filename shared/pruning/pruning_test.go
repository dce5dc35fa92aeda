package pruning

import (
	"context"
	"errors"
	"math"
	"path/filepath"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/icekeeper/icekeeper/shared/bounds"
	"github.com/icekeeper/icekeeper/shared/catalogs"
	"github.com/icekeeper/icekeeper/shared/harness/sampletable"
	"github.com/icekeeper/icekeeper/shared/messages"
)

func ints(pairs ...int64) []bounds.Range {
	var out []bounds.Range
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, bounds.Range{Lo: bounds.IntValue(pairs[i]), Hi: bounds.IntValue(pairs[i+1])})
	}
	return out
}

// TestOverlap_DepthAndPointLookupsFromRanges: disjoint ranges have depth
// 1 and one file per lookup; ranges that all cover each other have depth
// and lookups of their number; closed ranges that touch share the value.
func TestOverlap_DepthAndPointLookupsFromRanges(t *testing.T) {
	for _, tc := range []struct {
		name   string
		ranges []bounds.Range
		depth  int
		lookup float64
	}{
		{"disjoint", ints(0, 9, 10, 19, 20, 29), 1, 1},
		{"all the same", ints(0, 99, 0, 99, 0, 99, 0, 99), 4, 4},
		{"touching ends share a value", ints(1, 2, 2, 3), 2, 1.5},
		{"one wide range over three narrow", ints(0, 100, 10, 20, 30, 40, 50, 60), 2, 1.75},
		{"nested", ints(0, 100, 10, 90, 20, 80), 3, 2},
		{"none", nil, 0, 0},
	} {
		depth, lookup := Overlap(bounds.Int, tc.ranges)
		if depth != tc.depth || lookup != tc.lookup {
			t.Errorf("%s: depth %d, lookup %v; want %d, %v", tc.name, depth, lookup, tc.depth, tc.lookup)
		}
	}
}

// layout builds a one-column layout: each partition a list of files
// (lo, hi, size; lo > hi: no bounds) and its deletes.
type testFile struct{ lo, hi, size int64 }
type testPart struct {
	files       []testFile
	deleteFiles int
	deleteBytes int64
}

func layout(parts map[string]testPart) *Layout {
	l := &Layout{columns: []column{{name: "k", id: 1, typ: iceberg.PrimitiveTypes.Int64, kind: bounds.Int}}, parts: map[string]*partition{}}
	for key, tp := range parts {
		p := &partition{deleteFiles: tp.deleteFiles, deleteBytes: tp.deleteBytes}
		for _, f := range tp.files {
			file := file{size: f.size, ranges: make([]bounds.Range, 1), has: []bool{f.lo <= f.hi}}
			if f.lo <= f.hi {
				file.ranges[0] = bounds.Range{Lo: bounds.IntValue(f.lo), Hi: bounds.IntValue(f.hi)}
			}
			p.files = append(p.files, file)
			l.TableBytes += f.size
		}
		l.parts[key] = p
	}
	return l
}

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestPointLookup_OpensTheFilesHoldingTheValueAndTheirShareOfDeletes(t *testing.T) {
	for _, tc := range []struct {
		name  string
		parts map[string]testPart
		want  Read
	}{
		{
			// Probes 0, 10, 20, 30: each lands in one file.
			name:  "disjoint files: one file per lookup",
			parts: map[string]testPart{"a": {files: []testFile{{0, 9, 100}, {10, 19, 100}}}, "b": {files: []testFile{{20, 29, 300}, {30, 39, 500}}}},
			want:  Read{Files: 1, Bytes: (100 + 100 + 300 + 500) / 4.0},
		},
		{
			name:  "overlapping files: every file per lookup",
			parts: map[string]testPart{"a": {files: []testFile{{0, 99, 100}, {0, 99, 200}, {0, 99, 300}}}},
			want:  Read{Files: 3, Bytes: 600},
		},
		{
			// Probes 0 and 50 (the bounded files' lower ends); the file
			// without bounds is opened by both.
			name:  "a file without bounds is always opened",
			parts: map[string]testPart{"a": {files: []testFile{{0, 9, 100}, {50, 59, 100}, {1, 0, 40}}}},
			want:  Read{Files: 2, Bytes: 140},
		},
		{
			// Probes 0, 10, 100. Partition a's files each hold one of
			// them: 2/3 of a file per lookup, a third of a's two files, so
			// a third of its deletes.
			name: "deletes are read in the share of their partition's files opened",
			parts: map[string]testPart{
				"a": {files: []testFile{{0, 9, 100}, {10, 19, 100}}, deleteFiles: 6, deleteBytes: 60},
				"b": {files: []testFile{{100, 109, 100}}},
			},
			want: Read{Files: 2.0/3 + 2 + 1.0/3, Bytes: 200.0/3 + 20 + 100.0/3},
		},
	} {
		got, ok := layout(tc.parts).PointLookup("k")
		if !ok || !near(got.Files, tc.want.Files) || !near(got.Bytes, tc.want.Bytes) {
			t.Errorf("%s: %+v (%v), want %+v", tc.name, got, ok, tc.want)
		}
	}
	if _, ok := layout(nil).PointLookup("missing"); ok {
		t.Error("a lookup on a column without bounds was estimated")
	}
}

func TestTouched_OnlyFilesWhoseBoundsMayMatch(t *testing.T) {
	l := layout(map[string]testPart{
		"a": {files: []testFile{{0, 9, 10}, {10, 19, 20}, {1, 0, 5}}, deleteFiles: 3, deleteBytes: 30},
		"b": {files: []testFile{{5, 15, 40}}},
	})
	got, err := l.Touched(Predicate{Column: "k", Lo: bounds.IntValue(9), Hi: bounds.IntValue(10)})
	if err != nil {
		t.Fatal(err)
	}
	// All four files may hold 9 or 10 (the unbounded one too); a's three
	// of three files read all its deletes.
	if want := (Read{Files: 4 + 3, Bytes: 10 + 20 + 5 + 40 + 30}); got != want {
		t.Errorf("range [9,10]: %+v, want %+v", got, want)
	}
	got, _ = l.Touched(Predicate{Column: "k", Lo: bounds.IntValue(16), Hi: bounds.IntValue(16)})
	// [10,19] and the unbounded file in a (2 of 3: 2 deletes, 20 bytes).
	if want := (Read{Files: 2 + 2, Bytes: 20 + 5 + 20}); got != want {
		t.Errorf("point 16: %+v, want %+v", got, want)
	}
	if _, err := l.Touched(Predicate{Column: "nope"}); err == nil {
		t.Error("a predicate on an unknown column was accepted")
	}
	if got, want := l.FullScan(), (Read{Files: 4 + 3, Bytes: 75 + 30}); got != want {
		t.Errorf("full scan: %+v, want %+v", got, want)
	}
}

// TestCollect_KeepsTheChosenFilesAndCountsTheWholeTable reads a real
// table: two partitions of disjoint id blocks with position deletes.
func TestCollect_KeepsTheChosenFilesAndCountsTheWholeTable(t *testing.T) {
	ctx := context.Background()
	tbl := sampleTable(t, sampletable.Options{FormatVersion: 2, Partitions: 2, Files: 4, RowsPerFile: 50, PositionDeletes: true})
	all, err := Collect(ctx, tbl, tbl.CurrentSnapshot(), nil)
	if err != nil {
		t.Fatal(err)
	}
	if all.Partitions() != 2 {
		t.Fatalf("%d partitions, want 2", all.Partitions())
	}
	full := all.FullScan()
	if full.Files <= 8 || full.Bytes <= float64(all.TableBytes) {
		t.Errorf("full scan %+v of 8 data files (%d bytes) and their deletes: want more than the data alone", full, all.TableBytes)
	}
	lookup, ok := all.PointLookup("id")
	if !ok || lookup.Files < 1 || lookup.Files >= full.Files/2 {
		t.Errorf("a lookup on the clustered id opens %+v files, want about one data file and its share of deletes (full scan %v)", lookup, full.Files)
	}
	var first string
	one, err := Collect(ctx, tbl, tbl.CurrentSnapshot(), func(e iceberg.ManifestEntry) bool {
		k := messages.PartitionKey(e.DataFile())
		if first == "" {
			first = k
		}
		return k == first
	})
	if err != nil {
		t.Fatal(err)
	}
	if one.Partitions() != 1 || one.TableBytes != all.TableBytes {
		t.Errorf("one partition kept: %d partitions, table bytes %d (want 1, %d)", one.Partitions(), one.TableBytes, all.TableBytes)
	}
	if got := one.FullScan(); !(got.Bytes < full.Bytes && got.Bytes > 0) {
		t.Errorf("one partition's full scan %+v, the table's %+v", got, full)
	}
}

// TestCompare_RefusesLayoutsLargerThanItsMemory: the layouts hold every
// data file of the touched partitions; given less memory than the
// estimate of one, Compare returns ErrTooLarge instead of reading
// them, and with enough it measures. The same table before and after
// (nothing rewritten) reads the same.
func TestCompare_RefusesLayoutsLargerThanItsMemory(t *testing.T) {
	ctx := context.Background()
	tbl := sampleTable(t, sampletable.Options{FormatVersion: 2, Partitions: 2, Files: 4, RowsPerFile: 50})
	inputs := map[string]bool{}
	fs, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	manifests, err := tbl.CurrentSnapshot().Manifests(fs)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range manifests {
		for e, err := range m.Entries(fs, true) {
			if err != nil {
				t.Fatal(err)
			}
			inputs[e.DataFile().FilePath()] = true
		}
	}
	rw := Rewrite{Inputs: inputs, SequenceNumber: tbl.CurrentSnapshot().SequenceNumber}
	// 8 data files in 2 partitions, the sample table's columns.
	need := 8 * layoutFileBytes(min(MaxColumns, len(tbl.Schema().Fields())))
	rw.MaxBytes = need - 1
	if _, err := Compare(ctx, tbl, tbl, rw); !errors.Is(err, ErrTooLarge) {
		t.Fatalf("with %d bytes for layouts that need %d: %v, want ErrTooLarge", rw.MaxBytes, need, err)
	}
	rw.MaxBytes = need
	r, err := Compare(ctx, tbl, tbl, rw)
	if err != nil {
		t.Fatal(err)
	}
	if r.Partitions != 2 || r.FullScan.Before != r.FullScan.After || r.FullScan.Before.Files != 8 {
		t.Errorf("reads %+v, want both partitions, 8 files before and after", r)
	}
}

// sampleTable is a sample table ns.t of opts in a sql catalog of its own.
func sampleTable(t *testing.T, opts sampletable.Options) *table.Table {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	cat, err := catalogs.Open(ctx, catalogs.Config{Type: "sql", Name: "pruning", URI: "file:" + filepath.Join(dir, "cat.db"), Warehouse: "file://" + filepath.Join(dir, "wh")}, aws.Config{})
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := sampletable.Create(ctx, cat, table.Identifier{"ns", "t"}, opts)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}
