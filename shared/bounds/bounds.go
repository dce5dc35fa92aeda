// Package bounds reads the column bounds that manifests record for each
// data file (lower_bounds, upper_bounds: Iceberg single-value binary
// serialization, spec Appendix D) into values that compare in the column's
// order. Health measures how files overlap with them; the planner groups
// the files of a sort compaction by them.
//
// Invariants:
//   - Decode never guesses: a bound it cannot read (an unknown length, a
//     type without an order here) is reported unreadable, and callers
//     treat the file as unbounded.
//   - Integers and floats are read by their length, so bounds written
//     before a promotion (int to long, float to double) still read.
//   - The order of values of one Kind is monotone in the column's values:
//     a < b for column values implies Compare(Decode(a), Decode(b)) <= 0.
//     Decimals compare as floats, which can tie distinct values but never
//     reverses them.
package bounds

import (
	"cmp"
	"encoding/binary"
	"math"
	"math/big"

	"github.com/apache/iceberg-go"
)

// Kind is how a type's bounds compare.
type Kind int

// Kinds.
const (
	Int Kind = iota + 1
	Float
	Bytes
)

// Value is a decoded bound, ordered within one column's Kind: N holds an
// int64 (Int) or float64 bits (Float), S the bytes (Bytes).
type Value struct {
	N uint64
	S string
}

// Range is a file's closed range of one column's values.
type Range struct{ Lo, Hi Value }

// IntValue and FloatValue make values of the Int and Float kinds.
func IntValue(i int64) Value     { return Value{N: uint64(i)} }
func FloatValue(f float64) Value { return Value{N: math.Float64bits(f)} }

// Compare orders two values of kind k.
func Compare(k Kind, a, b Value) int {
	switch k {
	case Int:
		return cmp.Compare(int64(a.N), int64(b.N))
	case Float:
		return cmp.Compare(math.Float64frombits(a.N), math.Float64frombits(b.N))
	default:
		return cmp.Compare(a.S, b.S)
	}
}

// KindOf is how a type's bounds compare; 0 for types without a usable
// order here (nested, geospatial, variant).
func KindOf(t iceberg.Type) Kind {
	switch t.(type) {
	case iceberg.Int32Type, iceberg.Int64Type, iceberg.DateType, iceberg.TimeType, iceberg.TimestampType, iceberg.TimestampTzType, iceberg.BooleanType:
		return Int
	case iceberg.Float32Type, iceberg.Float64Type, iceberg.DecimalType:
		return Float
	case iceberg.StringType, iceberg.BinaryType, iceberg.FixedType, iceberg.UUIDType:
		return Bytes
	}
	return 0
}

// Decode reads an Iceberg single-value binary bound of type t.
func Decode(k Kind, t iceberg.Type, b []byte) (Value, bool) {
	switch k {
	case Int:
		switch len(b) {
		case 1:
			return IntValue(int64(b[0])), true
		case 4:
			return IntValue(int64(int32(binary.LittleEndian.Uint32(b)))), true
		case 8:
			return IntValue(int64(binary.LittleEndian.Uint64(b))), true
		}
	case Float:
		if d, ok := t.(iceberg.DecimalType); ok {
			if len(b) == 0 {
				return Value{}, false
			}
			n := new(big.Int).SetBytes(b)
			if b[0]&0x80 != 0 { // two's complement, big-endian
				n.Sub(n, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
			}
			f, _ := new(big.Float).Quo(new(big.Float).SetInt(n), new(big.Float).SetFloat64(math.Pow10(d.Scale()))).Float64()
			return FloatValue(f), true
		}
		switch len(b) {
		case 4:
			return FloatValue(float64(math.Float32frombits(binary.LittleEndian.Uint32(b)))), true
		case 8:
			return FloatValue(math.Float64frombits(binary.LittleEndian.Uint64(b))), true
		}
	case Bytes:
		return Value{S: string(b)}, true
	}
	return Value{}, false
}

// Of returns a data file's range of the column with field id, of type t,
// and whether the file has both bounds and they read. For several columns
// of one file use InMaps: iceberg-go's data files copy their bound maps,
// every value, on each LowerBoundValues and UpperBoundValues call.
func Of(df iceberg.DataFile, id int, k Kind, t iceberg.Type) (Range, bool) {
	return InMaps(df.LowerBoundValues(), df.UpperBoundValues(), id, k, t)
}

// InMaps is Of over a file's lower and upper bound maps, read once.
func InMaps(lower, upper map[int][]byte, id int, k Kind, t iceberg.Type) (Range, bool) {
	lo, ok1 := lower[id]
	hi, ok2 := upper[id]
	if !ok1 || !ok2 {
		return Range{}, false
	}
	l, ok1 := Decode(k, t, lo)
	h, ok2 := Decode(k, t, hi)
	return Range{Lo: l, Hi: h}, ok1 && ok2
}
