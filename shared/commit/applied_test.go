package commit

import (
	"testing"

	"github.com/apache/iceberg-go"

	"github.com/icekeeper/icekeeper/shared/deletefiles"
)

func TestPositionDeleteApplies_ByTargetBoundsAndSequenceNumber(t *testing.T) {
	spec := *iceberg.UnpartitionedSpec
	data := func(path string) iceberg.DataFile {
		b, err := iceberg.NewDataFileBuilder(spec, iceberg.EntryContentData, path, iceberg.ParquetFile, nil, nil, nil, 10, 100)
		if err != nil {
			t.Fatal(err)
		}
		return b.Build()
	}
	posDelete := func(ref, lower, upper string) iceberg.DataFile {
		b, err := iceberg.NewDataFileBuilder(spec, iceberg.EntryContentPosDeletes, "s3://t/data/d.parquet", iceberg.ParquetFile, nil, nil, nil, 2, 100)
		if err != nil {
			t.Fatal(err)
		}
		if ref != "" {
			b.ReferencedDataFile(ref)
		}
		if lower != "" {
			b.LowerBoundValues(map[int][]byte{deletefiles.PathFieldID: []byte(lower)})
			b.UpperBoundValues(map[int][]byte{deletefiles.PathFieldID: []byte(upper)})
		}
		return b.Build()
	}
	// Inputs b (data sequence number 3) and d (5); a, c and e are not.
	inputs := []iceberg.DataFile{data("s3://t/data/b"), data("s3://t/data/d")}
	seqs := map[string]int64{"s3://t/data/b": 3, "s3://t/data/d": 5}
	byPath := map[string]int64{}
	byPart := map[string][]input{}
	for _, f := range inputs {
		byPath[f.FilePath()] = seqs[f.FilePath()]
		byPart[partitionKey(f)] = append(byPart[partitionKey(f)], input{path: f.FilePath(), seq: seqs[f.FilePath()]})
	}
	cases := []struct {
		name              string
		ref, lower, upper string
		seq               int64
		want              bool
	}{
		{"references an input at its sequence number", "s3://t/data/b", "", "", 3, true},
		{"references an input written after it", "s3://t/data/d", "", "", 4, false},
		{"references a file left alone", "s3://t/data/c", "", "", 9, false},
		{"equal bounds name an input", "", "s3://t/data/d", "s3://t/data/d", 5, true},
		{"equal bounds name a file left alone", "", "s3://t/data/c", "s3://t/data/c", 9, false},
		{"bounds span an input", "", "s3://t/data/a", "s3://t/data/c", 3, true},
		{"bounds span only an input written after it", "", "s3://t/data/c", "s3://t/data/e", 4, false},
		{"bounds span no input", "", "s3://t/data/e", "s3://t/data/f", 9, false},
		{"no bounds: every input of its partition", "", "", "", 3, true},
		{"no bounds, every input written after it", "", "", "", 2, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := positionDeleteApplies(posDelete(c.ref, c.lower, c.upper), c.seq, byPath, byPart); got != c.want {
				t.Fatalf("applies = %v, want %v", got, c.want)
			}
		})
	}
}
