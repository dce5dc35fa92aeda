// Package exchange is the data exchange of a two-stage sort: how a run of
// overlapping files too large for one rewriter becomes files that overlap
// no other on the first sort key, written by several rewriters at once,
// each for one key range.
//
//   - Map: a rewriter reads a share of the run's files (deletes applied),
//     sorts its rows and writes them to scratch objects in icekeeper's
//     bucket, in pages of about PageBytes (Arrow IPC, LZ4), noting each
//     page's first and last value of the first sort key: the map's index,
//     a sample of its keys, one per page (WritePages).
//   - Boundaries: once every map is done, the committer picks the range
//     boundaries from all the maps' indexes, so that each range holds
//     about the same bytes (Boundaries).
//   - Reduce: a rewriter takes, from every map, the pages that may hold its
//     range, keeps the rows in it (a contiguous slice of each sorted page)
//     and merges them into one sorted stream for the writer (Read).
//
// Invariants:
//   - Every row a map wrote falls in exactly one range (sortrows.Ranges is
//     a total function of the key, in the order the maps sorted by), so
//     the reduces together write each row once; the committer checks the
//     counts (the maps' rows against the reduces').
//   - A reduce's rows are sorted and within its range, so its files are
//     disjoint from every other reduce's on the first sort key.
//   - Scratch objects live under the job's prefix (Prefix) and are removed
//     when the job ends, whatever its outcome (and by the bucket's
//     lifecycle rule on jobs/ otherwise).
package exchange

import (
	"bytes"
	"context"
	"fmt"
	"iter"
	"slices"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/ipc"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/icekeeper/icekeeper/shared/messages"
	"github.com/icekeeper/icekeeper/shared/sortrows"
)

// DefaultPageBytes is the Arrow size of a scratch page: a reduce holds
// one page per map while it merges.
const DefaultPageBytes = 4 << 20

// Store is where scratch pages go (icekeeper's bucket).
type Store interface {
	Put(ctx context.Context, name string, data []byte) (string, error)
	Get(ctx context.Context, key string) ([]byte, error)
}

// Prefix is where a job's scratch objects live; MapPrefix one map
// attempt's pages.
func Prefix(jobID string) string { return "jobs/" + jobID + "/exchange/" }

// MapPrefix is where one map attempt of exchange x writes its pages.
func MapPrefix(jobID string, x, group int, attempt string) string {
	return fmt.Sprintf("%s%d/map-%05d-%s/", Prefix(jobID), x, group, attempt)
}

// WritePages writes a sorted stream's rows to pages under prefix and
// returns their index; keyColumn is the first sort key's column.
// pageBytes <= 0: DefaultPageBytes.
func WritePages(ctx context.Context, store Store, prefix string, records iter.Seq2[arrow.RecordBatch, error], keyColumn int, pageBytes int64) (messages.ExchangeIndex, error) {
	if pageBytes <= 0 {
		pageBytes = DefaultPageBytes
	}
	var (
		idx         messages.ExchangeIndex
		firsts      []arrow.Array
		lasts       []arrow.Array
		page        []arrow.RecordBatch
		size, rows  int64
		schema      *arrow.Schema
		releaseKeys = func() {
			for _, a := range append(firsts, lasts...) {
				a.Release()
			}
		}
	)
	defer releaseKeys()
	release := func() {
		for _, r := range page {
			r.Release()
		}
		page, size, rows = nil, 0, 0
	}
	defer release()
	flush := func() error {
		if len(page) == 0 {
			return nil
		}
		var buf bytes.Buffer
		w := ipc.NewWriter(&buf, ipc.WithSchema(schema), ipc.WithLZ4())
		for _, r := range page {
			if err := w.Write(r); err != nil {
				return fmt.Errorf("exchange: encode a page: %w", err)
			}
		}
		if err := w.Close(); err != nil {
			return fmt.Errorf("exchange: encode a page: %w", err)
		}
		first, last := page[0], page[len(page)-1]
		firsts = append(firsts, array.NewSlice(first.Column(keyColumn), 0, 1))
		lasts = append(lasts, array.NewSlice(last.Column(keyColumn), last.NumRows()-1, last.NumRows()))
		key, err := store.Put(ctx, fmt.Sprintf("%spage-%06d.arrow", prefix, len(idx.Pages)), buf.Bytes())
		if err != nil {
			return fmt.Errorf("exchange: write page %d: %w", len(idx.Pages), err)
		}
		idx.Pages = append(idx.Pages, messages.ExchangePage{Key: key, Rows: rows, Bytes: int64(buf.Len())})
		idx.Rows += rows
		release()
		return nil
	}
	for rec, err := range records {
		if err != nil {
			return idx, err
		}
		if rec.NumRows() == 0 {
			rec.Release()
			continue
		}
		if schema == nil {
			schema = rec.Schema()
			if keyColumn < 0 || keyColumn >= schema.NumFields() {
				rec.Release()
				return idx, fmt.Errorf("exchange: key column %d out of range", keyColumn)
			}
		}
		// A batch larger than a page is cut: pages are the sample the
		// boundaries are chosen from, so they must be small enough.
		n := rec.NumRows()
		per := max(1, int64(float64(pageBytes)*float64(n)/float64(max(sortrows.RecordBytes(rec), 1))))
		for lo := int64(0); lo < n; lo += per {
			piece := rec.NewSlice(lo, min(lo+per, n))
			page = append(page, piece)
			size += sortrows.RecordBytes(piece)
			rows += piece.NumRows()
			if size >= pageBytes {
				if err := flush(); err != nil {
					rec.Release()
					return idx, err
				}
			}
		}
		rec.Release()
	}
	if err := flush(); err != nil {
		return idx, err
	}
	if len(idx.Pages) == 0 {
		return idx, nil
	}
	keys, err := encodeKeys(schema.Field(keyColumn), firsts, lasts)
	if err != nil {
		return idx, err
	}
	idx.Keys = keys
	return idx, nil
}

// encodeKeys writes the pages' first and last keys as one Arrow IPC
// stream of one batch, columns first and last.
func encodeKeys(f arrow.Field, firsts, lasts []arrow.Array) ([]byte, error) {
	mem := memory.DefaultAllocator
	first, err := array.Concatenate(firsts, mem)
	if err != nil {
		return nil, fmt.Errorf("exchange: page keys: %w", err)
	}
	defer first.Release()
	last, err := array.Concatenate(lasts, mem)
	if err != nil {
		return nil, fmt.Errorf("exchange: page keys: %w", err)
	}
	defer last.Release()
	schema := arrow.NewSchema([]arrow.Field{{Name: "first", Type: f.Type, Nullable: true}, {Name: "last", Type: f.Type, Nullable: true}}, nil)
	rec := array.NewRecordBatch(schema, []arrow.Array{first, last}, int64(first.Len()))
	defer rec.Release()
	return encodeBatch(rec)
}

func encodeBatch(rec arrow.RecordBatch) ([]byte, error) {
	var buf bytes.Buffer
	w := ipc.NewWriter(&buf, ipc.WithSchema(rec.Schema()))
	if err := w.Write(rec); err != nil {
		return nil, fmt.Errorf("exchange: encode keys: %w", err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("exchange: encode keys: %w", err)
	}
	return buf.Bytes(), nil
}

// decodeBatch reads the one batch of an encoded stream (the caller
// releases it).
func decodeBatch(b []byte) (arrow.RecordBatch, error) {
	r, err := ipc.NewReader(bytes.NewReader(b))
	if err != nil {
		return nil, fmt.Errorf("exchange: decode keys: %w", err)
	}
	defer r.Release()
	if !r.Next() {
		if err := r.Err(); err != nil {
			return nil, fmt.Errorf("exchange: decode keys: %w", err)
		}
		return nil, fmt.Errorf("exchange: decode keys: no batch")
	}
	rec := r.RecordBatch()
	rec.Retain()
	return rec, nil
}

// pageKeys are a map's pages' first and last keys.
type pageKeys struct {
	rec         arrow.RecordBatch
	first, last arrow.Array
}

func readKeys(idx messages.ExchangeIndex) (pageKeys, error) {
	if len(idx.Pages) == 0 {
		return pageKeys{}, nil
	}
	rec, err := decodeBatch(idx.Keys)
	if err != nil {
		return pageKeys{}, err
	}
	if rec.NumCols() != 2 || int(rec.NumRows()) != len(idx.Pages) {
		rec.Release()
		return pageKeys{}, fmt.Errorf("exchange: an index has %d pages and keys for %d", len(idx.Pages), rec.NumRows())
	}
	return pageKeys{rec: rec, first: rec.Column(0), last: rec.Column(1)}, nil
}

func (k pageKeys) release() {
	if k.rec != nil {
		k.rec.Release()
	}
}

// Boundaries picks up to ranges-1 boundaries on the first sort key (key,
// whose Column is ignored) from the maps' indexes: pages are taken in key
// order by their first key, and a boundary is placed at the first key of
// the page where each next share of the bytes begins. Equal candidates
// collapse, so fewer ranges can come out than asked for (a key with few
// values). The result is encoded for tasks (EncodeBoundaries's format).
func Boundaries(indexes []messages.ExchangeIndex, key sortrows.Key, ranges int) ([]byte, error) {
	type page struct {
		keys  int // index into all
		row   int
		bytes int64
	}
	var all []pageKeys
	defer func() {
		for _, k := range all {
			k.release()
		}
	}()
	var pages []page
	var total int64
	var keyType arrow.DataType
	for _, idx := range indexes {
		k, err := readKeys(idx)
		if err != nil {
			return nil, err
		}
		if k.rec == nil {
			continue
		}
		if keyType == nil {
			keyType = k.first.DataType()
		} else if !arrow.TypeEqual(keyType, k.first.DataType()) {
			k.release()
			return nil, fmt.Errorf("exchange: the maps' keys have different types (%s, %s)", keyType, k.first.DataType())
		}
		all = append(all, k)
		for i, p := range idx.Pages {
			pages = append(pages, page{keys: len(all) - 1, row: i, bytes: p.Bytes})
			total += p.Bytes
		}
	}
	if keyType == nil || ranges < 2 {
		return nil, nil // nothing to cut: one range
	}
	// Sort the pages by their first key, in the key's order. A single
	// ranges value over one column compares any two of them.
	col := func(p page) arrow.Array { return all[p.keys].first }
	cut, err := sortrows.NewRanges(key, array.MakeArrayOfNull(memory.DefaultAllocator, keyType, 0))
	if err != nil {
		return nil, err
	}
	slices.SortStableFunc(pages, func(a, b page) int { return cut.Compare(col(a), a.row, col(b), b.row) })
	var chosen []arrow.Array
	defer func() {
		for _, a := range chosen {
			a.Release()
		}
	}()
	var prev *page
	var seen int64
	next := 1
	for i := range pages {
		p := pages[i]
		for next < ranges && seen*int64(ranges) >= total*int64(next) {
			// Page p starts the next share.
			c := col(p)
			if !c.IsNull(p.row) && (prev == nil || cut.Compare(col(*prev), prev.row, c, p.row) < 0) {
				chosen = append(chosen, array.NewSlice(c, int64(p.row), int64(p.row+1)))
				prev = &pages[i]
			}
			next++
		}
		seen += p.bytes
	}
	if len(chosen) == 0 {
		return nil, nil
	}
	b, err := array.Concatenate(chosen, memory.DefaultAllocator)
	if err != nil {
		return nil, fmt.Errorf("exchange: boundaries: %w", err)
	}
	defer b.Release()
	return EncodeBoundaries(b)
}

// EncodeBoundaries writes boundary values for a task (nil: none).
func EncodeBoundaries(b arrow.Array) ([]byte, error) {
	schema := arrow.NewSchema([]arrow.Field{{Name: "boundary", Type: b.DataType(), Nullable: true}}, nil)
	rec := array.NewRecordBatch(schema, []arrow.Array{b}, int64(b.Len()))
	defer rec.Release()
	return encodeBatch(rec)
}

// DecodeRanges reads a task's boundaries into the ranges of key (nil
// boundaries: one range). keyType is the key column's type in the rows.
func DecodeRanges(encoded []byte, key sortrows.Key, keyType arrow.DataType) (sortrows.Ranges, error) {
	if len(encoded) == 0 {
		return sortrows.NewRanges(key, array.MakeArrayOfNull(memory.DefaultAllocator, keyType, 0))
	}
	rec, err := decodeBatch(encoded)
	if err != nil {
		return sortrows.Ranges{}, err
	}
	defer rec.Release()
	b := rec.Column(0)
	if !arrow.TypeEqual(b.DataType(), keyType) {
		return sortrows.Ranges{}, fmt.Errorf("exchange: boundaries of type %s for a key of type %s", b.DataType(), keyType)
	}
	b.Retain()
	return sortrows.NewRanges(key, b)
}

// Read returns range k's rows from the maps' pages (indexes), merged by
// keys into one sorted stream; ranges cut keys[0]. Pages that cannot
// hold range k (by their first and last keys) are not read.
func Read(ctx context.Context, store Store, indexes []messages.ExchangeIndex, ranges sortrows.Ranges, k int, keys []sortrows.Key, opts sortrows.Options) iter.Seq2[arrow.RecordBatch, error] {
	streams := make([]iter.Seq2[arrow.RecordBatch, error], 0, len(indexes))
	for _, idx := range indexes {
		streams = append(streams, mapRange(ctx, store, idx, ranges, k))
	}
	return sortrows.Merge(ctx, streams, keys, opts)
}

// mapRange yields one map's rows in range k, in order.
func mapRange(ctx context.Context, store Store, idx messages.ExchangeIndex, ranges sortrows.Ranges, k int) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		pk, err := readKeys(idx)
		if err != nil {
			yield(nil, err)
			return
		}
		defer pk.release()
		for i, p := range idx.Pages {
			if ranges.Of(pk.first, i) > k || ranges.Of(pk.last, i) < k {
				continue
			}
			data, err := store.Get(ctx, p.Key)
			if err != nil {
				yield(nil, fmt.Errorf("exchange: read page %s: %w", p.Key, err))
				return
			}
			r, err := ipc.NewReader(bytes.NewReader(data))
			if err != nil {
				yield(nil, fmt.Errorf("exchange: read page %s: %w", p.Key, err))
				return
			}
			for r.Next() {
				rec := r.RecordBatch()
				lo, hi := ranges.Span(rec, k)
				if lo == hi {
					continue
				}
				out := rec.NewSlice(int64(lo), int64(hi))
				if !yield(out, nil) {
					r.Release()
					return
				}
			}
			err = r.Err()
			r.Release()
			if err != nil {
				yield(nil, fmt.Errorf("exchange: read page %s: %w", p.Key, err))
				return
			}
		}
	}
}
