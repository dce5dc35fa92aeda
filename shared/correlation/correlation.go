// Package correlation says whether two columns move together, from
// ordered samples of both (the data files' lower bounds, one pair per
// file): Spearman's rank correlation, and the rule that a second sort or
// z-order column strongly correlated with the first is not worth adding.
//
// Why it matters: sorting by (a, b) orders rows by b only within equal a;
// z-ordering a and b spends half of each key's bits on b. When b rises and
// falls with a (an id and the time it was created, a date and a month
// column), the files a layout on a produces are already narrow on b, and
// adding b buys nothing while making the layout worse at a.
//
// Invariants:
//   - Spearman is symmetric, in [-1, 1], and 0 (not NaN) when either
//     sample has no variance or there are fewer than MinPairs pairs: no
//     evidence is no correlation, so nothing is left out on too little.
//   - Redundant holds only on strong evidence: |rho| >= Strong and at
//     least MinPairs pairs.
package correlation

import (
	"math"
	"slices"
)

// Strong is the |rho| from which a second column counts as redundant
// with the first.
const Strong = 0.9

// MinPairs is the fewest pairs a correlation is measured from.
const MinPairs = 8

// Ranks turns a sample into ranks (1..n; ties get their mean rank) by
// the order cmp gives its indices.
func Ranks(n int, cmp func(i, j int) int) []float64 {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, cmp)
	ranks := make([]float64, n)
	for i := 0; i < n; {
		j := i
		for j+1 < n && cmp(idx[i], idx[j+1]) == 0 {
			j++
		}
		mean := float64(i+j)/2 + 1
		for k := i; k <= j; k++ {
			ranks[idx[k]] = mean
		}
		i = j + 1
	}
	return ranks
}

// Spearman is the rank correlation of paired ranks (Pearson's on the
// ranks): 0 for fewer than MinPairs pairs or a constant sample.
func Spearman(ra, rb []float64) float64 {
	n := min(len(ra), len(rb))
	if n < MinPairs {
		return 0
	}
	var ma, mb float64
	for i := range n {
		ma += ra[i]
		mb += rb[i]
	}
	ma, mb = ma/float64(n), mb/float64(n)
	var cov, va, vb float64
	for i := range n {
		da, db := ra[i]-ma, rb[i]-mb
		cov += da * db
		va += da * da
		vb += db * db
	}
	if va == 0 || vb == 0 {
		return 0
	}
	return math.Max(-1, math.Min(1, cov/math.Sqrt(va*vb)))
}

// Redundant reports whether a column correlated rho with another, over
// pairs samples, adds nothing to a layout on the other.
func Redundant(rho float64, pairs int) bool {
	return pairs >= MinPairs && math.Abs(rho) >= Strong
}
