package health

import (
	"cmp"
	"encoding/binary"
	"math"
	"math/big"
	"slices"
	"sort"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// ColumnOverlap is how well a column's values are clustered across live
// data files, from the files' lower and upper bounds in the manifests: what
// a query engine can prune with them.
type ColumnOverlap struct {
	Column  string `json:"column"`
	FieldID int    `json:"field_id"`
	// Files are the data files with both bounds for the column (a writer
	// may keep none, or truncate them).
	Files int `json:"files"`
	// OverlapDepth is the largest number of files whose [lower, upper]
	// ranges share a value: 1 when the ranges are disjoint (the files are
	// sorted on the column), Files when every range covers every other.
	OverlapDepth int `json:"overlap_depth"`
	// PointLookupFiles is the number of files a lookup of one value must
	// open on average, for the values at the files' lower bounds (values
	// the table holds): 1 when disjoint.
	PointLookupFiles float64 `json:"point_lookup_files"`
	// OneValue: every file holds the same single value (lower = upper =
	// the same everywhere), which no layout can spread.
	OneValue bool `json:"one_value,omitempty"`
}

// DefaultMaxPointLookupFiles: a partition whose files a point lookup on
// the table's first sort column must open this many of, on average, is
// recommended a sort.
const DefaultMaxPointLookupFiles = 4

// maxOverlapColumns bounds the columns whose bounds Assess holds (every
// live file's two bounds per column, until the layout is measured): the
// sort order's columns first, then the first top-level columns.
const maxOverlapColumns = 8

// overlapColumns are the field ids Assess measures overlap on.
func overlapColumns(meta table.Metadata) []int {
	var ids []int
	seen := map[int]bool{}
	addID := func(id int) {
		if !seen[id] && len(ids) < maxOverlapColumns {
			seen[id] = true
			ids = append(ids, id)
		}
	}
	schema := meta.CurrentSchema()
	for _, f := range meta.SortOrder().Fields() {
		for _, id := range f.SourceIDs {
			if field, ok := schema.FindFieldByID(id); ok && kindOf(field.Type) != 0 {
				addID(id)
			}
		}
	}
	for _, f := range schema.Fields() {
		if kindOf(f.Type) != 0 {
			addID(f.ID)
		}
	}
	return ids
}

// overlapCollector gathers one partition's bounds per column.
type overlapCollector struct {
	columns []overlapColumn
	byID    map[int]int
}

type overlapColumn struct {
	name string
	id   int
	typ  iceberg.Type
	kind boundKind
	// ranges are the files' [lower, upper], in the column's kind.
	ranges []valueRange
}

type boundKind int

const (
	kindInt boundKind = iota + 1
	kindFloat
	kindBytes
)

// value is a decoded bound, ordered within one column's kind: i for
// kindInt, f (bits) for kindFloat, s for kindBytes.
type value struct {
	n uint64
	s string
}

type valueRange struct{ lo, hi value }

func compareValues(k boundKind, a, b value) int {
	switch k {
	case kindInt:
		return cmp.Compare(int64(a.n), int64(b.n))
	case kindFloat:
		return cmp.Compare(math.Float64frombits(a.n), math.Float64frombits(b.n))
	default:
		return cmp.Compare(a.s, b.s)
	}
}

func intValue(i int64) value     { return value{n: uint64(i)} }
func floatValue(f float64) value { return value{n: math.Float64bits(f)} }

// newOverlapCollector tracks the given columns of the schema.
func newOverlapCollector(schema *iceberg.Schema, ids []int) *overlapCollector {
	c := &overlapCollector{byID: map[int]int{}}
	for _, id := range ids {
		f, ok := schema.FindFieldByID(id)
		if k := kindOf(f.Type); ok && k != 0 {
			c.byID[id] = len(c.columns)
			c.columns = append(c.columns, overlapColumn{name: f.Name, id: id, typ: f.Type, kind: k})
		}
	}
	return c
}

// kindOf is how a type's bounds compare; 0 for types without a usable
// order here (nested, geospatial, variant).
func kindOf(t iceberg.Type) boundKind {
	switch t.(type) {
	case iceberg.Int32Type, iceberg.Int64Type, iceberg.DateType, iceberg.TimeType, iceberg.TimestampType, iceberg.TimestampTzType, iceberg.BooleanType:
		return kindInt
	case iceberg.Float32Type, iceberg.Float64Type, iceberg.DecimalType:
		return kindFloat
	case iceberg.StringType, iceberg.BinaryType, iceberg.FixedType, iceberg.UUIDType:
		return kindBytes
	}
	return 0
}

// add records a data file's bounds of the tracked columns.
func (c *overlapCollector) add(df iceberg.DataFile) {
	lower, upper := df.LowerBoundValues(), df.UpperBoundValues()
	if len(lower) == 0 || len(upper) == 0 {
		return
	}
	for i := range c.columns {
		col := &c.columns[i]
		lo, ok1 := lower[col.id]
		hi, ok2 := upper[col.id]
		if !ok1 || !ok2 {
			continue
		}
		l, ok1 := decodeBound(col.kind, col.typ, lo)
		h, ok2 := decodeBound(col.kind, col.typ, hi)
		if ok1 && ok2 {
			col.ranges = append(col.ranges, valueRange{l, h})
		}
	}
}

// decodeBound reads an Iceberg single-value binary bound (spec, Appendix
// D). Integers and floats are read by their length, so that a bound
// written before a promotion (int to long, float to double) still reads.
func decodeBound(k boundKind, t iceberg.Type, b []byte) (value, bool) {
	switch k {
	case kindInt:
		switch len(b) {
		case 1:
			return intValue(int64(b[0])), true
		case 4:
			return intValue(int64(int32(binary.LittleEndian.Uint32(b)))), true
		case 8:
			return intValue(int64(binary.LittleEndian.Uint64(b))), true
		}
	case kindFloat:
		if d, ok := t.(iceberg.DecimalType); ok {
			if len(b) == 0 {
				return value{}, false
			}
			n := new(big.Int).SetBytes(b)
			if b[0]&0x80 != 0 { // two's complement, big-endian
				n.Sub(n, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
			}
			f, _ := new(big.Float).Quo(new(big.Float).SetInt(n), new(big.Float).SetFloat64(math.Pow10(d.Scale()))).Float64()
			return floatValue(f), true
		}
		switch len(b) {
		case 4:
			return floatValue(float64(math.Float32frombits(binary.LittleEndian.Uint32(b)))), true
		case 8:
			return floatValue(math.Float64frombits(binary.LittleEndian.Uint64(b))), true
		}
	case kindBytes:
		return value{s: string(b)}, true
	}
	return value{}, false
}

// results computes each column's overlap, for the columns any file
// bounded.
func (c *overlapCollector) results() []ColumnOverlap {
	var out []ColumnOverlap
	for _, col := range c.columns {
		if len(col.ranges) == 0 {
			continue
		}
		depth, lookup := overlap(col.kind, col.ranges)
		one := true
		for _, r := range col.ranges {
			if compareValues(col.kind, r.lo, col.ranges[0].lo) != 0 || compareValues(col.kind, r.hi, col.ranges[0].lo) != 0 {
				one = false
				break
			}
		}
		out = append(out, ColumnOverlap{Column: col.name, FieldID: col.id, Files: len(col.ranges), OverlapDepth: depth, PointLookupFiles: lookup, OneValue: one})
	}
	return out
}

// overlap returns the largest number of ranges that share a value (ranges
// are closed: [a,b] and [b,c] share b) and the mean, over the ranges'
// lower ends, of the number of ranges holding that value.
func overlap(k boundKind, ranges []valueRange) (depth int, lookup float64) {
	los := make([]value, len(ranges))
	his := make([]value, len(ranges))
	for i, r := range ranges {
		los[i], his[i] = r.lo, r.hi
	}
	less := func(a, b value) int { return compareValues(k, a, b) }
	slices.SortFunc(los, less)
	slices.SortFunc(his, less)
	// Sweep: at each lower end, the ranges open are those started at or
	// before it minus those ended strictly before it.
	total := 0
	for _, x := range los {
		started := sort.Search(len(los), func(j int) bool { return compareValues(k, los[j], x) > 0 })
		ended := sort.Search(len(his), func(j int) bool { return compareValues(k, his[j], x) >= 0 })
		open := started - ended
		total += open
		depth = max(depth, open)
	}
	return depth, float64(total) / float64(len(ranges))
}
