package health

import (
	"context"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/bounds"
	"github.com/icekeeper/icekeeper/shared/sampletable"
)

func ints(pairs ...int64) []bounds.Range {
	var out []bounds.Range
	for i := 0; i+1 < len(pairs); i += 2 {
		out = append(out, bounds.Range{Lo: bounds.IntValue(pairs[i]), Hi: bounds.IntValue(pairs[i+1])})
	}
	return out
}

// TestOverlap_DepthAndPointLookupsFromRanges: disjoint ranges have depth
// 1 and one file per lookup; ranges that all cover each other have depth
// and lookups of their number; closed ranges that touch share the value.
func TestOverlap_DepthAndPointLookupsFromRanges(t *testing.T) {
	for _, tc := range []struct {
		name   string
		ranges []bounds.Range
		depth  int
		lookup float64
	}{
		{"disjoint", ints(0, 9, 10, 19, 20, 29), 1, 1},
		{"all the same", ints(0, 99, 0, 99, 0, 99, 0, 99), 4, 4},
		{"touching ends share a value", ints(1, 2, 2, 3), 2, 1.5},
		{"one wide range over three narrow", ints(0, 100, 10, 20, 30, 40, 50, 60), 2, 1.75},
		{"nested", ints(0, 100, 10, 90, 20, 80), 3, 2},
	} {
		depth, lookup := overlap(bounds.Int, tc.ranges)
		if depth != tc.depth || lookup != tc.lookup {
			t.Errorf("%s: depth %d, lookup %v; want %d, %v", tc.name, depth, lookup, tc.depth, tc.lookup)
		}
	}
}

// TestDecodeBound_ReadsTheSpecsBinaryForms: little-endian ints and floats
// by their length (a bound written before int→long or float→double still
// reads), big-endian two's complement decimals, bytes as they are.

// TestAssess_ColumnOverlapAndTheSortRecommendation: appends of disjoint id
// blocks are clustered on id (depth 1 per partition), a partition column
// holds one value per partition; appends that each repeat the same ids
// overlap on id, and with id as the table's sort order that is
// recommended a sort, which the disjoint table is not.
func TestAssess_ColumnOverlapAndTheSortRecommendation(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	sortByID := func(tbl *table.Table) *table.Table {
		t.Helper()
		tbl, err := sampletable.SortBy(ctx, tbl, "id")
		if err != nil {
			t.Fatal(err)
		}
		return tbl
	}
	column := func(cs []ColumnOverlap, name string) ColumnOverlap {
		for _, c := range cs {
			if c.Column == name {
				return c
			}
		}
		t.Fatalf("no column %s in %+v", name, cs)
		return ColumnOverlap{}
	}

	disjoint := sortByID(f.create(t, "overlap_disjoint", sampletable.Options{FormatVersion: 2, Partitions: 2, Files: 6, RowsPerFile: 50}))
	r := assess(t, disjoint, time.Now())
	if len(r.Partitions) != 2 {
		t.Fatalf("%d partitions", len(r.Partitions))
	}
	for _, p := range r.Partitions {
		if id := column(p.Columns, "id"); id.Files != 6 || id.OverlapDepth != 1 || id.PointLookupFiles != 1 || id.OneValue {
			t.Errorf("%s id: %+v, want 6 files, depth 1, one file per lookup", p.Partition, id)
		}
		if region := column(p.Columns, "region"); region.OverlapDepth != 6 || region.PointLookupFiles != 6 || !region.OneValue {
			t.Errorf("%s region: %+v, want every file on the one value", p.Partition, region)
		}
	}
	if id := column(r.Columns, "id"); id.Files != 12 || id.OverlapDepth != 1 || id.PointLookupFiles != 1 {
		t.Errorf("table id: %+v", id)
	}
	if rec, ok := r.Recommends(ActionSort); ok {
		t.Errorf("clustered table recommended a sort: %+v", rec)
	}

	overlapping := sortByID(f.create(t, "overlap_repeated", sampletable.Options{FormatVersion: 2, Partitions: 1, Files: 1, RowsPerFile: 50}))
	var err error
	for i := 0; i < 5; i++ {
		if overlapping, err = sampletable.AppendRows(ctx, overlapping, 0, 1, 50); err != nil {
			t.Fatal(err)
		}
	}
	r = assess(t, overlapping, time.Now())
	if id := column(r.Columns, "id"); id.Files != 6 || id.OverlapDepth != 6 || id.PointLookupFiles != 6 {
		t.Errorf("repeated ids: %+v, want depth and lookups of 6", id)
	}
	rec, ok := r.Recommends(ActionSort)
	if !ok || rec.EstimatedFiles != 6 {
		t.Fatalf("no sort recommended for 6 files overlapping on the sort column: %+v", r.Recommendations)
	}
	// The sort column's layout is published as gauges.
	gauges := map[string]float64{}
	for _, m := range r.Metrics() {
		gauges[m.Name] = m.Value
	}
	if r.SortColumn != "id" || gauges[MetricSortColumnOverlapDepth] != 6 || gauges[MetricSortColumnLookupFiles] != 6 {
		t.Errorf("sort column %q, gauges %v: want id's depth and lookups of 6", r.SortColumn, gauges)
	}
	unsorted := assess(t, f.create(t, "overlap_unsorted", sampletable.Options{FormatVersion: 2, Partitions: 1, Files: 2, RowsPerFile: 10}), time.Now())
	for _, m := range unsorted.Metrics() {
		if m.Name == MetricSortColumnOverlapDepth || m.Name == MetricSortColumnLookupFiles {
			t.Errorf("a table without a sort order published %s", m.Name)
		}
	}
}
