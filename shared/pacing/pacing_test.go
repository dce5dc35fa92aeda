package pacing_test

import (
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/harness/writehistory"
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

func metadataOf(t *testing.T, commits []writehistory.Commit) table.Metadata {
	t.Helper()
	schema := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	base, err := table.NewMetadata(schema, iceberg.UnpartitionedSpec, table.UnsortedSortOrder, "s3://bucket/t", nil)
	if err != nil {
		t.Fatal(err)
	}
	meta, err := writehistory.Append(base, commits)
	if err != nil {
		t.Fatal(err)
	}
	return meta
}

func TestWriteRate_CountsTheWritersFilesOfTheWindowAndNotCompactions(t *testing.T) {
	now := time.Date(2026, 12, 5, 12, 0, 0, 0, time.UTC)
	ago := func(m int) time.Time { return now.Add(-time.Duration(m) * time.Minute) }
	meta := metadataOf(t, []writehistory.Commit{
		{At: ago(90), Operation: table.OpAppend, AddedDataFiles: 50},   // before the window
		{At: ago(50), Operation: table.OpAppend, AddedDataFiles: 3},    // in
		{At: ago(40), Operation: table.OpReplace, AddedDataFiles: 1},   // a compaction: not the writers'
		{At: ago(30), Operation: table.OpOverwrite, AddedDataFiles: 2}, // a MERGE: in
		{At: ago(20), Operation: table.OpDelete, AddedDataFiles: 0},    // no files
		{At: ago(10), Operation: table.OpAppend, AddedDataFiles: -1},   // no summary count
		{At: ago(5), Operation: table.OpAppend, AddedDataFiles: 1},     // in
	})
	if got := pacing.WriteRate(meta, now, time.Hour); got != 6 {
		t.Fatalf("WriteRate = %v files an hour, want 6 (3 + 2 + 1 in the hour)", got)
	}
	if got := pacing.WriteRate(meta, now, 30*time.Minute); got != 2 {
		t.Fatalf("WriteRate over half an hour = %v, want 2 (1 file in it, by the hour)", got)
	}
}
