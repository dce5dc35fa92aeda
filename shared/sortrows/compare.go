package sortrows

import (
	"bytes"
	"cmp"
	"fmt"
	"math"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// Key is one sort key: a top-level column of the batches, its direction
// and where its nulls go.
type Key struct {
	// Column is the column's index in the batches.
	Column     int
	Descending bool
	NullsFirst bool
}

// KeysFor resolves an Iceberg sort order against the schema the rows are
// read with. Like iceberg-go's writer (table/sort_keys.go), each sort
// field sorts by its source column's values: order-preserving transforms
// (identity, truncate, year, month, day, hour) sort exactly as their
// source; a bucket transform clusters by source value instead of bucket.
// A source that is not a top-level column of a type with an order here is
// an error, so a table whose order cannot be honoured fails loud.
func KeysFor(order table.SortOrder, schema *iceberg.Schema, arrowSchema *arrow.Schema) ([]Key, error) {
	if order.IsUnsorted() {
		return nil, fmt.Errorf("sortrows: sort order %d has no fields", order.OrderID())
	}
	fields := schema.Fields()
	var keys []Key
	for _, f := range order.Fields() {
		idx := -1
		for i, nf := range fields {
			if nf.ID == f.SourceID() {
				idx = i
				break
			}
		}
		if idx < 0 {
			return nil, fmt.Errorf("sortrows: sort order %d: source field %d is not a top-level column of schema %d", order.OrderID(), f.SourceID(), schema.ID)
		}
		if idx >= arrowSchema.NumFields() || arrowSchema.Field(idx).Name != fields[idx].Name {
			return nil, fmt.Errorf("sortrows: sort order %d: column %d of the rows is not %q", order.OrderID(), idx, fields[idx].Name)
		}
		if !Orderable(arrowSchema.Field(idx).Type) {
			return nil, fmt.Errorf("sortrows: sort order %d: column %q of type %s has no order here", order.OrderID(), fields[idx].Name, arrowSchema.Field(idx).Type)
		}
		keys = append(keys, Key{Column: idx, Descending: f.Direction == table.SortDESC, NullsFirst: f.NullOrder == table.NullsFirst})
	}
	return keys, nil
}

// Orderable reports whether values of t can be sort keys. An extension
// type (iceberg-go's UUID) orders as its storage.
func Orderable(t arrow.DataType) bool {
	if ext, ok := t.(arrow.ExtensionType); ok {
		t = ext.StorageType()
	}
	switch t.ID() {
	case arrow.INT8, arrow.INT16, arrow.INT32, arrow.INT64, arrow.UINT8, arrow.UINT16, arrow.UINT32, arrow.UINT64,
		arrow.DATE32, arrow.DATE64, arrow.TIME32, arrow.TIME64, arrow.TIMESTAMP, arrow.DURATION,
		arrow.FLOAT32, arrow.FLOAT64, arrow.BOOL, arrow.STRING, arrow.LARGE_STRING, arrow.BINARY, arrow.LARGE_BINARY,
		arrow.FIXED_SIZE_BINARY, arrow.DECIMAL128, arrow.DECIMAL256:
		return true
	}
	return false
}

// valueCompare compares the non-null values a[i] and b[j] of one type.
type valueCompare func(a arrow.Array, i int, b arrow.Array, j int) int

// compareFor returns the comparison of t's values: numbers by value,
// floats in the IEEE 754 total order the Iceberg spec sorts by (-NaN <
// -Inf < ... < -0 < 0 < ... < Inf < NaN), strings and binary by bytes
// (UTF-8 byte order is code point order), false before true.
func compareFor(t arrow.DataType) (valueCompare, error) {
	if ext, ok := t.(arrow.ExtensionType); ok {
		inner, err := compareFor(ext.StorageType())
		if err != nil {
			return nil, err
		}
		return func(a arrow.Array, i int, b arrow.Array, j int) int {
			return inner(a.(array.ExtensionArray).Storage(), i, b.(array.ExtensionArray).Storage(), j)
		}, nil
	}
	switch t.ID() {
	case arrow.INT8:
		return ordered[*array.Int8], nil
	case arrow.INT16:
		return ordered[*array.Int16], nil
	case arrow.INT32:
		return ordered[*array.Int32], nil
	case arrow.INT64:
		return ordered[*array.Int64], nil
	case arrow.UINT8:
		return ordered[*array.Uint8], nil
	case arrow.UINT16:
		return ordered[*array.Uint16], nil
	case arrow.UINT32:
		return ordered[*array.Uint32], nil
	case arrow.UINT64:
		return ordered[*array.Uint64], nil
	case arrow.DATE32:
		return ordered[*array.Date32], nil
	case arrow.DATE64:
		return ordered[*array.Date64], nil
	case arrow.TIME32:
		return ordered[*array.Time32], nil
	case arrow.TIME64:
		return ordered[*array.Time64], nil
	case arrow.TIMESTAMP:
		return ordered[*array.Timestamp], nil
	case arrow.DURATION:
		return ordered[*array.Duration], nil
	case arrow.FLOAT32:
		return func(a arrow.Array, i int, b arrow.Array, j int) int {
			return cmp.Compare(TotalOrder(float64(a.(*array.Float32).Value(i))), TotalOrder(float64(b.(*array.Float32).Value(j))))
		}, nil
	case arrow.FLOAT64:
		return func(a arrow.Array, i int, b arrow.Array, j int) int {
			return cmp.Compare(TotalOrder(a.(*array.Float64).Value(i)), TotalOrder(b.(*array.Float64).Value(j)))
		}, nil
	case arrow.BOOL:
		return func(a arrow.Array, i int, b arrow.Array, j int) int {
			x, y := a.(*array.Boolean).Value(i), b.(*array.Boolean).Value(j)
			switch {
			case x == y:
				return 0
			case !x:
				return -1
			}
			return 1
		}, nil
	case arrow.STRING:
		return func(a arrow.Array, i int, b arrow.Array, j int) int {
			return cmp.Compare(a.(*array.String).Value(i), b.(*array.String).Value(j))
		}, nil
	case arrow.LARGE_STRING:
		return func(a arrow.Array, i int, b arrow.Array, j int) int {
			return cmp.Compare(a.(*array.LargeString).Value(i), b.(*array.LargeString).Value(j))
		}, nil
	case arrow.BINARY:
		return func(a arrow.Array, i int, b arrow.Array, j int) int {
			return bytes.Compare(a.(*array.Binary).Value(i), b.(*array.Binary).Value(j))
		}, nil
	case arrow.LARGE_BINARY:
		return func(a arrow.Array, i int, b arrow.Array, j int) int {
			return bytes.Compare(a.(*array.LargeBinary).Value(i), b.(*array.LargeBinary).Value(j))
		}, nil
	case arrow.FIXED_SIZE_BINARY:
		return func(a arrow.Array, i int, b arrow.Array, j int) int {
			return bytes.Compare(a.(*array.FixedSizeBinary).Value(i), b.(*array.FixedSizeBinary).Value(j))
		}, nil
	case arrow.DECIMAL128:
		return func(a arrow.Array, i int, b arrow.Array, j int) int {
			return a.(*array.Decimal128).Value(i).Cmp(b.(*array.Decimal128).Value(j))
		}, nil
	case arrow.DECIMAL256:
		return func(a arrow.Array, i int, b arrow.Array, j int) int {
			return a.(*array.Decimal256).Value(i).Cmp(b.(*array.Decimal256).Value(j))
		}, nil
	}
	return nil, fmt.Errorf("sortrows: no order for type %s", t)
}

type valued[T cmp.Ordered] interface {
	arrow.Array
	Value(int) T
}

func ordered[A valued[T], T cmp.Ordered](a arrow.Array, i int, b arrow.Array, j int) int {
	return cmp.Compare(a.(A).Value(i), b.(A).Value(j))
}

// TotalOrder maps a float to an integer whose order is IEEE 754's total
// order: -NaN, -Inf, negative numbers, -0, 0, positive numbers, Inf, NaN.
func TotalOrder(f float64) int64 {
	b := int64(math.Float64bits(f))
	if b < 0 {
		// Negative: flip the magnitude bits so larger magnitudes sort lower.
		b ^= math.MaxInt64
	}
	return b
}

// comparator compares rows of batches with one schema by the keys.
type comparator struct {
	keys []Key
	cmps []valueCompare
}

func newComparator(schema *arrow.Schema, keys []Key) (*comparator, error) {
	if len(keys) == 0 {
		return nil, fmt.Errorf("sortrows: at least one sort key is required")
	}
	c := &comparator{keys: keys}
	for _, k := range keys {
		if k.Column < 0 || k.Column >= schema.NumFields() {
			return nil, fmt.Errorf("sortrows: key column %d out of range (%d columns)", k.Column, schema.NumFields())
		}
		f, err := compareFor(schema.Field(k.Column).Type)
		if err != nil {
			return nil, fmt.Errorf("column %q: %w", schema.Field(k.Column).Name, err)
		}
		c.cmps = append(c.cmps, f)
	}
	return c, nil
}

// compare orders row i of a against row j of b.
func (c *comparator) compare(a arrow.RecordBatch, i int, b arrow.RecordBatch, j int) int {
	for n, k := range c.keys {
		x, y := a.Column(k.Column), b.Column(k.Column)
		xn, yn := x.IsNull(i), y.IsNull(j)
		var r int
		switch {
		case xn && yn:
			continue
		case xn || yn:
			// Nulls go first or last whatever the direction.
			r = 1
			if xn == k.NullsFirst {
				r = -1
			}
			return r
		default:
			r = c.cmps[n](x, i, y, j)
		}
		if k.Descending {
			r = -r
		}
		if r != 0 {
			return r
		}
	}
	return 0
}
