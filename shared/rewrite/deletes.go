package rewrite

// Delete-file rewrite (jobs of kind rewrite-deletes).
//
// A group is one partition's position delete files and deletion vectors.
// Its scan tasks are the live data files at S that any of them applies to,
// each with its delete files attached exactly as iceberg-go's scan planned
// them at S (sequence numbers, partition, file_path bounds). For each data
// file the rewriter takes the positions a scan would drop for the group's
// deletes: its deletion vector when it has one (a DV supersedes position
// delete files, Iceberg spec v3, "Deletion Vectors"; iceberg-go's reader
// ignores the position deletes then, see processRecords), otherwise the
// rows of its attached position delete files whose file_path is the data
// file. Positions at or beyond the file's record count delete nothing and
// are dropped, as are rows for files that are no longer live (dangling
// deletes): no scan task carries them.
//
// A group may also convert equality deletes: for each data file with one
// of the group's equality deletes attached, the positions of the rows they
// delete (equalityPositions) join its other positions, and the equality
// delete files go with the rest of the inputs.
//
// It writes the union back as new delete files named with the attempt id:
// on a v2 table one position delete file for the group, sorted by
// file_path and pos (spec, "Position Delete Files"); on v3, where new
// position delete files are not allowed (spec v3; iceberg-go refuses
// them), one Puffin file with one deletion vector per data file. Data files
// are never touched, so the rows a scan returns are the same before and
// after. The committer removes the group's input delete files and adds
// these in one replace snapshot; iceberg-go gives the new files the largest
// data sequence number of the files they replace, and every position
// carried over targets a data file whose sequence number is at most that of
// the delete it came from, so each still applies exactly where it did.

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"sort"

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

	"github.com/icekeeper/icekeeper/shared/messages"
	"github.com/icekeeper/icekeeper/shared/outputs"
	"github.com/icekeeper/icekeeper/shared/tracing"
)

// Field ids of a position delete file's columns (spec, reserved ids).
var (
	posPathFieldID = mustFieldID("file_path")
	posPosFieldID  = mustFieldID("pos")
)

func mustFieldID(name string) int {
	f, ok := iceberg.PositionalDeleteSchema.FindFieldByName(name)
	if !ok {
		panic("position delete schema has no " + name)
	}
	return f.ID
}

// rewriteDeletes carries the group's deletes over to new delete files. It
// returns what it wrote even on error, so the caller can remove it.
func (r *Rewriter) rewriteDeletes(ctx context.Context, task messages.Task, attempt string) ([]iceberg.DataFile, measured, *table.Table, error) {
	start := r.now()
	var m measured
	ident, err := messages.TableIdent(task.Table)
	if err != nil {
		return nil, m, nil, fmt.Errorf("%w: %w", ErrTerminal, err)
	}
	run0, err := outputs.RunID(attempt, 0)
	if err != nil {
		return nil, m, nil, fmt.Errorf("%w: %w", ErrTerminal, err)
	}
	inputs := map[string]struct{}{}
	for _, k := range task.Deletes.InputDeletes {
		inputs[k] = struct{}{}
	}
	if len(inputs) == 0 {
		return nil, m, nil, fmt.Errorf("%w: delete rewrite task names no delete files", ErrTerminal)
	}
	var tbl *table.Table
	var tasks []table.FileScanTask
	err = r.tracer.Phase(ctx, tracing.PhaseRead, func(ctx context.Context) error {
		var rerr error
		tbl, tasks, rerr = r.openTasks(ctx, ident, task)
		return rerr
	})
	if err != nil {
		return nil, m, tbl, err
	}
	m.SchemaID = tbl.Schema().ID
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, m, tbl, fmt.Errorf("open table IO: %w", err)
	}

	// Which data files each position delete file is attached to: one read
	// of each file serves every data file it applies to.
	targets := map[string]map[string]struct{}{}
	posFiles := map[string]iceberg.DataFile{}
	for _, t := range tasks {
		m.inputPaths = append(m.inputPaths, t.File.FilePath())
		m.FilesIn++
		m.RowsBeforeDeletes += t.File.Count()
		for _, d := range append(append([]iceberg.DataFile{}, t.DeleteFiles...), t.DeletionVectorFiles...) {
			if _, ok := inputs[messages.DeleteFileKey(d)]; !ok {
				// The planner puts every position delete and DV of the
				// partition in the group; one outside it would be
				// superseded (v3) or left behind unexamined.
				return nil, m, tbl, fmt.Errorf("%w: data file %s has delete file %s, which is not in the group", ErrTerminal, t.File.FilePath(), messages.DeleteFileKey(d))
			}
		}
		if len(t.DeletionVectorFiles) > 0 {
			continue // the DV supersedes position delete files
		}
		for _, d := range t.DeleteFiles {
			if targets[d.FilePath()] == nil {
				targets[d.FilePath()] = map[string]struct{}{}
				posFiles[d.FilePath()] = d
			}
			targets[d.FilePath()][t.File.FilePath()] = struct{}{}
		}
	}
	m.inputPaths = messages.SortedCopy(m.inputPaths)
	m.DeleteFilesApplied = len(inputs)
	for _, d := range posFiles {
		m.BytesIn += d.FileSizeBytes()
	}

	fromPos := map[string]*dv.RoaringPositionBitmap{}
	for path, d := range posFiles {
		if err := readPositionDeletes(ctx, fs, d, targets[path], fromPos); err != nil {
			return nil, m, tbl, classify(fmt.Errorf("read position delete file %s: %w", path, err))
		}
	}

	// The positions each data file loses, in the data files' order.
	type deleted struct {
		file iceberg.DataFile
		pos  *dv.RoaringPositionBitmap
	}
	var all []deleted
	for _, t := range tasks {
		bm := dv.NewRoaringPositionBitmap()
		if len(t.DeletionVectorFiles) > 0 {
			for _, d := range t.DeletionVectorFiles {
				if n := d.ContentSizeInBytes(); n != nil {
					m.BytesIn += *n
				}
				v, err := dv.ReadDV(fs, d)
				if err != nil {
					return nil, m, tbl, classify(fmt.Errorf("read deletion vector %s: %w", messages.DeleteFileKey(d), err))
				}
				bm.Or(v)
			}
		} else if p := fromPos[t.File.FilePath()]; p != nil {
			bm.Or(p)
		}
		bm = within(bm, t.File.Count())
		var eqs []iceberg.DataFile
		for _, d := range t.EqualityDeleteFiles {
			if _, ok := inputs[messages.DeleteFileKey(d)]; ok {
				eqs = append(eqs, d)
			}
		}
		if len(eqs) > 0 {
			byEq, err := equalityPositions(ctx, tbl, t, eqs, r.settings.ScanConcurrency)
			if err != nil {
				return nil, m, tbl, classify(fmt.Errorf("convert equality deletes of %s: %w", t.File.FilePath(), err))
			}
			before := bm.Cardinality()
			bm.Or(byEq)
			m.DeletedRowsEquality += bm.Cardinality() - before
		}
		if bm.IsEmpty() {
			continue
		}
		all = append(all, deleted{t.File, bm})
	}
	sort.Slice(all, func(i, j int) bool { return all[i].file.FilePath() < all[j].file.FilePath() })

	if len(all) == 0 {
		// Every delete of the group is dangling: the inputs go, nothing
		// replaces them.
		m.RowsScanned = m.RowsBeforeDeletes
		m.DurationMillis = r.now().Sub(start).Milliseconds()
		return nil, m, tbl, nil
	}
	locs, err := table.LoadLocationProvider(tbl.Location(), tbl.Properties())
	if err != nil {
		return nil, m, tbl, fmt.Errorf("%w: location provider: %w", ErrTerminal, err)
	}
	wfs, ok := fs.(iceio.WriteFileIO)
	if !ok {
		return nil, m, tbl, fmt.Errorf("%w: the table's file IO cannot write", ErrTerminal)
	}
	meta := tbl.Metadata()
	spec := meta.PartitionSpecByID(task.SpecID)
	if spec == nil {
		return nil, m, tbl, fmt.Errorf("%w: partition spec %d is not in the table's metadata", ErrTerminal, task.SpecID)
	}

	var written []iceberg.DataFile
	err = func() error {
		if meta.Version() >= 3 {
			w := dv.NewDVWriter(wfs, func(id int32) *iceberg.PartitionSpec { return meta.PartitionSpecByID(int(id)) })
			for _, d := range all {
				w.Load(d.file.FilePath(), d.pos, d.file.SpecID(), d.file.Partition())
				m.DeletedRowsDV += d.pos.Cardinality()
			}
			m.DeletedRowsDV -= m.DeletedRowsEquality
			path := locs.NewDataLocation(run0.String() + "-dv.puffin")
			files, err := w.Flush(ctx, path)
			if err != nil {
				written = placeholder(path) // whatever reached storage
				return fmt.Errorf("write deletion vectors: %w", err)
			}
			written = files
			return nil
		}
		path := locs.NewDataLocation(run0.String() + "-deletes.parquet")
		var entries []positionEntries
		for _, d := range all {
			entries = append(entries, positionEntries{path: d.file.FilePath(), pos: d.pos})
			m.DeletedRowsPosition += d.pos.Cardinality()
		}
		m.DeletedRowsPosition -= m.DeletedRowsEquality
		df, err := writePositionDeletes(wfs, path, *spec, all[0].file.Partition(), entries)
		if err != nil {
			written = placeholder(path) // whatever reached storage
			return fmt.Errorf("write position deletes: %w", err)
		}
		written = []iceberg.DataFile{df}
		return nil
	}()
	if err != nil {
		return written, m, tbl, classify(err)
	}
	for _, f := range written {
		m.FilesOut++
		m.RowsWritten += f.Count()
	}
	m.BytesOut = written[0].FileSizeBytes() // one file, whatever it holds
	if carried := m.DeletedRowsDV + m.DeletedRowsPosition + m.DeletedRowsEquality; m.RowsWritten != carried {
		return written, m, tbl, fmt.Errorf("%w: group %d: wrote %d deletes, carried over %d", ErrTerminal, task.Group, m.RowsWritten, carried)
	}
	m.RowsScanned = m.RowsBeforeDeletes - m.RowsWritten
	m.DurationMillis = r.now().Sub(start).Milliseconds()
	return written, m, tbl, nil
}

// placeholder stands for a file that may have reached storage before an
// error, so that the caller's cleanup removes it by path.
func placeholder(path string) []iceberg.DataFile {
	b, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, iceberg.EntryContentPosDeletes, path, iceberg.PuffinFile, nil, nil, nil, 0, 0)
	if err != nil {
		return nil
	}
	return []iceberg.DataFile{b.Build()}
}

// within drops positions at or beyond a file's record count: they delete
// nothing.
func within(bm *dv.RoaringPositionBitmap, count int64) *dv.RoaringPositionBitmap {
	out := dv.NewRoaringPositionBitmap()
	for p := range bm.Positions() {
		if int64(p) < count {
			out.Set(p)
		}
	}
	return out
}

// readPositionDeletes adds to into[path] the positions of the file's rows
// whose file_path is one of want.
func readPositionDeletes(ctx context.Context, fs iceio.IO, d iceberg.DataFile, want map[string]struct{}, into map[string]*dv.RoaringPositionBitmap) error {
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
	rdr, err := pqarrow.NewFileReader(pf, pqarrow.ArrowReadProperties{BatchSize: ArrowBatchRows}, memory.DefaultAllocator)
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
		case id == posPathFieldID, id <= 0 && name == "file_path" && pathCol < 0:
			pathCol = i
		case id == posPosFieldID, id <= 0 && name == "pos" && posCol < 0:
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
			if _, ok := want[p]; !ok {
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

type positionEntries struct {
	path string
	pos  *dv.RoaringPositionBitmap
}

// writePositionDeletes writes one position delete file, sorted by file_path
// and pos, and describes it: record count, size, and file_path and pos
// bounds, so that a scan attaches it only to the data files it names; with
// a single target it also names it as referenced_data_file.
func writePositionDeletes(wfs iceio.WriteFileIO, path string, spec iceberg.PartitionSpec, partition map[int]any, entries []positionEntries) (iceberg.DataFile, error) {
	sc := table.PositionalDeleteArrowSchema
	pathB := array.NewStringBuilder(memory.DefaultAllocator)
	defer pathB.Release()
	posB := array.NewInt64Builder(memory.DefaultAllocator)
	defer posB.Release()
	var n int64
	var minPos, maxPos int64 = -1, -1
	for _, e := range entries {
		for p := range e.pos.Positions() {
			pathB.Append(e.path)
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
	b.ValueCounts(map[int]int64{posPathFieldID: n, posPosFieldID: n}).
		NullValueCounts(map[int]int64{posPathFieldID: 0, posPosFieldID: 0}).
		LowerBoundValues(map[int][]byte{posPathFieldID: []byte(entries[0].path), posPosFieldID: long(minPos)}).
		UpperBoundValues(map[int][]byte{posPathFieldID: []byte(entries[len(entries)-1].path), posPosFieldID: long(maxPos)})
	if len(entries) == 1 {
		b.ReferencedDataFile(entries[0].path)
	}
	return b.Build(), nil
}

// equalityPositions returns the positions of t's data file that the
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
func equalityPositions(ctx context.Context, tbl *table.Table, t table.FileScanTask, eqs []iceberg.DataFile, concurrency int) (*dv.RoaringPositionBitmap, error) {
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
				return nil, fmt.Errorf("%w: equality field %d of %s is not in the current schema", ErrTerminal, id, d.FilePath())
			}
			names = append(names, name)
		}
	}
	opts := []table.ScanOption{table.WithSelectedFields(names...), table.WithArrowBatchSize(ArrowBatchRows)}
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
		return nil, fmt.Errorf("%w: read %d rows of %s, its record count is %d", ErrTerminal, pos, t.File.FilePath(), t.File.Count())
	}
	if pos-out.Cardinality() != kept {
		return nil, fmt.Errorf("%w: %s: %d rows found deleted, but the scan with the equality deletes kept %d of %d", ErrTerminal, t.File.FilePath(), out.Cardinality(), kept, pos)
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
