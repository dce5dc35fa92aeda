// Package sortrows sorts a stream of Arrow record batches by sort keys with
// bounded memory: the rows of a sort compaction group, on their way from
// the scan to the writer.
//
// Rows are gathered into windows of at most Options.WindowBytes. A stream
// that fits in one window is sorted in memory and never touches disk.
// Otherwise each window is sorted and spilled as a run (an Arrow IPC
// stream, LZ4-compressed) under Options.SpillDir, and the runs are merged
// (k-way, a heap over the runs' current rows) into one sorted stream.
//
// Invariants:
//   - The output holds exactly the input rows, each once: the sort only
//     permutes. Stats.Rows counts the rows read and the caller checks the
//     rows written against the scan.
//   - The output is sorted by the keys in one total order: Iceberg's
//     (nulls first or last per key in either direction, floats in IEEE
//     754 total order), the same in memory and in the merge.
//   - Memory is one window plus, while merging, one small batch per run.
//     Spilled runs are removed when the stream ends, whatever happens.
package sortrows

import (
	"context"
	"fmt"
	"iter"
	"os"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Defaults.
const (
	DefaultWindowBytes = 256 << 20
	DefaultBatchRows   = 64 << 10
	// spillBatchRows is the batch size of a spilled run: while merging,
	// one batch per run is in memory.
	spillBatchRows = 8 << 10
)

// Options tune a sort.
type Options struct {
	// WindowBytes bounds the input rows held at once (Arrow buffer bytes;
	// 0: DefaultWindowBytes).
	WindowBytes int64
	// SpillDir is where runs go when the input exceeds a window ("": the
	// system's temporary directory; on Lambda, /tmp, whose size is the
	// function's ephemeral storage).
	SpillDir string
	// BatchRows is the size of the batches returned (0: DefaultBatchRows).
	BatchRows int
	// Stats, when set, receives what the sort did.
	Stats *Stats
}

// Stats says what one sort did.
type Stats struct {
	Rows int64
	// Runs is the number of sorted runs: 1 when the input fit in one
	// window.
	Runs         int
	SpilledBytes int64
}

// Sort returns the rows of records sorted by keys. The batches yielded are
// owned by the caller (release them). Records' schema must not change
// within the stream.
func Sort(ctx context.Context, records iter.Seq2[arrow.RecordBatch, error], keys []Key, opts Options) iter.Seq2[arrow.RecordBatch, error] {
	if opts.WindowBytes <= 0 {
		opts.WindowBytes = DefaultWindowBytes
	}
	if opts.BatchRows <= 0 {
		opts.BatchRows = DefaultBatchRows
	}
	if opts.Stats == nil {
		opts.Stats = &Stats{}
	}
	return func(yield func(arrow.RecordBatch, error) bool) {
		s := &sorter{ctx: ctx, keys: keys, opts: opts, alloc: compute.GetAllocator(ctx)}
		defer s.cleanup()
		var (
			window []arrow.RecordBatch
			size   int64
		)
		release := func() {
			for _, r := range window {
				r.Release()
			}
			window, size = nil, 0
		}
		defer release()
		for rec, err := range records {
			if err != nil {
				yield(nil, err)
				return
			}
			if rec.NumRows() == 0 {
				rec.Release()
				continue
			}
			if s.cmp == nil {
				if s.cmp, err = newComparator(rec.Schema(), keys); err != nil {
					rec.Release()
					yield(nil, err)
					return
				}
				s.schema = rec.Schema()
			} else if !rec.Schema().Equal(s.schema) {
				rec.Release()
				yield(nil, fmt.Errorf("sortrows: the stream's schema changed"))
				return
			}
			s.opts.Stats.Rows += rec.NumRows()
			if len(window) > 0 && size+RecordBytes(rec) > opts.WindowBytes {
				sorted, err := s.sortWindow(window)
				window, size = nil, 0
				if err == nil {
					err = s.spill(sorted)
				}
				if err != nil {
					rec.Release()
					yield(nil, err)
					return
				}
			}
			window = append(window, rec)
			size += RecordBytes(rec)
		}
		if s.cmp == nil {
			return // no rows
		}
		sorted, err := s.sortWindow(window)
		window = nil
		if err != nil {
			yield(nil, err)
			return
		}
		if len(s.runs) == 0 {
			s.opts.Stats.Runs = 1
			s.emit(sorted, yield)
			return
		}
		if err := s.spill(sorted); err != nil {
			yield(nil, err)
			return
		}
		s.opts.Stats.Runs = len(s.runs)
		streams := make([]iter.Seq2[arrow.RecordBatch, error], len(s.runs))
		for i, p := range s.runs {
			streams[i] = runFile(p, s.alloc)
		}
		m := &merger{ctx: s.ctx, alloc: s.alloc, batchRows: s.opts.BatchRows}
		m.merge(streams, s.keys, yield)
	}
}

type sorter struct {
	ctx    context.Context
	keys   []Key
	opts   Options
	alloc  memory.Allocator
	cmp    *comparator
	schema *arrow.Schema
	runs   []string
}

func (s *sorter) cleanup() {
	for _, p := range s.runs {
		_ = os.Remove(p)
	}
}

// sorted is one window's rows in one batch and the order to take them in.
type sorted struct {
	rows  arrow.RecordBatch
	order []int64
}

func (w sorted) release() {
	if w.rows != nil {
		w.rows.Release()
	}
}

// sortWindow concatenates the window's batches (releasing them, one
// column at a time, so the window is held about once) and sorts its row
// indices.
func (s *sorter) sortWindow(window []arrow.RecordBatch) (sorted, error) {
	ncols := int(s.schema.NumFields())
	chunks := make([][]arrow.Array, ncols)
	var n int64
	for _, rec := range window {
		for c := range ncols {
			col := rec.Column(c)
			col.Retain()
			chunks[c] = append(chunks[c], col)
		}
		n += rec.NumRows()
		rec.Release()
	}
	rows, err := concatenate(s.schema, s.alloc, chunks, n)
	if err != nil {
		return sorted{}, fmt.Errorf("sortrows: gather a window: %w", err)
	}
	order := make([]int64, n)
	for i := range order {
		order[i] = int64(i)
	}
	slices.SortStableFunc(order, func(a, b int64) int { return s.cmp.compare(rows, int(a), rows, int(b)) })
	return sorted{rows: rows, order: order}, s.ctx.Err()
}

// concatenate joins each column's chunks into one batch of n rows,
// releasing the chunks one column at a time (so the rows are held about
// once).
func concatenate(schema *arrow.Schema, alloc memory.Allocator, chunks [][]arrow.Array, n int64) (arrow.RecordBatch, error) {
	cols := make([]arrow.Array, len(chunks))
	defer func() {
		for _, a := range cols {
			if a != nil {
				a.Release()
			}
		}
	}()
	var err error
	for c := range chunks {
		if err == nil {
			cols[c], err = array.Concatenate(chunks[c], alloc)
		}
		for _, a := range chunks[c] {
			a.Release()
		}
	}
	if err != nil {
		return nil, err
	}
	return array.NewRecordBatch(schema, cols, n), nil
}

// take returns rows[order[lo:hi]] as a new batch.
func (s *sorter) take(w sorted, lo, hi int) (arrow.RecordBatch, error) {
	b := array.NewInt64Builder(s.alloc)
	defer b.Release()
	b.AppendValues(w.order[lo:hi], nil)
	idx := b.NewInt64Array()
	defer idx.Release()
	out, err := compute.Take(s.ctx, *compute.DefaultTakeOptions(), compute.NewDatumWithoutOwning(w.rows), compute.NewDatumWithoutOwning(idx))
	if err != nil {
		return nil, fmt.Errorf("sortrows: take sorted rows: %w", err)
	}
	return out.(*compute.RecordDatum).Value, nil
}

// emit yields a sorted window in batches and releases it.
func (s *sorter) emit(w sorted, yield func(arrow.RecordBatch, error) bool) {
	defer w.release()
	for lo := 0; lo < len(w.order); lo += s.opts.BatchRows {
		rec, err := s.take(w, lo, min(lo+s.opts.BatchRows, len(w.order)))
		if !yield(rec, err) || err != nil {
			return
		}
	}
}

// spill writes a sorted window to a new run file and releases it.
func (s *sorter) spill(w sorted) (err error) {
	defer w.release()
	f, err := os.CreateTemp(s.opts.SpillDir, "icekeeper-sort-run-*.arrow")
	if err != nil {
		return fmt.Errorf("sortrows: create a run file (Lambda: raise the rewriter's ephemeral storage): %w", err)
	}
	s.runs = append(s.runs, f.Name())
	defer func() {
		if cerr := f.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("sortrows: close run %s: %w", f.Name(), cerr)
		}
		if st, serr := os.Stat(f.Name()); serr == nil {
			s.opts.Stats.SpilledBytes += st.Size()
		}
	}()
	wr := ipc.NewWriter(f, ipc.WithSchema(s.schema), ipc.WithAllocator(s.alloc), ipc.WithLZ4())
	for lo := 0; lo < len(w.order); lo += spillBatchRows {
		rec, err := s.take(w, lo, min(lo+spillBatchRows, len(w.order)))
		if err != nil {
			return err
		}
		err = wr.Write(rec)
		rec.Release()
		if err != nil {
			return fmt.Errorf("sortrows: write run %s (Lambda: raise the rewriter's ephemeral storage): %w", f.Name(), err)
		}
	}
	if err := wr.Close(); err != nil {
		return fmt.Errorf("sortrows: finish run %s: %w", f.Name(), err)
	}
	return s.ctx.Err()
}

// RecordBytes is the size of a record's buffers (a slice counts its whole
// buffers, which over-estimates and only makes windows smaller).
func RecordBytes(rec arrow.RecordBatch) int64 {
	var n int64
	for _, col := range rec.Columns() {
		n += dataBytes(col.Data())
	}
	return n
}

func dataBytes(d arrow.ArrayData) int64 {
	var n int64
	for _, b := range d.Buffers() {
		if b != nil {
			n += int64(b.Len())
		}
	}
	for _, c := range d.Children() {
		n += dataBytes(c)
	}
	return n
}
