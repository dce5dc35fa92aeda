// Package sampletable creates merge-on-read sample tables for the demo, the
// tests and the benchmarks: several partitions, many small files, and the
// kinds of deletes compaction must apply (position deletes on v2 tables,
// deletion vectors on v3 tables, equality deletes on both).
//
// Rows have a unique id, so the helpers here can delete chosen rows and
// append new ones while a job runs, to test concurrency.
package sampletable

import (
	"context"
	"errors"
	"fmt"
	"iter"
	"strconv"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
)

// Options shape a sample table.
type Options struct {
	// FormatVersion is 2 (position deletes) or 3 (deletion vectors).
	FormatVersion int
	// Partitions is the number of region partitions (0: unpartitioned).
	Partitions int
	// Files is the number of appends; each writes one file per partition.
	Files int
	// RowsPerFile is the rows per file.
	RowsPerFile int
	// PositionDeletes deletes every 7th row of the first half of the
	// appends with a merge-on-read delete: position deletes on v2, deletion
	// vectors on v3.
	PositionDeletes bool
	// EqualityDeletes deletes every 11th row with equality deletes on id.
	EqualityDeletes bool
	// Properties are extra table properties.
	Properties map[string]string
}

// Schema is the sample tables' schema.
func Schema() *iceberg.Schema {
	return iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 2, Name: "region", Type: iceberg.PrimitiveTypes.String, Required: false},
		iceberg.NestedField{ID: 3, Name: "amount", Type: iceberg.PrimitiveTypes.Float64, Required: false},
		iceberg.NestedField{ID: 4, Name: "note", Type: iceberg.PrimitiveTypes.String, Required: false},
	)
}

func arrowSchema() *arrow.Schema {
	return arrow.NewSchema([]arrow.Field{
		{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: false},
		{Name: "region", Type: arrow.BinaryTypes.String, Nullable: true},
		{Name: "amount", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
		{Name: "note", Type: arrow.BinaryTypes.String, Nullable: true},
	}, nil)
}

// Region returns the name of partition p.
func Region(p int) string { return fmt.Sprintf("region-%02d", p) }

// Create creates the namespace (if needed) and the table, and fills it.
func Create(ctx context.Context, cat catalog.Catalog, ident table.Identifier, o Options) (*table.Table, error) {
	if o.FormatVersion == 0 {
		o.FormatVersion = 2
	}
	if o.FormatVersion < 2 || o.FormatVersion > 3 {
		return nil, fmt.Errorf("sampletable: format version %d: want 2 or 3", o.FormatVersion)
	}
	if o.Files < 1 || o.RowsPerFile < 1 {
		return nil, errors.New("sampletable: Files and RowsPerFile must be positive")
	}
	ns := catalog.NamespaceFromIdent(ident)
	if err := cat.CreateNamespace(ctx, ns, nil); err != nil && !errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
		return nil, fmt.Errorf("sampletable: create namespace %v: %w", ns, err)
	}
	props := iceberg.Properties{
		"format-version":                  strconv.Itoa(o.FormatVersion),
		table.WriteDeleteModeKey:          table.WriteModeMergeOnRead,
		"write.update.mode":               table.WriteModeMergeOnRead,
		"write.merge.mode":                table.WriteModeMergeOnRead,
		"write.parquet.compression-codec": "zstd",
	}
	for k, v := range o.Properties {
		props[k] = v
	}
	opts := []catalog.CreateTableOpt{catalog.WithProperties(props)}
	if o.Partitions > 0 {
		spec := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Transform: iceberg.IdentityTransform{}, Name: "region"})
		opts = append(opts, catalog.WithPartitionSpec(&spec))
	}
	tbl, err := cat.CreateTable(ctx, ident, Schema(), opts...)
	if err != nil {
		return nil, fmt.Errorf("sampletable: create table %v: %w", ident, err)
	}
	parts := max(o.Partitions, 1)
	var id int64
	for f := 0; f < o.Files; f++ {
		if tbl, err = AppendRows(ctx, tbl, id, parts, o.RowsPerFile); err != nil {
			return nil, err
		}
		id += int64(parts * o.RowsPerFile)
	}
	if o.PositionDeletes {
		half := id / 2
		var ids []int64
		for i := int64(3); i < half; i += 7 {
			ids = append(ids, i)
		}
		if tbl, err = DeleteByPosition(ctx, tbl, ids); err != nil {
			return nil, err
		}
	}
	if o.EqualityDeletes {
		var ids []int64
		for i := int64(5); i < id; i += 11 {
			ids = append(ids, i)
		}
		if tbl, err = DeleteByEquality(ctx, tbl, ids, RegionOf(o.Partitions, o.RowsPerFile)); err != nil {
			return nil, err
		}
	}
	return tbl, nil
}

// AppendRows appends rowsPerPartition rows to each of parts partitions, ids
// from firstID on, as one commit (one new file per partition).
func AppendRows(ctx context.Context, tbl *table.Table, firstID int64, parts, rowsPerPartition int) (*table.Table, error) {
	rec := buildRows(firstID, parts, rowsPerPartition)
	defer rec.Release()
	rdr, err := array.NewRecordReader(rec.Schema(), []arrow.RecordBatch{rec})
	if err != nil {
		return nil, err
	}
	defer rdr.Release()
	out, err := tbl.Append(ctx, rdr, nil)
	if err != nil {
		return nil, fmt.Errorf("sampletable: append ids %d..: %w", firstID, err)
	}
	return out, nil
}

func buildRows(firstID int64, parts, rowsPerPartition int) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, arrowSchema())
	defer b.Release()
	id := firstID
	for p := 0; p < parts; p++ {
		for r := 0; r < rowsPerPartition; r++ {
			b.Field(0).(*array.Int64Builder).Append(id)
			b.Field(1).(*array.StringBuilder).Append(Region(p))
			b.Field(2).(*array.Float64Builder).Append(float64(id%1000) * 1.25)
			b.Field(3).(*array.StringBuilder).Append("row " + strconv.FormatInt(id, 10) + " of a small file that compaction merges")
			id++
		}
	}
	return b.NewRecordBatch()
}

// DeleteByPosition deletes the rows with the given ids with a merge-on-read
// delete: position delete files on v2 tables, deletion vectors on v3.
func DeleteByPosition(ctx context.Context, tbl *table.Table, ids []int64) (*table.Table, error) {
	if len(ids) == 0 {
		return tbl, nil
	}
	out, err := tbl.Delete(ctx, iceberg.IsIn(iceberg.Reference("id"), ids...), nil)
	if err != nil {
		return nil, fmt.Errorf("sampletable: position delete of %d rows: %w", len(ids), err)
	}
	return out, nil
}

// RegionOf returns, for a table made by Create with these options, the
// region of the row with a given id (nil for an unpartitioned table).
func RegionOf(partitions, rowsPerFile int) func(id int64) string {
	if partitions == 0 {
		return nil
	}
	return func(id int64) string {
		return Region(int(id%int64(partitions*rowsPerFile)) / rowsPerFile)
	}
}

// DeleteByEquality deletes the rows with the given ids with one equality
// delete commit. On a partitioned table regionOf gives each id's region and
// the equality key is (id, region), as a partitioned delete file needs the
// partition column.
func DeleteByEquality(ctx context.Context, tbl *table.Table, ids []int64, regionOf func(int64) string) (*table.Table, error) {
	if len(ids) == 0 {
		return tbl, nil
	}
	txn := tbl.NewTransaction()
	fields := []arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: false}}
	eqIDs := []int{1}
	if regionOf != nil {
		fields = append(fields, arrow.Field{Name: "region", Type: arrow.BinaryTypes.String, Nullable: true})
		eqIDs = append(eqIDs, 2)
	}
	schema := arrow.NewSchema(fields, nil)
	records := func(yield func(arrow.RecordBatch, error) bool) {
		b := array.NewRecordBuilder(memory.DefaultAllocator, schema)
		defer b.Release()
		b.Field(0).(*array.Int64Builder).AppendValues(ids, nil)
		if regionOf != nil {
			for _, id := range ids {
				b.Field(1).(*array.StringBuilder).Append(regionOf(id))
			}
		}
		yield(b.NewRecordBatch(), nil)
	}
	if err := txn.CommitEqualityDeletes(ctx, eqIDs, iter.Seq2[arrow.RecordBatch, error](records), nil); err != nil {
		return nil, fmt.Errorf("sampletable: equality delete of %d rows: %w", len(ids), err)
	}
	out, err := txn.Commit(ctx)
	if err != nil {
		return nil, fmt.Errorf("sampletable: commit equality delete: %w", err)
	}
	return out, nil
}
