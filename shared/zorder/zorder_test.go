package zorder

import (
	"bytes"
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
)

func TestKey_IsMonotoneInEachTypesOrder(t *testing.T) {
	mem := memory.NewGoAllocator()
	r := rand.New(rand.NewPCG(1, 2))
	ints := array.NewInt64Builder(mem)
	floats := array.NewFloat64Builder(mem)
	strs := array.NewStringBuilder(mem)
	var iv []int64
	var fv []float64
	var sv []string
	special := []float64{math.Inf(-1), -1e300, -2.5, math.Copysign(0, -1), 0, 1e-300, 3, math.Inf(1)}
	for range 500 {
		i := r.Int64() - math.MaxInt64/2
		iv = append(iv, i)
		ints.Append(i)
		f := special[r.IntN(len(special))] * float64(1+r.IntN(3))
		fv = append(fv, f)
		floats.Append(f)
		s := string([]byte{byte(r.IntN(256)), byte(r.IntN(256)), byte(r.IntN(4))})
		sv = append(sv, s)
		strs.Append(s)
	}
	ia, fa, sa := ints.NewArray(), floats.NewArray(), strs.NewArray()
	for i := range iv {
		for j := range iv {
			if iv[i] < iv[j] && Key(ia, i) >= Key(ia, j) {
				t.Fatalf("int %d < %d but keys %x >= %x", iv[i], iv[j], Key(ia, i), Key(ia, j))
			}
			if fv[i] < fv[j] && Key(fa, i) >= Key(fa, j) {
				t.Fatalf("float %v < %v but keys %x >= %x", fv[i], fv[j], Key(fa, i), Key(fa, j))
			}
			if sv[i] < sv[j] && Key(sa, i) > Key(sa, j) {
				t.Fatalf("string %q < %q but keys %x > %x", sv[i], sv[j], Key(sa, i), Key(sa, j))
			}
		}
	}
}

func TestInterleave_TakesOneBitOfEachKeyInTurn(t *testing.T) {
	out := make([]byte, 16)
	Interleave([]uint64{1 << 63, 1 << 62}, out)
	// x's top bit, then y's top bit (0), x's second (0), y's second (1).
	if out[0] != 0b1001_0000 || !bytes.Equal(out[1:], make([]byte, 15)) {
		t.Fatalf("z = %08b", out)
	}
	Interleave([]uint64{math.MaxUint64, 0}, out)
	for _, b := range out {
		if b != 0b1010_1010 {
			t.Fatalf("z = %08b, want x's bits in the even places", out)
		}
	}
}

// TestAppend_ZOrderedQuartersAreQuadrants: the points of a 64 x 64 grid
// sorted by z-value and cut into four equal parts are the grid's four
// quadrants: each part's bounding box is a quarter of the grid, where a
// sort on x alone would give four full-height strips.
func TestAppend_ZOrderedQuartersAreQuadrants(t *testing.T) {
	mem := memory.NewGoAllocator()
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int32}, {Name: "y", Type: arrow.PrimitiveTypes.Int32}}, nil)
	b := array.NewRecordBuilder(mem, schema)
	for _, p := range rand.New(rand.NewPCG(3, 4)).Perm(64 * 64) {
		b.Field(0).(*array.Int32Builder).Append(int32(p % 64))
		b.Field(1).(*array.Int32Builder).Append(int32(p / 64))
	}
	rec := b.NewRecordBatch()
	src := func(yield func(arrow.RecordBatch, error) bool) { yield(rec, nil) }
	type pt struct {
		x, y int32
		z    []byte
	}
	var pts []pt
	for out, err := range Append(src, []int{0, 1}, mem) {
		if err != nil {
			t.Fatal(err)
		}
		if out.NumCols() != 3 || out.Schema().Field(2).Name != ColumnName {
			t.Fatalf("schema %s", out.Schema())
		}
		xs, ys, zs := out.Column(0).(*array.Int32), out.Column(1).(*array.Int32), out.Column(2).(*array.FixedSizeBinary)
		for i := range int(out.NumRows()) {
			pts = append(pts, pt{xs.Value(i), ys.Value(i), slices.Clone(zs.Value(i))})
		}
		dropped := 0
		for d, err := range Drop(func(yield func(arrow.RecordBatch, error) bool) { out.Retain(); yield(out, nil) }) {
			if err != nil {
				t.Fatal(err)
			}
			if d.NumCols() != 2 || d.NumRows() != out.NumRows() || d.Schema().Field(1).Name != "y" {
				t.Fatalf("after Drop: %s, %d rows", d.Schema(), d.NumRows())
			}
			dropped++
		}
		if dropped != 1 {
			t.Fatalf("Drop yielded %d batches", dropped)
		}
	}
	slices.SortFunc(pts, func(a, b pt) int { return bytes.Compare(a.z, b.z) })
	for q := range 4 {
		part := pts[q*1024 : (q+1)*1024]
		minX, maxX, minY, maxY := int32(64), int32(-1), int32(64), int32(-1)
		for _, p := range part {
			minX, maxX, minY, maxY = min(minX, p.x), max(maxX, p.x), min(minY, p.y), max(maxY, p.y)
		}
		if maxX-minX != 31 || maxY-minY != 31 {
			t.Fatalf("quarter %d spans x %d..%d, y %d..%d: want a 32 x 32 quadrant", q, minX, maxX, minY, maxY)
		}
	}
}

func TestAppend_RefusesAColumnWithoutAKey(t *testing.T) {
	mem := memory.NewGoAllocator()
	schema := arrow.NewSchema([]arrow.Field{{Name: "l", Type: arrow.ListOf(arrow.PrimitiveTypes.Int32)}}, nil)
	b := array.NewRecordBuilder(mem, schema)
	b.Field(0).AppendNull()
	rec := b.NewRecordBatch()
	for _, err := range Append(func(yield func(arrow.RecordBatch, error) bool) { yield(rec, nil) }, []int{0}, mem) {
		if err == nil {
			t.Fatal("a list column was z-ordered")
		}
		return
	}
	t.Fatal("no error")
}
