package health

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/compaction"

	"github.com/icekeeper/icekeeper/shared/harness/sampletable"
	"github.com/icekeeper/icekeeper/shared/messages"
	"github.com/icekeeper/icekeeper/shared/optin"
)

// hotFile is a small data file of region region, spec 0.
func hotFile(t *testing.T, spec iceberg.PartitionSpec, path, region string) iceberg.DataFile {
	t.Helper()
	b, err := iceberg.NewDataFileBuilder(spec, iceberg.EntryContentData, path, iceberg.ParquetFile, map[int]any{1000: region}, nil, nil, 10, 100)
	if err != nil {
		t.Fatal(err)
	}
	return b.Build()
}

func regionSpec() iceberg.PartitionSpec {
	return iceberg.NewPartitionSpec(iceberg.PartitionField{SourceIDs: []int{2}, FieldID: 1000, Transform: iceberg.IdentityTransform{}, Name: "region"})
}

// TestScopeYoung_OnlyHotPartitionsLoseTheirYoungFiles: of recorded files,
// the young ones of a partition written within the idle time are taken
// out and counted; the young files of a cold partition, or of one written
// longer ago than the idle time, stay candidates, and the order of what
// is kept is the plan's.
func TestScopeYoung_OnlyHotPartitionsLoseTheirYoungFiles(t *testing.T) {
	spec := regionSpec()
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	var tasks []table.FileScanTask
	young := map[string]bool{}
	for _, f := range []struct {
		path, region string
		young        bool
	}{
		{"a-old-1", "a", false}, {"a-young-1", "a", true}, {"b-young-1", "b", true}, {"a-old-2", "a", false},
		{"c-young-1", "c", true}, {"a-young-2", "a", true}, {"b-old-1", "b", false},
	} {
		tasks = append(tasks, table.FileScanTask{File: hotFile(t, spec, f.path, f.region)})
		young[f.path] = f.young
	}
	key := func(region string) string { return messages.PartitionKey(hotFile(t, spec, "x", region)) }
	writes := map[string]time.Time{
		key("a"): now.Add(-time.Minute),   // hot
		key("c"): now.Add(-2 * time.Hour), // written, but longer ago than the idle time
	}
	kept, left := ScopeYoung(tasks, writes, now, 10*time.Minute, func(df iceberg.DataFile) bool { return young[df.FilePath()] })
	var paths []string
	for _, k := range kept {
		paths = append(paths, k.File.FilePath())
	}
	if got := strings.Join(paths, " "); got != "a-old-1 b-young-1 a-old-2 c-young-1 b-old-1" {
		t.Fatalf("kept %s; want every file but region a's young ones, in order", got)
	}
	if len(left) != 1 || left[key("a")].Files != 2 || left[key("a")].Bytes != 200 || left[key("a")].File == nil {
		t.Fatalf("left %+v; want region a's 2 young files (200 bytes)", left)
	}
	if kept, left := ScopeYoung(tasks[:0:0], writes, now, 0, func(iceberg.DataFile) bool { return true }); len(kept) != 0 || left != nil {
		t.Fatalf("without an idle time: kept %d, left %v; want nothing taken", len(kept), left)
	}
}

// TestNoteYoung_SaysHowManyWereLeftAndWhy: a hot partition ScopeHot
// described gets its young files counted in its reason; a hot partition
// whose young files were its only candidates, or whose older files made
// no group, is described too, as left alone.
func TestNoteYoung_SaysHowManyWereLeftAndWhy(t *testing.T) {
	spec := regionSpec()
	now := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	idle, minAge := 10*time.Minute, 2*time.Hour
	name := func(df iceberg.DataFile) string { return "region=" + df.Partition()[1000].(string) }
	a, b := hotFile(t, spec, "a-old", "a"), hotFile(t, spec, "b-young", "b")
	writes := map[string]time.Time{messages.PartitionKey(a): now.Add(-time.Minute), messages.PartitionKey(b): now.Add(-3 * time.Minute)}
	var group compaction.Group
	for range 5 {
		group.Tasks = append(group.Tasks, table.FileScanTask{File: a})
	}
	kept, hot := ScopeHot([]compaction.Group{group}, writes, now, idle, 1, name)
	if len(kept) != 1 || len(hot) != 1 {
		t.Fatalf("ScopeHot kept %d groups, described %+v", len(kept), hot)
	}
	young := map[string]YoungFiles{
		messages.PartitionKey(a): {Files: 3, Bytes: 300, File: hotFile(t, spec, "a-young", "a")},
		messages.PartitionKey(b): {Files: 4, Bytes: 400, File: b},
	}
	hot = NoteYoung(hot, young, writes, now, idle, minAge, name)
	if len(hot) != 2 {
		t.Fatalf("described %+v; want regions a and b", hot)
	}
	if h := hot[0]; h.Partition != "region=a" || h.Skipped || h.CandidateFiles != 5 || h.YoungFiles != 3 || !strings.Contains(h.Why, "compacted anyway") || !strings.Contains(h.Why, "3 files added within the min file age of 2h0m0s are not candidates") {
		t.Fatalf("region a: %+v; want compacted, 5 candidates and 3 young files left", h)
	}
	if h := hot[1]; h.Partition != "region=b" || !h.Skipped || h.CandidateFiles != 0 || h.YoungFiles != 4 || !h.LastWriteAt.Equal(now.Add(-3*time.Minute)) || !strings.Contains(h.Why, "4 files added within the min file age") || !strings.Contains(h.Why, "no group worth rewriting") {
		t.Fatalf("region b: %+v; want left alone with 4 young files, and why", h)
	}
}

// snapshotAt is a recorded snapshot: its id, parent (0: none), sequence
// number, commit time and summary properties.
type snapshotAt struct {
	id, parent, seq int64
	at              time.Time
	props           iceberg.Properties
}

// metadataWith is a v2 table's metadata with the snapshots given, main at
// the last of them whose parent chain it names.
func metadataWith(t *testing.T, snaps []snapshotAt, main int64) table.Metadata {
	t.Helper()
	spec := regionSpec()
	meta, err := table.NewMetadata(sampletable.Schema(), &spec, table.UnsortedSortOrder, "file:///t", iceberg.Properties{"format-version": "2"})
	if err != nil {
		t.Fatal(err)
	}
	b, err := table.MetadataBuilderFromBase(meta, "file:///t/metadata/v1.metadata.json")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range snaps {
		snap := &table.Snapshot{SnapshotID: s.id, SequenceNumber: s.seq, TimestampMs: s.at.UnixMilli(), ManifestList: "file:///t/metadata/snap.avro",
			Summary: &table.Summary{Operation: table.OpAppend, Properties: s.props}}
		if s.parent != 0 {
			p := s.parent
			snap.ParentSnapshotID = &p
		}
		if err := b.AddSnapshot(snap); err != nil {
			t.Fatal(err)
		}
	}
	if err := b.SetSnapshotRef(table.MainBranch, main, table.BranchRef); err != nil {
		t.Fatal(err)
	}
	out, err := b.Build()
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestWriterCommits_CountsTheWritersOfTheMainBranchWithinTheWindow: from
// recorded snapshots, the writers' commits of the main branch within the
// window are counted, those that removed files among them, and the
// newest one's time returned; icekeeper's own snapshots, older ones and
// another branch's are not.
func TestWriterCommits_CountsTheWritersOfTheMainBranchWithinTheWindow(t *testing.T) {
	base := time.Now().Add(time.Hour).Truncate(time.Second) // after the metadata's creation, as commits are
	ours := iceberg.Properties{messages.SummaryJobID: "job-1"}
	removed := iceberg.Properties{"deleted-data-files": "2", "removed-delete-files": "0"}
	meta := metadataWith(t, []snapshotAt{
		{id: 1, seq: 1, at: base},
		{id: 2, parent: 1, seq: 2, at: base.Add(10 * time.Minute), props: removed},
		{id: 3, parent: 2, seq: 3, at: base.Add(70 * time.Minute), props: removed},
		{id: 4, parent: 3, seq: 4, at: base.Add(80 * time.Minute), props: ours},
		{id: 9, parent: 3, seq: 5, at: base.Add(85 * time.Minute), props: removed}, // another branch
		{id: 5, parent: 4, seq: 6, at: base.Add(90 * time.Minute)},
	}, 5)
	now := base.Add(100 * time.Minute)
	w := WriterCommits(meta, now, time.Hour)
	if w.Commits != 2 || w.Removing != 1 || !w.Last.Equal(base.Add(90*time.Minute)) {
		t.Fatalf("last hour: %+v; want 2 writer commits (snapshots 3 and 5), 1 removing files (3), newest at %s", w, base.Add(90*time.Minute))
	}
	if w := WriterCommits(meta, now, 2*time.Hour); w.Commits != 4 || w.Removing != 2 {
		t.Fatalf("last two hours: %+v; want 4 writer commits, 2 removing files", w)
	}
	if w := WriterCommits(meta, now, time.Minute); w.Commits != 0 || !w.Last.IsZero() {
		t.Fatalf("last minute: %+v; want none", w)
	}
}

// TestRemovesFiles_BySummaryCountsElseByOperation: a snapshot removed
// files when its summary counts deleted data files or removed delete
// files; without counts, anything but an append may have.
func TestRemovesFiles_BySummaryCountsElseByOperation(t *testing.T) {
	for _, c := range []struct {
		op    table.Operation
		props iceberg.Properties
		want  bool
	}{
		{table.OpAppend, iceberg.Properties{"added-data-files": "3"}, false},
		{table.OpOverwrite, iceberg.Properties{"deleted-data-files": "0", "added-delete-files": "1"}, false}, // a merge-on-read delete
		{table.OpOverwrite, iceberg.Properties{"deleted-data-files": "4"}, true},                             // copy-on-write
		{table.OpDelete, iceberg.Properties{"removed-delete-files": "1"}, true},
		{table.OpReplace, iceberg.Properties{"deleted-data-files": "9", "added-data-files": "1"}, true}, // another engine's compaction
		{table.OpOverwrite, nil, true},
		{table.OpAppend, nil, false},
	} {
		if got := RemovesFiles(table.Snapshot{Summary: &table.Summary{Operation: c.op, Properties: c.props}}); got != c.want {
			t.Errorf("%s %v: removes files %t, want %t", c.op, c.props, got, c.want)
		}
	}
}

// TestAssess_AHotPartitionsYoungFilesAreLeftAndCounted: with a min file
// age, the health report leaves the files a hot partition's writer added
// within it out of the compaction it recommends, and counts them on the
// partition. The file ages come from the snapshots' own commit times and
// an injected now.
func TestAssess_AHotPartitionsYoungFilesAreLeftAndCounted(t *testing.T) {
	ctx := context.Background()
	f := setup(t)
	tbl := f.create(t, "young", sampletable.Options{FormatVersion: 2, Partitions: 2, Files: 6, RowsPerFile: 50})
	old := tbl.CurrentSnapshot().TimestampMs
	for time.Now().UnixMilli() <= old { // the young files' commits come strictly later
	}
	var err error
	for i := range 2 {
		if tbl, err = sampletable.AppendRows(ctx, tbl, int64(10_000+10*i), 1, 10); err != nil { // region-00 only
			t.Fatal(err)
		}
	}
	var cut int64
	for _, s := range tbl.Metadata().Snapshots() {
		if s.TimestampMs > old && (cut == 0 || s.TimestampMs < cut) {
			cut = s.TimestampMs
		}
	}
	// Both partitions are hot (written within the idle time); region-00's
	// last two files are younger than the age.
	now := time.UnixMilli(cut).Add(time.Hour)
	props := map[string]string{optin.PropertyHotPartitionIdleTime: "2h", optin.PropertyHotPartitionMinFiles: "1", optin.PropertyHotPartitionMinFileAge: "1h"}
	for k, v := range tbl.Properties() {
		props[k] = v
	}
	th, err := ThresholdsFor(props, 0)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Assess(ctx, tbl, now, th)
	if err != nil {
		t.Fatal(err)
	}
	if len(r.HotPartitions) != 2 {
		t.Fatalf("hot partitions %+v; want both regions", r.HotPartitions)
	}
	for _, h := range r.HotPartitions {
		want := map[string]int{"region=region-00": 2, "region=region-01": 0}[h.Partition]
		if h.YoungFiles != want || h.CandidateFiles != 6 || h.Skipped {
			t.Fatalf("%s: %+v; want 6 candidates compacted and %d young files left", h.Partition, h, want)
		}
	}
	rec, ok := r.Recommends(ActionCompaction)
	if !ok || rec.EstimatedFiles != 12 {
		t.Fatalf("compaction recommendation %+v (found %t); want the 12 old files, not the 2 young ones", rec, ok)
	}
	// Without the age, the young files are candidates too.
	delete(props, optin.PropertyHotPartitionMinFileAge)
	if th, err = ThresholdsFor(props, 0); err != nil {
		t.Fatal(err)
	}
	if r, err = Assess(ctx, tbl, now, th); err != nil {
		t.Fatal(err)
	}
	if rec, ok := r.Recommends(ActionCompaction); !ok || rec.EstimatedFiles != 14 {
		t.Fatalf("without a min file age: %+v (found %t); want 14 files", rec, ok)
	}
}
