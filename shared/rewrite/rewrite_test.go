package rewrite

import (
	"errors"
	"iter"
	"strings"
	"testing"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

func batches(sizes ...int) iter.Seq2[arrow.RecordBatch, error] {
	sc := arrow.NewSchema([]arrow.Field{{Name: "id", Type: arrow.PrimitiveTypes.Int64}}, nil)
	return func(yield func(arrow.RecordBatch, error) bool) {
		for _, n := range sizes {
			b := array.NewInt64Builder(memory.DefaultAllocator)
			for i := 0; i < n; i++ {
				b.Append(int64(i))
			}
			arr := b.NewArray()
			b.Release()
			if !yield(array.NewRecordBatch(sc, []arrow.Array{arr}, int64(n)), nil) {
				return
			}
		}
	}
}

func drain(records iter.Seq2[arrow.RecordBatch, error]) (int64, error) {
	var n int64
	for rec, err := range records {
		if err != nil {
			return n, err
		}
		n += rec.NumRows()
		rec.Release()
	}
	return n, nil
}

// The row map counts each input file's surviving rows; iceberg-go never
// puts two files' rows in one batch, so a batch that spans the end of one
// file's rows means the count is wrong and the task must fail.
func TestAlignedTo_FailsABatchThatSpansAFileBoundary(t *testing.T) {
	if n, err := drain(alignedTo(batches(3, 2, 4), []int64{3, 5, 9})); err != nil || n != 9 {
		t.Fatalf("batches on the boundaries: %d rows, %v", n, err)
	}
	if n, err := drain(alignedTo(batches(3, 0, 6), []int64{3, 3, 9})); err != nil || n != 9 {
		t.Fatalf("a file with no surviving row: %d rows, %v", n, err)
	}
	if _, err := drain(alignedTo(batches(3, 3), []int64{4, 6})); !errors.Is(err, ErrTerminal) {
		t.Fatalf("a batch across the boundary at 4: %v, want ErrTerminal", err)
	}
}

func TestEqualityLast_KeepsTheOrderWithinEachKind(t *testing.T) {
	file := func(path string) iceberg.DataFile {
		b, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, iceberg.EntryContentData, path, iceberg.ParquetFile, nil, nil, nil, 1, 1)
		if err != nil {
			t.Fatal(err)
		}
		return b.Build()
	}
	eq := []iceberg.DataFile{file("eq")}
	tasks := []table.FileScanTask{{File: file("a"), EqualityDeleteFiles: eq}, {File: file("b")}, {File: file("c"), EqualityDeleteFiles: eq}, {File: file("d")}}
	var got []string
	for _, t := range equalityLast(tasks) {
		got = append(got, t.File.FilePath())
	}
	if want := "b d a c"; strings.Join(got, " ") != want {
		t.Fatalf("order %q, want %q", strings.Join(got, " "), want)
	}
}
