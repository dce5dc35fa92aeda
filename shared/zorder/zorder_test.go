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

	"github.com/icekeeper/icekeeper/shared/bounds"
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
	for out, err := range Append(src, []int{0, 1}, nil, mem) {
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
	for _, err := range Append(func(yield func(arrow.RecordBatch, error) bool) { yield(rec, nil) }, []int{0}, nil, mem) {
		if err == nil {
			t.Fatal("a list column was z-ordered")
		}
		return
	}
	t.Fatal("no error")
}

// TestNorm_AnIntAndAFloatColumnInterleaveEvenly: x an int, y a float,
// both 0..63. Their raw keys vary in different bits (the int in its last
// 6, the float in its exponent near the top), so without Norm the
// z-value is a sort on y: each quarter is a full-width strip. With each
// column spread over its bounds, the quarters are quadrants again.
func TestNorm_AnIntAndAFloatColumnInterleaveEvenly(t *testing.T) {
	mem := memory.NewGoAllocator()
	schema := arrow.NewSchema([]arrow.Field{{Name: "x", Type: arrow.PrimitiveTypes.Int64}, {Name: "y", Type: arrow.PrimitiveTypes.Float64}}, nil)
	b := array.NewRecordBuilder(mem, schema)
	for _, p := range rand.New(rand.NewPCG(5, 6)).Perm(64 * 64) {
		b.Field(0).(*array.Int64Builder).Append(int64(p % 64))
		b.Field(1).(*array.Float64Builder).Append(float64(p / 64))
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	// spans returns each z-ordered quarter's x and y widths.
	spans := func(norms []Norm) [][2]float64 {
		rec.Retain()
		src := func(yield func(arrow.RecordBatch, error) bool) { yield(rec, nil) }
		type pt struct {
			x, y float64
			z    []byte
		}
		var pts []pt
		for out, err := range Append(src, []int{0, 1}, norms, mem) {
			if err != nil {
				t.Fatal(err)
			}
			xs, ys, zs := out.Column(0).(*array.Int64), out.Column(1).(*array.Float64), out.Column(2).(*array.FixedSizeBinary)
			for i := range int(out.NumRows()) {
				pts = append(pts, pt{float64(xs.Value(i)), ys.Value(i), slices.Clone(zs.Value(i))})
			}
			out.Release()
		}
		slices.SortFunc(pts, func(a, b pt) int { return bytes.Compare(a.z, b.z) })
		var out [][2]float64
		for q := range 4 {
			minX, maxX, minY, maxY := 64.0, -1.0, 64.0, -1.0
			for _, p := range pts[q*1024 : (q+1)*1024] {
				minX, maxX, minY, maxY = min(minX, p.x), max(maxX, p.x), min(minY, p.y), max(maxY, p.y)
			}
			out = append(out, [2]float64{maxX - minX, maxY - minY})
		}
		return out
	}
	for _, s := range spans(nil) {
		if s[0] != 63 || s[1] != 15 {
			t.Fatalf("raw keys: a quarter spans x %v, y %v; want the strips the raw keys give (63, 15)", s[0], s[1])
		}
	}
	nx, ok1 := NormFor(bounds.Int, bounds.IntValue(0), bounds.IntValue(63))
	ny, ok2 := NormFor(bounds.Float, bounds.FloatValue(0), bounds.FloatValue(63))
	if !ok1 || !ok2 {
		t.Fatal("no norm for an int or a float column")
	}
	norms := []Norm{nx, ny}
	for q, s := range spans(norms) {
		if s[0] != 31 || s[1] != 31 {
			t.Errorf("normalized: quarter %d spans x %v, y %v; want a 32 x 32 quadrant", q, s[0], s[1])
		}
	}
}

func TestNorm_ClampsAndKeepsOrder(t *testing.T) {
	const sign = uint64(1) << 63
	ikey := func(i int64) uint64 { return uint64(i) ^ sign }
	fkey := func(f float64) uint64 {
		b := int64(math.Float64bits(f))
		if b < 0 {
			b ^= math.MaxInt64
		}
		return uint64(b) ^ sign
	}
	ints, _ := NormFor(bounds.Int, bounds.IntValue(100), bounds.IntValue(200))
	floats, _ := NormFor(bounds.Float, bounds.FloatValue(-1.5), bounds.FloatValue(2.5))
	for name, c := range map[string]struct {
		n    Norm
		keys []uint64
	}{
		"ints":   {ints, []uint64{ikey(50), ikey(100), ikey(101), ikey(150), ikey(199), ikey(200), ikey(300)}},
		"floats": {floats, []uint64{fkey(-9), fkey(-1.5), fkey(-1), fkey(0), fkey(1), fkey(2.5), fkey(7)}},
	} {
		var got []uint64
		for _, k := range c.keys {
			got = append(got, c.n.Apply(k))
		}
		// Clamped at both ends, strictly increasing within.
		if got[0] != got[1] || got[len(got)-1] != got[len(got)-2] || got[1] != 0 {
			t.Errorf("%s: not clamped: %x", name, got)
		}
		for i := 2; i < len(got)-1; i++ {
			if got[i] <= got[i-1] {
				t.Errorf("%s: not increasing at %d: %x", name, i, got)
			}
		}
		if got[len(got)-2]>>60 == 0 {
			t.Errorf("%s: the top of the range does not reach the top bits: %x", name, got[len(got)-2])
		}
	}
	// The middle of a float range is the middle of the key space.
	if mid := floats.Apply(fkey(0.5)); mid>>60 != 8 {
		t.Errorf("0.5 in [-1.5, 2.5] maps to %x, want about 2^63", mid)
	}
	if one, _ := NormFor(bounds.Int, bounds.IntValue(7), bounds.IntValue(7)); one.Apply(ikey(7)) != 0 || one.Apply(ikey(9)) != 0 {
		t.Error("a one-value column must contribute no bits")
	}
	if (Norm{}).Apply(12345) != 12345 {
		t.Error("the zero Norm changed a key")
	}
}
