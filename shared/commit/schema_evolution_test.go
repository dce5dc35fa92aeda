package commit

import (
	"errors"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// The files a job wrote were written at the pinned schema; a schema
// change committed since must leave them readable by field id. Spec,
// "Schema Evolution" (format/spec.md): valid type promotions are int to
// long, float to double, decimal(P,S) to decimal(P',S) with P' >= P, and
// in v3 date to timestamp or timestamp_ns; columns may be added, dropped,
// renamed and reordered, and required columns made optional; a required
// column added needs an initial default (v3 "Default values").

// writtenSchema is the pinned schema (id 0) the new files were written at.
func writtenSchema() *iceberg.Schema {
	return iceberg.NewSchema(0, writtenFields()...)
}

func writtenFields() []iceberg.NestedField {
	return []iceberg.NestedField{
		{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
		{ID: 2, Name: "qty", Type: iceberg.PrimitiveTypes.Int32},
		{ID: 3, Name: "price", Type: iceberg.PrimitiveTypes.Float32},
		{ID: 4, Name: "amount", Type: iceberg.DecimalTypeOf(9, 2)},
		{ID: 5, Name: "note", Type: iceberg.PrimitiveTypes.String},
		{ID: 6, Name: "day", Type: iceberg.PrimitiveTypes.Date},
		{ID: 7, Name: "tags", Type: &iceberg.ListType{ElementID: 8, Element: iceberg.PrimitiveTypes.Int32}},
		{ID: 9, Name: "attrs", Type: &iceberg.MapType{KeyID: 10, KeyType: iceberg.PrimitiveTypes.String, ValueID: 11, ValueType: iceberg.PrimitiveTypes.Float32}},
		{ID: 12, Name: "info", Type: &iceberg.StructType{FieldList: []iceberg.NestedField{
			{ID: 13, Name: "x", Type: iceberg.PrimitiveTypes.Int32},
		}}},
		{ID: 14, Name: "code", Type: iceberg.PrimitiveTypes.String, Required: true},
	}
}

// evolved returns the written fields with change applied to a copy, as
// schema 1.
func evolved(change func(fs []iceberg.NestedField) []iceberg.NestedField) *iceberg.Schema {
	return iceberg.NewSchema(1, change(writtenFields())...)
}

// set replaces the field with id's type.
func set(id int, typ iceberg.Type) func([]iceberg.NestedField) []iceberg.NestedField {
	return func(fs []iceberg.NestedField) []iceberg.NestedField {
		for i := range fs {
			if fs[i].ID == id {
				fs[i].Type = typ
			}
		}
		return fs
	}
}

// TestCheckSchemaStillValid_PromotionsAndEvolutionKeepTheNewFilesValid:
// every change Iceberg allows keeps the new files valid; a type change
// that is not a promotion, or a required column they lack without an
// initial default, aborts the job (ErrAborted).
func TestCheckSchemaStillValid_PromotionsAndEvolutionKeepTheNewFilesValid(t *testing.T) {
	cases := []struct {
		name  string
		now   *iceberg.Schema
		valid bool
	}{
		// Type promotions.
		{"int to long", evolved(set(2, iceberg.PrimitiveTypes.Int64)), true},
		{"float to double", evolved(set(3, iceberg.PrimitiveTypes.Float64)), true},
		{"decimal precision widened", evolved(set(4, iceberg.DecimalTypeOf(18, 2))), true},
		{"date to timestamp (v3)", evolved(set(6, iceberg.PrimitiveTypes.Timestamp)), true},
		{"date to timestamp_ns (v3)", evolved(set(6, iceberg.PrimitiveTypes.TimestampNs)), true},
		{"list element int to long", evolved(set(7, &iceberg.ListType{ElementID: 8, Element: iceberg.PrimitiveTypes.Int64})), true},
		{"map value float to double", evolved(set(9, &iceberg.MapType{KeyID: 10, KeyType: iceberg.PrimitiveTypes.String, ValueID: 11, ValueType: iceberg.PrimitiveTypes.Float64})), true},
		{"struct field int to long", evolved(set(12, &iceberg.StructType{FieldList: []iceberg.NestedField{{ID: 13, Name: "x", Type: iceberg.PrimitiveTypes.Int64}}})), true},
		// Not promotions.
		{"long to int", evolved(set(1, iceberg.PrimitiveTypes.Int32)), false},
		{"int to double", evolved(set(2, iceberg.PrimitiveTypes.Float64)), false},
		{"int to string", evolved(set(2, iceberg.PrimitiveTypes.String)), false},
		{"decimal precision narrowed", evolved(set(4, iceberg.DecimalTypeOf(8, 2))), false},
		{"decimal scale changed", evolved(set(4, iceberg.DecimalTypeOf(18, 3))), false},
		{"date to timestamptz", evolved(set(6, iceberg.PrimitiveTypes.TimestampTz)), false},
		{"string to binary", evolved(set(5, iceberg.PrimitiveTypes.Binary)), false},
		{"list element int to string", evolved(set(7, &iceberg.ListType{ElementID: 8, Element: iceberg.PrimitiveTypes.String})), false},
		{"map value float to int", evolved(set(9, &iceberg.MapType{KeyID: 10, KeyType: iceberg.PrimitiveTypes.String, ValueID: 11, ValueType: iceberg.PrimitiveTypes.Int32})), false},
		{"a primitive became a struct", evolved(set(5, &iceberg.StructType{FieldList: []iceberg.NestedField{{ID: 20, Name: "y", Type: iceberg.PrimitiveTypes.String}}})), false},
		{"a list became a primitive", evolved(set(7, iceberg.PrimitiveTypes.String)), false},
		// Columns dropped, renamed, moved, added, required-ness.
		{"a column dropped", evolved(func(fs []iceberg.NestedField) []iceberg.NestedField { return append(fs[:4:4], fs[5:]...) }), true},
		{"a required column dropped", evolved(func(fs []iceberg.NestedField) []iceberg.NestedField { return fs[1:] }), true},
		{"a nested column dropped", evolved(set(12, &iceberg.StructType{FieldList: []iceberg.NestedField{{ID: 15, Name: "z", Type: iceberg.PrimitiveTypes.Int32}}})), true},
		{"a column renamed", evolved(func(fs []iceberg.NestedField) []iceberg.NestedField { fs[4].Name = "comment"; return fs }), true},
		{"columns reordered", evolved(func(fs []iceberg.NestedField) []iceberg.NestedField { fs[0], fs[4] = fs[4], fs[0]; return fs }), true},
		{"a name reused by a new column", evolved(func(fs []iceberg.NestedField) []iceberg.NestedField {
			fs[4].Name = "old_note"
			return append(fs, iceberg.NestedField{ID: 20, Name: "note", Type: iceberg.PrimitiveTypes.Int64})
		}), true},
		{"a required column made optional", evolved(func(fs []iceberg.NestedField) []iceberg.NestedField { fs[9].Required = false; return fs }), true},
		// The new files hold the inputs' rows, so an optional column
		// made required (an incompatible change its author forced) makes
		// them no less valid than the inputs they replace.
		{"an optional column made required", evolved(func(fs []iceberg.NestedField) []iceberg.NestedField { fs[4].Required = true; return fs }), true},
		{"an optional column added", evolved(func(fs []iceberg.NestedField) []iceberg.NestedField {
			return append(fs, iceberg.NestedField{ID: 20, Name: "extra", Type: iceberg.PrimitiveTypes.Int64})
		}), true},
		{"a required column added with an initial default", evolved(func(fs []iceberg.NestedField) []iceberg.NestedField {
			return append(fs, iceberg.NestedField{ID: 20, Name: "extra", Type: iceberg.PrimitiveTypes.Int64, Required: true, InitialDefault: int64(0)})
		}), true},
		{"a required column added without an initial default", evolved(func(fs []iceberg.NestedField) []iceberg.NestedField {
			return append(fs, iceberg.NestedField{ID: 20, Name: "extra", Type: iceberg.PrimitiveTypes.Int64, Required: true})
		}), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := checkSchemaStillValid(writtenSchema(), c.now)
			if c.valid && err != nil {
				t.Fatalf("rejected: %v", err)
			}
			if !c.valid && !errors.Is(err, ErrAborted) {
				t.Fatalf("accepted (err %v), want ErrAborted", err)
			}
		})
	}
}

// TestCheckSchemaStillValid_NestedKindChangedIsNotAPromotion: a field id
// whose nested type changed kind (a list became a map, a struct a list)
// cannot be read from the new files, whatever the children's ids.
func TestCheckSchemaStillValid_NestedKindChangedIsNotAPromotion(t *testing.T) {
	cases := []struct {
		name string
		now  *iceberg.Schema
	}{
		{"a list became a map", evolved(set(7, &iceberg.MapType{KeyID: 20, KeyType: iceberg.PrimitiveTypes.String, ValueID: 21, ValueType: iceberg.PrimitiveTypes.Int32}))},
		{"a struct became a list", evolved(set(12, &iceberg.ListType{ElementID: 20, Element: iceberg.PrimitiveTypes.Int32}))},
		{"a map became a struct", evolved(set(9, &iceberg.StructType{FieldList: []iceberg.NestedField{{ID: 20, Name: "k", Type: iceberg.PrimitiveTypes.String}}}))},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if err := checkSchemaStillValid(writtenSchema(), c.now); !errors.Is(err, ErrAborted) {
				t.Fatalf("accepted (err %v), want ErrAborted", err)
			}
		})
	}
}

// TestCheckStillValid_SpecsAndSchemaIDs: the schema is compared only when
// its id changed since the pin; a new file's partition spec must still be
// in the table's metadata.
func TestCheckStillValid_SpecsAndSchemaIDs(t *testing.T) {
	spec1 := iceberg.NewPartitionSpecID(1, iceberg.PartitionField{SourceIDs: []int{5}, FieldID: 1000, Name: "note", Transform: iceberg.IdentityTransform{}})
	// tbl is a table created at the written schema, then evolved to
	// schema now (when not nil) as its current one.
	tbl := func(t *testing.T, now *iceberg.Schema, spec iceberg.PartitionSpec) *table.Table {
		t.Helper()
		meta, err := table.NewMetadata(writtenSchema(), &spec, table.UnsortedSortOrder, "file:///t", iceberg.Properties{"format-version": "3"})
		if err != nil {
			t.Fatal(err)
		}
		if now != nil {
			b, err := table.MetadataBuilderFromBase(meta, "file:///t/metadata/v1.metadata.json")
			if err != nil {
				t.Fatal(err)
			}
			if err := b.AddSchema(now); err != nil {
				t.Fatal(err)
			}
			if err := b.SetCurrentSchemaID(-1); err != nil {
				t.Fatal(err)
			}
			if meta, err = b.Build(); err != nil {
				t.Fatal(err)
			}
		}
		tb := table.New(table.Identifier{"ns", "t"}, meta, "file:///t/metadata/v1.metadata.json", nil, nil)
		if now != nil && tb.Schema().ID == 0 {
			t.Fatal("the evolved schema did not get its own id")
		}
		return tb
	}
	file := func(t *testing.T, spec iceberg.PartitionSpec) iceberg.DataFile {
		t.Helper()
		var part map[int]any
		if spec.NumFields() > 0 {
			part = map[int]any{1000: "x"}
		}
		b, err := iceberg.NewDataFileBuilder(spec, iceberg.EntryContentData, "s3://t/data/new", iceberg.ParquetFile, part, nil, nil, 1, 1)
		if err != nil {
			t.Fatal(err)
		}
		return b.Build()
	}
	pinned := tbl(t, nil, *iceberg.UnpartitionedSpec)
	cases := []struct {
		name  string
		cur   *table.Table
		files []iceberg.DataFile
		valid bool
	}{
		{"unchanged", pinned, []iceberg.DataFile{file(t, *iceberg.UnpartitionedSpec)}, true},
		{"a spec the table does not have", pinned, []iceberg.DataFile{file(t, *iceberg.UnpartitionedSpec), file(t, spec1)}, false},
		{"a schema change that breaks the files", tbl(t, evolved(set(2, iceberg.PrimitiveTypes.String)), *iceberg.UnpartitionedSpec), []iceberg.DataFile{file(t, *iceberg.UnpartitionedSpec)}, false},
		{"a schema change that keeps them", tbl(t, evolved(set(2, iceberg.PrimitiveTypes.Int64)), *iceberg.UnpartitionedSpec), []iceberg.DataFile{file(t, *iceberg.UnpartitionedSpec)}, true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			err := CheckStillValid(c.cur, pinned, c.files)
			if c.valid && err != nil {
				t.Fatalf("rejected: %v", err)
			}
			if !c.valid && !errors.Is(err, ErrAborted) {
				t.Fatalf("accepted (err %v), want ErrAborted", err)
			}
		})
	}
}
