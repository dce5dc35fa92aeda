// Package zorder clusters rows on several columns at once: it maps each
// row to a z-value, the bits of order-preserving 8-byte keys of its
// columns interleaved (a Morton code), so that sorting by the z-value
// keeps rows that are close on every column close together, and each
// output file covers a small box of the columns' space instead of a slice
// of one column.
//
// The keys follow Iceberg Java's ZOrderByteUtils: signed integers, dates,
// times and timestamps with the sign bit flipped; floats in IEEE 754 total
// order; strings and binary by their first 8 bytes, zero-padded; booleans
// as 0 or 1; nulls as all zero bits (first). Each key is monotone in its
// column's order, so a z-value range holds a box's rows.
//
// Invariants:
//   - Append adds one column (ColumnName) and Drop removes it; neither
//     touches the rows' values or their number.
//   - A column of a type without a key here is refused before any row is
//     read.
package zorder

import (
	"encoding/binary"
	"fmt"
	"iter"
	"math"
	"math/bits"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"

	"github.com/icekeeper/icekeeper/shared/bounds"
	"github.com/icekeeper/icekeeper/shared/sortrows"
)

// ColumnName is the z-value column Append adds.
const ColumnName = "_icekeeper_z"

// keyBytes is the width of one column's key.
const keyBytes = 8

// Supported reports whether a column of type t can be z-ordered.
func Supported(t arrow.DataType) bool {
	if ext, ok := t.(arrow.ExtensionType); ok {
		t = ext.StorageType()
	}
	switch t.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64,
		arrow.DATE32, arrow.DATE64, arrow.TIME32, arrow.TIME64, arrow.TIMESTAMP,
		arrow.FLOAT32, arrow.FLOAT64, arrow.BOOL, arrow.STRING, arrow.LARGE_STRING, arrow.BINARY, arrow.LARGE_BINARY,
		arrow.FIXED_SIZE_BINARY:
		return true
	}
	return false
}

// Key returns the order-preserving 8-byte key of a[i] (zero for null).
func Key(a arrow.Array, i int) uint64 {
	if ext, ok := a.(array.ExtensionArray); ok {
		a = ext.Storage()
	}
	if a.IsNull(i) {
		return 0
	}
	const sign = uint64(1) << 63
	switch v := a.(type) {
	case *array.Int8:
		return uint64(int64(v.Value(i))) ^ sign
	case *array.Int16:
		return uint64(int64(v.Value(i))) ^ sign
	case *array.Int32:
		return uint64(int64(v.Value(i))) ^ sign
	case *array.Int64:
		return uint64(v.Value(i)) ^ sign
	case *array.Uint8:
		return uint64(v.Value(i))
	case *array.Uint16:
		return uint64(v.Value(i))
	case *array.Uint32:
		return uint64(v.Value(i))
	case *array.Uint64:
		return v.Value(i)
	case *array.Date32:
		return uint64(int64(v.Value(i))) ^ sign
	case *array.Date64:
		return uint64(int64(v.Value(i))) ^ sign
	case *array.Time32:
		return uint64(int64(v.Value(i))) ^ sign
	case *array.Time64:
		return uint64(int64(v.Value(i))) ^ sign
	case *array.Timestamp:
		return uint64(int64(v.Value(i))) ^ sign
	case *array.Float32:
		return uint64(sortrows.TotalOrder(float64(v.Value(i)))) ^ sign
	case *array.Float64:
		return uint64(sortrows.TotalOrder(v.Value(i))) ^ sign
	case *array.Boolean:
		if v.Value(i) {
			return 1
		}
		return 0
	case *array.String:
		return prefix([]byte(v.Value(i)))
	case *array.LargeString:
		return prefix([]byte(v.Value(i)))
	case *array.Binary:
		return prefix(v.Value(i))
	case *array.LargeBinary:
		return prefix(v.Value(i))
	case *array.FixedSizeBinary:
		return prefix(v.Value(i))
	}
	return 0
}

// prefix is the first 8 bytes, big-endian, zero-padded: byte order.
func prefix(b []byte) uint64 {
	var buf [keyBytes]byte
	copy(buf[:], b)
	return binary.BigEndian.Uint64(buf[:])
}

// Norm spreads one column's keys within the column's range [lo, hi]
// over all 64 bits before they are interleaved. Raw keys of small values
// share their top bits (the ints 0 to 1023 differ only in the last 10 of
// 64, and a float's key is mostly its exponent), and interleaving bit by
// bit from the top would then order rows by whichever column varies
// highest: a sort on it, not a z-order. Ints and strings are spread in
// key space (their keys are linear in the value, strings by their first 8
// bytes), floats in value space ((v-lo)/(hi-lo), so 0, 1 and 63 are not
// three exponents apart). The range comes from the group's file bounds; a
// value outside it is clamped, which only blurs the clustering at the
// edges (Apply is monotone, so the order stays one of the z-order's). The
// zero Norm leaves keys as they are.
type Norm struct {
	kind     bounds.Kind
	min, max uint64  // keys (ints, bytes)
	lo, hi   float64 // values (floats)
	shift    uint
}

// NormFor returns the Norm of a column of kind k whose values lie in
// [lo, hi] (manifest bounds; swapped if needed); ok is false for a kind
// without keys here.
func NormFor(k bounds.Kind, lo, hi bounds.Value) (Norm, bool) {
	if bounds.Compare(k, hi, lo) < 0 {
		lo, hi = hi, lo
	}
	const sign = uint64(1) << 63
	n := Norm{kind: k}
	switch k {
	case bounds.Int:
		n.min, n.max = lo.N^sign, hi.N^sign
	case bounds.Bytes:
		n.min, n.max = prefix([]byte(lo.S)), prefix([]byte(hi.S))
	case bounds.Float:
		n.lo, n.hi = math.Float64frombits(lo.N), math.Float64frombits(hi.N)
		if math.IsNaN(n.lo) || math.IsNaN(n.hi) || math.IsInf(n.hi-n.lo, 0) {
			return Norm{}, false // no finite range to spread over
		}
		return n, true
	default:
		return Norm{}, false
	}
	n.shift = uint(bits.LeadingZeros64(n.max - n.min))
	return n, true
}

// Apply maps key k of the column.
func (n Norm) Apply(k uint64) uint64 {
	switch n.kind {
	case bounds.Int, bounds.Bytes:
		k = min(max(k, n.min), n.max)
		if n.shift >= 64 {
			return 0 // one value: the column orders nothing
		}
		return (k - n.min) << n.shift
	case bounds.Float:
		if n.hi <= n.lo {
			return 0
		}
		if k == 0 {
			return 0 // null: first, as in Key
		}
		f := fromTotalOrder(int64(k ^ (uint64(1) << 63)))
		t := (f - n.lo) / (n.hi - n.lo)
		switch {
		case math.IsNaN(t) || t >= 1:
			return math.MaxUint64
		case t <= 0:
			return 0
		}
		return uint64(t * (1 << 63) * 2)
	}
	return k
}

// fromTotalOrder inverts sortrows.TotalOrder (which is its own inverse on
// the bits).
func fromTotalOrder(b int64) float64 {
	if b < 0 {
		b ^= math.MaxInt64
	}
	return math.Float64frombits(uint64(b))
}

// Interleave writes the z-value of keys into out (len(keys)*8 bytes): bit
// j (from the most significant) is bit j/len(keys) of key j%len(keys).
func Interleave(keys []uint64, out []byte) {
	clear(out)
	n := len(keys)
	for j := range n * 64 {
		k, bit := j%n, j/n
		if keys[k]&(uint64(1)<<(63-bit)) != 0 {
			out[j/8] |= 1 << (7 - j%8)
		}
	}
}

// Append adds the z-value of the columns at the given indices to every
// batch, as a last fixed-size binary column named ColumnName; norms[k],
// when given, spreads column k's keys first (Norm).
func Append(records iter.Seq2[arrow.RecordBatch, error], columns []int, norms []Norm, alloc memory.Allocator) iter.Seq2[arrow.RecordBatch, error] {
	width := len(columns) * keyBytes
	zType := &arrow.FixedSizeBinaryType{ByteWidth: width}
	return func(yield func(arrow.RecordBatch, error) bool) {
		keys := make([]uint64, len(columns))
		z := make([]byte, width)
		for rec, err := range records {
			if err != nil {
				yield(nil, err)
				return
			}
			for _, c := range columns {
				if c < 0 || c >= int(rec.NumCols()) || !Supported(rec.Column(c).DataType()) {
					rec.Release()
					yield(nil, fmt.Errorf("zorder: column %d cannot be z-ordered", c))
					return
				}
			}
			b := array.NewFixedSizeBinaryBuilder(alloc, zType)
			b.Reserve(int(rec.NumRows()))
			for i := range int(rec.NumRows()) {
				for k, c := range columns {
					keys[k] = Key(rec.Column(c), i)
					if k < len(norms) {
						keys[k] = norms[k].Apply(keys[k])
					}
				}
				Interleave(keys, z)
				b.Append(z)
			}
			zs := b.NewArray()
			b.Release()
			fields := append(rec.Schema().Fields(), arrow.Field{Name: ColumnName, Type: zType})
			md := rec.Schema().Metadata()
			cols := append(append([]arrow.Array(nil), rec.Columns()...), zs)
			out := array.NewRecordBatch(arrow.NewSchema(fields, &md), cols, rec.NumRows())
			zs.Release()
			rec.Release()
			if !yield(out, nil) {
				return
			}
		}
	}
}

// Drop removes the last column (the one Append added) from every batch.
func Drop(records iter.Seq2[arrow.RecordBatch, error]) iter.Seq2[arrow.RecordBatch, error] {
	return func(yield func(arrow.RecordBatch, error) bool) {
		for rec, err := range records {
			if err != nil {
				yield(nil, err)
				return
			}
			n := int(rec.NumCols())
			if n == 0 || rec.Schema().Field(n-1).Name != ColumnName {
				rec.Release()
				yield(nil, fmt.Errorf("zorder: the batch has no %s column", ColumnName))
				return
			}
			md := rec.Schema().Metadata()
			out := array.NewRecordBatch(arrow.NewSchema(rec.Schema().Fields()[:n-1], &md), rec.Columns()[:n-1], rec.NumRows())
			rec.Release()
			if !yield(out, nil) {
				return
			}
		}
	}
}
