package deletefiles

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/dv"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/icekeeper/icekeeper/shared/catalogs"
)

// The sequence-number rules of the spec ("Scan Planning",
// apache/iceberg format/spec.md) decide which delete files a scan
// attaches to a data file; Positional and EqualityPositions then work out
// the positions those files drop. The test below commits, on a real
// table, data and delete files at chosen data sequence numbers, and checks
// per data file both what the scan planner attached and the positions
// found, against the rows a scan of the table returns:
//   - a position delete applies to data files whose data sequence number
//     is less than or equal to its own (including the same commit: "This
//     allows deleting rows that were added in the same commit");
//   - an equality delete applies to data files whose data sequence number
//     is strictly less than its own (never to the same commit's);
//   - a deletion vector, when one applies, supersedes the data file's
//     position delete files.

func localFile(path string) string { return strings.TrimPrefix(path, "file://") }

// seqTable makes a v2 table (format 2: position delete files may be
// added) with ids 0..9 in one data file A.
func seqTable(t *testing.T) (*table.Table, iceberg.DataFile) {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	cat, err := catalogs.Open(ctx, catalogs.Config{Type: "sql", Name: "seq", URI: "file:" + filepath.Join(dir, "cat.db"), Warehouse: "file://" + filepath.Join(dir, "wh")}, aws.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.CreateNamespace(ctx, table.Identifier{"ns"}, nil); err != nil {
		t.Fatal(err)
	}
	schema := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	tbl, err := cat.CreateTable(ctx, table.Identifier{"ns", "t"}, schema, catalog.WithProperties(iceberg.Properties{
		"format-version":               "2",
		table.WriteDeleteModeKey:       table.WriteModeMergeOnRead,
		"write.delete.isolation-level": "snapshot",
	}))
	if err != nil {
		t.Fatal(err)
	}
	sc, err := table.SchemaToArrowSchema(tbl.Schema(), nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for i := range int64(10) {
		b.Field(0).(*array.Int64Builder).Append(i)
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	if tbl, err = tbl.AppendTable(ctx, array.NewTableFromRecords(sc, []arrow.RecordBatch{rec}), 10, nil); err != nil {
		t.Fatal(err)
	}
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil || len(tasks) != 1 {
		t.Fatalf("tasks %v, %v", tasks, err)
	}
	return tbl, tasks[0].File
}

// copyOf copies data file a (ids 0..9) to a new path named name, next to
// it, and describes the copy: a data file that a later commit adds.
func copyOf(t *testing.T, a iceberg.DataFile, name string) iceberg.DataFile {
	t.Helper()
	path := filepath.Join(filepath.Dir(localFile(a.FilePath())), name)
	raw, err := os.ReadFile(localFile(a.FilePath()))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	prefix := ""
	if strings.HasPrefix(a.FilePath(), "file://") {
		prefix = "file://"
	}
	b, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, iceberg.EntryContentData, prefix+path, iceberg.ParquetFile, nil, nil, nil, a.Count(), a.FileSizeBytes())
	if err != nil {
		t.Fatal(err)
	}
	return b.Build()
}

// equalityFile writes an equality delete file of ids (equality field 1).
func equalityFile(t *testing.T, dir, name string, ids ...int64) iceberg.DataFile {
	t.Helper()
	sc := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64,
		Metadata: arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{strconv.Itoa(1)})}}, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	b.Field(0).(*array.Int64Builder).AppendValues(ids, nil)
	rec := b.NewRecordBatch()
	defer rec.Release()
	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(sc, &buf, nil, pqarrow.DefaultWriterProps())
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rec); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	path := dir + "/" + name
	if err := os.WriteFile(localFile(path), buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	db, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, iceberg.EntryContentEqDeletes, path, iceberg.ParquetFile, nil, nil, nil, int64(len(ids)), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	return db.EqualityFieldIDs([]int{1}).Build()
}

// rowDelta commits data and delete files in one snapshot.
func rowDelta(t *testing.T, tbl *table.Table, rows []iceberg.DataFile, deletes ...iceberg.DataFile) *table.Table {
	t.Helper()
	txn := tbl.NewTransaction()
	if err := txn.NewRowDelta(nil).AddRows(rows...).AddDeletes(deletes...).Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	tbl, err := txn.Commit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

// TestScanRules_DeletesApplyByDataSequenceNumber (see the comment above):
//
//	seq 1: A (ids 0..9)
//	seq 2: B (a copy of A)
//	seq 3: C (a copy of A) and position delete P0: B pos 9
//	seq 4: D (a copy of A)
//	seq 5: P0 replaced by P1 (A pos 1, B pos 3, C pos 4, D pos 6),
//	       keeping P0's data sequence number 3, as a delete-file rewrite
//	       does
//	seq 6: equality delete E1: id 5
//	seq 7: E (a copy of A) and equality delete E2: id 7
//
// (iceberg-go refuses a position delete naming a data file added in the
// same commit, so P1's sequence number, kept from P0, is what makes a
// data file of the same sequence number: C.)
func TestScanRules_DeletesApplyByDataSequenceNumber(t *testing.T) {
	ctx := context.Background()
	tbl, a := seqTable(t)
	fsys, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wfs := fsys.(iceio.WriteFileIO)
	dataDir := a.FilePath()[:strings.LastIndex(a.FilePath(), "/")]
	b, c, d, e := copyOf(t, a, "b.parquet"), copyOf(t, a, "c.parquet"), copyOf(t, a, "d.parquet"), copyOf(t, a, "e.parquet")
	tbl = rowDelta(t, tbl, []iceberg.DataFile{b})
	p0, err := WritePositionDeletes(wfs, dataDir+"/p0.parquet", *iceberg.UnpartitionedSpec, nil, []Entries{{b.FilePath(), bitmap(9)}})
	if err != nil {
		t.Fatal(err)
	}
	tbl = rowDelta(t, tbl, []iceberg.DataFile{c}, p0)
	tbl = rowDelta(t, tbl, []iceberg.DataFile{d})
	p1, err := WritePositionDeletes(wfs, dataDir+"/p1.parquet", *iceberg.UnpartitionedSpec, nil,
		[]Entries{{a.FilePath(), bitmap(1)}, {b.FilePath(), bitmap(3)}, {c.FilePath(), bitmap(4)}, {d.FilePath(), bitmap(6)}})
	if err != nil {
		t.Fatal(err)
	}
	txn := tbl.NewTransaction()
	if err := txn.ReplaceFilesWithDeleteFiles(ctx, nil, nil, []iceberg.DataFile{p0}, []table.DeleteFileAddition{{File: p1, DataSequenceNumber: 3}}, nil); err != nil {
		t.Fatal(err)
	}
	if tbl, err = txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	tbl = rowDelta(t, tbl, nil, equalityFile(t, dataDir, "e1.parquet", 5))
	tbl = rowDelta(t, tbl, []iceberg.DataFile{e}, equalityFile(t, dataDir, "e2.parquet", 7))

	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	byFile := map[string]table.FileScanTask{}
	for _, task := range tasks {
		byFile[task.File.FilePath()] = task
	}
	names := func(fs []iceberg.DataFile) []string {
		out := []string{}
		for _, f := range fs {
			out = append(out, filepath.Base(f.FilePath()))
		}
		slices.Sort(out)
		return out
	}
	cases := []struct {
		name      string
		file      iceberg.DataFile
		wantPos   []string // position delete files attached
		wantEq    []string // equality delete files attached
		positions []int64  // positions the deletes drop
	}{
		{"A (seq 1): a position delete of a higher sequence number, both equality deletes", a, []string{"p1.parquet"}, []string{"e1.parquet", "e2.parquet"}, []int64{1, 5, 7}},
		{"B (seq 2): likewise", b, []string{"p1.parquet"}, []string{"e1.parquet", "e2.parquet"}, []int64{3, 5, 7}},
		{"C (seq 3): a position delete of its own sequence number", c, []string{"p1.parquet"}, []string{"e1.parquet", "e2.parquet"}, []int64{4, 5, 7}},
		{"D (seq 4): not a position delete of a lower sequence number, though it names it", d, []string{}, []string{"e1.parquet", "e2.parquet"}, []int64{5, 7}},
		{"E (seq 7): not the equality delete of its own commit", e, []string{}, []string{}, []int64{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			task, ok := byFile[tc.file.FilePath()]
			if !ok {
				t.Fatalf("no task for %s", tc.file.FilePath())
			}
			if seq := task.DataSequenceNumber; seq == nil || !strings.Contains(tc.name, "(seq "+strconv.FormatInt(*seq, 10)+")") {
				t.Errorf("data sequence number %v, not the one the case names", seq)
			}
			if got := names(task.DeleteFiles); !slices.Equal(got, tc.wantPos) {
				t.Errorf("position deletes attached %v, want %v", got, tc.wantPos)
			}
			if got := names(task.EqualityDeleteFiles); !slices.Equal(got, tc.wantEq) {
				t.Errorf("equality deletes attached %v, want %v", got, tc.wantEq)
			}
			pos, err := Positional(ctx, fsys, []table.FileScanTask{task})
			if err != nil {
				t.Fatal(err)
			}
			got := pos[0]
			if len(task.EqualityDeleteFiles) > 0 {
				eq, err := EqualityPositions(ctx, tbl, task, task.EqualityDeleteFiles, 0)
				if err != nil {
					t.Fatal(err)
				}
				got.Or(eq)
			}
			if p := positions(got); !slices.Equal(p, tc.positions) {
				t.Errorf("positions %v, want %v", p, tc.positions)
			}
			// The scan agrees: row i is at position i of every copy.
			if live := scanIDs(t, tbl, task); !slices.Equal(live, complement(10, tc.positions)) {
				t.Errorf("the scan keeps %v, want %v", live, complement(10, tc.positions))
			}
		})
	}
}

// TestScanRules_ADeletionVectorSupersedesPositionDeleteFiles: after the
// table moved to v3, a deletion vector added for A (at a later sequence
// number) is what a scan applies to A; the position delete file still
// attached is ignored (spec, "Deletion Vectors": "readers can safely
// ignore matching position delete files"), and Positional does the same.
// The DV here deliberately omits P1's position (a writer must fold it in)
// so that which one applies is visible.
func TestScanRules_ADeletionVectorSupersedesPositionDeleteFiles(t *testing.T) {
	ctx := context.Background()
	tbl, a := seqTable(t)
	fsys, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wfs := fsys.(iceio.WriteFileIO)
	dataDir := a.FilePath()[:strings.LastIndex(a.FilePath(), "/")]
	p1, err := WritePositionDeletes(wfs, dataDir+"/p1.parquet", *iceberg.UnpartitionedSpec, nil, []Entries{{a.FilePath(), bitmap(1)}})
	if err != nil {
		t.Fatal(err)
	}
	tbl = rowDelta(t, tbl, nil, p1)
	txn := tbl.NewTransaction()
	if err := txn.UpgradeFormatVersion(3); err != nil {
		t.Fatal(err)
	}
	if tbl, err = txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	w := dv.NewDVWriter(wfs, func(int32) *iceberg.PartitionSpec { return iceberg.UnpartitionedSpec })
	if err := w.Add(a.FilePath(), []int64{6, 8}, 0, nil); err != nil {
		t.Fatal(err)
	}
	dvs, err := w.Flush(ctx, dataDir+"/dv.puffin")
	if err != nil {
		t.Fatal(err)
	}
	tbl = rowDelta(t, tbl, nil, dvs...)

	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil || len(tasks) != 1 {
		t.Fatalf("tasks %v, %v", tasks, err)
	}
	if len(tasks[0].DeletionVectorFiles) != 1 {
		t.Fatalf("deletion vectors attached: %d, want 1", len(tasks[0].DeletionVectorFiles))
	}
	pos, err := Positional(ctx, fsys, tasks)
	if err != nil {
		t.Fatal(err)
	}
	want := []int64{6, 8}
	if got := positions(pos[0]); !slices.Equal(got, want) {
		t.Errorf("positions %v, want the deletion vector's %v", got, want)
	}
	if live := scanIDs(t, tbl, tasks[0]); !slices.Equal(live, complement(10, want)) {
		t.Errorf("the scan keeps %v, want %v", live, complement(10, want))
	}
}

// scanIDs reads one task as a scan does, deletes applied.
func scanIDs(t *testing.T, tbl *table.Table, task table.FileScanTask) []int64 {
	t.Helper()
	_, records, err := tbl.Scan().ReadTasks(context.Background(), []table.FileScanTask{task})
	if err != nil {
		t.Fatal(err)
	}
	out := []int64{}
	for rec, err := range records {
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, rec.Column(0).(*array.Int64).Int64Values()...)
		rec.Release()
	}
	return out
}

// complement lists 0..n-1 less the deleted.
func complement(n int64, deleted []int64) []int64 {
	out := []int64{}
	for i := range n {
		if !slices.Contains(deleted, i) {
			out = append(out, i)
		}
	}
	return out
}
