package deletefiles

import (
	"bytes"
	"context"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/dv"
)

// Spec references (apache/iceberg format/spec.md):
//   - "Position Delete Files": a data row is deleted if there is an entry
//     in a position delete file for the row's file and position in the
//     data file, starting at 0; the rows are sorted by file_path then pos.
//   - "Deletion Vectors": at most one deletion vector per data file in a
//     snapshot; when a DV is present, readers can safely ignore matching
//     position delete files.
//   - "Scan Planning": a position delete file applies to a data file when
//     its referenced_data_file, if non-null, is the data file's path, its
//     data sequence number is at least the data file's, the partitions
//     are equal, and no deletion vector applies to the data file.

// positions lists a bitmap's positions.
func positions(bm *dv.RoaringPositionBitmap) []int64 {
	out := []int64{}
	if bm == nil {
		return out
	}
	for p := range bm.Positions() {
		out = append(out, int64(p))
	}
	return out
}

func bitmap(ps ...int64) *dv.RoaringPositionBitmap {
	bm := dv.NewRoaringPositionBitmap()
	for _, p := range ps {
		bm.Set(uint64(p))
	}
	return bm
}

// dataFile describes a data file of count rows (never read here).
func dataFile(t *testing.T, path string, count int64) iceberg.DataFile {
	t.Helper()
	b, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, iceberg.EntryContentData, path, iceberg.ParquetFile, nil, nil, nil, count, 100)
	if err != nil {
		t.Fatal(err)
	}
	return b.Build()
}

// countingFS counts the opens of each path.
type countingFS struct {
	iceio.LocalFS
	opens map[string]int
}

func (c *countingFS) Open(name string) (iceio.File, error) {
	c.opens[name]++
	return c.LocalFS.Open(name)
}

// TestWithin_DropsPositionsAtOrPastTheRecordCount: positions run from 0
// to count-1; those at or past the file's record count delete nothing.
func TestWithin_DropsPositionsAtOrPastTheRecordCount(t *testing.T) {
	cases := []struct {
		name  string
		in    []int64
		count int64
		want  []int64
	}{
		{"all within", []int64{0, 3, 9}, 10, []int64{0, 3, 9}},
		{"the record count itself is past the end", []int64{0, 10}, 10, []int64{0}},
		{"far past the end, beyond 32 bits", []int64{5, 1 << 33}, 10, []int64{5}},
		{"an empty file", []int64{0, 1}, 0, []int64{}},
		{"nothing deleted", nil, 10, []int64{}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := positions(Within(bitmap(c.in...), c.count)); !slices.Equal(got, c.want) {
				t.Errorf("Within = %v, want %v", got, c.want)
			}
		})
	}
}

// readRows reads a position delete file's rows in file order.
func readRows(t *testing.T, path string) (paths []string, pos []int64) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	pf, err := file.NewParquetReader(f)
	if err != nil {
		t.Fatal(err)
	}
	defer pf.Close()
	rdr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tbl, err := rdr.ReadTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer tbl.Release()
	for _, c := range tbl.Column(0).Data().Chunks() {
		s := c.(*array.String)
		for i := 0; i < s.Len(); i++ {
			paths = append(paths, s.Value(i))
		}
	}
	for _, c := range tbl.Column(1).Data().Chunks() {
		pos = append(pos, c.(*array.Int64).Int64Values()...)
	}
	return paths, pos
}

// TestWritePositionDeletes_SortedWithBoundsAndAReferenceForOneTarget: the
// file's rows are sorted by file_path then pos whatever the entries'
// order; its metadata carries the row count, file_path and pos bounds
// (so a scan attaches it only to the files it names), and a
// referenced_data_file exactly when it targets one data file.
func TestWritePositionDeletes_SortedWithBoundsAndAReferenceForOneTarget(t *testing.T) {
	cases := []struct {
		name      string
		entries   []Entries
		wantPaths []string
		wantPos   []int64
		wantRef   string
	}{
		{
			name:      "one target",
			entries:   []Entries{{Path: "s3://t/data/b", Pos: bitmap(7, 2, 5)}},
			wantPaths: []string{"s3://t/data/b", "s3://t/data/b", "s3://t/data/b"},
			wantPos:   []int64{2, 5, 7},
			wantRef:   "s3://t/data/b",
		},
		{
			name:      "several targets, given out of order",
			entries:   []Entries{{Path: "s3://t/data/c", Pos: bitmap(1)}, {Path: "s3://t/data/a", Pos: bitmap(9, 0)}, {Path: "s3://t/data/b", Pos: bitmap(4)}},
			wantPaths: []string{"s3://t/data/a", "s3://t/data/a", "s3://t/data/b", "s3://t/data/c"},
			wantPos:   []int64{0, 9, 4, 1},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "d.parquet")
			df, err := WritePositionDeletes(iceio.LocalFS{}, path, *iceberg.UnpartitionedSpec, nil, c.entries)
			if err != nil {
				t.Fatal(err)
			}
			paths, pos := readRows(t, path)
			if !slices.Equal(paths, c.wantPaths) || !slices.Equal(pos, c.wantPos) {
				t.Errorf("rows %v %v, want %v %v", paths, pos, c.wantPaths, c.wantPos)
			}
			if df.ContentType() != iceberg.EntryContentPosDeletes || df.Count() != int64(len(c.wantPos)) {
				t.Errorf("content %v, count %d; want position deletes, %d", df.ContentType(), df.Count(), len(c.wantPos))
			}
			if st, err := os.Stat(path); err != nil || st.Size() != df.FileSizeBytes() {
				t.Errorf("file size %d in metadata, on disk %v (%v)", df.FileSizeBytes(), st, err)
			}
			lo, hi := df.LowerBoundValues(), df.UpperBoundValues()
			if string(lo[PathFieldID]) != c.wantPaths[0] || string(hi[PathFieldID]) != c.wantPaths[len(c.wantPaths)-1] {
				t.Errorf("file_path bounds %q..%q, want %q..%q", lo[PathFieldID], hi[PathFieldID], c.wantPaths[0], c.wantPaths[len(c.wantPaths)-1])
			}
			minPos, maxPos := slices.Min(c.wantPos), slices.Max(c.wantPos)
			if got := int64(leUint64(lo[PosFieldID])); got != minPos {
				t.Errorf("pos lower bound %d, want %d", got, minPos)
			}
			if got := int64(leUint64(hi[PosFieldID])); got != maxPos {
				t.Errorf("pos upper bound %d, want %d", got, maxPos)
			}
			ref := ""
			if r := df.ReferencedDataFile(); r != nil {
				ref = *r
			}
			if ref != c.wantRef {
				t.Errorf("referenced_data_file %q, want %q", ref, c.wantRef)
			}
		})
	}
}

func leUint64(b []byte) uint64 {
	var v uint64
	for i := len(b) - 1; i >= 0; i-- {
		v = v<<8 | uint64(b[i])
	}
	return v
}

// TestWritePositionDeletes_RefusesAFileForNothing.
func TestWritePositionDeletes_RefusesAFileForNothing(t *testing.T) {
	if _, err := WritePositionDeletes(iceio.LocalFS{}, filepath.Join(t.TempDir(), "d.parquet"), *iceberg.UnpartitionedSpec, nil, nil); err == nil {
		t.Fatal("wrote a position delete file that deletes nothing")
	}
}

// deleteRow is one row of a hand-written position delete file; a nil
// field is a null.
type deleteRow struct {
	path *string
	pos  *int64
}

func row(path string, pos int64) deleteRow { return deleteRow{&path, &pos} }

// writeRaw writes a position delete file with the given columns (names,
// field ids or 0 for none, in file order: "file_path"/"pos" in any order,
// possibly others) and rows, bypassing WritePositionDeletes, as other
// engines write them.
func writeRaw(t *testing.T, path string, cols []string, ids []int, rows []deleteRow) iceberg.DataFile {
	t.Helper()
	fields := make([]arrow.Field, len(cols))
	for i, name := range cols {
		typ := arrow.DataType(arrow.BinaryTypes.String)
		if name == "pos" {
			typ = arrow.PrimitiveTypes.Int64
		}
		fields[i] = arrow.Field{Name: name, Type: typ, Nullable: true}
		if ids[i] > 0 {
			fields[i].Metadata = arrow.NewMetadata([]string{"PARQUET:field_id"}, []string{strconv.Itoa(ids[i])})
		}
	}
	sc := arrow.NewSchema(fields, nil)
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	for _, r := range rows {
		for i, name := range cols {
			switch fb := b.Field(i).(type) {
			case *array.StringBuilder:
				switch {
				case name != "file_path":
					fb.Append("x")
				case r.path == nil:
					fb.AppendNull()
				default:
					fb.Append(*r.path)
				}
			case *array.Int64Builder:
				if r.pos == nil {
					fb.AppendNull()
				} else {
					fb.Append(*r.pos)
				}
			}
		}
	}
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
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
	df, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, iceberg.EntryContentPosDeletes, path, iceberg.ParquetFile, nil, nil, nil, int64(len(rows)), int64(buf.Len()))
	if err != nil {
		t.Fatal(err)
	}
	return df.Build()
}

// TestReadPositions_RowsOfTheWantedFilesOnly: ReadPositions keeps the rows
// whose file_path is wanted (every row without a want list), skips rows
// with a null path or position or a negative position, and finds the
// columns by the reserved field ids, or by name in a file without ids.
func TestReadPositions_RowsOfTheWantedFilesOnly(t *testing.T) {
	std := []string{"file_path", "pos"}
	stdIDs := []int{PathFieldID, PosFieldID}
	rows := []deleteRow{row("a", 0), row("a", 3), row("b", 1), row("c", 2)}
	cases := []struct {
		name string
		cols []string
		ids  []int
		rows []deleteRow
		want map[string]struct{}
		exp  map[string][]int64
	}{
		{name: "every row without a want list", cols: std, ids: stdIDs, rows: rows,
			exp: map[string][]int64{"a": {0, 3}, "b": {1}, "c": {2}}},
		{name: "only the wanted files", cols: std, ids: stdIDs, rows: rows, want: map[string]struct{}{"a": {}, "c": {}},
			exp: map[string][]int64{"a": {0, 3}, "c": {2}}},
		{name: "a wanted file the delete file does not name", cols: std, ids: stdIDs, rows: rows, want: map[string]struct{}{"z": {}},
			exp: map[string][]int64{}},
		{name: "nulls and negative positions delete nothing", cols: std, ids: stdIDs,
			rows: []deleteRow{row("a", 1), {nil, ptr(int64(2))}, {ptr("a"), nil}, row("a", -1)},
			exp:  map[string][]int64{"a": {1}}},
		{name: "columns by field id, in another order, among others", cols: []string{"row", "pos", "file_path"}, ids: []int{2147483544, PosFieldID, PathFieldID}, rows: rows,
			exp: map[string][]int64{"a": {0, 3}, "b": {1}, "c": {2}}},
		{name: "columns by name in a file without field ids", cols: std, ids: []int{0, 0}, rows: rows,
			exp: map[string][]int64{"a": {0, 3}, "b": {1}, "c": {2}}},
		{name: "a field id wins over a name", cols: []string{"file_path", "pos", "real_path"}, ids: []int{0, PosFieldID, PathFieldID},
			rows: rows, exp: map[string][]int64{"x": {0, 1, 2, 3}}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			df := writeRaw(t, filepath.Join(t.TempDir(), "d.parquet"), c.cols, c.ids, c.rows)
			into := map[string]*dv.RoaringPositionBitmap{}
			if err := ReadPositions(context.Background(), iceio.LocalFS{}, df, c.want, into); err != nil {
				t.Fatal(err)
			}
			got := map[string][]int64{}
			for p, bm := range into {
				got[p] = positions(bm)
			}
			if len(got) != len(c.exp) {
				t.Errorf("positions %v, want %v", got, c.exp)
			}
			for p, want := range c.exp {
				if !slices.Equal(got[p], want) {
					t.Errorf("%s: positions %v, want %v", p, got[p], want)
				}
			}
		})
	}
}

func ptr[T any](v T) *T { return &v }

// TestReadPositions_RefusesWhatIsNotAPositionDeleteFile.
func TestReadPositions_RefusesWhatIsNotAPositionDeleteFile(t *testing.T) {
	dir := t.TempDir()
	noPos := writeRaw(t, filepath.Join(dir, "nopos.parquet"), []string{"file_path"}, []int{PathFieldID}, []deleteRow{row("a", 0)})
	avro, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, iceberg.EntryContentPosDeletes, filepath.Join(dir, "d.avro"), iceberg.AvroFile, nil, nil, nil, 1, 1)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		df   iceberg.DataFile
		want error
	}{
		{"no pos column", noPos, iceberg.ErrInvalidSchema},
		{"not parquet", avro.Build(), iceberg.ErrNotImplemented},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := ReadPositions(context.Background(), iceio.LocalFS{}, c.df, nil, map[string]*dv.RoaringPositionBitmap{})
			if !errors.Is(err, c.want) {
				t.Errorf("err %v, want %v", err, c.want)
			}
		})
	}
}

// TestPositional_ExactlyThePositionsAScanDrops: for each task, the
// positions its deletion vectors drop or, without one, those its position
// delete files name for its own file, within its record count.
func TestPositional_ExactlyThePositionsAScanDrops(t *testing.T) {
	dir := t.TempDir()
	ctx := context.Background()
	pos := func(name string, entries ...Entries) iceberg.DataFile {
		df, err := WritePositionDeletes(iceio.LocalFS{}, filepath.Join(dir, name), *iceberg.UnpartitionedSpec, nil, entries)
		if err != nil {
			t.Fatal(err)
		}
		return df
	}
	dvw := dv.NewDVWriter(iceio.LocalFS{}, func(int32) *iceberg.PartitionSpec { return iceberg.UnpartitionedSpec })
	if err := dvw.Add("s3://t/data/a", []int64{1, 8}, 0, nil); err != nil {
		t.Fatal(err)
	}
	if err := dvw.Add("s3://t/data/b", []int64{0, 99}, 0, nil); err != nil {
		t.Fatal(err)
	}
	dvs, err := dvw.Flush(ctx, filepath.Join(dir, "dvs.puffin"))
	if err != nil || len(dvs) != 2 {
		t.Fatalf("deletion vectors %v, %v", dvs, err)
	}
	dvOf := map[string]iceberg.DataFile{}
	for _, d := range dvs {
		dvOf[*d.ReferencedDataFile()] = d
	}
	shared := pos("shared.parquet", Entries{"s3://t/data/a", bitmap(0, 2)}, Entries{"s3://t/data/b", bitmap(3)}, Entries{"s3://t/data/c", bitmap(4)})
	more := pos("more.parquet", Entries{"s3://t/data/a", bitmap(5, 2, 50)})
	a, b, c := dataFile(t, "s3://t/data/a", 10), dataFile(t, "s3://t/data/b", 10), dataFile(t, "s3://t/data/c", 10)

	cases := []struct {
		name string
		task table.FileScanTask
		want []int64
	}{
		{"no deletes", table.FileScanTask{File: a}, []int64{}},
		{"a shared position delete file: only the rows naming this file", table.FileScanTask{File: b, DeleteFiles: []iceberg.DataFile{shared}}, []int64{3}},
		{"two position delete files: their union, within the record count", table.FileScanTask{File: a, DeleteFiles: []iceberg.DataFile{shared, more}}, []int64{0, 2, 5}},
		{"a position delete file naming other files only", table.FileScanTask{File: c, DeleteFiles: []iceberg.DataFile{more}}, []int64{}},
		{"a deletion vector", table.FileScanTask{File: a, DeletionVectorFiles: []iceberg.DataFile{dvOf["s3://t/data/a"]}}, []int64{1, 8}},
		{"a deletion vector supersedes position delete files", table.FileScanTask{File: a, DeleteFiles: []iceberg.DataFile{shared, more}, DeletionVectorFiles: []iceberg.DataFile{dvOf["s3://t/data/a"]}}, []int64{1, 8}},
		{"a deletion vector's positions past the record count", table.FileScanTask{File: b, DeletionVectorFiles: []iceberg.DataFile{dvOf["s3://t/data/b"]}}, []int64{0}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got, err := Positional(ctx, iceio.LocalFS{}, []table.FileScanTask{c.task})
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != 1 || !slices.Equal(positions(got[0]), c.want) {
				t.Errorf("positions %v, want %v", positions(got[0]), c.want)
			}
		})
	}

	t.Run("each position delete file is read once for all its tasks", func(t *testing.T) {
		fs := &countingFS{opens: map[string]int{}}
		tasks := []table.FileScanTask{
			{File: a, DeleteFiles: []iceberg.DataFile{shared, more}},
			{File: b, DeleteFiles: []iceberg.DataFile{shared}},
			{File: c, DeleteFiles: []iceberg.DataFile{shared}},
			{File: a, DeleteFiles: []iceberg.DataFile{shared}, DeletionVectorFiles: []iceberg.DataFile{dvOf["s3://t/data/a"]}},
		}
		got, err := Positional(ctx, fs, tasks)
		if err != nil {
			t.Fatal(err)
		}
		want := [][]int64{{0, 2, 5}, {3}, {4}, {1, 8}}
		for i := range tasks {
			if !slices.Equal(positions(got[i]), want[i]) {
				t.Errorf("task %d: positions %v, want %v", i, positions(got[i]), want[i])
			}
		}
		if fs.opens[shared.FilePath()] != 1 || fs.opens[more.FilePath()] != 1 {
			t.Errorf("opens %v, want each position delete file once", fs.opens)
		}
	})

	t.Run("deletion vectors of two Puffin files, interleaved: each file's footer read once, each vector its own", func(t *testing.T) {
		// A second commit's Puffin file with vectors for c and, again, b.
		w2 := dv.NewDVWriter(iceio.LocalFS{}, func(int32) *iceberg.PartitionSpec { return iceberg.UnpartitionedSpec })
		if err := w2.Add("s3://t/data/c", []int64{7}, 0, nil); err != nil {
			t.Fatal(err)
		}
		if err := w2.Add("s3://t/data/b", []int64{2, 3}, 0, nil); err != nil {
			t.Fatal(err)
		}
		second, err := w2.Flush(ctx, filepath.Join(dir, "second.puffin"))
		if err != nil || len(second) != 2 {
			t.Fatalf("deletion vectors %v, %v", second, err)
		}
		of2 := map[string]iceberg.DataFile{}
		for _, d := range second {
			of2[*d.ReferencedDataFile()] = d
		}
		fs := &countingFS{opens: map[string]int{}}
		tasks := []table.FileScanTask{
			{File: c, DeletionVectorFiles: []iceberg.DataFile{of2["s3://t/data/c"]}},
			{File: b, DeletionVectorFiles: []iceberg.DataFile{dvOf["s3://t/data/b"]}},
			{File: a, DeletionVectorFiles: []iceberg.DataFile{dvOf["s3://t/data/a"]}},
			{File: b, DeletionVectorFiles: []iceberg.DataFile{of2["s3://t/data/b"], dvOf["s3://t/data/b"]}},
		}
		got, err := Positional(ctx, fs, tasks)
		if err != nil {
			t.Fatal(err)
		}
		want := [][]int64{{7}, {0}, {1, 8}, {0, 2, 3}}
		for i := range tasks {
			if !slices.Equal(positions(got[i]), want[i]) {
				t.Errorf("task %d: positions %v, want %v", i, positions(got[i]), want[i])
			}
		}
		if fs.opens[dvOf["s3://t/data/a"].FilePath()] != 1 || fs.opens[second[0].FilePath()] != 1 {
			t.Errorf("opens %v, want each Puffin file once", fs.opens)
		}
	})
}
