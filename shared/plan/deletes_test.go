package plan

import (
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

func testFile(t *testing.T, content iceberg.ManifestEntryContent, path string, rows, size int64, sizes map[int]int64, eqIDs []int) iceberg.DataFile {
	t.Helper()
	b, err := iceberg.NewDataFileBuilder(*iceberg.UnpartitionedSpec, content, path, iceberg.ParquetFile, nil, nil, nil, rows, size)
	if err != nil {
		t.Fatal(err)
	}
	if sizes != nil {
		b.ColumnSizes(sizes)
	}
	if eqIDs != nil {
		b.EqualityFieldIDs(eqIDs)
	}
	return b.Build()
}

// TestConversionPays_ConvertsFewDeletesOnWideFilesAndLeavesManyToCompaction:
// equality deletes that remove a small share of wide files' rows are
// converted (reading the key column twice costs far less than rewriting);
// ones that reach the delete ratio at which compaction rewrites a file are
// left to compaction, since every later scan would still read the deleted
// rows; a key as wide as the file is still converted (no more bytes).
func TestConversionPays_ConvertsFewDeletesOnWideFilesAndLeavesManyToCompaction(t *testing.T) {
	const ratio = 0.3
	part := func(eqRows int64, keyBytes int64) *partitionDeletes {
		eq := testFile(t, iceberg.EntryContentEqDeletes, "eq.parquet", eqRows, 1000, nil, []int{1})
		pd := &partitionDeletes{eqs: []iceberg.DataFile{eq}}
		for _, p := range []string{"a.parquet", "b.parquet"} {
			data := testFile(t, iceberg.EntryContentData, p, 1000, 100_000, map[int]int64{1: keyBytes, 2: 100_000 - keyBytes}, nil)
			pd.all = append(pd.all, table.FileScanTask{File: data, EqualityDeleteFiles: []iceberg.DataFile{eq}})
		}
		// A data file the deletes do not apply to counts for nothing.
		other := testFile(t, iceberg.EntryContentData, "c.parquet", 1_000_000, 1<<30, map[int]int64{1: 1 << 29}, nil)
		pd.all = append(pd.all, table.FileScanTask{File: other})
		return pd
	}
	if !part(50, 8_000).conversionPays(ratio) {
		t.Error("50 deletes over 2,000 rows of wide files: want converted")
	}
	if part(600, 8_000).conversionPays(ratio) {
		t.Error("600 deletes over 2,000 rows (30%): want left to compaction")
	}
	if !part(50, 100_000).conversionPays(ratio) {
		t.Error("a key as wide as the file: converting moves no more bytes, want converted")
	}
}
