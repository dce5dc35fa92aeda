package tests

import (
	"context"
	"fmt"
	"math/big"
	"testing"

	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/decimal128"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"
	"github.com/apache/arrow-go/v18/parquet/pqarrow"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// decimalColumns are decimals of each Parquet physical type Iceberg Java
// gives them (TypeToMessageType): INT32 up to precision 9, INT64 up to 18,
// FIXED_LEN_BYTE_ARRAY above.
var decimalColumns = []struct {
	name     string
	typ      iceberg.DecimalType
	physical parquet.Type
}{
	{"price_small", iceberg.DecimalTypeOf(7, 2), parquet.Types.Int32},
	{"price_mid", iceberg.DecimalTypeOf(15, 2), parquet.Types.Int64},
	{"price_big", iceberg.DecimalTypeOf(30, 4), parquet.Types.FixedLenByteArray},
}

// decimalValue is row id's unscaled value of a decimal of precision p:
// negatives, zero, and the largest magnitudes p digits hold, by turns.
func decimalValue(id int64, p int) decimal128.Num {
	limit := new(big.Int).Sub(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(p)), nil), big.NewInt(1))
	switch id % 7 {
	case 0:
		return decimal128.FromBigInt(limit)
	case 1:
		return decimal128.FromBigInt(new(big.Int).Neg(limit))
	case 2:
		return decimal128.Num{}
	}
	v := big.NewInt(id*7919 - 50000)
	v.Mod(v, limit)
	if id%2 == 0 {
		v.Neg(v)
	}
	return decimal128.FromBigInt(v)
}

// TestCompaction_DecimalsAreStoredAsIcebergJavaStoresThem: a compaction
// of a table with decimals of every width keeps every value, writes each
// decimal with the physical type Iceberg Java writes (INT32, INT64,
// FIXED_LEN_BYTE_ARRAY by precision), and records in the manifest lower
// and upper bounds that are each new file's true minimum and maximum.
func TestCompaction_DecimalsAreStoredAsIcebergJavaStoresThem(t *testing.T) {
	e := setup(t)
	e.createTable(smallTable)
	e.evolveSchema(func(u *table.UpdateSchema) {
		for _, c := range decimalColumns {
			u.AddColumn([]string{c.name}, c.typ, "", false, nil)
		}
	})
	e.appendDecimals(1_000_000, 4, 60)
	before := liveDataFiles(t, e.load())
	e.compactAndRequireSame()

	tbl := e.load()
	checked := 0
	for path, df := range liveDataFiles(t, tbl) {
		if before[path] != nil {
			continue // not the compaction's
		}
		types, mins, maxs := decimalFacts(t, localPath(df.FilePath()))
		for i, c := range decimalColumns {
			if types[c.name] != c.physical {
				t.Errorf("%s in %s is stored as %s, want %s (Iceberg Java's type for %s)", c.name, df.FilePath(), types[c.name], c.physical, c.typ)
			}
			field, ok := tbl.Schema().FindFieldByName(c.name)
			if !ok {
				t.Fatalf("no column %s", c.name)
			}
			if mins[i] == nil {
				continue // only nulls in this file
			}
			lo, hi := decodeDecimalBound(t, c.typ, df.LowerBoundValues()[field.ID]), decodeDecimalBound(t, c.typ, df.UpperBoundValues()[field.ID])
			if lo.Cmp(mins[i]) != 0 || hi.Cmp(maxs[i]) != 0 {
				t.Errorf("%s in %s: manifest bounds [%s, %s], the file holds [%s, %s]", c.name, df.FilePath(), lo, hi, mins[i], maxs[i])
			}
		}
		checked++
	}
	if checked == 0 {
		t.Fatal("the compaction wrote no file to check")
	}
}

// liveDataFiles are the data files a scan of the table's current snapshot
// reads, by path.
func liveDataFiles(t *testing.T, tbl *table.Table) map[string]iceberg.DataFile {
	t.Helper()
	tasks, err := tbl.Scan().PlanFiles(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]iceberg.DataFile{}
	for _, task := range tasks {
		out[task.File.FilePath()] = task.File
	}
	return out
}

// appendDecimals appends files of rows at the current schema, the sample
// table's columns from appendEvolvedValue and the decimals from
// decimalValue.
func (e *env) appendDecimals(firstID int64, files, rows int) {
	e.t.Helper()
	e.appendGenerated(firstID, files, rows, func(t *testing.T, b array.Builder, f iceberg.NestedField, id int64) {
		if dt, ok := f.Type.(iceberg.DecimalType); ok {
			b.(*array.Decimal128Builder).Append(decimalValue(id, dt.Precision()))
			return
		}
		appendEvolvedValue(t, b, f, id)
	})
}

// decimalFacts reads a Parquet file's decimal columns: their physical
// types by name, and the smallest and largest unscaled value of each of
// decimalColumns (nil when the file holds only nulls in it).
func decimalFacts(t *testing.T, path string) (map[string]parquet.Type, []*big.Int, []*big.Int) {
	t.Helper()
	rdr, err := file.OpenParquetFile(path, false)
	if err != nil {
		t.Fatal(err)
	}
	defer rdr.Close()
	types := map[string]parquet.Type{}
	sc := rdr.MetaData().Schema
	for i := 0; i < sc.NumColumns(); i++ {
		types[sc.Column(i).Name()] = sc.Column(i).PhysicalType()
	}
	fr, err := pqarrow.NewFileReader(rdr, pqarrow.ArrowReadProperties{}, memory.DefaultAllocator)
	if err != nil {
		t.Fatal(err)
	}
	tab, err := fr.ReadTable(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer tab.Release()
	mins, maxs := make([]*big.Int, len(decimalColumns)), make([]*big.Int, len(decimalColumns))
	for i, c := range decimalColumns {
		idx := tab.Schema().FieldIndices(c.name)
		if len(idx) != 1 {
			t.Fatalf("%s: no column %s", path, c.name)
		}
		for _, chunk := range tab.Column(idx[0]).Data().Chunks() {
			arr, ok := chunk.(*array.Decimal128)
			if !ok {
				t.Fatalf("%s: %s reads as %s", path, c.name, chunk.DataType())
			}
			for j := 0; j < arr.Len(); j++ {
				if arr.IsNull(j) {
					continue
				}
				v := arr.Value(j).BigInt()
				if mins[i] == nil || v.Cmp(mins[i]) < 0 {
					mins[i] = v
				}
				if maxs[i] == nil || v.Cmp(maxs[i]) > 0 {
					maxs[i] = v
				}
			}
		}
	}
	return types, mins, maxs
}

// decodeDecimalBound decodes a manifest's decimal bound into its unscaled
// value.
func decodeDecimalBound(t *testing.T, typ iceberg.DecimalType, b []byte) *big.Int {
	t.Helper()
	lit, err := iceberg.LiteralFromBytes(typ, b)
	if err != nil {
		t.Fatalf("decode %s bound %x: %v", typ, b, err)
	}
	d, ok := lit.(iceberg.DecimalLiteral)
	if !ok {
		t.Fatalf("bound %x decodes to %T", b, lit)
	}
	if d.Scale != typ.Scale() {
		t.Fatalf("bound %s has scale %d, want %d", fmt.Sprint(d), d.Scale, typ.Scale())
	}
	return d.Val.BigInt()
}
