package rewrite

import (
	"context"
	"fmt"
	"iter"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/dv"

	"github.com/icekeeper/icekeeper/shared/bounds"
	"github.com/icekeeper/icekeeper/shared/deletefiles"
	"github.com/icekeeper/icekeeper/shared/exchange"
	"github.com/icekeeper/icekeeper/shared/fileio"
	"github.com/icekeeper/icekeeper/shared/messages"
	"github.com/icekeeper/icekeeper/shared/outputs"
	"github.com/icekeeper/icekeeper/shared/rowmap"
	"github.com/icekeeper/icekeeper/shared/sortrows"
	"github.com/icekeeper/icekeeper/shared/tracing"
	"github.com/icekeeper/icekeeper/shared/zorder"
)

type measured struct {
	messages.Counters
	inputPaths []string
	// rowMap is where the surviving rows went (nil: not recorded).
	rowMap *rowmap.Map
	// exchange is a two-stage sort's map output (nil otherwise).
	exchange *messages.ExchangeOutput
	// SchemaID is the schema the rows were read and written with.
	SchemaID int
}

// rewrite reads the group at the pinned snapshot with deletes applied and
// writes the rows to new files named with the attempt id. It returns what
// it wrote even on error, so the caller can remove it.
func (r *Rewriter) rewrite(ctx context.Context, task messages.Task, attempt string) ([]iceberg.DataFile, measured, *table.Table, error) {
	start := r.now()
	var m measured
	ident, err := messages.TableIdent(task.Table)
	if err != nil {
		return nil, m, nil, fmt.Errorf("%w: %w", ErrTerminal, err)
	}
	if _, err := outputs.RunID(attempt, 0); err != nil {
		return nil, m, nil, fmt.Errorf("%w: %w", ErrTerminal, err)
	}
	var tbl *table.Table
	var tasks []table.FileScanTask
	err = r.tracer.Phase(ctx, tracing.PhaseRead, func(ctx context.Context) error {
		var rerr error
		tbl, tasks, rerr = r.openGroup(ctx, ident, task)
		return rerr
	})
	if err != nil {
		return nil, m, tbl, err
	}
	for _, t := range tasks {
		m.inputPaths = append(m.inputPaths, t.File.FilePath())
		m.FilesIn++
		m.BytesIn += t.File.FileSizeBytes()
		m.RowsBeforeDeletes += t.File.Count()
		m.DeleteFilesApplied += len(t.DeleteFiles) + len(t.EqualityDeleteFiles) + len(t.DeletionVectorFiles)
		for _, dv := range t.DeletionVectorFiles {
			m.DeletedRowsDV += dv.Count()
		}
		for _, pd := range t.DeleteFiles {
			if ref := pd.ReferencedDataFile(); ref != nil && *ref == t.File.FilePath() {
				m.DeletedRowsPosition += pd.Count()
			}
		}
	}
	m.inputPaths = messages.SortedCopy(m.inputPaths)

	// Rows are read at the pinned metadata's CURRENT schema, not at S's
	// snapshot schema: values map to columns by field id (iceberg-go's
	// projection reads each file by its field ids, promotes types and fills
	// columns added since with nulls or their initial default), and the
	// files are written with the same schema's field ids. Reading at S's
	// schema and writing at the current one would match columns by name and
	// move values between columns after a rename or a drop-and-re-add.
	// The pinned metadata's current snapshot is S (pin.Opener checks it), so
	// the scan resolves S without WithSnapshotID (which would select S's
	// schema).
	//
	// Memory stays flat in the group's size: the scan hands the writer
	// batches of ArrowBatchRows rows and at most WriteBufferBatches wait in
	// between (iceberg-go's defaults, 131,072 rows and 64 batches, can hold
	// a gigabyte when the reader outpaces the writer).
	scanOpts := []table.ScanOption{table.WithArrowBatchSize(ArrowBatchRows)}
	if r.settings.ScanConcurrency > 0 {
		scanOpts = append(scanOpts, table.WithMaxConcurrency(r.settings.ScanConcurrency))
	}
	writeOpts := []table.WriteRecordOption{table.WithRecordBatchBufferSize(WriteBufferBatches)}
	if task.TargetFileSize > 0 {
		writeOpts = append(writeOpts, table.WithTargetFileSize(task.TargetFileSize))
	}
	schema := tbl.Schema()
	m.SchemaID = schema.ID
	preserveLineage := tbl.Metadata().Version() >= 3 && allHaveLineage(tasks)
	if preserveLineage {
		scanOpts = append(scanOpts, table.WithRowLineage())
		schema = iceberg.SchemaWithRowLineage(schema)
		writeOpts = append(writeOpts, table.WithPreserveRowLineage(schema))
	}
	out, err := writeTable(tbl, task.OutputSpec(), int(tasks[0].File.SpecID()))
	if err != nil {
		return nil, m, tbl, fmt.Errorf("%w: %w", ErrTerminal, err)
	}
	// Where each surviving row goes, for the committer to rebase deletes
	// committed during the job (package rowmap): only when the rows are
	// written in the order they are read. Not when they move to another
	// spec, when the writer sorts each batch by the table's order, or
	// when the group itself is sorted or z-ordered (its rows are
	// permuted: a delete rebased by input position would hit another row
	// and bring the deleted one back; the job aborts instead). Files with
	// equality deletes go last, so every file before them has a known
	// number of survivors.
	var dropped []*dv.RoaringPositionBitmap
	var bounds []int64
	reordered := task.SortOrderID != nil || len(task.ZOrderFieldIDs) > 0
	mapped := !out.repartition && !reordered && tbl.Metadata().DefaultSortOrder() == table.UnsortedSortOrderID
	fs, err := tbl.FS(ctx)
	if err != nil {
		return nil, m, tbl, fmt.Errorf("open table IO: %w", err)
	}
	var kept []string
	if mapped {
		tasks = equalityLast(tasks)
		// The scan reads these files again: keep them (package fileio).
		kept = positionalDeletePaths(tasks)
		fileio.Retain(fs, kept...)
		if dropped, err = deletefiles.Positional(ctx, fs, tasks); err != nil {
			return nil, m, tbl, classify(fmt.Errorf("read group %d's position deletes: %w", task.Group, err))
		}
		var end int64
		for i, t := range tasks {
			if len(t.EqualityDeleteFiles) > 0 {
				break
			}
			end += t.File.Count() - dropped[i].Cardinality()
			bounds = append(bounds, end)
		}
	}
	// The scan opens the files one after the other (a core's worth at a
	// time): read them ahead, so S3's latency is not paid file by file.
	stopAhead := fileio.ReadAhead(ctx, fs, scanOrder(tasks, kept))
	defer stopAhead()
	_, records, err := tbl.Scan(scanOpts...).ReadTasks(ctx, tasks)
	if err != nil {
		return nil, m, tbl, classify(fmt.Errorf("read group %d: %w", task.Group, err))
	}
	// The writer matches columns by these field ids.
	arrowSchema, err := table.SchemaToArrowSchemaWithOptions(schema, table.ArrowSchemaOptions{IncludeFieldIDs: true, TableProperties: tbl.Properties()})
	if err != nil {
		return nil, m, tbl, fmt.Errorf("%w: write schema: %w", ErrTerminal, err)
	}
	if mapped {
		records = alignedTo(records, bounds)
	}

	records = counting(records, &m.RowsScanned)
	var sorted sortrows.Stats
	var keys []sortrows.Key
	if task.SortOrderID != nil {
		// A sort compaction's group: its rows are sorted as a whole
		// before the writer sees them (package sortrows), so its files
		// do not overlap one another.
		keys, err = sortKeys(tbl.Metadata(), *task.SortOrderID, schema, arrowSchema)
		if err != nil {
			return nil, m, tbl, fmt.Errorf("%w: group %d: %w", ErrTerminal, task.Group, err)
		}
		records = sortrows.Sort(ctx, records, keys, sortrows.Options{WindowBytes: r.settings.SortWindowBytes, SpillDir: r.settings.SpillDir, BatchRows: ArrowBatchRows, Stats: &sorted})
	}
	if len(task.ZOrderFieldIDs) > 0 {
		// A z-order compaction's group: its rows are sorted by the
		// z-value of its columns (package zorder), carried as an extra
		// last column from before the sort to after it. The writer would
		// sort each batch by the table's own sort order: it gets a view
		// of the table without one.
		cols, err := topLevelColumns(schema, task.ZOrderFieldIDs)
		if err == nil {
			out.tbl, err = withoutSortOrder(out.tbl)
		}
		if err != nil {
			return nil, m, tbl, fmt.Errorf("%w: group %d: z-order: %w", ErrTerminal, task.Group, err)
		}
		z := sortrows.Key{Column: arrowSchema.NumFields()}
		norms := zOrderNorms(schema, task.ZOrderFieldIDs, tasks)
		if task.Exchange != nil {
			// Every map of an exchange spreads the keys over the whole
			// run's range, so that their z-values compare.
			norms = exchangeNorms(schema, task.Exchange)
		}
		records = sortrows.Sort(ctx, zorder.Append(records, cols, norms, memory.DefaultAllocator), []sortrows.Key{z}, sortrows.Options{WindowBytes: r.settings.SortWindowBytes, SpillDir: r.settings.SpillDir, BatchRows: ArrowBatchRows, Stats: &sorted})
		if task.Exchange != nil {
			keys = []sortrows.Key{z} // the pages keep the z-value: the ranges are its
		} else {
			records = zorder.Drop(records)
		}
	}

	if x := task.Exchange; x != nil && x.Role == messages.ExchangeMap {
		// A two-stage sort's map: the sorted rows go to scratch pages,
		// not to the table; the reduces write the files.
		if len(keys) == 0 {
			return nil, m, tbl, fmt.Errorf("%w: group %d: an exchange's map without a sort order or z-order", ErrTerminal, task.Group)
		}
		idx, err := exchange.WritePages(ctx, r.blobs, exchange.MapPrefix(task.JobID, x.ID, task.Group, attempt), records, keys[0].Column, r.settings.ExchangePageBytes)
		if err != nil {
			return nil, m, tbl, classify(fmt.Errorf("group %d: write the exchange's pages: %w", task.Group, err))
		}
		m.RowsWritten = idx.Rows
		if m.RowsWritten != m.RowsScanned || sorted.Rows != m.RowsScanned {
			return nil, m, tbl, fmt.Errorf("%w: group %d: paged %d rows, sorted %d, the scan produced %d", ErrTerminal, task.Group, m.RowsWritten, sorted.Rows, m.RowsScanned)
		}
		m.exchange = &messages.ExchangeOutput{ID: x.ID, Index: idx, RowLineage: preserveLineage}
		m.SortRuns, m.SpilledBytes = sorted.Runs, sorted.SpilledBytes
		m.attributeDeletes()
		m.DurationMillis = r.now().Sub(start).Milliseconds()
		return nil, m, tbl, nil
	}
	written, err := r.writeRows(ctx, out, arrowSchema, records, attempt, writeOpts, task.Group, &m)
	if err != nil {
		return written, m, tbl, err
	}
	if m.RowsWritten != m.RowsScanned {
		return written, m, tbl, fmt.Errorf("%w: group %d: wrote %d rows but the scan produced %d", ErrTerminal, task.Group, m.RowsWritten, m.RowsScanned)
	}
	if task.SortOrderID != nil || len(task.ZOrderFieldIDs) > 0 {
		if sorted.Rows != m.RowsScanned {
			return written, m, tbl, fmt.Errorf("%w: group %d: sorted %d rows but the scan produced %d", ErrTerminal, task.Group, sorted.Rows, m.RowsScanned)
		}
		m.SortRuns, m.SpilledBytes = sorted.Runs, sorted.SpilledBytes
	}
	if mapped {
		if len(bounds) == len(tasks) && bounds[len(bounds)-1] != m.RowsScanned {
			return written, m, tbl, fmt.Errorf("%w: group %d: the scan produced %d rows, its position deletes and deletion vectors leave %d", ErrTerminal, task.Group, m.RowsScanned, bounds[len(bounds)-1])
		}
		rm, err := rowmap.Build(task.JobID, task.Group, attempt, task.SpecID, tbl.Metadata(), tasks, dropped, written)
		if err != nil {
			return written, m, tbl, fmt.Errorf("%w: %w", ErrTerminal, err)
		}
		m.rowMap = &rm
	}
	m.attributeDeletes()
	m.DurationMillis = r.now().Sub(start).Milliseconds()
	return written, m, tbl, nil
}

// writeRows writes a group's rows to new files named for the attempt and
// counts them in m; it returns what it wrote even on error, so the caller
// can remove it.
func (r *Rewriter) writeRows(ctx context.Context, out output, arrowSchema *arrow.Schema, records iter.Seq2[arrow.RecordBatch, error], attempt string, opts []table.WriteRecordOption, group int, m *measured) ([]iceberg.DataFile, error) {
	var written []iceberg.DataFile
	for df, err := range writeGroup(ctx, out.tbl, arrowSchema, records, attempt, out.repartition, r.settings.RepartitionWindowBytes, opts) {
		if err != nil {
			return written, classify(fmt.Errorf("write group %d: %w", group, err))
		}
		written = append(written, df)
		m.FilesOut++
		m.BytesOut += df.FileSizeBytes()
		m.RowsWritten += df.Count()
	}
	return written, nil
}

// attributeDeletes splits the rows the deletes dropped by kind, within
// what the scan actually dropped.
func (m *measured) attributeDeletes() {
	deleted := m.RowsBeforeDeletes - m.RowsScanned
	m.DeletedRowsDV = min(m.DeletedRowsDV, deleted)
	m.DeletedRowsPosition = min(m.DeletedRowsPosition, deleted-m.DeletedRowsDV)
	m.DeletedRowsEquality = max(0, deleted-m.DeletedRowsDV-m.DeletedRowsPosition)
}

// zOrderNorms spreads each z-order column's keys over the range the
// group's input files' bounds give it (zorder.Norm): without, the column
// whose values vary in the highest key bits would order the rows alone.
// A column some file has no bounds for is left as it is.
func zOrderNorms(schema *iceberg.Schema, ids []int, tasks []table.FileScanTask) []zorder.Norm {
	norms := make([]zorder.Norm, len(ids))
	for i, id := range ids {
		f, ok := schema.FindFieldByID(id)
		k := bounds.KindOf(f.Type)
		if !ok || k == 0 || len(tasks) == 0 {
			continue
		}
		var span bounds.Range
		complete := true
		for j, t := range tasks {
			r, ok := bounds.Of(t.File, id, k, f.Type)
			if !ok {
				complete = false
				break
			}
			if j == 0 || bounds.Compare(k, r.Lo, span.Lo) < 0 {
				span.Lo = r.Lo
			}
			if j == 0 || bounds.Compare(k, r.Hi, span.Hi) > 0 {
				span.Hi = r.Hi
			}
		}
		if complete {
			norms[i], _ = zorder.NormFor(k, span.Lo, span.Hi)
		}
	}
	return norms
}

// sortKeys resolves the sort order a task names against the schema the
// rows are read with.
func sortKeys(meta table.Metadata, orderID int, schema *iceberg.Schema, arrowSchema *arrow.Schema) ([]sortrows.Key, error) {
	for _, o := range meta.SortOrders() {
		if o.OrderID() == orderID {
			return sortrows.KeysFor(o, schema, arrowSchema)
		}
	}
	return nil, fmt.Errorf("sort order %d is not in the pinned metadata", orderID)
}

// topLevelColumns returns the indices of the fields with the given ids
// among schema's top-level columns.
func topLevelColumns(schema *iceberg.Schema, ids []int) ([]int, error) {
	var cols []int
	for _, id := range ids {
		idx := slices.IndexFunc(schema.Fields(), func(f iceberg.NestedField) bool { return f.ID == id })
		if idx < 0 {
			return nil, fmt.Errorf("field %d is not a top-level column of schema %d", id, schema.ID)
		}
		cols = append(cols, idx)
	}
	return cols, nil
}

// openGroup opens the pinned table and decodes the group's scan tasks
// (from the message, or from S3 for an oversized task); a group to rewrite
// has at least one.
func (r *Rewriter) openGroup(ctx context.Context, ident table.Identifier, task messages.Task) (*table.Table, []table.FileScanTask, error) {
	tbl, tasks, err := r.openTasks(ctx, ident, task)
	if err == nil && len(tasks) == 0 {
		err = fmt.Errorf("%w: task has no files", ErrTerminal)
	}
	return tbl, tasks, err
}

// counting passes records through, adding their row counts to n.
func counting(records iter.Seq2[arrow.RecordBatch, error], n *int64) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		for rec, err := range records {
			if err == nil && rec != nil {
				*n += rec.NumRows()
			}
			if !yield(rec, err) {
				return
			}
		}
	}
}

// equalityLast orders the tasks with equality deletes after the others,
// keeping the order within each kind.
func equalityLast(tasks []table.FileScanTask) []table.FileScanTask {
	out := make([]table.FileScanTask, 0, len(tasks))
	for _, t := range tasks {
		if len(t.EqualityDeleteFiles) == 0 {
			out = append(out, t)
		}
	}
	for _, t := range tasks {
		if len(t.EqualityDeleteFiles) > 0 {
			out = append(out, t)
		}
	}
	return out
}

// alignedTo passes records through and fails when one spans a bound (a
// cumulative row count at which one input file's rows end and the next's
// begin): iceberg-go never puts two files' rows in one batch, so a batch
// that spans a bound means the surviving rows are not the ones counted.
func alignedTo(records iter.Seq2[arrow.RecordBatch, error], bounds []int64) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		var seen int64
		next := 0
		for rec, err := range records {
			if err == nil && rec != nil {
				end := seen + rec.NumRows()
				for next < len(bounds) && bounds[next] <= seen {
					next++
				}
				if next < len(bounds) && bounds[next] < end {
					rec.Release()
					yield(nil, fmt.Errorf("%w: a batch holds rows %d to %d, across the end of an input file's surviving rows at %d", ErrTerminal, seen, end, bounds[next]))
					return
				}
				seen = end
			}
			if !yield(rec, err) {
				return
			}
		}
	}
}

func allHaveLineage(tasks []table.FileScanTask) bool {
	for _, t := range tasks {
		if t.FirstRowID == nil {
			return false
		}
	}
	return len(tasks) > 0
}

// positionalDeletePaths lists the position delete files and deletion
// vectors' Puffin files of tasks, once each.
func positionalDeletePaths(tasks []table.FileScanTask) []string {
	seen := map[string]bool{}
	var out []string
	for _, t := range tasks {
		for _, d := range append(append([]iceberg.DataFile(nil), t.DeleteFiles...), t.DeletionVectorFiles...) {
			if !seen[d.FilePath()] {
				seen[d.FilePath()] = true
				out = append(out, d.FilePath())
			}
		}
	}
	return out
}
