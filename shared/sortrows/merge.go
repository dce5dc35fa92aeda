package sortrows

import (
	"container/heap"
	"fmt"
	"os"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/ipc"
)

// cursor reads one spilled run.
type cursor struct {
	run   int
	f     *os.File
	r     *ipc.Reader
	batch arrow.RecordBatch
	pos   int
	// src is the batch's index among the current output batch's sources
	// (-1: not a source yet).
	src int
}

// load moves to the run's next batch; false at the end (or on error, in
// r.Err()).
func (c *cursor) load() bool {
	if c.batch != nil {
		c.batch.Release()
		c.batch = nil
	}
	c.pos, c.src = 0, -1
	for c.r.Next() {
		if rec := c.r.RecordBatch(); rec.NumRows() > 0 {
			rec.Retain()
			c.batch = rec
			return true
		}
	}
	return false
}

func (c *cursor) close() {
	if c.batch != nil {
		c.batch.Release()
	}
	if c.r != nil {
		c.r.Release()
	}
	_ = c.f.Close()
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

// merge yields the runs' rows in order, BatchRows at a time.
func (s *sorter) merge(yield func(arrow.RecordBatch, error) bool) {
	var all []*cursor
	defer func() {
		for _, c := range all {
			c.close()
		}
	}()
	h := &cursorHeap{cmp: s.cmp}
	for i, p := range s.runs {
		f, err := os.Open(p)
		if err != nil {
			yield(nil, fmt.Errorf("sortrows: open run: %w", err))
			return
		}
		c := &cursor{run: i, f: f, src: -1}
		all = append(all, c)
		if c.r, err = ipc.NewReader(f, ipc.WithAllocator(s.alloc)); err != nil {
			yield(nil, fmt.Errorf("sortrows: read run %s: %w", p, err))
			return
		}
		if !c.load() {
			if err := c.r.Err(); err != nil {
				yield(nil, fmt.Errorf("sortrows: read run %s: %w", p, err))
				return
			}
			continue
		}
		h.cs = append(h.cs, c)
	}
	heap.Init(h)
	for h.Len() > 0 {
		if err := s.ctx.Err(); err != nil {
			yield(nil, err)
			return
		}
		var (
			srcs  []source
			picks = make([]pick, 0, s.opts.BatchRows)
		)
		for len(picks) < s.opts.BatchRows && h.Len() > 0 {
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
				heap.Fix(h, 0)
				continue
			}
			if err := c.r.Err(); err != nil {
				releaseSources(srcs)
				yield(nil, fmt.Errorf("sortrows: read run %s: %w", s.runs[c.run], err))
				return
			}
			heap.Pop(h)
		}
		for _, c := range h.cs {
			c.src = -1
		}
		rec, err := s.gather(srcs, picks)
		releaseSources(srcs)
		if !yield(rec, err) || err != nil {
			return
		}
	}
}

func releaseSources(srcs []source) {
	for _, s := range srcs {
		s.batch.Release()
	}
}

// gather builds the output batch: the sources' used rows side by side in
// one batch, then taken in the picks' order.
func (s *sorter) gather(srcs []source, picks []pick) (arrow.RecordBatch, error) {
	base := make([]int64, len(srcs))
	ncols := int(s.schema.NumFields())
	chunks := make([][]arrow.Array, ncols)
	var n int64
	for i, src := range srcs {
		base[i] = n - int64(src.first)
		n += int64(src.last - src.first + 1)
		for c := range ncols {
			chunks[c] = append(chunks[c], array.NewSlice(src.batch.Column(c), int64(src.first), int64(src.last+1)))
		}
	}
	rows, err := s.concatenate(chunks, n)
	if err != nil {
		return nil, fmt.Errorf("sortrows: gather merged rows: %w", err)
	}
	defer rows.Release()
	b := array.NewInt64Builder(s.alloc)
	defer b.Release()
	b.Reserve(len(picks))
	for _, p := range picks {
		b.UnsafeAppend(base[p.src] + int64(p.row))
	}
	idx := b.NewInt64Array()
	defer idx.Release()
	out, err := compute.Take(s.ctx, *compute.DefaultTakeOptions(), compute.NewDatumWithoutOwning(rows), compute.NewDatumWithoutOwning(idx))
	if err != nil {
		return nil, fmt.Errorf("sortrows: take merged rows: %w", err)
	}
	return out.(*compute.RecordDatum).Value, nil
}
