package health

import (
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/bounds"
	"github.com/icekeeper/icekeeper/shared/correlation"
	"github.com/icekeeper/icekeeper/shared/pruning"
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
	// Values is how many distinct values the column holds in a
	// partition, when the files' bounds show it: the distinct lower and
	// upper bounds, counted when the files are at least twice as many
	// (each value seen as a bound about twice); 0 when they are not
	// (many values, or too few files to say). The table's is the largest
	// of its partitions', 0 when any partition of MinValueFiles files or
	// more has many.
	Values int `json:"values,omitempty"`
}

// MinValueFiles: a partition of fewer files says nothing about a
// column's values.
const MinValueFiles = 4

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
			if field, ok := schema.FindFieldByID(id); ok && bounds.KindOf(field.Type) != 0 {
				addID(id)
			}
		}
	}
	for _, f := range schema.Fields() {
		if bounds.KindOf(f.Type) != 0 {
			addID(f.ID)
		}
	}
	return ids
}

// overlapCollector gathers one partition's bounds per column.
type overlapCollector struct {
	columns []overlapColumn
	byID    map[int]int
	// files counts the data files added, which files indexes.
	files int
}

type overlapColumn struct {
	name string
	id   int
	typ  iceberg.Type
	kind bounds.Kind
	// ranges are the files' [lower, upper], in the column's kind, and
	// files the ordinal of the file each came from (for pairing two
	// columns' bounds of the same files).
	ranges []bounds.Range
	files  []int
}

// newOverlapCollector tracks the given columns of the schema.
func newOverlapCollector(schema *iceberg.Schema, ids []int) *overlapCollector {
	c := &overlapCollector{byID: map[int]int{}}
	for _, id := range ids {
		f, ok := schema.FindFieldByID(id)
		if k := bounds.KindOf(f.Type); ok && k != 0 {
			c.byID[id] = len(c.columns)
			c.columns = append(c.columns, overlapColumn{name: f.Name, id: id, typ: f.Type, kind: k})
		}
	}
	return c
}

// add records a data file's bounds of the tracked columns.
func (c *overlapCollector) add(df iceberg.DataFile) {
	lo, hi := df.LowerBoundValues(), df.UpperBoundValues() // copies: read once
	if len(lo) == 0 || len(hi) == 0 {
		return
	}
	for i := range c.columns {
		col := &c.columns[i]
		if r, ok := bounds.InMaps(lo, hi, col.id, col.kind, col.typ); ok {
			col.ranges = append(col.ranges, r)
			col.files = append(col.files, c.files)
		}
	}
	c.files++
}

// merge appends o's bounds (another manifest's files of the partition, the
// same columns) to c's.
func (c *overlapCollector) merge(o *overlapCollector) {
	for i := range c.columns {
		c.columns[i].ranges = append(c.columns[i].ranges, o.columns[i].ranges...)
		for _, f := range o.columns[i].files {
			c.columns[i].files = append(c.columns[i].files, c.files+f)
		}
	}
	c.files += o.files
}

// ColumnCorrelation is how two columns' values move together across the
// live data files: Spearman's rank correlation of the files' lower bounds
// (package correlation), within each partition, averaged over the
// partitions weighted by their files.
type ColumnCorrelation struct {
	Columns [2]string `json:"columns"`
	Rho     float64   `json:"rho"`
	// Files are the files with bounds on both columns it was measured
	// from (partitions of fewer than correlation.MinPairs files do not
	// count; at most 4096 a partition, sampled).
	Files int `json:"files"`
}

// maxCorrelationFiles bounds the files one partition's correlation of
// two columns is measured from (a sample beyond it).
const maxCorrelationFiles = 4096

// correlations measures each pair of the tracked columns over the files
// that bounded both (a sample of maxCorrelationFiles of them at most).
func (c *overlapCollector) correlations() []ColumnCorrelation {
	var out []ColumnCorrelation
	for i := range c.columns {
		for j := i + 1; j < len(c.columns); j++ {
			a, b := &c.columns[i], &c.columns[j]
			at := make(map[int]int, len(a.files))
			for k, f := range a.files {
				at[f] = k
			}
			var ia, ib []int
			for k, f := range b.files {
				if x, ok := at[f]; ok {
					ia, ib = append(ia, x), append(ib, k)
				}
			}
			if len(ia) < correlation.MinPairs {
				continue
			}
			if n := len(ia); n > maxCorrelationFiles {
				// A sample, every step-th file: the ranks of a few
				// thousand files say as much as a million's, at a
				// fraction of the sorting.
				step := (n + maxCorrelationFiles - 1) / maxCorrelationFiles
				for k := 0; k*step < n; k++ {
					ia[k], ib[k] = ia[k*step], ib[k*step]
				}
				ia, ib = ia[:(n+step-1)/step], ib[:(n+step-1)/step]
			}
			ra := correlation.Ranks(len(ia), func(x, y int) int { return bounds.Compare(a.kind, a.ranges[ia[x]].Lo, a.ranges[ia[y]].Lo) })
			rb := correlation.Ranks(len(ib), func(x, y int) int { return bounds.Compare(b.kind, b.ranges[ib[x]].Lo, b.ranges[ib[y]].Lo) })
			out = append(out, ColumnCorrelation{Columns: [2]string{a.name, b.name}, Rho: correlation.Spearman(ra, rb), Files: len(ia)})
		}
	}
	return out
}

// tableCorrelations averages the partitions' correlations per pair,
// weighted by files.
func tableCorrelations(parts [][]ColumnCorrelation) []ColumnCorrelation {
	var out []ColumnCorrelation
	index := map[[2]string]int{}
	for _, p := range parts {
		for _, c := range p {
			i, ok := index[c.Columns]
			if !ok {
				i = len(out)
				index[c.Columns] = i
				out = append(out, ColumnCorrelation{Columns: c.Columns})
			}
			t := &out[i]
			t.Rho = (t.Rho*float64(t.Files) + c.Rho*float64(c.Files)) / float64(t.Files+c.Files)
			t.Files += c.Files
		}
	}
	return out
}

// results computes each column's overlap, for the columns any file
// bounded.
func (c *overlapCollector) results() []ColumnOverlap {
	var out []ColumnOverlap
	for _, col := range c.columns {
		if len(col.ranges) == 0 {
			continue
		}
		depth, lookup := pruning.Overlap(col.kind, col.ranges)
		one := true
		for _, r := range col.ranges {
			if bounds.Compare(col.kind, r.Lo, col.ranges[0].Lo) != 0 || bounds.Compare(col.kind, r.Hi, col.ranges[0].Lo) != 0 {
				one = false
				break
			}
		}
		distinct := map[bounds.Value]bool{}
		for _, r := range col.ranges {
			distinct[r.Lo], distinct[r.Hi] = true, true
		}
		values := 0
		if len(col.ranges) >= 2*len(distinct) {
			values = len(distinct)
		}
		out = append(out, ColumnOverlap{Column: col.name, FieldID: col.id, Files: len(col.ranges), OverlapDepth: depth, PointLookupFiles: lookup, OneValue: one, Values: values})
	}
	return out
}
