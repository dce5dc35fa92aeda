package sortrows

import (
	"fmt"
	"sort"

	"github.com/apache/arrow-go/v18/arrow"
)

// Ranges cut one sort key's order into consecutive ranges at boundary
// values: range 0 holds what sorts before the first boundary, range i the
// values from boundary i-1 (included) to boundary i (excluded), the last
// range the rest. The order is the key's (its direction, its nulls, floats
// in total order), the same Sort and Merge use, so the rows of a sorted
// stream fall into the ranges in range order. Nulls, never a boundary, go
// to the first range when the key puts them first, to the last otherwise.
type Ranges struct {
	key        Key
	boundaries arrow.Array
	cmp        valueCompare
}

// NewRanges checks the boundaries (no nulls, strictly increasing in the
// key's order, of a type with an order here) and returns the ranges.
func NewRanges(key Key, boundaries arrow.Array) (Ranges, error) {
	cmp, err := compareFor(boundaries.DataType())
	if err != nil {
		return Ranges{}, err
	}
	r := Ranges{key: key, boundaries: boundaries, cmp: cmp}
	for i := range boundaries.Len() {
		if boundaries.IsNull(i) {
			return Ranges{}, fmt.Errorf("sortrows: range boundary %d is null", i)
		}
		if i > 0 && r.order(boundaries, i-1, boundaries, i) >= 0 {
			return Ranges{}, fmt.Errorf("sortrows: range boundaries %d and %d are not increasing in the key's order", i-1, i)
		}
	}
	return r, nil
}

// Len is the number of ranges.
func (r Ranges) Len() int { return r.boundaries.Len() + 1 }

// order compares a[i] with b[j] in the key's direction (neither null).
func (r Ranges) order(a arrow.Array, i int, b arrow.Array, j int) int {
	c := r.cmp(a, i, b, j)
	if r.key.Descending {
		c = -c
	}
	return c
}

// Of is the range of value i of col (a column of the key's type).
func (r Ranges) Of(col arrow.Array, i int) int {
	n := r.boundaries.Len()
	if col.IsNull(i) {
		if r.key.NullsFirst {
			return 0
		}
		return n
	}
	// The first boundary the value sorts before.
	return sort.Search(n, func(j int) bool { return r.order(col, i, r.boundaries, j) < 0 })
}

// Span returns the rows lo..hi (hi excluded) of a batch sorted by the key
// that fall in range k: a contiguous slice, found by binary search.
func (r Ranges) Span(rec arrow.RecordBatch, k int) (lo, hi int) {
	col := rec.Column(r.key.Column)
	n := int(rec.NumRows())
	lo = sort.Search(n, func(i int) bool { return r.Of(col, i) >= k })
	hi = sort.Search(n, func(i int) bool { return r.Of(col, i) > k })
	return lo, hi
}

// Compare orders a[i] against b[j], values of the key's column, in the
// key's order, nulls included.
func (r Ranges) Compare(a arrow.Array, i int, b arrow.Array, j int) int {
	an, bn := a.IsNull(i), b.IsNull(j)
	switch {
	case an && bn:
		return 0
	case an || bn:
		if an == r.key.NullsFirst {
			return -1
		}
		return 1
	}
	return r.order(a, i, b, j)
}
