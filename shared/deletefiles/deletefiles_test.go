package deletefiles

import (
	"context"
	"iter"
	"path/filepath"
	"slices"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/icekeeper/icekeeper/shared/catalogs"
)

// structFirstTable makes a v3 table whose one data file holds a struct
// column before id (the layout a column moved first gives every file
// written after the move): row i has id i and info.inner.x i.
func structFirstTable(t *testing.T, rows int64) *table.Table {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	cat, err := catalogs.Open(ctx, catalogs.Config{Type: "sql", Name: "deletefiles", URI: "file:" + filepath.Join(dir, "cat.db"), Warehouse: "file://" + filepath.Join(dir, "wh")}, aws.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if err := cat.CreateNamespace(ctx, table.Identifier{"ns"}, nil); err != nil {
		t.Fatal(err)
	}
	schema := iceberg.NewSchema(0,
		iceberg.NestedField{ID: 1, Name: "info", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 2, Name: "a", Type: iceberg.PrimitiveTypes.Int32},
			{ID: 3, Name: "inner", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
				{ID: 4, Name: "x", Type: iceberg.PrimitiveTypes.Int64},
				{ID: 5, Name: "y", Type: iceberg.PrimitiveTypes.String},
			}}},
		}}},
		iceberg.NestedField{ID: 6, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		iceberg.NestedField{ID: 7, Name: "note", Type: iceberg.PrimitiveTypes.String},
	)
	tbl, err := cat.CreateTable(ctx, table.Identifier{"ns", "t"}, schema, catalog.WithProperties(iceberg.Properties{
		"format-version":         "3",
		table.WriteDeleteModeKey: table.WriteModeMergeOnRead,
	}))
	if err != nil {
		t.Fatal(err)
	}
	sc, err := table.SchemaToArrowSchema(schema, nil, true, false)
	if err != nil {
		t.Fatal(err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
	defer b.Release()
	info := b.Field(0).(*array.StructBuilder)
	inner := info.FieldBuilder(1).(*array.StructBuilder)
	for i := range rows {
		info.Append(true)
		info.FieldBuilder(0).(*array.Int32Builder).Append(int32(i))
		inner.Append(true)
		inner.FieldBuilder(0).(*array.Int64Builder).Append(i)
		inner.FieldBuilder(1).(*array.StringBuilder).Append("y")
		b.Field(1).(*array.Int64Builder).Append(i)
		b.Field(2).(*array.StringBuilder).Append("note")
	}
	rec := b.NewRecordBatch()
	defer rec.Release()
	if tbl, err = tbl.AppendTable(ctx, array.NewTableFromRecords(sc, []arrow.RecordBatch{rec}), rows, nil); err != nil {
		t.Fatal(err)
	}
	return tbl
}

// equalityDelete commits an equality delete of values on column, a long
// column at the top level or inside structs.
func equalityDelete(t *testing.T, tbl *table.Table, column string, values []int64) *table.Table {
	t.Helper()
	ctx := context.Background()
	field, ok := tbl.Schema().FindFieldByName(column)
	if !ok {
		t.Fatalf("no column %s", column)
	}
	key, err := tbl.Schema().Select(true, column)
	if err != nil {
		t.Fatal(err)
	}
	sc, err := table.SchemaToArrowSchema(key, nil, false, false)
	if err != nil {
		t.Fatal(err)
	}
	records := func(yield func(arrow.RecordBatch, error) bool) {
		b := array.NewRecordBuilder(memory.DefaultAllocator, sc)
		defer b.Release()
		for _, v := range values {
			col := b.Field(0)
			for sb, ok := col.(*array.StructBuilder); ok; sb, ok = col.(*array.StructBuilder) {
				sb.Append(true)
				col = sb.FieldBuilder(0)
			}
			col.(*array.Int64Builder).Append(v)
		}
		yield(b.NewRecordBatch(), nil)
	}
	txn := tbl.NewTransaction()
	if err := txn.CommitEqualityDeletes(ctx, []int{field.ID}, iter.Seq2[arrow.RecordBatch, error](records), nil); err != nil {
		t.Fatal(err)
	}
	if tbl, err = txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	return tbl
}

// TestEqualityPositions_StructsReadInPartOrNotAtAll: the data file holds
// a struct before id. With the key id, the struct is not read at all;
// with the key info.inner.x, info and inner are read in part. Either way
// the positions found are exactly the deleted rows', and a scan projected
// to id and the key keeps exactly the others.
func TestEqualityPositions_StructsReadInPartOrNotAtAll(t *testing.T) {
	ctx := context.Background()
	deleted := []int64{2, 5, 7}
	for _, key := range []string{"id", "info.inner.x"} {
		t.Run(key, func(t *testing.T) {
			tbl := equalityDelete(t, structFirstTable(t, 10), key, deleted)
			tasks, err := tbl.Scan().PlanFiles(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if len(tasks) != 1 || len(tasks[0].EqualityDeleteFiles) != 1 {
				t.Fatalf("want one data file with one equality delete, got %d tasks", len(tasks))
			}

			got, err := EqualityPositions(ctx, tbl, tasks[0], tasks[0].EqualityDeleteFiles, 0)
			if err != nil {
				t.Fatalf("EqualityPositions: %v", err)
			}
			var positions []int64
			for p := range got.Positions() {
				positions = append(positions, int64(p))
			}
			if !slices.Equal(positions, deleted) { // row i is at position i
				t.Errorf("positions %v, want %v", positions, deleted)
			}

			_, records, err := tbl.Scan(table.WithSelectedFields("id", key)).ReadTasks(ctx, tasks)
			if err != nil {
				t.Fatal(err)
			}
			var live []int64
			for rec, err := range records {
				if err != nil {
					t.Fatalf("scan: %v", err)
				}
				idx := rec.Schema().FieldIndices("id")
				if len(idx) != 1 {
					t.Fatalf("scan returned %s", rec.Schema())
				}
				live = append(live, rec.Column(idx[0]).(*array.Int64).Int64Values()...)
				rec.Release()
			}
			if want := []int64{0, 1, 3, 4, 6, 8, 9}; !slices.Equal(live, want) {
				t.Errorf("scan kept ids %v, want %v", live, want)
			}
		})
	}
}
