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
	// Location is the table's location (empty: the catalog's default).
	Location string
	// PayloadBytes adds that many bytes of incompressible text to every row
	// (for benchmarks that need realistic file sizes).
	PayloadBytes int
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
	if o.Files < 0 || o.Files > 0 && o.RowsPerFile < 1 {
		return nil, errors.New("sampletable: Files must not be negative and RowsPerFile must be positive")
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
	if o.Location != "" {
		opts = append(opts, catalog.WithLocation(o.Location))
	}
	if o.Partitions > 0 {
		spec := iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Transform: iceberg.IdentityTransform{}, Name: "region"})
		opts = append(opts, catalog.WithPartitionSpec(&spec))
	}
	tbl, err := cat.CreateTable(ctx, ident, Schema(), opts...)
	if err != nil {
		return nil, fmt.Errorf("sampletable: create table %v: %w", ident, err)
	}
	if o.Files == 0 {
		return tbl, nil // an empty table, for CreateBulk
	}
	parts := max(o.Partitions, 1)
	var id int64
	for f := 0; f < o.Files; f++ {
		if tbl, err = appendRows(ctx, tbl, id, parts, o.RowsPerFile, o.PayloadBytes); err != nil {
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
	return appendRows(ctx, tbl, firstID, parts, rowsPerPartition, 0)
}

// Rows returns rowsPerPartition rows for each of parts partitions, ids from
// firstID on, as AppendRows appends them (release it when done).
func Rows(firstID int64, parts, rowsPerPartition int) (array.RecordReader, error) {
	rec := buildRows(firstID, parts, rowsPerPartition, 0)
	defer rec.Release()
	return array.NewRecordReader(rec.Schema(), []arrow.RecordBatch{rec})
}

func appendRows(ctx context.Context, tbl *table.Table, firstID int64, parts, rowsPerPartition, payload int) (*table.Table, error) {
	rec := buildRows(firstID, parts, rowsPerPartition, payload)
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

func buildRows(firstID int64, parts, rowsPerPartition, payload int) arrow.RecordBatch {
	b := array.NewRecordBuilder(memory.DefaultAllocator, arrowSchema())
	defer b.Release()
	id := firstID
	pad := make([]byte, 0, payload)
	for p := 0; p < parts; p++ {
		for r := 0; r < rowsPerPartition; r++ {
			b.Field(0).(*array.Int64Builder).Append(id)
			b.Field(1).(*array.StringBuilder).Append(Region(p))
			b.Field(2).(*array.Float64Builder).Append(float64(id%1000) * 1.25)
			note := "row " + strconv.FormatInt(id, 10) + " of a small file that compaction merges"
			if payload > 0 {
				pad = pseudoRandomHex(pad[:0], uint64(id), payload)
				note += " " + string(pad)
			}
			b.Field(3).(*array.StringBuilder).Append(note)
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
	if err := StageEqualityDelete(ctx, txn, ids, regionOf); err != nil {
		return nil, err
	}
	out, err := txn.Commit(ctx)
	if err != nil {
		return nil, fmt.Errorf("sampletable: commit equality delete: %w", err)
	}
	return out, nil
}

// StageEqualityDelete stages on txn (main's or a branch's) one equality
// delete of the rows with the given ids, keyed as DeleteByEquality keys
// them.
func StageEqualityDelete(ctx context.Context, txn *table.Transaction, ids []int64, regionOf func(int64) string) error {
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
		return fmt.Errorf("sampletable: equality delete of %d rows: %w", len(ids), err)
	}
	return nil
}

// pseudoRandomHex appends n hex digits derived from seed (splitmix64), so
// rows are reproducible but do not compress.
func pseudoRandomHex(dst []byte, seed uint64, n int) []byte {
	const digits = "0123456789abcdef"
	x := seed
	for len(dst) < n {
		x += 0x9e3779b97f4a7c15
		z := x
		z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
		z = (z ^ (z >> 27)) * 0x94d049bb133111eb
		z ^= z >> 31
		for i := 0; i < 16 && len(dst) < n; i++ {
			dst = append(dst, digits[z&15])
			z >>= 4
		}
	}
	return dst
}

// BulkOptions shape a large benchmark table written in few commits.
type BulkOptions struct {
	FormatVersion int
	Partitions    int
	// Rows is the number of rows; BatchRows the rows of each partition in
	// one arrow batch.
	Rows      int64
	BatchRows int
	// FileBytes is the size at which data files roll while writing (the
	// small files compaction will merge).
	FileBytes int64
	// PayloadBytes of incompressible text per row.
	PayloadBytes int
	// DeleteFraction of the rows is deleted, by DeleteKind "position"
	// (merge-on-read delete: position deletes on v2, deletion vectors on v3)
	// or "equality".
	DeleteFraction float64
	DeleteKind     string
}

// CreateBulk creates a table of many small files in one append, then
// applies one delete commit.
func CreateBulk(ctx context.Context, cat catalog.Catalog, ident table.Identifier, o BulkOptions) (*table.Table, error) {
	if o.BatchRows <= 0 || o.Rows <= 0 || o.FileBytes <= 0 {
		return nil, errors.New("sampletable: bulk needs Rows, BatchRows and FileBytes")
	}
	parts := max(o.Partitions, 1)
	// Small row groups let the rolling writer cut files near FileBytes (it
	// checks the size as row groups are flushed).
	tbl, err := Create(ctx, cat, ident, Options{FormatVersion: o.FormatVersion, Partitions: o.Partitions,
		Properties: map[string]string{table.WriteTargetFileSizeBytesKey: strconv.FormatInt(o.FileBytes, 10),
			table.ParquetRowGroupLimitKey: strconv.Itoa(max(1000, o.BatchRows/4))}})
	if err != nil {
		return nil, err
	}
	per := int64(parts * o.BatchRows)
	batches := (o.Rows + per - 1) / per
	schema := arrowSchema()
	var next int64
	stream := &batchStream{schema: schema, n: batches, make: func() arrow.RecordBatch {
		rec := buildRows(next, parts, o.BatchRows, o.PayloadBytes)
		next += per
		return rec
	}}
	if tbl, err = tbl.Append(ctx, stream, nil); err != nil {
		return nil, fmt.Errorf("sampletable: bulk append: %w", err)
	}
	txn := tbl.NewTransaction()
	if err := txn.RemoveProperties([]string{table.WriteTargetFileSizeBytesKey, table.ParquetRowGroupLimitKey}); err != nil {
		return nil, err
	}
	if tbl, err = txn.Commit(ctx); err != nil {
		return nil, fmt.Errorf("sampletable: reset target size: %w", err)
	}
	if o.DeleteFraction <= 0 {
		return tbl, nil
	}
	total := batches * per
	switch o.DeleteKind {
	case "position":
		// amount = (id % 1000) * 1.25, so amount < 1250*f deletes f of the rows.
		cut := 1250 * o.DeleteFraction
		out, err := tbl.Delete(ctx, iceberg.LessThan(iceberg.Reference("amount"), cut), nil)
		if err != nil {
			return nil, fmt.Errorf("sampletable: bulk position delete: %w", err)
		}
		return out, nil
	case "equality":
		step := int64(1 / o.DeleteFraction)
		var ids []int64
		for id := int64(0); id < total; id += step {
			ids = append(ids, id)
		}
		return DeleteByEquality(ctx, tbl, ids, RegionOf(o.Partitions, o.BatchRows))
	}
	return nil, fmt.Errorf("sampletable: delete kind %q: want position or equality", o.DeleteKind)
}

// batchStream is an array.RecordReader that makes its batches on demand,
// so a large table is written without holding it in memory.
type batchStream struct {
	schema *arrow.Schema
	n      int64
	make   func() arrow.RecordBatch
	cur    arrow.RecordBatch
	refs   int64
}

func (s *batchStream) Retain()                        { s.refs++ }
func (s *batchStream) Release()                       { s.release() }
func (s *batchStream) Schema() *arrow.Schema          { return s.schema }
func (s *batchStream) Err() error                     { return nil }
func (s *batchStream) RecordBatch() arrow.RecordBatch { return s.cur }
func (s *batchStream) Record() arrow.RecordBatch      { return s.cur }

func (s *batchStream) Next() bool {
	s.release()
	if s.n <= 0 {
		return false
	}
	s.n--
	s.cur = s.make()
	return true
}

func (s *batchStream) release() {
	if s.cur != nil {
		s.cur.Release()
		s.cur = nil
	}
}

// SortBy makes column the table's sort order (ascending, nulls first),
// or, for "", unsorted, as one commit, and returns the table after it.
func SortBy(ctx context.Context, tbl *table.Table, column string) (*table.Table, error) {
	order := table.UnsortedSortOrder
	if column != "" {
		f, ok := tbl.Schema().FindFieldByName(column)
		if !ok {
			return nil, fmt.Errorf("sampletable: sort column %q is not in the schema", column)
		}
		var err error
		if order, err = table.NewSortOrder(table.InitialSortOrderID, []table.SortField{{SourceIDs: []int{f.ID}, Transform: iceberg.IdentityTransform{}, Direction: table.SortASC, NullOrder: table.NullsFirst}}); err != nil {
			return nil, err
		}
	}
	txn := tbl.NewTransaction()
	if err := txn.ReplaceSortOrder(order); err != nil {
		return nil, fmt.Errorf("sampletable: sort by %q: %w", column, err)
	}
	return txn.Commit(ctx)
}
