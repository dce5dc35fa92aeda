// Package deletefiles reads and writes position delete files and deletion
// vectors, and works out which positions of a data file a scan at a pinned
// snapshot drops. The rewriter uses it to carry deletes over (delete-file
// rewrites) and to record where a compaction's surviving rows went; the
// committer uses it to rebase deletes committed during a job onto the
// job's new files.
//
// Invariants:
//   - Positions are exactly those a scan drops: a deletion vector
//     supersedes position delete files (spec v3, "Deletion Vectors";
//     iceberg-go's reader ignores them then), a position delete row applies
//     only to the data file its file_path names, and positions at or past
//     the file's record count delete nothing.
//   - Equality deletes are resolved by iceberg-go's own reader
//     (EqualityPositions), and the result is checked against it.
//   - Written position delete files are sorted by file_path and pos (spec,
//     "Position Delete Files") and carry file_path bounds, so a scan
//     attaches them only to the files they name.
package deletefiles

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/compress"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/dv"

	"github.com/icekeeper/icekeeper/shared/fileio"
)

// ErrMismatch: positions worked out here disagree with what iceberg-go's
// reader does, or a file is not what its metadata says. Never retryable.
var ErrMismatch = errors.New("deletefiles: positions do not match the scan")

// BatchRows is the Arrow batch size of the reads here.
const BatchRows = 64 << 10

// Field ids of a position delete file's columns (spec, reserved ids).
var (
	PathFieldID = mustFieldID("file_path")
	PosFieldID  = mustFieldID("pos")
)

func mustFieldID(name string) int {
	f, ok := iceberg.PositionalDeleteSchema.FindFieldByName(name)
	if !ok {
		panic("position delete schema has no " + name)
	}
	return f.ID
}

// Placeholder stands for a delete file that may have reached storage
// before an error, so that a cleanup by path can remove it.
func Placeholder(path string) iceberg.DataFile {
	b, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, iceberg.EntryContentPosDeletes, path, iceberg.ParquetFile, nil, nil, nil, 0, 0)
	if err != nil {
		panic("deletefiles: placeholder for " + path + ": " + err.Error())
	}
	return b.Build()
}

// Within drops positions at or beyond a file's record count: they delete
// nothing.
func Within(bm *dv.RoaringPositionBitmap, count int64) *dv.RoaringPositionBitmap {
	out := dv.NewRoaringPositionBitmap()
	for p := range bm.Positions() {
		if int64(p) < count {
			out.Set(p)
		}
	}
	return out
}

// Positional returns, for each task, the positions of its data file that
// its deletion vectors or, without one, its position delete files drop,
// within the file's record count. Each position delete file is read once,
// whatever the number of tasks it is attached to.
func Positional(ctx context.Context, fs iceio.IO, tasks []table.FileScanTask) ([]*dv.RoaringPositionBitmap, error) {
	targets := map[string]map[string]struct{}{}
	var posFiles []iceberg.DataFile // in the tasks' order, each once
	for _, t := range tasks {
		if len(t.DeletionVectorFiles) > 0 {
			continue
		}
		for _, d := range t.DeleteFiles {
			if targets[d.FilePath()] == nil {
				targets[d.FilePath()] = map[string]struct{}{}
				posFiles = append(posFiles, d)
			}
			targets[d.FilePath()][t.File.FilePath()] = struct{}{}
		}
	}
	var dvs []iceberg.DataFile
	for _, t := range tasks {
		dvs = append(dvs, t.DeletionVectorFiles...)
	}
	// The files are read in this order: read them ahead (package fileio).
	stop := fileio.ReadAhead(ctx, fs, fileio.AheadOf(append(slices.Clone(posFiles), dvs...)))
	defer stop()
	fromPos := map[string]*dv.RoaringPositionBitmap{}
	for _, d := range posFiles {
		if err := ReadPositions(ctx, fs, d, targets[d.FilePath()], fromPos); err != nil {
			return nil, fmt.Errorf("read position delete file %s: %w", d.FilePath(), err)
		}
	}
	vectors, err := ReadDeletionVectors(fs, dvs)
	if err != nil {
		return nil, err
	}
	out := make([]*dv.RoaringPositionBitmap, len(tasks))
	for i, t := range tasks {
		bm := dv.NewRoaringPositionBitmap()
		if len(t.DeletionVectorFiles) > 0 {
			for range t.DeletionVectorFiles {
				bm.Or(vectors[0])
				vectors = vectors[1:]
			}
		} else if p := fromPos[t.File.FilePath()]; p != nil {
			bm.Or(p)
		}
		out[i] = Within(bm, t.File.Count())
	}
	return out, nil
}

// ReadDeletionVectors reads deletion vectors, in the order given, opening
// each Puffin file and decoding its footer once, however many of its blobs
// are asked for. A writer such as Spark's MERGE puts the vectors of one
// commit, thousands of them, in one Puffin file whose JSON footer lists
// every blob: read one vector at a time (dv.ReadDV), the footer was decoded
// once per data file, half of a rewriter's CPU on TPC-H lineitem
// (docs/PERFORMANCE.md, "Deletion vectors: the Puffin footer once a file").
// dv.ReadDVs also reads adjacent blobs in one range request.
func ReadDeletionVectors(fs iceio.IO, files []iceberg.DataFile) ([]*dv.RoaringPositionBitmap, error) {
	byPuffin := map[string][]int{}
	var order []string
	for i, d := range files {
		if byPuffin[d.FilePath()] == nil {
			order = append(order, d.FilePath())
		}
		byPuffin[d.FilePath()] = append(byPuffin[d.FilePath()], i)
	}
	out := make([]*dv.RoaringPositionBitmap, len(files))
	for _, path := range order {
		idx := byPuffin[path]
		batch := make([]iceberg.DataFile, len(idx))
		for j, i := range idx {
			batch[j] = files[i]
		}
		vs, err := dv.ReadDVs(fs, batch)
		if err != nil {
			return nil, fmt.Errorf("read deletion vectors of %s: %w", path, err)
		}
		for j, i := range idx {
			out[i] = vs[j]
		}
	}
	return out, nil
}

// ReadPositions adds to into[path] the positions of the file's rows whose
// file_path is one of want (every row when want is nil).
func ReadPositions(ctx context.Context, fs iceio.IO, d iceberg.DataFile, want map[string]struct{}, into map[string]*dv.RoaringPositionBitmap) error {
	if d.FileFormat() != iceberg.ParquetFile {
		return fmt.Errorf("%w: position delete file format %s", iceberg.ErrNotImplemented, d.FileFormat())
	}
	f, err := fs.Open(d.FilePath())
	if err != nil {
		return err
	}
	defer f.Close()
	pf, err := file.NewParquetReader(f)
	if err != nil {
		return err
	}
	defer pf.Close()
	rdr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: BatchRows}, memory.DefaultAllocator)
	if err != nil {
		return err
	}
	// Columns by field id, as Iceberg reads them; by name when the file
	// carries no ids.
	pathCol, posCol := -1, -1
	sc := pf.MetaData().Schema
	for i := 0; i < sc.NumColumns(); i++ {
		c := sc.Column(i)
		id, name := int(c.SchemaNode().FieldID()), c.ColumnPath().String()
		switch {
		case id == PathFieldID, id <= 0 && name == "file_path" && pathCol < 0:
			pathCol = i
		case id == PosFieldID, id <= 0 && name == "pos" && posCol < 0:
			posCol = i
		}
	}
	if pathCol < 0 || posCol < 0 {
		return fmt.Errorf("%w: no file_path and pos columns", iceberg.ErrInvalidSchema)
	}
	rr, err := rdr.GetRecordReader(ctx, []int{pathCol, posCol}, nil)
	if err != nil {
		return err
	}
	defer rr.Release()
	for rr.Next() {
		rec := rr.RecordBatch()
		paths, pos, err := positionColumns(rec)
		if err != nil {
			return err
		}
		for i := 0; i < int(rec.NumRows()); i++ {
			if paths.IsNull(i) || pos.IsNull(i) || pos.Value(i) < 0 {
				continue
			}
			p := paths.Value(i)
			if _, ok := want[p]; !ok && want != nil {
				continue
			}
			if into[p] == nil {
				into[p] = dv.NewRoaringPositionBitmap()
			}
			into[p].Set(uint64(pos.Value(i)))
		}
	}
	if err := rr.Err(); err != nil && !errors.Is(err, io.EOF) {
		return err
	}
	return nil
}

func positionColumns(rec arrow.RecordBatch) (interface {
	IsNull(int) bool
	Value(int) string
}, *array.Int64, error) {
	pos, ok := rec.Column(1).(*array.Int64)
	if !ok {
		return nil, nil, fmt.Errorf("%w: pos column is %s", iceberg.ErrInvalidSchema, rec.Column(1).DataType())
	}
	switch c := rec.Column(0).(type) {
	case *array.String:
		return c, pos, nil
	case *array.LargeString:
		return c, pos, nil
	}
	return nil, nil, fmt.Errorf("%w: file_path column is %s", iceberg.ErrInvalidSchema, rec.Column(0).DataType())
}

// Entries are one data file's deleted positions.
type Entries struct {
	Path string
	Pos  *dv.RoaringPositionBitmap
}

// WritePositionDeletes writes one position delete file, sorted by file_path
// and pos, and describes it: record count, size, and file_path and pos
// bounds, so that a scan attaches it only to the data files it names; with
// a single target it also names it as referenced_data_file.
func WritePositionDeletes(wfs iceio.WriteFileIO, path string, spec iceberg.PartitionSpec, partition map[int]any, entries []Entries) (iceberg.DataFile, error) {
	entries = slices.Clone(entries)
	slices.SortFunc(entries, func(a, b Entries) int { return strings.Compare(a.Path, b.Path) })
	if len(entries) == 0 {
		return nil, fmt.Errorf("deletefiles: a position delete file for nothing (%s)", path)
	}
	sc := table.PositionalDeleteArrowSchema
	pathB := array.NewStringBuilder(memory.DefaultAllocator)
	defer pathB.Release()
	posB := array.NewInt64Builder(memory.DefaultAllocator)
	defer posB.Release()
	var n int64
	var minPos, maxPos int64 = -1, -1
	for _, e := range entries {
		for p := range e.Pos.Positions() {
			pathB.Append(e.Path)
			posB.Append(int64(p))
			if minPos < 0 || int64(p) < minPos {
				minPos = int64(p)
			}
			maxPos = max(maxPos, int64(p))
			n++
		}
	}
	pathArr, posArr := pathB.NewArray(), posB.NewArray()
	defer pathArr.Release()
	defer posArr.Release()
	rec := array.NewRecordBatch(sc, []arrow.Array{pathArr, posArr}, n)
	defer rec.Release()

	var buf bytes.Buffer
	w, err := pqarrow.NewFileWriter(sc, &buf,
		parquet.NewWriterProperties(parquet.WithStats(true), parquet.WithCompression(compress.Codecs.Zstd), parquet.WithMaxRowGroupLength(1<<20)),
		pqarrow.DefaultWriterProps())
	if err != nil {
		return nil, err
	}
	if err := w.Write(rec); err != nil {
		_ = w.Close()
		return nil, err
	}
	if err := w.Close(); err != nil {
		return nil, err
	}
	if err := wfs.WriteFile(path, buf.Bytes()); err != nil {
		return nil, err
	}
	b, err := iceberg.NewDataFileBuilder(spec, iceberg.EntryContentPosDeletes, path, iceberg.ParquetFile, partition, nil, nil, n, int64(buf.Len()))
	if err != nil {
		return nil, err
	}
	long := func(v int64) []byte { return binary.LittleEndian.AppendUint64(nil, uint64(v)) }
	b.ValueCounts(map[int]int64{PathFieldID: n, PosFieldID: n}).
		NullValueCounts(map[int]int64{PathFieldID: 0, PosFieldID: 0}).
		LowerBoundValues(map[int][]byte{PathFieldID: []byte(entries[0].Path), PosFieldID: long(minPos)}).
		UpperBoundValues(map[int][]byte{PathFieldID: []byte(entries[len(entries)-1].Path), PosFieldID: long(maxPos)})
	if len(entries) == 1 {
		b.ReferencedDataFile(entries[0].Path)
	}
	return b.Build(), nil
}

// EqualityPositions returns the positions of t's data file that the
// equality delete files eqs delete, exactly as a scan at S decides it:
// iceberg-go reads the file twice, projected to the delete files' equality
// columns, once plain and once with eqs applied. Rows that agree on every
// equality column share their fate, so a row is deleted exactly when its
// values are not among the survivors'. Both reads run in file order, one
// file at a time, so the n-th row read plain is at position n. The result
// is checked: the plain read holds every row of the file, and the rows
// found deleted are exactly the rows the second read left out.
//
// Memory: the survivors' distinct equality values, one string each.
func EqualityPositions(ctx context.Context, tbl *table.Table, t table.FileScanTask, eqs []iceberg.DataFile, concurrency int) (*dv.RoaringPositionBitmap, error) {
	schema := tbl.Schema()
	var names []string
	seen := map[int]bool{}
	for _, d := range eqs {
		for _, id := range d.EqualityFieldIDs() {
			if seen[id] {
				continue
			}
			seen[id] = true
			name, ok := schema.FindColumnName(id)
			if !ok {
				return nil, fmt.Errorf("%w: equality field %d of %s is not in the current schema", ErrMismatch, id, d.FilePath())
			}
			names = append(names, name)
		}
	}
	opts := []table.ScanOption{table.WithSelectedFields(names...), table.WithArrowBatchSize(BatchRows)}
	if concurrency > 0 {
		opts = append(opts, table.WithMaxConcurrency(concurrency))
	}
	plain := t
	plain.DeleteFiles, plain.DeletionVectorFiles, plain.EqualityDeleteFiles, plain.Residual = nil, nil, nil, nil
	withEq := plain
	withEq.EqualityDeleteFiles = eqs

	survivors := map[string]struct{}{}
	var kept int64
	if err := readKeys(ctx, tbl, opts, withEq, func(k string) {
		survivors[k] = struct{}{}
		kept++
	}); err != nil {
		return nil, err
	}
	out := dv.NewRoaringPositionBitmap()
	var pos int64
	if err := readKeys(ctx, tbl, opts, plain, func(k string) {
		if _, ok := survivors[k]; !ok {
			out.Set(uint64(pos))
		}
		pos++
	}); err != nil {
		return nil, err
	}
	if pos != t.File.Count() {
		return nil, fmt.Errorf("%w: read %d rows of %s, its record count is %d", ErrMismatch, pos, t.File.FilePath(), t.File.Count())
	}
	if pos-out.Cardinality() != kept {
		return nil, fmt.Errorf("%w: %s: %d rows found deleted, but the scan with the equality deletes kept %d of %d", ErrMismatch, t.File.FilePath(), out.Cardinality(), kept, pos)
	}
	return out, nil
}

// readKeys reads one task and calls each with every row's values, encoded
// so that equal values give equal keys and different ones different keys.
func readKeys(ctx context.Context, tbl *table.Table, opts []table.ScanOption, t table.FileScanTask, each func(string)) error {
	_, records, err := tbl.Scan(opts...).ReadTasks(ctx, []table.FileScanTask{t})
	if err != nil {
		return err
	}
	var b []byte
	for rec, err := range records {
		if err != nil {
			return err
		}
		cols := rec.Columns()
		for i := 0; i < int(rec.NumRows()); i++ {
			b = b[:0]
			for _, c := range cols {
				if c.IsNull(i) {
					b = append(b, 0)
					continue
				}
				v := c.ValueStr(i)
				b = binary.AppendUvarint(append(b, 1), uint64(len(v)))
				b = append(b, v...)
			}
			each(string(b))
		}
		rec.Release()
	}
	return nil
}
