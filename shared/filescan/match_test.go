package filescan

import (
	"slices"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// The matching rules, case by case, as the spec's "Scan Planning" section
// states them (and iceberg-go's PlanFiles implements them: the
// differential harness in tests/ compares the two on real tables, which
// rarely have a sequence number tie or a partition-scoped delete with
// path bounds).

var testSchema = iceberg.NewSchema(0,
	iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true},
	iceberg.NestedField{ID: 2, Name: "cat", Type: iceberg.PrimitiveTypes.String, Required: true},
)

func testMeta(t *testing.T, partitioned bool) (table.Metadata, iceberg.PartitionSpec) {
	t.Helper()
	spec := *iceberg.UnpartitionedSpec
	if partitioned {
		spec = iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Name: "cat", Transform: iceberg.IdentityTransform{}})
	}
	meta, err := table.NewMetadata(testSchema, &spec, table.UnsortedSortOrder, "file:///tmp/t", iceberg.Properties{"format-version": "2"})
	if err != nil {
		t.Fatal(err)
	}
	return meta, *meta.PartitionSpecByID(meta.DefaultPartitionSpec())
}

type fileOpt func(*iceberg.DataFileBuilder)

func build(t *testing.T, spec iceberg.PartitionSpec, content iceberg.ManifestEntryContent, format iceberg.FileFormat, path, cat string, opts ...fileOpt) iceberg.DataFile {
	t.Helper()
	part := map[int]any{}
	if !spec.IsUnpartitioned() {
		part[1000] = cat
	}
	b, err := iceberg.NewDataFileBuilder(spec, content, path, format, part, nil, nil, 10, 1000)
	if err != nil {
		t.Fatal(err)
	}
	for _, o := range opts {
		o(b)
	}
	return b.Build()
}

func pathBounds(lo, hi string) fileOpt {
	return func(b *iceberg.DataFileBuilder) {
		b.LowerBoundValues(map[int][]byte{PathFieldID: []byte(lo)}).UpperBoundValues(map[int][]byte{PathFieldID: []byte(hi)})
	}
}

func references(path string) fileOpt {
	return func(b *iceberg.DataFileBuilder) { b.ReferencedDataFile(path) }
}

type del struct {
	file iceberg.DataFile
	seq  int64
}

// matched plans one data file of partition cat at data sequence number
// seq against deletes, and returns the paths of the position deletes,
// deletion vectors and equality deletes that apply.
func matched(t *testing.T, meta table.Metadata, data iceberg.DataFile, seq int64, deletes ...del) (pos, dvs, eqs []string) {
	t.Helper()
	s := &scanner{meta: meta, parts: map[string]*tuple{}, seqs: map[int64]*int64{}}
	var es []entry
	for _, d := range deletes {
		es = append(es, entry{file: s.deleteFile(d.file), seq: d.seq})
	}
	idx, err := s.index(es)
	if err != nil {
		t.Fatal(err)
	}
	snap := int64(1)
	task := s.task(iceberg.NewManifestEntry(iceberg.EntryStatusADDED, &snap, &seq, &seq, data), idx)
	if task.File.FilePath() != data.FilePath() || *task.DataSequenceNumber != seq || task.Length != data.FileSizeBytes() {
		t.Fatalf("task %s seq %d length %d, want %s %d %d", task.File.FilePath(), *task.DataSequenceNumber, task.Length, data.FilePath(), seq, data.FileSizeBytes())
	}
	names := func(ds []iceberg.DataFile) []string {
		var out []string
		for _, d := range ds {
			out = append(out, d.FilePath())
		}
		return out
	}
	return names(task.DeleteFiles), names(task.DeletionVectorFiles), names(task.EqualityDeleteFiles)
}

func TestPlan_ADeletionVectorAppliesUpToItsSequenceNumberAndThenReplacesPositionDeletes(t *testing.T) {
	meta, spec := testMeta(t, true)
	data := build(t, spec, iceberg.EntryContentData, iceberg.ParquetFile, "s3://b/t/data/a.parquet", "a")
	dv := build(t, spec, iceberg.EntryContentPosDeletes, iceberg.PuffinFile, "s3://b/t/data/dv.puffin", "a", references(data.FilePath()), func(b *iceberg.DataFileBuilder) { b.ContentOffset(4).ContentSizeInBytes(40) })
	pos := build(t, spec, iceberg.EntryContentPosDeletes, iceberg.ParquetFile, "s3://b/t/data/pos.parquet", "a")

	// Spec: a DV applies when the data file's data sequence number is <=
	// the DV's; when one applies, position delete files do not.
	for _, c := range []struct {
		dvSeq      int64
		wantDV     bool
		wantPosDel bool
	}{{5, true, false}, {4, true, false}, {3, false, true}} {
		p, dvs, _ := matched(t, meta, data, 4, del{dv, c.dvSeq}, del{pos, 6})
		if (len(dvs) == 1) != c.wantDV || (len(p) == 1) != c.wantPosDel {
			t.Errorf("DV at %d on a file at 4: DVs %v, position deletes %v; want DV %v, position delete %v", c.dvSeq, dvs, p, c.wantDV, c.wantPosDel)
		}
	}
	// A DV of another file does not apply.
	other := build(t, spec, iceberg.EntryContentData, iceberg.ParquetFile, "s3://b/t/data/b.parquet", "a")
	if p, dvs, _ := matched(t, meta, other, 4, del{dv, 5}, del{pos, 6}); len(dvs) != 0 || len(p) != 1 {
		t.Errorf("another file got DVs %v, position deletes %v", dvs, p)
	}
}

func TestPlan_APartitionPositionDeleteAppliesWhereItsSequenceNumberPartitionAndPathBoundsAdmit(t *testing.T) {
	meta, spec := testMeta(t, true)
	data := build(t, spec, iceberg.EntryContentData, iceberg.ParquetFile, "s3://b/t/data/m.parquet", "a")
	for _, c := range []struct {
		name string
		del  iceberg.DataFile
		seq  int64
		want bool
	}{
		{"no bounds, newer", build(t, spec, iceberg.EntryContentPosDeletes, iceberg.ParquetFile, "d1", "a"), 5, true},
		{"no bounds, same sequence number", build(t, spec, iceberg.EntryContentPosDeletes, iceberg.ParquetFile, "d2", "a"), 4, true},
		{"no bounds, older", build(t, spec, iceberg.EntryContentPosDeletes, iceberg.ParquetFile, "d3", "a"), 3, false},
		{"other partition", build(t, spec, iceberg.EntryContentPosDeletes, iceberg.ParquetFile, "d4", "b"), 5, false},
		{"bounds around the path", build(t, spec, iceberg.EntryContentPosDeletes, iceberg.ParquetFile, "d5", "a", pathBounds("s3://b/t/data/a", "s3://b/t/data/z")), 5, true},
		{"bounds below the path", build(t, spec, iceberg.EntryContentPosDeletes, iceberg.ParquetFile, "d6", "a", pathBounds("s3://b/t/data/a", "s3://b/t/data/l")), 5, false},
		{"bounds above the path", build(t, spec, iceberg.EntryContentPosDeletes, iceberg.ParquetFile, "d7", "a", pathBounds("s3://b/t/data/n", "s3://b/t/data/z")), 5, false},
		{"every path null", build(t, spec, iceberg.EntryContentPosDeletes, iceberg.ParquetFile, "d8", "a", func(b *iceberg.DataFileBuilder) {
			b.ValueCounts(map[int]int64{PathFieldID: 10}).NullValueCounts(map[int]int64{PathFieldID: 10})
		}), 5, false},
	} {
		p, _, _ := matched(t, meta, data, 4, del{c.del, c.seq})
		if got := slices.Contains(p, c.del.FilePath()); got != c.want {
			t.Errorf("%s: applies %v, want %v", c.name, got, c.want)
		}
	}
}

func TestPlan_AFileScopedPositionDeleteAppliesToItsFileOnly(t *testing.T) {
	meta, spec := testMeta(t, true)
	mine := build(t, spec, iceberg.EntryContentData, iceberg.ParquetFile, "s3://b/t/data/m.parquet", "a")
	other := build(t, spec, iceberg.EntryContentData, iceberg.ParquetFile, "s3://b/t/data/n.parquet", "a")
	byRef := build(t, spec, iceberg.EntryContentPosDeletes, iceberg.ParquetFile, "ref", "a", references(mine.FilePath()))
	byBounds := build(t, spec, iceberg.EntryContentPosDeletes, iceberg.ParquetFile, "bounds", "a", pathBounds(mine.FilePath(), mine.FilePath()))
	if p, _, _ := matched(t, meta, mine, 4, del{byRef, 4}, del{byBounds, 9}); !slices.Equal(p, []string{"ref", "bounds"}) {
		t.Errorf("its file got %v, want both (by sequence number)", p)
	}
	if p, _, _ := matched(t, meta, mine, 5, del{byRef, 4}, del{byBounds, 9}); !slices.Equal(p, []string{"bounds"}) {
		t.Errorf("its file, newer than one of them, got %v", p)
	}
	if p, _, _ := matched(t, meta, other, 4, del{byRef, 4}, del{byBounds, 9}); len(p) != 0 {
		t.Errorf("another file got %v", p)
	}
}

func TestPlan_EqualityDeletesApplyToStrictlyOlderFilesOfTheirPartitionOrEverywhereWhenUnpartitioned(t *testing.T) {
	meta, spec := testMeta(t, true)
	data := build(t, spec, iceberg.EntryContentData, iceberg.ParquetFile, "s3://b/t/data/m.parquet", "a")
	eq := func(path, cat string) iceberg.DataFile {
		return build(t, spec, iceberg.EntryContentEqDeletes, iceberg.ParquetFile, path, cat, func(b *iceberg.DataFileBuilder) { b.EqualityFieldIDs([]int{1}) })
	}
	_, _, got := matched(t, meta, data, 4, del{eq("newer", "a"), 5}, del{eq("same", "a"), 4}, del{eq("older", "a"), 3}, del{eq("elsewhere", "b"), 9})
	if !slices.Equal(got, []string{"newer"}) {
		t.Errorf("partitioned: got %v, want [newer]", got)
	}

	meta, spec = testMeta(t, false)
	data = build(t, spec, iceberg.EntryContentData, iceberg.ParquetFile, "s3://b/t/data/m.parquet", "")
	_, _, got = matched(t, meta, data, 4, del{eq("newer", ""), 5}, del{eq("same", ""), 4})
	if !slices.Equal(got, []string{"newer"}) {
		t.Errorf("unpartitioned: got %v, want [newer]", got)
	}
}

func TestFile_EncodesWhatItKeeps(t *testing.T) {
	meta, spec := testMeta(t, true)
	dv := build(t, spec, iceberg.EntryContentPosDeletes, iceberg.PuffinFile, "s3://b/t/data/dv.puffin", "a", references("s3://b/t/data/a.parquet"), func(b *iceberg.DataFileBuilder) { b.ContentOffset(4).ContentSizeInBytes(40) })
	s := &scanner{meta: meta, parts: map[string]*tuple{}, seqs: map[int64]*int64{}}
	f := s.deleteFile(dv)
	full, err := f.Full(spec)
	if err != nil {
		t.Fatal(err)
	}
	if full.FilePath() != dv.FilePath() || full.Count() != 10 || full.FileSizeBytes() != 1000 || *full.ReferencedDataFile() != *dv.ReferencedDataFile() ||
		*full.ContentOffset() != 4 || *full.ContentSizeInBytes() != 40 || full.Partition()[1000] != "a" || full.FileFormat() != iceberg.PuffinFile {
		t.Errorf("full file differs: %+v", full)
	}
	if _, err := f.MarshalAvroEntry(spec, testSchema, 2); err != nil {
		t.Errorf("encode: %v", err)
	}
	if _, err := f.Full(iceberg.NewPartitionSpecID(7)); err == nil {
		t.Error("a file encoded in another spec than its own: no error")
	}
}
