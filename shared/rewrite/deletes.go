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
	"context"
	"fmt"
	"sort"

	"github.com/apache/iceberg-go"
	iceio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/dv"

	"github.com/icekeeper/icekeeper/shared/deletefiles"
	"github.com/icekeeper/icekeeper/shared/messages"
	"github.com/icekeeper/icekeeper/shared/outputs"
	"github.com/icekeeper/icekeeper/shared/tracing"
)

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
	}
	m.inputPaths = messages.SortedCopy(m.inputPaths)
	m.DeleteFilesApplied = len(inputs)
	m.BytesIn = deleteBytesIn(tasks)
	positional, err := deletefiles.Positional(ctx, fs, tasks)
	if err != nil {
		return nil, m, tbl, classify(err)
	}

	// The positions each data file loses, in the data files' order.
	type deleted struct {
		file iceberg.DataFile
		pos  *dv.RoaringPositionBitmap
	}
	var all []deleted
	for i, t := range tasks {
		bm := positional[i]
		var eqs []iceberg.DataFile
		for _, d := range t.EqualityDeleteFiles {
			if _, ok := inputs[messages.DeleteFileKey(d)]; ok {
				eqs = append(eqs, d)
			}
		}
		if len(eqs) > 0 {
			byEq, err := deletefiles.EqualityPositions(ctx, tbl, t, eqs, r.settings.ScanConcurrency)
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
				written = []iceberg.DataFile{deletefiles.Placeholder(path)} // whatever reached storage
				return fmt.Errorf("write deletion vectors: %w", err)
			}
			written = files
			return nil
		}
		path := locs.NewDataLocation(run0.String() + "-deletes.parquet")
		var entries []deletefiles.Entries
		for _, d := range all {
			entries = append(entries, deletefiles.Entries{Path: d.file.FilePath(), Pos: d.pos})
			m.DeletedRowsPosition += d.pos.Cardinality()
		}
		m.DeletedRowsPosition -= m.DeletedRowsEquality
		df, err := deletefiles.WritePositionDeletes(wfs, path, *spec, all[0].file.Partition(), entries)
		if err != nil {
			written = []iceberg.DataFile{deletefiles.Placeholder(path)} // whatever reached storage
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

// deleteBytesIn is the size of the tasks' position delete files and
// deletion vectors, each counted once.
func deleteBytesIn(tasks []table.FileScanTask) int64 {
	seen := map[string]bool{}
	var n int64
	for _, t := range tasks {
		if len(t.DeletionVectorFiles) > 0 {
			for _, d := range t.DeletionVectorFiles {
				if k := messages.DeleteFileKey(d); !seen[k] {
					seen[k] = true
					if c := d.ContentSizeInBytes(); c != nil {
						n += *c
					}
				}
			}
			continue
		}
		for _, d := range t.DeleteFiles {
			if !seen[d.FilePath()] {
				seen[d.FilePath()] = true
				n += d.FileSizeBytes()
			}
		}
	}
	return n
}
