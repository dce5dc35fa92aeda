package health

import (
	"context"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/bounds"
	"github.com/icekeeper/icekeeper/shared/harness/sampletable"
)

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

// TestOverlapCollector_CorrelatesColumnsOverTheSameFiles: two columns'
// lower bounds are paired by file (a file without bounds on one column
// pairs nothing), so an id and its creation time, appended together,
// correlate, while a column of shuffled values does not.
func TestOverlapCollector_CorrelatesColumnsOverTheSameFiles(t *testing.T) {
	c := &overlapCollector{columns: []overlapColumn{{name: "id", kind: bounds.Int}, {name: "ts", kind: bounds.Int}, {name: "region", kind: bounds.Bytes}}}
	regions := []string{"q", "c", "x", "a", "m", "f", "z", "b", "k", "e", "t", "h"}
	for f := range 12 {
		c.columns[0].ranges = append(c.columns[0].ranges, bounds.Range{Lo: bounds.IntValue(int64(100 * f)), Hi: bounds.IntValue(int64(100*f + 99))})
		c.columns[0].files = append(c.columns[0].files, f)
		if f != 5 { // a file without bounds on ts
			c.columns[1].ranges = append(c.columns[1].ranges, bounds.Range{Lo: bounds.IntValue(int64(1e6 + 10*f*f))})
			c.columns[1].files = append(c.columns[1].files, f)
		}
		c.columns[2].ranges = append(c.columns[2].ranges, bounds.Range{Lo: bounds.Value{S: regions[f]}})
		c.columns[2].files = append(c.columns[2].files, f)
	}
	c.files = 12
	got := map[[2]string]ColumnCorrelation{}
	for _, cc := range tableCorrelations([][]ColumnCorrelation{c.correlations()}) {
		got[cc.Columns] = cc
	}
	if idTs := got[[2]string{"id", "ts"}]; idTs.Files != 11 || idTs.Rho < 0.99 {
		t.Errorf("id/ts %+v; want rho 1 over the 11 files with both bounds", idTs)
	}
	if idRegion := got[[2]string{"id", "region"}]; idRegion.Files != 12 || idRegion.Rho > 0.5 || idRegion.Rho < -0.5 {
		t.Errorf("id/region %+v; want a weak rho over 12 files", idRegion)
	}
}

// TestOverlapCollector_CountsAColumnsValuesWhenTheBoundsShowThem: a
// column whose 12 files each hold one of 3 values has 3; one whose 12
// files hold 12 values has too many to say (0); in the table, a
// partition with many values makes the column's count unknown.
func TestOverlapCollector_CountsAColumnsValuesWhenTheBoundsShowThem(t *testing.T) {
	c := &overlapCollector{columns: []overlapColumn{{name: "status", kind: bounds.Bytes}, {name: "id", kind: bounds.Int}}}
	for f := range 12 {
		s := bounds.Value{S: []string{"new", "paid", "sent"}[f%3]}
		c.columns[0].ranges = append(c.columns[0].ranges, bounds.Range{Lo: s, Hi: s})
		c.columns[1].ranges = append(c.columns[1].ranges, bounds.Range{Lo: bounds.IntValue(int64(f)), Hi: bounds.IntValue(int64(f))})
	}
	got := c.results()
	if got[0].Values != 3 || got[1].Values != 0 {
		t.Fatalf("values %d and %d; want 3 (status) and 0 (id: many)", got[0].Values, got[1].Values)
	}
	many := []ColumnOverlap{{Column: "status", FieldID: 7, Files: 12, Values: 0}}
	table := tableOverlaps([]PartitionHealth{{Columns: []ColumnOverlap{{Column: "status", FieldID: 7, Files: 12, Values: 3}}}, {Columns: many}})
	if table[0].Values != 0 {
		t.Errorf("table values %d; want 0 when a partition has many", table[0].Values)
	}
	if table := tableOverlaps([]PartitionHealth{{Columns: []ColumnOverlap{{FieldID: 7, Files: 12, Values: 3}}}, {Columns: []ColumnOverlap{{FieldID: 7, Files: 2, Values: 0}}}}); table[0].Values != 3 {
		t.Errorf("table values %d; want 3 (a partition of 2 files says nothing)", table[0].Values)
	}
}

// TestOverlapCollector_CorrelationSamplesALargePartition: 10,000 files
// are measured from a sample of at most maxCorrelationFiles, which still
// sees the columns move together.
func TestOverlapCollector_CorrelationSamplesALargePartition(t *testing.T) {
	c := &overlapCollector{columns: []overlapColumn{{name: "id", kind: bounds.Int}, {name: "ts", kind: bounds.Int}}}
	for f := range 10000 {
		for i := range c.columns {
			c.columns[i].ranges = append(c.columns[i].ranges, bounds.Range{Lo: bounds.IntValue(int64(f * (i + 1)))})
			c.columns[i].files = append(c.columns[i].files, f)
		}
	}
	c.files = 10000
	got := c.correlations()
	if len(got) != 1 || got[0].Files > maxCorrelationFiles || got[0].Files < maxCorrelationFiles/2 || got[0].Rho < 0.99 {
		t.Fatalf("%+v; want rho 1 from a sample of at most %d files", got, maxCorrelationFiles)
	}
}
