package sortrows

import (
	"cmp"
	"context"
	"fmt"
	"iter"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/compute"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

// row is one test row, read back in Go.
type row struct {
	id    *int64
	s     *string
	f     float64
	seq   int64
	items []int32
}

var testSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "s", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "f", Type: arrow.PrimitiveTypes.Float64},
	{Name: "seq", Type: arrow.PrimitiveTypes.Int64},
	{Name: "items", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32), Nullable: true},
}, nil)

var specialFloats = []float64{math.NaN(), math.Copysign(math.NaN(), -1), math.Inf(1), math.Inf(-1), 0, math.Copysign(0, -1), -1.5, 2.25}

func genRows(rng *rand.Rand, n int) []row {
	rows := make([]row, n)
	for i := range rows {
		r := row{seq: int64(i), f: specialFloats[rng.IntN(len(specialFloats))]}
		if rng.IntN(8) != 0 {
			v := int64(rng.IntN(20)) - 10
			r.id = &v
		}
		if rng.IntN(6) != 0 {
			v := string(rune('a'+rng.IntN(5))) + string(rune('a'+rng.IntN(3)))
			r.s = &v
		}
		for k := range i % 4 {
			r.items = append(r.items, int32(i*10+k))
		}
		rows[i] = r
	}
	return rows
}

func batchesOf(t *testing.T, mem memory.Allocator, rows []row, per int) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		for lo := 0; lo < len(rows); lo += per {
			b := array.NewRecordBuilder(mem, testSchema)
			for _, r := range rows[lo:min(lo+per, len(rows))] {
				if r.id == nil {
					b.Field(0).AppendNull()
				} else {
					b.Field(0).(*array.Int64Builder).Append(*r.id)
				}
				if r.s == nil {
					b.Field(1).AppendNull()
				} else {
					b.Field(1).(*array.StringBuilder).Append(*r.s)
				}
				b.Field(2).(*array.Float64Builder).Append(r.f)
				b.Field(3).(*array.Int64Builder).Append(r.seq)
				lb := b.Field(4).(*array.ListBuilder)
				if r.items == nil {
					lb.AppendNull()
				} else {
					lb.Append(true)
					lb.ValueBuilder().(*array.Int32Builder).AppendValues(r.items, nil)
				}
			}
			rec := b.NewRecordBatch()
			b.Release()
			if !yield(rec, nil) {
				return
			}
		}
	}
}

func readRows(t *testing.T, rec arrow.RecordBatch) []row {
	t.Helper()
	var out []row
	ids := rec.Column(0).(*array.Int64)
	ss := rec.Column(1).(*array.String)
	fs := rec.Column(2).(*array.Float64)
	seqs := rec.Column(3).(*array.Int64)
	items := rec.Column(4).(*array.List)
	vals := items.ListValues().(*array.Int32)
	for i := range int(rec.NumRows()) {
		r := row{f: fs.Value(i), seq: seqs.Value(i)}
		if ids.IsValid(i) {
			v := ids.Value(i)
			r.id = &v
		}
		if ss.IsValid(i) {
			v := ss.Value(i)
			r.s = &v
		}
		if items.IsValid(i) {
			lo, hi := items.ValueOffsets(i)
			r.items = []int32{}
			for k := lo; k < hi; k++ {
				r.items = append(r.items, vals.Value(int(k)))
			}
		}
		out = append(out, r)
	}
	return out
}

// floatRank is the spec's float order written out case by case (the code
// under test uses a bit trick): -NaN, -Inf, negatives, -0, 0, positives,
// Inf, NaN.
func floatRank(f float64) (int, float64) {
	switch {
	case math.IsNaN(f) && math.Signbit(f):
		return 0, 0
	case math.IsNaN(f):
		return 7, 0
	case math.IsInf(f, -1):
		return 1, 0
	case math.IsInf(f, 1):
		return 6, 0
	case f == 0 && math.Signbit(f):
		return 3, 0
	case f == 0:
		return 4, 0
	case f < 0:
		return 2, f
	}
	return 5, f
}

// refCompare is the order of keys [id asc nulls first, s desc nulls last,
// f asc nulls last], written independently of the comparator.
func refCompare(a, b row) int {
	switch {
	case a.id == nil && b.id != nil:
		return -1
	case a.id != nil && b.id == nil:
		return 1
	case a.id != nil && *a.id != *b.id:
		return cmp.Compare(*a.id, *b.id)
	}
	switch {
	case a.s == nil && b.s != nil:
		return 1
	case a.s != nil && b.s == nil:
		return -1
	case a.s != nil && *a.s != *b.s:
		return -cmp.Compare(*a.s, *b.s)
	}
	ra, va := floatRank(a.f)
	rb, vb := floatRank(b.f)
	if ra != rb {
		return cmp.Compare(ra, rb)
	}
	return cmp.Compare(va, vb)
}

func rowString(r row) string {
	s := fmt.Sprintf("%d|%x|%v", r.seq, math.Float64bits(r.f), r.items)
	if r.id != nil {
		s += fmt.Sprintf("|id=%d", *r.id)
	}
	if r.s != nil {
		s += "|s=" + *r.s
	}
	return s
}

func TestSort_OutputIsTheInputRowsInTheSortOrder(t *testing.T) {
	keys := []Key{{Column: 0, NullsFirst: true}, {Column: 1, Descending: true}, {Column: 2}}
	cases := []struct {
		name     string
		rows     int
		window   int64
		wantRuns func(int) bool
	}{
		{"one window in memory", 3000, 0, func(n int) bool { return n == 1 }},
		{"spilled runs merged", 20000, 64 << 10, func(n int) bool { return n > 3 }},
		{"a window per batch", 5000, 1, func(n int) bool { return n == 5000/700+1 }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
			ctx := compute.WithAllocator(context.Background(), mem)
			in := genRows(rand.New(rand.NewPCG(uint64(tc.rows), 7)), tc.rows)
			dir := t.TempDir()
			var st Stats
			var out []row
			for rec, err := range Sort(ctx, batchesOf(t, mem, in, 700), keys, Options{WindowBytes: tc.window, SpillDir: dir, BatchRows: 1000, Stats: &st}) {
				if err != nil {
					t.Fatal(err)
				}
				if rec.NumRows() > 1000 {
					t.Errorf("batch of %d rows, want at most 1000", rec.NumRows())
				}
				out = append(out, readRows(t, rec)...)
				rec.Release()
			}
			if !tc.wantRuns(st.Runs) {
				t.Errorf("runs = %d", st.Runs)
			}
			if st.Rows != int64(len(in)) || len(out) != len(in) {
				t.Fatalf("rows: stats %d, out %d, in %d", st.Rows, len(out), len(in))
			}
			for i := 1; i < len(out); i++ {
				if refCompare(out[i-1], out[i]) > 0 {
					t.Fatalf("rows %d and %d out of order: %s then %s", i-1, i, rowString(out[i-1]), rowString(out[i]))
				}
			}
			got := make([]string, len(out))
			want := make([]string, len(in))
			for i := range out {
				got[i], want[i] = rowString(out[i]), rowString(in[i])
			}
			slices.Sort(got)
			slices.Sort(want)
			if !slices.Equal(got, want) {
				t.Fatal("the sorted rows are not the input rows")
			}
			left, _ := os.ReadDir(dir)
			if len(left) != 0 {
				t.Errorf("%d run files left behind", len(left))
			}
			mem.AssertSize(t, 0)
		})
	}
}

func TestSort_RunFilesAreRemovedWhenTheConsumerStopsEarly(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	ctx := compute.WithAllocator(context.Background(), mem)
	in := genRows(rand.New(rand.NewPCG(1, 2)), 10000)
	dir := t.TempDir()
	var st Stats
	for rec, err := range Sort(ctx, batchesOf(t, mem, in, 500), []Key{{Column: 3, Descending: true}}, Options{WindowBytes: 32 << 10, SpillDir: dir, BatchRows: 100, Stats: &st}) {
		if err != nil {
			t.Fatal(err)
		}
		if got := rec.Column(3).(*array.Int64).Value(0); got != 9999 {
			t.Errorf("first row seq %d, want 9999", got)
		}
		rec.Release()
		break
	}
	if st.Runs < 2 {
		t.Fatalf("runs = %d, want a merge", st.Runs)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("%d run files left behind", len(left))
	}
	mem.AssertSize(t, 0)
}

func TestSort_AnInputErrorEndsTheStream(t *testing.T) {
	mem := memory.NewCheckedAllocator(memory.NewGoAllocator())
	ctx := compute.WithAllocator(context.Background(), mem)
	in := genRows(rand.New(rand.NewPCG(3, 4)), 2000)
	boom := fmt.Errorf("read failed")
	src := func(yield func(arrow.RecordBatch, error) bool) {
		for rec, err := range batchesOf(t, mem, in, 500) {
			if !yield(rec, err) {
				return
			}
		}
		yield(nil, boom)
	}
	dir := t.TempDir()
	var gotErr error
	for rec, err := range Sort(ctx, src, []Key{{Column: 0}}, Options{WindowBytes: 16 << 10, SpillDir: dir}) {
		if err != nil {
			gotErr = err
			break
		}
		rec.Release()
		t.Fatal("a row was yielded before the input ended")
	}
	if gotErr != boom {
		t.Fatalf("error = %v, want the input's", gotErr)
	}
	if left, _ := os.ReadDir(dir); len(left) != 0 {
		t.Errorf("%d run files left behind", len(left))
	}
	mem.AssertSize(t, 0)
}

func TestTotalOrder_MatchesTheSpecsFloatOrder(t *testing.T) {
	fs := append(slices.Clone(specialFloats), 1e-300, -1e300, math.MaxFloat64, -math.SmallestNonzeroFloat64)
	for _, a := range fs {
		for _, b := range fs {
			ra, va := floatRank(a)
			rb, vb := floatRank(b)
			want := cmp.Compare(ra, rb)
			if want == 0 {
				want = cmp.Compare(va, vb)
			}
			if got := cmp.Compare(TotalOrder(a), TotalOrder(b)); got != want {
				t.Errorf("TotalOrder(%v) vs TotalOrder(%v) = %d, want %d", a, b, got, want)
			}
		}
	}
}
