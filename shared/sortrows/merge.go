package sortrows

import (
	"container/heap"
	"context"
	"fmt"
	"iter"
	"os"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// Merge merges streams that are each sorted by keys into one sorted
// stream, Options.BatchRows rows at a time (ties: the earlier stream's
// rows first). Merge owns the batches the streams yield; the batches it
// yields are the caller's. Every stream must have the same schema.
// Options.Stats, when set, counts the rows and the streams.
func Merge(ctx context.Context, streams []iter.Seq2[arrow.RecordBatch, error], keys []Key, opts Options) iter.Seq2[arrow.RecordBatch, error] {
	if opts.BatchRows <= 0 {
		opts.BatchRows = DefaultBatchRows
	}
	return func(yield func(arrow.RecordBatch, error) bool) {
		m := &merger{ctx: ctx, alloc: compute.GetAllocator(ctx), batchRows: opts.BatchRows}
		rows := m.merge(streams, keys, yield)
		if opts.Stats != nil {
			opts.Stats.Rows += rows
			opts.Stats.Runs = len(streams)
		}
	}
}

// runFile is a spilled run's batches, read back.
func runFile(path string, alloc memory.Allocator) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		f, err := os.Open(path)
		if err != nil {
			yield(nil, fmt.Errorf("sortrows: open run: %w", err))
			return
		}
		defer f.Close()
		r, err := ipc.NewReader(f, ipc.WithAllocator(alloc))
		if err != nil {
			yield(nil, fmt.Errorf("sortrows: read run %s: %w", path, err))
			return
		}
		defer r.Release()
		for r.Next() {
			rec := r.RecordBatch()
			rec.Retain()
			if !yield(rec, nil) {
				return
			}
		}
		if err := r.Err(); err != nil {
			yield(nil, fmt.Errorf("sortrows: read run %s: %w", path, err))
		}
	}
}

// cursor reads one sorted stream.
type cursor struct {
	run   int
	next  func() (arrow.RecordBatch, error, bool)
	stop  func()
	err   error
	batch arrow.RecordBatch
	pos   int
	// src is the batch's index among the current output batch's sources
	// (-1: not a source yet).
	src int
}

// load moves to the stream's next non-empty batch; false at the end or
// on error (in c.err).
func (c *cursor) load() bool {
	if c.batch != nil {
		c.batch.Release()
		c.batch = nil
	}
	c.pos, c.src = 0, -1
	for {
		rec, err, ok := c.next()
		if !ok {
			return false
		}
		if err != nil {
			c.err = err
			return false
		}
		if rec.NumRows() > 0 {
			c.batch = rec
			return true
		}
		rec.Release()
	}
}

func (c *cursor) close() {
	if c.batch != nil {
		c.batch.Release()
		c.batch = nil
	}
	c.stop()
}

type cursorHeap struct {
	cmp *comparator
	cs  []*cursor
}

func (h *cursorHeap) Len() int { return len(h.cs) }
func (h *cursorHeap) Less(i, j int) bool {
	a, b := h.cs[i], h.cs[j]
	if r := h.cmp.compare(a.batch, a.pos, b.batch, b.pos); r != 0 {
		return r < 0
	}
	return a.run < b.run
}
func (h *cursorHeap) Swap(i, j int) { h.cs[i], h.cs[j] = h.cs[j], h.cs[i] }
func (h *cursorHeap) Push(x any)    { h.cs = append(h.cs, x.(*cursor)) }
func (h *cursorHeap) Pop() any {
	c := h.cs[len(h.cs)-1]
	h.cs = h.cs[:len(h.cs)-1]
	return c
}

// source is a run batch that rows of the output batch come from: rows
// first..last of it, contiguous because a run is read in order.
type source struct {
	batch       arrow.RecordBatch
	first, last int
}

type pick struct{ src, row int }

// merger holds one merge's state.
type merger struct {
	ctx       context.Context
	alloc     memory.Allocator
	batchRows int
	schema    *arrow.Schema
}

// merge yields the streams' rows in order and returns how many it read.
func (m *merger) merge(streams []iter.Seq2[arrow.RecordBatch, error], keys []Key, yield func(arrow.RecordBatch, error) bool) (rows int64) {
	var all []*cursor
	defer func() {
		for _, c := range all {
			c.close()
		}
	}()
	h := &cursorHeap{}
	for i, s := range streams {
		next, stop := iter.Pull2(s)
		c := &cursor{run: i, next: next, stop: stop, src: -1}
		all = append(all, c)
		if !c.load() {
			if c.err != nil {
				yield(nil, c.err)
				return rows
			}
			continue
		}
		if m.schema == nil {
			m.schema = c.batch.Schema()
			cmp, err := newComparator(m.schema, keys)
			if err != nil {
				yield(nil, err)
				return rows
			}
			h.cmp = cmp
		} else if !c.batch.Schema().Equal(m.schema) {
			yield(nil, fmt.Errorf("sortrows: merged streams have different schemas"))
			return rows
		}
		h.cs = append(h.cs, c)
	}
	heap.Init(h)
	for h.Len() > 0 {
		if err := m.ctx.Err(); err != nil {
			yield(nil, err)
			return rows
		}
		var (
			srcs  []source
			picks = make([]pick, 0, m.batchRows)
		)
		for len(picks) < m.batchRows && h.Len() > 0 {
			c := h.cs[0]
			if c.src < 0 {
				c.batch.Retain()
				srcs = append(srcs, source{batch: c.batch, first: c.pos})
				c.src = len(srcs) - 1
			}
			picks = append(picks, pick{c.src, c.pos})
			srcs[c.src].last = c.pos
			c.pos++
			if c.pos < int(c.batch.NumRows()) {
				heap.Fix(h, 0)
				continue
			}
			if c.load() {
				if !c.batch.Schema().Equal(m.schema) {
					releaseSources(srcs)
					yield(nil, fmt.Errorf("sortrows: merged streams have different schemas"))
					return rows
				}
				heap.Fix(h, 0)
				continue
			}
			if c.err != nil {
				releaseSources(srcs)
				yield(nil, c.err)
				return rows
			}
			heap.Pop(h)
		}
		for _, c := range h.cs {
			c.src = -1
		}
		rec, err := m.gather(srcs, picks)
		releaseSources(srcs)
		if err == nil {
			rows += rec.NumRows()
		}
		if !yield(rec, err) || err != nil {
			return rows
		}
	}
	return rows
}

func releaseSources(srcs []source) {
	for _, s := range srcs {
		s.batch.Release()
	}
}

// gather builds the output batch: the sources' used rows side by side in
// one batch, then taken in the picks' order.
func (m *merger) gather(srcs []source, picks []pick) (arrow.RecordBatch, error) {
	base := make([]int64, len(srcs))
	ncols := int(m.schema.NumFields())
	chunks := make([][]arrow.Array, ncols)
	var n int64
	for i, src := range srcs {
		base[i] = n - int64(src.first)
		n += int64(src.last - src.first + 1)
		for c := range ncols {
			chunks[c] = append(chunks[c], array.NewSlice(src.batch.Column(c), int64(src.first), int64(src.last+1)))
		}
	}
	rows, err := concatenate(m.schema, m.alloc, chunks, n)
	if err != nil {
		return nil, fmt.Errorf("sortrows: gather merged rows: %w", err)
	}
	defer rows.Release()
	b := array.NewInt64Builder(m.alloc)
	defer b.Release()
	b.Reserve(len(picks))
	for _, p := range picks {
		b.UnsafeAppend(base[p.src] + int64(p.row))
	}
	idx := b.NewInt64Array()
	defer idx.Release()
	out, err := compute.Take(m.ctx, *compute.DefaultTakeOptions(), compute.NewDatumWithoutOwning(rows), compute.NewDatumWithoutOwning(idx))
	if err != nil {
		return nil, fmt.Errorf("sortrows: take merged rows: %w", err)
	}
	return out.(*compute.RecordDatum).Value, nil
}
