package exchange

import (
	"context"
	"fmt"
	"iter"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/icekeeper/icekeeper/shared/messages"
	"github.com/icekeeper/icekeeper/shared/sortrows"
)

type memStore struct {
	mu   sync.Mutex
	objs map[string][]byte
	gets int
}

func (m *memStore) Put(_ context.Context, name string, data []byte) (string, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.objs[name] = slices.Clone(data)
	return name, nil
}

func (m *memStore) Get(_ context.Context, key string) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.gets++
	b, ok := m.objs[key]
	if !ok {
		return nil, fmt.Errorf("no object %s", key)
	}
	return b, nil
}

var schema = arrow.NewSchema([]arrow.Field{{Name: "k", Type: arrow.PrimitiveTypes.Int64, Nullable: true}, {Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)

// batches makes rows (k, id) in batches of 500; k is null where nulls[i].
func batches(ks []int64, ids []int64, nulls []bool) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		for lo := 0; lo < len(ks); lo += 500 {
			b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
			for i := lo; i < min(lo+500, len(ks)); i++ {
				if nulls[i] {
					b.Field(0).AppendNull()
				} else {
					b.Field(0).(*array.Int64Builder).Append(ks[i])
				}
				b.Field(1).(*array.Int64Builder).Append(ids[i])
			}
			rec := b.NewRecordBatch()
			b.Release()
			if !yield(rec, nil) {
				return
			}
		}
	}
}

type row struct {
	null bool
	k    int64
	id   int64
}

// TestExchange_EveryRowLandsInExactlyOneSortedDisjointRange: three maps of
// random keys (with nulls and repeats) are paged and cut into four ranges;
// the reduces together return every row once, each range sorted, every
// key of range k before every key of range k+1, in either direction and
// null placement; and reduces skip the pages outside their range.
func TestExchange_EveryRowLandsInExactlyOneSortedDisjointRange(t *testing.T) {
	for _, key := range []sortrows.Key{{Column: 0, NullsFirst: true}, {Column: 0, Descending: true}, {Column: 0, Descending: true, NullsFirst: true}} {
		t.Run(fmt.Sprintf("desc=%v,nullsfirst=%v", key.Descending, key.NullsFirst), func(t *testing.T) {
			ctx := context.Background()
			r := rand.New(rand.NewPCG(1, 2))
			store := &memStore{objs: map[string][]byte{}}
			var want []row
			var indexes []messages.ExchangeIndex
			id := int64(0)
			for m := range 3 {
				var ks, ids []int64
				var nulls []bool
				for range 4000 + 1000*m {
					k := r.Int64N(2000) - 1000
					null := r.IntN(50) == 0
					ks, ids, nulls = append(ks, k), append(ids, id), append(nulls, null)
					want = append(want, row{null, k, id})
					id++
				}
				sorted := sortrows.Sort(ctx, batches(ks, ids, nulls), []sortrows.Key{key}, sortrows.Options{BatchRows: 700})
				idx, err := WritePages(ctx, store, MapPrefix("job", 0, m, "a"), sorted, 0, 8<<10)
				if err != nil {
					t.Fatal(err)
				}
				if idx.Rows != int64(len(ks)) || len(idx.Pages) < 5 {
					t.Fatalf("map %d: %d rows in %d pages, want %d rows in several pages", m, idx.Rows, len(idx.Pages), len(ks))
				}
				indexes = append(indexes, idx)
			}
			pages := 0
			for _, idx := range indexes {
				pages += len(idx.Pages)
			}
			enc, err := Boundaries(indexes, key, 4)
			if err != nil {
				t.Fatal(err)
			}
			ranges, err := DecodeRanges(enc, key, arrow.PrimitiveTypes.Int64)
			if err != nil {
				t.Fatal(err)
			}
			if ranges.Len() != 4 {
				t.Fatalf("%d ranges, want 4", ranges.Len())
			}
			store.gets = 0
			var got []row
			var spans [][]row
			for k := range ranges.Len() {
				var part []row
				for rec, err := range Read(ctx, store, indexes, ranges, k, []sortrows.Key{key}, sortrows.Options{BatchRows: 300}) {
					if err != nil {
						t.Fatal(err)
					}
					kc, ic := rec.Column(0).(*array.Int64), rec.Column(1).(*array.Int64)
					for i := range int(rec.NumRows()) {
						if ranges.Of(kc, i) != k {
							t.Fatalf("range %d returned a row of range %d", k, ranges.Of(kc, i))
						}
						part = append(part, row{kc.IsNull(i), kc.Value(i), ic.Value(i)})
					}
					rec.Release()
				}
				if len(part) < len(want)/10 {
					t.Errorf("range %d holds %d of %d rows: the boundaries are far from even", k, len(part), len(want))
				}
				spans = append(spans, part)
				got = append(got, part...)
			}
			// Sorted within each range and across them: the concatenation
			// is in the key's order.
			order := func(a, b row) int {
				switch {
				case a.null && b.null:
					return 0
				case a.null || b.null:
					if a.null == key.NullsFirst {
						return -1
					}
					return 1
				}
				c := int(a.k - b.k)
				if key.Descending {
					c = -c
				}
				return max(-1, min(1, c))
			}
			if !slices.IsSortedFunc(got, order) {
				t.Error("the ranges' rows are not in the key's order end to end")
			}
			byID := func(a, b row) int { return int(a.id - b.id) }
			slices.SortFunc(got, byID)
			slices.SortFunc(want, byID)
			if !slices.EqualFunc(got, want, func(a, b row) bool { return a.id == b.id && a.null == b.null && (a.null || a.k == b.k) }) {
				t.Fatalf("%d rows out of %d in: a row was lost, duplicated or changed", len(got), len(want))
			}
			if store.gets >= pages*2 {
				t.Errorf("the reduces read %d pages of %d: they should skip pages outside their range", store.gets, pages)
			}
		})
	}
}

// TestBoundaries_AKeyWithOneValueMakesOneRange: no boundary can split
// equal keys, so every row goes to one range and none is lost.
func TestBoundaries_AKeyWithOneValueMakesOneRange(t *testing.T) {
	ctx := context.Background()
	store := &memStore{objs: map[string][]byte{}}
	key := sortrows.Key{Column: 0}
	ks, ids, nulls := make([]int64, 3000), make([]int64, 3000), make([]bool, 3000)
	for i := range ids {
		ks[i], ids[i] = 7, int64(i)
	}
	idx, err := WritePages(ctx, store, "p/", sortrows.Sort(ctx, batches(ks, ids, nulls), []sortrows.Key{key}, sortrows.Options{}), 0, 4<<10)
	if err != nil {
		t.Fatal(err)
	}
	enc, err := Boundaries([]messages.ExchangeIndex{idx, idx}, key, 4)
	if err != nil {
		t.Fatal(err)
	}
	ranges, err := DecodeRanges(enc, key, arrow.PrimitiveTypes.Int64)
	if err != nil {
		t.Fatal(err)
	}
	total := 0
	for k := range ranges.Len() {
		for rec, err := range Read(ctx, store, []messages.ExchangeIndex{idx}, ranges, k, []sortrows.Key{key}, sortrows.Options{}) {
			if err != nil {
				t.Fatal(err)
			}
			total += int(rec.NumRows())
			rec.Release()
		}
	}
	if ranges.Len() > 2 || total != 3000 {
		t.Errorf("%d ranges, %d rows; want at most 2 ranges and all 3000 rows", ranges.Len(), total)
	}
}

func TestNewRanges_RefusesBoundariesOutOfOrder(t *testing.T) {
	b := array.NewInt64Builder(memory.DefaultAllocator)
	b.AppendValues([]int64{5, 3}, nil)
	arr := b.NewArray()
	if _, err := sortrows.NewRanges(sortrows.Key{}, arr); err == nil {
		t.Error("ascending ranges accepted decreasing boundaries")
	}
	if _, err := sortrows.NewRanges(sortrows.Key{Descending: true}, arr); err != nil {
		t.Errorf("descending ranges refused decreasing boundaries: %v", err)
	}
}
