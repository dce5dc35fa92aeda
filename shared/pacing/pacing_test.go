package pacing_test

import (
	"strconv"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/pacing"
)

func TestNext_ATableItsWritersLeaveAloneKeepsTheInterval(t *testing.T) {
	if got := pacing.Next(pacing.Table{FilesAfter: 10, Optimum: 1}, time.Hour); got != time.Hour {
		t.Fatalf("Next = %v, want the hour: nothing is written", got)
	}
}

func TestNext_IsTheTimeTheWritersTakeToReachTwiceTheOptimum(t *testing.T) {
	// 4 files after the job, an optimum of 5: 6 files of headroom at 12
	// files an hour is half an hour.
	got := pacing.Next(pacing.Table{FilesAfter: 4, Optimum: 5, FilesPerHour: 12}, time.Hour)
	if got != 30*time.Minute {
		t.Fatalf("Next = %v, want 30m", got)
	}
}

func TestNext_StaysWithinTheFloorAndTheInterval(t *testing.T) {
	tests := []struct {
		name string
		t    pacing.Table
		want time.Duration
	}{
		{"slow writers: the interval", pacing.Table{FilesAfter: 1, Optimum: 10, FilesPerHour: 1}, time.Hour},
		{"fast writers: the floor", pacing.Table{FilesAfter: 1, Optimum: 1, FilesPerHour: 600}, 15 * time.Minute},
		{"over the goal after the job: the floor", pacing.Table{FilesAfter: 9, Optimum: 2, FilesPerHour: 1}, 15 * time.Minute},
		{"an empty table counts an optimum of one", pacing.Table{FilesAfter: 0, Optimum: 0, FilesPerHour: 4}, 30 * time.Minute},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			if got := pacing.Next(tc.t, time.Hour); got != tc.want {
				t.Fatalf("Next(%+v) = %v, want %v", tc.t, got, tc.want)
			}
		})
	}
}

func TestOptimum_IsTheTargetFilesTheBytesNeedAndAtLeastOne(t *testing.T) {
	for _, tc := range []struct {
		bytes, target int64
		want          int
	}{{0, 100, 1}, {1, 100, 1}, {100, 100, 1}, {101, 100, 2}, {1000, 0, 1}} {
		if got := pacing.Optimum(tc.bytes, tc.target); got != tc.want {
			t.Errorf("Optimum(%d, %d) = %d, want %d", tc.bytes, tc.target, got, tc.want)
		}
	}
}

// commit is one snapshot of the main branch, its minutes before now (-1
// added: no added-data-files in its summary).
type commit struct {
	minutesAgo int
	op         table.Operation
	added      int
}

func metadataOf(t *testing.T, now time.Time, commits []commit) table.Metadata {
	t.Helper()
	schema := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	base, err := table.NewMetadata(schema, iceberg.UnpartitionedSpec, table.UnsortedSortOrder, "s3://bucket/t", nil)
	if err != nil {
		t.Fatal(err)
	}
	b, err := table.MetadataBuilderFromBase(base, "")
	if err != nil {
		t.Fatal(err)
	}
	var parent *int64
	for i, c := range commits {
		id := int64(i + 1)
		props := map[string]string{}
		if c.added >= 0 {
			props["added-data-files"] = strconv.Itoa(c.added)
		}
		snap := table.Snapshot{
			SnapshotID: id, ParentSnapshotID: parent, SequenceNumber: id,
			TimestampMs: now.Add(-time.Duration(c.minutesAgo) * time.Minute).UnixMilli(),
			Summary:     &table.Summary{Operation: c.op, Properties: props},
		}
		if err := b.AddSnapshot(&snap); err != nil {
			t.Fatal(err)
		}
		if err := b.SetSnapshotRef(table.MainBranch, id, table.BranchRef); err != nil {
			t.Fatal(err)
		}
		parent = &id
	}
	meta, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return meta
}

func TestWriteRate_CountsTheWritersFilesOfTheWindowAndNotCompactions(t *testing.T) {
	// After the metadata's creation (now): a snapshot may not be older
	// than the metadata it is added to.
	now := time.Now().Add(3 * time.Hour)
	meta := metadataOf(t, now, []commit{
		{90, table.OpAppend, 50},   // before the window
		{50, table.OpAppend, 3},    // in
		{40, table.OpReplace, 1},   // a compaction: not the writers'
		{30, table.OpOverwrite, 2}, // a MERGE: in
		{20, table.OpDelete, 0},    // no files
		{10, table.OpAppend, -1},   // no summary count
		{5, table.OpAppend, 1},     // in
	})
	if got := pacing.WriteRate(meta, now, time.Hour); got != 6 {
		t.Fatalf("WriteRate = %v files an hour, want 6 (3 + 2 + 1 in the hour)", got)
	}
	if got := pacing.WriteRate(meta, now, 30*time.Minute); got != 2 {
		t.Fatalf("WriteRate over half an hour = %v, want 2 (1 file in it, by the hour)", got)
	}
}
