package filescan

import (
	"testing"
	"time"
	"unsafe"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
)

// TestAdded_AFileIsDatedByTheSnapshotThatAddedIt: from recorded
// snapshots, a data file is young when the snapshot its entry names was
// committed at or after the cut; one whose adding snapshot has expired is
// dated by the earliest snapshot kept whose sequence number is not below
// its file sequence number (it was added no later), and without a file
// sequence number it is old.
func TestAdded_AFileIsDatedByTheSnapshotThatAddedIt(t *testing.T) {
	base := time.Now().Add(time.Hour).Truncate(time.Second) // after the metadata's creation, as commits are
	meta, spec := testMeta(t, true)
	b, err := table.MetadataBuilderFromBase(meta, "file:///tmp/t/metadata/v1.metadata.json")
	if err != nil {
		t.Fatal(err)
	}
	// Snapshots 1 and 2 (sequence numbers 1 and 2) have expired.
	for _, s := range []struct{ id, seq int64 }{{3, 3}, {4, 4}, {5, 5}} {
		snap := &table.Snapshot{SnapshotID: s.id, SequenceNumber: s.seq, TimestampMs: base.Add(time.Duration(s.seq) * time.Hour).UnixMilli(),
			ManifestList: "file:///tmp/t/metadata/snap.avro", Summary: &table.Summary{Operation: table.OpAppend}}
		if s.id > 3 {
			parent := s.id - 1
			snap.ParentSnapshotID = &parent
		}
		if err := b.AddSnapshot(snap); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.SetSnapshotRef(table.MainBranch, 5, table.BranchRef); err != nil {
		t.Fatal(err)
	}
	if meta, err = b.Build(); err != nil {
		t.Fatal(err)
	}
	df := build(t, spec, iceberg.EntryContentData, iceberg.ParquetFile, "file:///tmp/t/data/a.parquet", "a")
	entry := func(snapshot int64, fileSeq *int64) iceberg.ManifestEntry {
		return iceberg.NewManifestEntry(iceberg.EntryStatusEXISTING, &snapshot, fileSeq, fileSeq, df)
	}
	seq := func(n int64) *int64 { return &n }
	cut := base.Add(4 * time.Hour) // snapshot 4's commit
	a := newAddedIndex(meta, cut)
	for _, c := range []struct {
		name  string
		e     iceberg.ManifestEntry
		young bool
	}{
		{"added before the cut", entry(3, seq(3)), false},
		{"added at the cut", entry(4, seq(4)), true},
		{"added after", entry(5, seq(5)), true},
		{"added by an expired snapshot, dated by snapshot 3", entry(2, seq(2)), false},
		{"no file sequence number (v1)", entry(2, nil), false},
		{"nothing to date it by", entry(7, seq(9)), true},
	} {
		if got := a.young(c.e); got != c.young {
			t.Errorf("%s: young %t, want %t", c.name, got, c.young)
		}
	}
	// Dated at 4h by snapshot 4 (sequence number 4, the earliest kept at
	// or above 4): young for a cut at 4h, old for a later one.
	if !a.young(entry(8, seq(4))) || newAddedIndex(meta, cut.Add(time.Minute)).young(entry(8, seq(4))) {
		t.Error("an expired snapshot of sequence number 4 is not dated by snapshot 4")
	}
}

// TestFile_TheAddedMarkCostsNoMemory: the mark lives in File's padding,
// so a million planned files take no more memory (docs/PERFORMANCE.md).
func TestFile_TheAddedMarkCostsNoMemory(t *testing.T) {
	if n := unsafe.Sizeof(File{}); n != 112 {
		t.Fatalf("File is %d bytes, want 112 (Go's 112-byte size class)", n)
	}
}
