package tests

// The model of the differential harness (see differential_test.go): the
// live rows of the table, keyed by id, each value keyed by field id, and
// their rendering at the table's current schema into arrow records that
// are fingerprinted exactly like a scan of the table.

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/harness/fingerprint"
)

// mrow is one live row of the model.
type mrow struct {
	// vals holds the row's values by field id, as written: int32 for int,
	// int64 for long, float32 for float, float64 for double, int64 unscaled
	// for decimal(p,2), string for string, and true for a struct that is
	// present. A field id with no entry is null: a column added after the
	// row was written, or a null value. Values never change after the write
	// (an overwrite replaces the whole row); reading at a later schema
	// promotes them (int -> long, float -> double, decimal(9,2) ->
	// decimal(12,2)) and ignores dropped field ids.
	vals map[int]any
	// specID and file locate the data file holding the row. They are
	// learned from the table after every operation that moves rows
	// (placement is not what the oracle checks; liveness is), and decide
	// whether a partitioned equality delete applies to the row: only to rows
	// in data files of the delete's spec and partition.
	specID int
	file   string
}

// model is the expected content of the table.
type model struct {
	rows map[int64]*mrow
}

func newModel() *model { return &model{rows: map[int64]*mrow{}} }

// ids returns the live ids in ascending order.
func (m *model) ids() []int64 {
	out := make([]int64, 0, len(m.rows))
	for id := range m.rows {
		out = append(out, id)
	}
	slices.Sort(out)
	return out
}

// render builds one arrow record of the given rows at schema sc, with the
// types the scan of a table with that current schema produces.
func render(sc *iceberg.Schema, ids []int64, rows map[int64]*mrow) (arrow.RecordBatch, error) {
	asc, err := table.SchemaToArrowSchema(sc, nil, true, false)
	if err != nil {
		return nil, fmt.Errorf("arrow schema: %w", err)
	}
	b := array.NewRecordBuilder(memory.DefaultAllocator, asc)
	defer b.Release()
	for _, id := range ids {
		r := rows[id]
		for i, f := range sc.Fields() {
			if err := appendValue(b.Field(i), f, r.vals); err != nil {
				return nil, fmt.Errorf("row %d: %w", id, err)
			}
		}
	}
	return b.NewRecordBatch(), nil
}

// appendValue appends field f of a row to its builder, promoting the
// written value to the field's current type.
func appendValue(bld array.Builder, f iceberg.NestedField, vals map[int]any) error {
	if st, ok := f.Type.(*iceberg.StructType); ok {
		sb := bld.(*array.StructBuilder)
		if vals[f.ID] == nil {
			sb.AppendNull()
			return nil
		}
		sb.Append(true)
		for i, c := range st.FieldList {
			if err := appendValue(sb.FieldBuilder(i), c, vals); err != nil {
				return err
			}
		}
		return nil
	}
	v := vals[f.ID]
	if v == nil {
		bld.AppendNull()
		return nil
	}
	switch f.Type.(type) {
	case iceberg.Int32Type:
		bld.(*array.Int32Builder).Append(v.(int32))
	case iceberg.Int64Type:
		switch x := v.(type) {
		case int32:
			bld.(*array.Int64Builder).Append(int64(x))
		case int64:
			bld.(*array.Int64Builder).Append(x)
		default:
			return fmt.Errorf("field %d (%s): %T for long", f.ID, f.Name, v)
		}
	case iceberg.Float32Type:
		bld.(*array.Float32Builder).Append(v.(float32))
	case iceberg.Float64Type:
		switch x := v.(type) {
		case float32:
			bld.(*array.Float64Builder).Append(float64(x))
		case float64:
			bld.(*array.Float64Builder).Append(x)
		default:
			return fmt.Errorf("field %d (%s): %T for double", f.ID, f.Name, v)
		}
	case iceberg.DecimalType:
		bld.(*array.Decimal128Builder).Append(decimal128.FromI64(v.(int64)))
	case iceberg.StringType:
		switch sb := bld.(type) {
		case *array.StringBuilder:
			sb.Append(v.(string))
		case *array.LargeStringBuilder:
			sb.Append(v.(string))
		default:
			return fmt.Errorf("field %d (%s): builder %T for string", f.ID, f.Name, bld)
		}
	default:
		return fmt.Errorf("field %d (%s): unsupported type %s", f.ID, f.Name, f.Type)
	}
	return nil
}

// rowsByID renders canonical rows (fingerprint.Rows) keyed by the value
// of the id column; duplicates keep every copy.
func rowsByID(rec arrow.RecordBatch, idName string) (map[int64][]string, error) {
	idx := rec.Schema().FieldIndices(idName)
	if len(idx) != 1 {
		return nil, fmt.Errorf("no column %q in %s", idName, rec.Schema())
	}
	col, ok := rec.Column(idx[0]).(*array.Int64)
	if !ok {
		return nil, fmt.Errorf("column %q is %s, want int64", idName, rec.Column(idx[0]).DataType())
	}
	out := map[int64][]string{}
	for i, r := range fingerprint.Rows(rec) {
		out[col.Value(i)] = append(out[col.Value(i)], r)
	}
	return out, nil
}

// comparison is the outcome of comparing the table with the model.
type comparison struct {
	want, got fingerprint.Fingerprint
	// diff describes the first differing rows (empty when equal).
	diff string
}

func (c comparison) equal() bool { return c.want == c.got }

// compare fingerprints the live rows of tbl at its current schema and the
// model rendered at that schema. On a difference it also finds the first
// differing ids (missing, extra, duplicated or changed rows).
func compare(ctx context.Context, tbl *table.Table, m *model, idName string) (comparison, error) {
	var c comparison
	sc := tbl.Schema()
	want, err := render(sc, m.ids(), m.rows)
	if err != nil {
		return c, fmt.Errorf("render model: %w", err)
	}
	defer want.Release()
	c.want = fingerprint.Records(want)

	_, records, err := tbl.Scan().ToArrowRecords(ctx)
	if err != nil {
		return c, fmt.Errorf("scan: %w", err)
	}
	got := map[int64][]string{}
	for rec, err := range records {
		if err != nil {
			return c, fmt.Errorf("read: %w", err)
		}
		c.got.Add(rec)
		byID, err := rowsByID(rec, idName)
		rec.Release()
		if err != nil {
			return c, err
		}
		for id, rs := range byID {
			got[id] = append(got[id], rs...)
		}
	}
	if c.equal() {
		return c, nil
	}
	exp, err := rowsByID(want, idName)
	if err != nil {
		return c, err
	}
	c.diff = diffRows(exp, got)
	return c, nil
}

// diffRows describes how got differs from want: counts of missing, extra,
// duplicated and changed ids, and the first few of each.
func diffRows(want, got map[int64][]string) string {
	var missing, extra, dup, changed []int64
	for id, w := range want {
		g, ok := got[id]
		switch {
		case !ok:
			missing = append(missing, id)
		case len(g) > 1:
			dup = append(dup, id)
		case g[0] != w[0]:
			changed = append(changed, id)
		}
	}
	for id := range got {
		if _, ok := want[id]; !ok {
			extra = append(extra, id)
		}
	}
	var b strings.Builder
	show := func(kind string, ids []int64, detail func(int64) string) {
		if len(ids) == 0 {
			return
		}
		slices.Sort(ids)
		fmt.Fprintf(&b, "  %d %s ids, first %v\n", len(ids), kind, ids[:min(len(ids), 8)])
		fmt.Fprintf(&b, "    first: %s\n", detail(ids[0]))
	}
	show("missing (lost)", missing, func(id int64) string { return "want " + fingerprint.Display(want[id][0]) })
	show("extra (resurrected or invented)", extra, func(id int64) string { return "got  " + fingerprint.Display(got[id][0]) })
	show("duplicated", dup, func(id int64) string {
		return fmt.Sprintf("got %d copies: %s", len(got[id]), fingerprint.Display(got[id][0]))
	})
	show("changed", changed, func(id int64) string {
		return "want " + fingerprint.Display(want[id][0]) + "\n           got  " + fingerprint.Display(got[id][0])
	})
	if b.Len() == 0 {
		return "  the same rows by id, yet different fingerprints\n"
	}
	return b.String()
}

// placement reads, file by file, which data file holds each live id: the
// path and partition spec of every live data file (deletes applied).
type placement map[int64]struct {
	specID int
	file   string
}

func readPlacement(ctx context.Context, tbl *table.Table, idName string) (placement, error) {
	scan := tbl.Scan()
	tasks, err := scan.PlanFiles(ctx)
	if err != nil {
		return nil, fmt.Errorf("plan files: %w", err)
	}
	out := placement{}
	for _, task := range tasks {
		_, records, err := scan.ReadTasks(ctx, []table.FileScanTask{task})
		if err != nil {
			return nil, fmt.Errorf("read %s: %w", task.File.FilePath(), err)
		}
		for rec, err := range records {
			if err != nil {
				return nil, fmt.Errorf("read %s: %w", task.File.FilePath(), err)
			}
			idx := rec.Schema().FieldIndices(idName)
			if len(idx) != 1 {
				rec.Release()
				return nil, fmt.Errorf("read %s: no column %q", task.File.FilePath(), idName)
			}
			col := rec.Column(idx[0]).(*array.Int64)
			for i := 0; i < col.Len(); i++ {
				out[col.Value(i)] = struct {
					specID int
					file   string
				}{int(task.File.SpecID()), task.File.FilePath()}
			}
			rec.Release()
		}
	}
	return out, nil
}
