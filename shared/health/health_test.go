package health

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	iofs "io/fs"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/compaction"
	"github.com/aws/aws-sdk-go-v2/aws"
	"golang.org/x/sync/semaphore"

	"github.com/icekeeper/icekeeper/shared/catalogs"
	"github.com/icekeeper/icekeeper/shared/harness/sampletable"
	"github.com/icekeeper/icekeeper/shared/metrics"
	"github.com/icekeeper/icekeeper/shared/optin"
	"github.com/icekeeper/icekeeper/shared/orphans"
)

// fixture is a sqlite catalog and its warehouse in a temporary folder.
type fixture struct {
	cat       catalog.Catalog
	dir       string // local folder of the warehouse
	warehouse string
}

func setup(t *testing.T) fixture {
	t.Helper()
	dir := t.TempDir()
	wh := filepath.Join(dir, "wh")
	cat, err := catalogs.Open(context.Background(), catalogs.Config{Type: "sql", Name: "health", URI: "file:" + filepath.Join(dir, "cat.db"), Warehouse: "file://" + wh}, aws.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return fixture{cat: cat, dir: wh, warehouse: "file://" + wh}
}

// sample is the known sample table of these tests: 2 partitions, 6 appends
// of 50 rows per partition, position deletes (v2) or deletion vectors (v3)
// of every 7th id of the first 300, equality deletes of every 11th id.
func sample(v int) sampletable.Options {
	return sampletable.Options{FormatVersion: v, Partitions: 2, Files: 6, RowsPerFile: 50, PositionDeletes: true, EqualityDeletes: true}
}

func (f fixture) create(t *testing.T, name string, o sampletable.Options) *table.Table {
	t.Helper()
	tbl, err := sampletable.Create(context.Background(), f.cat, table.Identifier{"ns", name}, o)
	if err != nil {
		t.Fatal(err)
	}
	return tbl
}

func assess(t *testing.T, tbl *table.Table, now time.Time) Report {
	t.Helper()
	th, err := ThresholdsFor(tbl.Properties(), 0)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Assess(context.Background(), tbl, now, th)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// deletedIDs counts, per region, the ids sampletable.Create deletes.
func deletedIDs(o sampletable.Options) (pos, eq map[string]int64) {
	regionOf := sampletable.RegionOf(o.Partitions, o.RowsPerFile)
	total := int64(o.Partitions * o.Files * o.RowsPerFile)
	pos, eq = map[string]int64{}, map[string]int64{}
	for id := int64(3); id < total/2; id += 7 {
		pos["region="+regionOf(id)]++
	}
	for id := int64(5); id < total; id += 11 {
		eq["region="+regionOf(id)]++
	}
	return pos, eq
}

func TestAssess_CountsPerPartitionAndKindAreExact(t *testing.T) {
	t.Parallel()
	f := setup(t)
	for _, v := range []int{2, 3} {
		t.Run("v"+strconv.Itoa(v), func(t *testing.T) {
			o := sample(v)
			tbl := f.create(t, "exact_v"+strconv.Itoa(v), o)
			r := assess(t, tbl, time.Now())
			pos, eq := deletedIDs(o)

			if r.Table != "ns.exact_v"+strconv.Itoa(v) || r.SnapshotID != tbl.CurrentSnapshot().SnapshotID || r.MetadataLocation != tbl.MetadataLocation() {
				t.Fatalf("identity: %q %d %q", r.Table, r.SnapshotID, r.MetadataLocation)
			}
			if len(r.Partitions) != 2 || r.Partitions[0].Partition != "region=region-00" || r.Partitions[1].Partition != "region=region-01" {
				t.Fatalf("partitions %+v", r.Partitions)
			}
			for _, p := range r.Partitions {
				// One data file per append; every file is far below 75% of
				// the 512 MiB default target.
				if p.DataFiles != 6 || p.SmallFiles != 6 || p.Records != 300 || p.AvgFileBytes != p.DataBytes/6 || p.SmallFileBytes != p.DataBytes {
					t.Fatalf("%s data: %+v", p.Partition, p.FileStats)
				}
				// One equality delete file per partition, with one row per
				// deleted id.
				if p.EqualityDeleteFiles != 1 || p.EqualityDeleteRows != eq[p.Partition] {
					t.Fatalf("%s equality deletes: %d files, %d rows; want 1, %d", p.Partition, p.EqualityDeleteFiles, p.EqualityDeleteRows, eq[p.Partition])
				}
				var gotPos int64
				if v == 2 {
					// iceberg-go writes one position delete file per partition.
					if p.PositionDeleteFiles != 1 || p.DeletionVectors != 0 {
						t.Fatalf("%s v2 deletes: %+v", p.Partition, p.FileStats)
					}
					gotPos = p.PositionDeleteRows
				} else {
					// One deletion vector per data file of the first 3 appends.
					if p.DeletionVectors != 3 || p.PositionDeleteFiles != 0 {
						t.Fatalf("%s v3 deletes: %+v", p.Partition, p.FileStats)
					}
					gotPos = p.DeletionVectorRows
				}
				if gotPos != pos[p.Partition] {
					t.Fatalf("%s deleted positions %d, want %d", p.Partition, gotPos, pos[p.Partition])
				}
				if want := float64(pos[p.Partition]) / 300; p.DeletedRowRatio != want {
					t.Fatalf("%s ratio %v, want %v", p.Partition, p.DeletedRowRatio, want)
				}
				if p.DeleteFiles != p.PositionDeleteFiles+p.DeletionVectors+p.EqualityDeleteFiles {
					t.Fatalf("%s delete files %d", p.Partition, p.DeleteFiles)
				}
				// The sample's files are a few KiB: all below 16 KiB.
				if want := []int{6, 0, 0, 0, 0, 0, 0, 0, 0, 0}; !slices.Equal(p.SizeHistogram, want) {
					t.Fatalf("%s size histogram %v, want %v", p.Partition, p.SizeHistogram, want)
				}
			}
			if r.SizeHistogram[0] != 12 {
				t.Fatalf("table size histogram %v, want the 12 files in the first bucket", r.SizeHistogram)
			}
			// Totals agree with the partitions and with Measure.
			st, err := Measure(context.Background(), tbl)
			if err != nil {
				t.Fatal(err)
			}
			if r.DataFiles != 12 || r.DataFiles != st.DataFiles || r.DataBytes != st.DataBytes || r.Records != 600 ||
				r.PositionDeleteFiles != st.PositionDeleteFiles || r.DeletionVectors != st.DeletionVectors || r.EqualityDeleteFiles != st.EqualityDeleteFiles {
				t.Fatalf("totals %+v, Measure %+v", r.FileStats, st)
			}
			if r.PositionDeleteRows+r.DeletionVectorRows != 43 || r.EqualityDeleteRows != 55 {
				t.Fatalf("total delete rows: %d position, %d DV, %d equality", r.PositionDeleteRows, r.DeletionVectorRows, r.EqualityDeleteRows)
			}
			// 6 appends, one delete commit, one equality delete commit.
			if r.Snapshots != 8 || r.ExpirableSnapshots != 0 || r.DataManifests != 6 || r.DeleteManifests != 2 || r.Manifests() != 8 {
				t.Fatalf("snapshots %d (%d expirable), manifests %d data + %d delete", r.Snapshots, r.ExpirableSnapshots, r.DataManifests, r.DeleteManifests)
			}
			local := strings.TrimPrefix(tbl.MetadataLocation(), "file://")
			fi, err := os.Stat(local)
			if err != nil {
				t.Fatal(err)
			}
			if r.MetadataBytes != fi.Size() || r.PreviousMetadataFiles == 0 {
				t.Fatalf("metadata %d bytes (file has %d), %d previous", r.MetadataBytes, fi.Size(), r.PreviousMetadataFiles)
			}
			if r.OldestSnapshotAt == nil || r.OldestSnapshotAgeSeconds > 600 {
				t.Fatalf("oldest snapshot %v, %ds", r.OldestSnapshotAt, r.OldestSnapshotAgeSeconds)
			}
		})
	}
}

// TestSizeBucket_PowersOfFourFrom16KiB: a bucket holds the sizes below
// its bound and at least the previous one.
func TestSizeBucket_PowersOfFourFrom16KiB(t *testing.T) {
	for n, want := range map[int64]int{0: 0, 16<<10 - 1: 0, 16 << 10: 1, 64<<10 - 1: 1, 1 << 20: 4, 512 << 20: 8, 1<<30 - 1: 8, 1 << 30: 9, 5 << 30: 9} {
		if got := sizeBucket(n); got != want {
			t.Errorf("sizeBucket(%d) = %d, want %d", n, got, want)
		}
	}
}

func TestAssess_OldestSnapshotAgeFollowsNow(t *testing.T) {
	t.Parallel()
	f := setup(t)
	tbl := f.create(t, "age", sampletable.Options{Files: 1, RowsPerFile: 5})
	oldest := time.UnixMilli(tbl.Metadata().Snapshots()[0].TimestampMs)
	r := assess(t, tbl, oldest.Add(90*time.Minute))
	if r.OldestSnapshotAgeSeconds != 5400 || r.OldestSnapshotAge() != 90*time.Minute {
		t.Fatalf("age %ds", r.OldestSnapshotAgeSeconds)
	}
}

// compact rewrites every small file with iceberg-go's own compaction,
// dropping the delete files that no longer apply.
func compact(t *testing.T, tbl *table.Table) *table.Table {
	t.Helper()
	ctx := context.Background()
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cfg := compaction.DefaultConfig()
	cfg.MinInputFiles = 2
	plan, err := cfg.PlanCompaction(tasks)
	if err != nil || len(plan.Groups) == 0 {
		t.Fatalf("compaction plan: %v (%d groups)", err, len(plan.Groups))
	}
	rewritten := map[string]struct{}{}
	groups := make([]table.CompactionTaskGroup, len(plan.Groups))
	for i, g := range plan.Groups {
		groups[i] = table.CompactionTaskGroup{PartitionKey: g.PartitionKey, Tasks: g.Tasks, TotalSizeBytes: g.TotalSizeBytes}
		for _, task := range g.Tasks {
			rewritten[task.File.FilePath()] = struct{}{}
		}
	}
	fsys, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	deadEq, err := compaction.CollectDeadEqualityDeletesWithSpecs(ctx, fsys, tbl.Metadata(), tbl.CurrentSnapshot(), rewritten)
	if err != nil {
		t.Fatal(err)
	}
	deadPos, err := compaction.CollectDeadPositionDeletes(ctx, fsys, tbl.CurrentSnapshot(), rewritten)
	if err != nil {
		t.Fatal(err)
	}
	txn := tbl.NewTransaction()
	if _, err := txn.RewriteDataFiles(ctx, groups, table.RewriteDataFilesOptions{ExtraDeleteFilesToRemove: append(deadEq, deadPos...)}); err != nil {
		t.Fatal(err)
	}
	out, err := txn.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestAssess_SmallFilesAndDeletesRecommendCompactionAndScoreAboveCompacted(t *testing.T) {
	t.Parallel()
	f := setup(t)
	for _, v := range []int{2, 3} {
		t.Run("v"+strconv.Itoa(v), func(t *testing.T) {
			tbl := f.create(t, "score_v"+strconv.Itoa(v), sample(v))
			now := time.Now()
			before := assess(t, tbl, now)
			rec, ok := before.Recommends(ActionCompaction)
			if !ok {
				t.Fatalf("no compaction recommended: %+v", before.Recommendations)
			}
			if rec.EstimatedFiles != 12 || rec.EstimatedBytes != before.DataBytes || !strings.Contains(rec.Why, "region=region-00") {
				t.Fatalf("compaction estimate %+v (data bytes %d)", rec, before.DataBytes)
			}
			if before.Score <= 0 || before.Debt.Files <= 0 || before.Debt.DeleteFiles <= 0 || before.Debt.DeletedRows <= 0 {
				t.Fatalf("score %v, debt %+v", before.Score, before.Debt)
			}

			after := assess(t, compact(t, tbl), now)
			if after.DataFiles != 2 || after.DeleteFiles != 0 {
				t.Fatalf("compacted table: %+v", after.FileStats)
			}
			if _, ok := after.Recommends(ActionCompaction); ok {
				t.Fatalf("compacted table still gets compaction: %+v", after.Recommendations)
			}
			if !(before.Score > after.Score) || after.Score != 0 {
				t.Fatalf("score before %v, after %v (debt %+v)", before.Score, after.Score, after.Debt)
			}
		})
	}
}

// TestAssess_FewSmallFilesAreNotWorthACompactionBelowTheFileCountGoal:
// a partition's small files fewer than MinInputFiles are compacted only
// when the partition holds the file-count goal (twice its optimal file
// count) or more; with the goal off (an owner's min-input-files), only
// MinInputFiles decides.
func TestAssess_FewSmallFilesAreNotWorthACompactionBelowTheFileCountGoal(t *testing.T) {
	t.Parallel()
	f := setup(t)
	// 1 tiny file a partition: its optimum, nothing to compact.
	one := f.create(t, "one", sampletable.Options{Partitions: 2, Files: 1, RowsPerFile: 10})
	if r := assess(t, one, time.Now()); r.SmallFiles != 2 || hasCompaction(r) {
		t.Fatalf("1 file a partition: small files %d, recommendations %+v", r.SmallFiles, r.Recommendations)
	}
	// 2 a partition: twice the optimum of 1, at the goal; the writers'
	// next file would take each partition over it.
	two := f.create(t, "two", sampletable.Options{Partitions: 2, Files: 2, RowsPerFile: 10})
	if r := assess(t, two, time.Now()); r.SmallFiles != 4 || !hasCompaction(r) {
		t.Fatalf("2 files a partition: small files %d, recommendations %+v", r.SmallFiles, r.Recommendations)
	} else if rec, _ := r.Recommends(ActionCompaction); rec.EstimatedFiles != 4 {
		t.Fatalf("2 files a partition: %d files to compact, want 4", rec.EstimatedFiles)
	}
	// 4 a partition: fewer than MinInputFiles (5), over the goal.
	tbl := f.create(t, "few", sampletable.Options{Partitions: 2, Files: 4, RowsPerFile: 10})
	r := assess(t, tbl, time.Now())
	if rec, ok := r.Recommends(ActionCompaction); !ok || r.SmallFiles != 8 || rec.EstimatedFiles != 8 || r.Thresholds.FileCountGoal != DefaultFileCountGoal {
		t.Fatalf("4 files a partition: small files %d, thresholds %+v, recommendations %+v", r.SmallFiles, r.Thresholds, r.Recommendations)
	}
	th := r.Thresholds
	th.FileCountGoal = 0
	r, err := Assess(context.Background(), tbl, time.Now(), th)
	if err != nil {
		t.Fatal(err)
	}
	if hasCompaction(r) {
		t.Fatalf("the goal off, MinInputFiles 5: %+v", r.Recommendations)
	}
	th.MinInputFiles = 4
	if r, err = Assess(context.Background(), tbl, time.Now(), th); err != nil {
		t.Fatal(err)
	}
	if rec, ok := r.Recommends(ActionCompaction); !ok || rec.EstimatedFiles != 8 {
		t.Fatalf("the goal off, MinInputFiles 4: %+v", r.Recommendations)
	}
}

// TestThresholdsFor_AnOwnersMinInputFilesTurnsTheFileCountGoalOff: the
// goal is on by default and off when the table sets
// icekeeper.compaction.min-input-files, whatever its value.
func TestThresholdsFor_AnOwnersMinInputFilesTurnsTheFileCountGoalOff(t *testing.T) {
	for _, c := range []struct {
		props map[string]string
		want  int
	}{
		{map[string]string{}, DefaultFileCountGoal},
		{map[string]string{optin.PropertyCompactionMinInputFiles: "5"}, 0},
		{map[string]string{optin.PropertyCompactionMinInputFiles: "2"}, 0},
	} {
		th, err := ThresholdsFor(c.props, 0)
		if err != nil || th.FileCountGoal != c.want || th.CompactionRules().FileCountGoal != c.want {
			t.Errorf("%v: goal %d (rules %+v, err %v), want %d", c.props, th.FileCountGoal, th.CompactionRules(), err, c.want)
		}
	}
}

func hasCompaction(r Report) bool {
	_, ok := r.Recommends(ActionCompaction)
	return ok
}

func TestAssess_OldSnapshotsRecommendExpiry(t *testing.T) {
	t.Parallel()
	f := setup(t)
	tbl := f.create(t, "expiry", sample(2))
	// Six days later every snapshot is older than the 5-day default; only
	// the newest of main (min-snapshots-to-keep 1) is kept.
	r := assess(t, tbl, time.Now().Add(6*24*time.Hour))
	rec, ok := r.Recommends(ActionExpireSnapshots)
	if !ok || r.ExpirableSnapshots != 7 {
		t.Fatalf("expirable %d, recommendations %+v", r.ExpirableSnapshots, r.Recommendations)
	}
	// The current snapshot still uses every manifest: only the 7 manifest
	// lists go.
	if rec.EstimatedFiles != 7 || rec.EstimatedBytes != 0 || r.Debt.Snapshots != 7.0/8 {
		t.Fatalf("expiry %+v, debt %+v", rec, r.Debt)
	}

	// The table's retention is honoured.
	tx := tbl.NewTransaction()
	if err := tx.SetProperties(map[string]string{MinSnapshotsToKeepKey: "8"}); err != nil {
		t.Fatal(err)
	}
	kept, err := tx.Commit(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if r := assess(t, kept, time.Now().Add(6*24*time.Hour)); r.ExpirableSnapshots != 0 {
		t.Fatalf("min-snapshots-to-keep 8: %d expirable", r.ExpirableSnapshots)
	}

	// gc.enabled=false: files may be shared, nothing to recommend.
	th := r.Thresholds
	th.GCEnabled = false
	r, err = Assess(context.Background(), tbl, time.Now().Add(6*24*time.Hour), th)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Recommends(ActionExpireSnapshots); ok {
		t.Fatalf("gc disabled: %+v", r.Recommendations)
	}
}

func TestAssess_ManyManifestsRecommendARewrite(t *testing.T) {
	t.Parallel()
	f := setup(t)
	tbl := f.create(t, "manifests", sample(2))
	th, _ := ThresholdsFor(tbl.Properties(), 0)
	if r, _ := Assess(context.Background(), tbl, time.Now(), th); func() bool { _, ok := r.Recommends(ActionRewriteManifests); return ok }() {
		t.Fatalf("6 manifests under the default %d: %+v", th.MaxManifests, r.Recommendations)
	}
	th.MaxManifests = 4
	r, err := Assess(context.Background(), tbl, time.Now(), th)
	if err != nil {
		t.Fatal(err)
	}
	rec, ok := r.Recommends(ActionRewriteManifests)
	if !ok || rec.EstimatedFiles != 6 || rec.EstimatedBytes != r.DataManifestBytes || rec.EstimatedBytes <= 0 || r.Debt.Manifests != 2.0/6 {
		t.Fatalf("rewrite %+v, debt %+v", rec, r.Debt)
	}
}

func TestAssess_EmptyTableIsHealthy(t *testing.T) {
	t.Parallel()
	f := setup(t)
	ctx := context.Background()
	if err := f.cat.CreateNamespace(ctx, table.Identifier{"ns"}, nil); err != nil && !errors.Is(err, catalog.ErrNamespaceAlreadyExists) {
		t.Fatal(err)
	}
	tbl, err := f.cat.CreateTable(ctx, table.Identifier{"ns", "empty"}, sampletable.Schema())
	if err != nil {
		t.Fatal(err)
	}
	r := assess(t, tbl, time.Now())
	if r.Score != 0 || len(r.Recommendations) != 0 || r.DataFiles != 0 || r.Snapshots != 0 || r.MetadataBytes == 0 || r.OldestSnapshotAt != nil {
		t.Fatalf("empty table: %+v", r)
	}
}

// listFiles maps every file under dir to its size and modification time.
func listFiles(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, d iofs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		fi, err := d.Info()
		if err != nil {
			return err
		}
		out[p] = fmt.Sprintf("%s %d bytes", fi.ModTime(), fi.Size())
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestAssess_WritesNothing(t *testing.T) {
	t.Parallel()
	f := setup(t)
	tbl := f.create(t, "readonly", sample(3))
	before := listFiles(t, f.dir)
	ctx := context.Background()

	r := assess(t, tbl, time.Now().Add(6*24*time.Hour)) // also reads every manifest list for expiry
	if _, err := orphans.Find(ctx, tbl, orphans.Prefix{}, time.Time{}); err != nil {
		t.Fatal(err)
	}
	after := listFiles(t, f.dir)
	if len(after) != len(before) {
		t.Fatalf("%d files before, %d after", len(before), len(after))
	}
	for p, v := range before {
		if after[p] != v {
			t.Fatalf("%s changed: %q -> %q", p, v, after[p])
		}
	}
	reloaded, err := f.cat.LoadTable(ctx, table.Identifier{"ns", "readonly"})
	if err != nil {
		t.Fatal(err)
	}
	if reloaded.MetadataLocation() != tbl.MetadataLocation() || reloaded.CurrentSnapshot().SnapshotID != r.SnapshotID || len(reloaded.Metadata().Snapshots()) != r.Snapshots {
		t.Fatalf("table changed: %s -> %s", tbl.MetadataLocation(), reloaded.MetadataLocation())
	}
}

func TestFindOrphans_FindsStrayFilesNotLiveOnes(t *testing.T) {
	t.Parallel()
	f := setup(t)
	tbl := f.create(t, "orphans", sample(3))
	dataDir := filepath.Join(strings.TrimPrefix(tbl.Location(), "file://"), "data")
	now := time.Now()
	old := filepath.Join(dataDir, "stray-old.parquet")
	fresh := filepath.Join(dataDir, "region=region-00", "stray-fresh.parquet")
	for _, p := range []string{old, fresh} {
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte("not referenced"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Chtimes(old, now.Add(-2*time.Hour), now.Add(-2*time.Hour)); err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()

	for _, tc := range []struct {
		name      string
		olderThan time.Time
		want      []string
	}{
		{"no age filter: every unreferenced file, no live one", time.Time{}, []string{fresh, old}},
		{"only files older than the cutoff", now.Add(-time.Hour), []string{old}},
		{"nothing that old", now.Add(-3 * time.Hour), nil},
	} {
		t.Run(tc.name, func(t *testing.T) {
			found, err := orphans.Find(ctx, tbl, orphans.Prefix{}, tc.olderThan)
			got, n := orphans.Paths(found.Orphans)
			if err != nil {
				t.Fatal(err)
			}
			if strings.Join(got, "\n") != strings.Join(tc.want, "\n") {
				t.Fatalf("orphans %q, want %q", got, tc.want)
			}
			if n != int64(len(tc.want)*len("not referenced")) {
				t.Fatalf("bytes %d", n)
			}
		})
	}

	r := assess(t, tbl, now)
	found, _ := orphans.Find(ctx, tbl, orphans.Prefix{}, now.Add(-time.Hour))
	files, n := orphans.Paths(found.Orphans)
	r.AddOrphans(files, n, now.Add(-time.Hour))
	rec, ok := r.Recommends(ActionRemoveOrphans)
	if !ok || rec.EstimatedFiles != 1 || rec.EstimatedBytes != n || r.Orphans == nil || len(r.Orphans.Files) != 1 {
		t.Fatalf("orphan recommendation %+v, orphans %+v", rec, r.Orphans)
	}
	score := r.Score
	r.AddOrphans(nil, 0, now)
	if _, ok := r.Recommends(ActionRemoveOrphans); ok || r.Score != score {
		t.Fatalf("AddOrphans(none) left %+v, score %v -> %v", r.Recommendations, score, r.Score)
	}
}

func TestThresholdsFor_FollowsTableProperties(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name     string
		props    map[string]string
		override int64
		want     func(Thresholds) bool
	}{
		{"defaults", nil, 0, func(th Thresholds) bool {
			return th.TargetFileSize == table.WriteTargetFileSizeBytesDefault && th.SmallFileBytes == th.TargetFileSize*3/4 &&
				th.MinInputFiles == 5 && th.DeleteRatio == 0.3 && th.MaxSnapshots == 1 && th.MaxSnapshotAge == 5*24*time.Hour &&
				th.MaxManifests == 100 && th.GCEnabled
		}},
		{"target from the table", map[string]string{table.WriteTargetFileSizeBytesKey: "1000"}, 0, func(th Thresholds) bool {
			return th.TargetFileSize == 1000 && th.SmallFileBytes == 750
		}},
		{"override wins", map[string]string{table.WriteTargetFileSizeBytesKey: "1000"}, 4000, func(th Thresholds) bool {
			return th.TargetFileSize == 4000 && th.SmallFileBytes == 3000
		}},
		{"retention", map[string]string{MinSnapshotsToKeepKey: "3", MaxSnapshotAgeMsKey: "60000", table.GCEnabledKey: "false"}, 0, func(th Thresholds) bool {
			return th.MaxSnapshots == 3 && th.MaxSnapshotAge == time.Minute && !th.GCEnabled
		}},
		{"legacy retention keys", map[string]string{"min-snapshots-to-keep": "2", "max-snapshot-age-ms": "1000"}, 0, func(th Thresholds) bool {
			return th.MaxSnapshots == 2 && th.MaxSnapshotAge == time.Second
		}},
		{"prefixed key wins over legacy", map[string]string{MinSnapshotsToKeepKey: "4", "min-snapshots-to-keep": "2"}, 0, func(th Thresholds) bool {
			return th.MaxSnapshots == 4
		}},
		{"min-input-files from the table, into the planner's config", map[string]string{optin.PropertyCompactionMinInputFiles: "3"}, 0, func(th Thresholds) bool {
			return th.MinInputFiles == 3 && th.CompactionConfig().MinInputFiles == 3
		}},
		{"min-input-files of 1 is 2: one file is never enough input files", map[string]string{optin.PropertyCompactionMinInputFiles: "1"}, 0, func(th Thresholds) bool {
			return th.MinInputFiles == 2
		}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			th, err := ThresholdsFor(tc.props, tc.override)
			if err != nil {
				t.Fatal(err)
			}
			if !tc.want(th) {
				t.Fatalf("%+v", th)
			}
			if err := th.CompactionConfig().Validate(); err != nil {
				t.Fatalf("compaction config: %v", err)
			}
		})
	}
}

func TestThresholdsFor_MalformedPropertyIsNamed(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		key, value string
	}{
		{table.WriteTargetFileSizeBytesKey, "512MB"},
		{table.WriteTargetFileSizeBytesKey, "-1"},
		{MinSnapshotsToKeepKey, "0"},
		{MaxSnapshotAgeMsKey, "five days"},
		{table.GCEnabledKey, "maybe"},
		{optin.PropertyCompactionMinInputFiles, "0"},
		{optin.PropertyCompactionMinInputFiles, "few"},
	} {
		t.Run(tc.key+"="+tc.value, func(t *testing.T) {
			_, err := ThresholdsFor(map[string]string{tc.key: tc.value}, 0)
			if !errors.Is(err, ErrInvalidThresholds) || !strings.Contains(err.Error(), tc.key) || !strings.Contains(err.Error(), tc.value) {
				t.Fatalf("err %v: want ErrInvalidThresholds naming %s=%q", err, tc.key, tc.value)
			}
		})
	}
	if _, err := ThresholdsFor(nil, -1); !errors.Is(err, ErrInvalidThresholds) {
		t.Fatalf("negative override: %v", err)
	}
}

func TestThresholds_JSONRoundTrip(t *testing.T) {
	t.Parallel()
	th, _ := ThresholdsFor(map[string]string{MaxSnapshotAgeMsKey: "90000"}, 0)
	b, err := json.Marshal(th)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(b), `"max_snapshot_age_ms":90000`) {
		t.Fatalf("json %s", b)
	}
	var back Thresholds
	if err := json.Unmarshal(b, &back); err != nil || back != th {
		t.Fatalf("round trip %+v -> %+v (%v)", th, back, err)
	}
}

func TestDebt_ScoreIsAWeightedSumFrom0To100(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		d    Debt
		want float64
	}{
		{Debt{}, 0},
		{Debt{Files: 1, DeleteFiles: 1, DeletedRows: 1, Snapshots: 1, Manifests: 1}, 100},
		{Debt{Files: 0.5}, 12.5},
		{Debt{Snapshots: 1.0 / 3}, 5},
	} {
		if got := tc.d.Score(); got != tc.want {
			t.Fatalf("%+v: score %v, want %v", tc.d, got, tc.want)
		}
	}
}

func TestReport_MetricsAreValidEMFGauges(t *testing.T) {
	t.Parallel()
	f := setup(t)
	r := assess(t, f.create(t, "metrics", sample(3)), time.Now())
	ms := r.Metrics()
	got := map[string]metrics.Metric{}
	for _, m := range ms {
		got[m.Name] = m
	}
	for name, want := range map[string]metrics.Metric{
		MetricDataFiles:                {Value: 12, Unit: metrics.Count},
		MetricSmallFiles:               {Value: 12, Unit: metrics.Count},
		MetricAvgFileBytes:             {Value: float64(r.AvgFileBytes), Unit: metrics.Bytes},
		MetricDeleteFiles:              {Value: 8, Unit: metrics.Count},
		MetricPositionDeleteFiles:      {Value: 0, Unit: metrics.Count},
		MetricDeletionVectors:          {Value: 6, Unit: metrics.Count},
		MetricEqualityDeleteFiles:      {Value: 2, Unit: metrics.Count},
		MetricDeletedRowRatio:          {Value: r.DeletedRowRatio, Unit: metrics.None},
		MetricSnapshots:                {Value: 8, Unit: metrics.Count},
		MetricManifests:                {Value: 8, Unit: metrics.Count},
		MetricMetadataBytes:            {Value: float64(r.MetadataBytes), Unit: metrics.Bytes},
		MetricOldestSnapshotAgeSeconds: {Value: float64(r.OldestSnapshotAgeSeconds), Unit: metrics.Seconds},
		MetricHealthScore:              {Value: r.Score, Unit: metrics.None},
	} {
		m, ok := got[name]
		if !ok || m.Value != want.Value || m.Unit != want.Unit {
			t.Fatalf("%s = %+v, want %+v", name, m, want)
		}
	}
	// Only what the dashboard graphs is a CloudWatch metric (aggregated
	// over the tables); the rest is in the log record and the report.
	for _, m := range ms {
		published := m.Name == MetricHealthScore || m.Name == MetricSmallFiles || m.Name == MetricDeleteFiles
		if want := map[bool]metrics.Publication{true: metrics.Aggregated, false: metrics.LogOnly}[published]; m.Publish != want {
			t.Fatalf("%s publication %d, want %d", m.Name, m.Publish, want)
		}
	}
	var buf bytes.Buffer
	if err := metrics.NewEmitter(&buf, "", time.Now).Emit(map[string]string{"table": r.Table}, ms...); err != nil {
		t.Fatalf("emit: %v", err)
	}
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil || line["table"] != "ns.metrics" || line[MetricDataFiles] != 12.0 {
		t.Fatalf("EMF line %s (%v)", buf.String(), err)
	}
}

func TestReport_JSONRoundTrip(t *testing.T) {
	t.Parallel()
	f := setup(t)
	r := assess(t, f.create(t, "json", sample(2)), time.Now())
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{`"data_files":12`, `"partitions":[`, `"partition":"region=region-00"`, `"deleted_row_ratio":`, `"oldest_snapshot_age_seconds":`, `"metadata_bytes":`, `"recommendations":[{"action":"compaction"`, `"score":`} {
		if !strings.Contains(string(b), key) {
			t.Fatalf("JSON lacks %s: %s", key, b)
		}
	}
	var back Report
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back.DataFiles != r.DataFiles || len(back.Partitions) != 2 || back.Partitions[1].PositionDeleteRows != r.Partitions[1].PositionDeleteRows || back.Score != r.Score || back.Thresholds != r.Thresholds {
		t.Fatalf("round trip lost data: %+v", back)
	}
}

func TestAssess_CountsFilesOverTheDeleteRatio(t *testing.T) {
	t.Parallel()
	f := setup(t)
	// Two files of 10 rows; a deletion vector removes 4 rows (40%) of the
	// first and 1 row (10%) of the second.
	tbl := f.create(t, "ratio", sampletable.Options{FormatVersion: 3, Files: 2, RowsPerFile: 10})
	tbl, err := sampletable.DeleteByPosition(context.Background(), tbl, []int64{0, 1, 2, 3, 10})
	if err != nil {
		t.Fatal(err)
	}
	r := assess(t, tbl, time.Now())
	if r.FilesOverDeleteRatio != 1 || r.Partitions[0].Partition != Unpartitioned || r.Partitions[0].FilesOverDeleteRatio != 1 {
		t.Fatalf("files over the ratio: %d (%+v)", r.FilesOverDeleteRatio, r.Partitions)
	}
	if r.DeletionVectorRows != 5 || r.DeletedRowRatio != 0.25 {
		t.Fatalf("deleted rows %d, ratio %v", r.DeletionVectorRows, r.DeletedRowRatio)
	}
	th := r.Thresholds
	th.DeleteRatio = 0.5
	if r, _ := Assess(context.Background(), tbl, time.Now(), th); r.FilesOverDeleteRatio != 0 {
		t.Fatalf("ratio 0.5: %d files over", r.FilesOverDeleteRatio)
	}
}

// TestAssess_ATableTooLargeToPlanIsReportedNotPlanned: with a memory
// budget below what scan planning of the table needs, Assess still
// measures the layout but makes no compaction plan (so no compaction
// recommendation) and says why; with the budget at the estimate it plans.
func TestAssess_ATableTooLargeToPlanIsReportedNotPlanned(t *testing.T) {
	t.Parallel()
	f := setup(t)
	tbl := f.create(t, "too_large", sample(2))
	snap := tbl.CurrentSnapshot()
	cols := len(overlapColumns(tbl.Metadata()))
	files, need, known, err := ScanPlanningMemory(context.Background(), tbl, snap, cols)
	if err != nil || !known || files == 0 {
		t.Fatalf("estimate: %d files, %d bytes, known %v, %v", files, need, known, err)
	}
	if want := files * (600 + 48*int64(cols)); need != want {
		t.Fatalf("estimate %d bytes, want %d", need, want)
	}
	th, err := ThresholdsFor(tbl.Properties(), 0)
	if err != nil {
		t.Fatal(err)
	}
	r, err := Assess(context.Background(), tbl, time.Now(), th, WithMemoryBudget(need-1))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(r.CompactionPlanSkipped, fmt.Sprintf("%d live data files", files)) || !strings.Contains(r.CompactionPlanSkipped, "plannerMemoryMb") {
		t.Fatalf("skipped: %q", r.CompactionPlanSkipped)
	}
	if _, ok := r.Recommends(ActionCompaction); ok || r.DataFiles != int(files) {
		t.Fatalf("recommendations %+v, data files %d (want no compaction and %d files measured)", r.Recommendations, r.DataFiles, files)
	}
	r, err = Assess(context.Background(), tbl, time.Now(), th, WithMemoryBudget(need))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Recommends(ActionCompaction); !ok || r.CompactionPlanSkipped != "" {
		t.Fatalf("at the estimate: skipped %q, recommendations %+v", r.CompactionPlanSkipped, r.Recommendations)
	}
}

// recordingGate is a MemoryGate of size bytes that records what it lent
// and the most it ever lent at once; it fails an Acquire it could never
// grant (more than its size) instead of blocking forever.
type recordingGate struct {
	size int64
	sem  *semaphore.Weighted

	mu       sync.Mutex
	lent     int64
	most     int64
	acquired []int64
}

func newRecordingGate(size int64) *recordingGate {
	return &recordingGate{size: size, sem: semaphore.NewWeighted(size)}
}

func (g *recordingGate) Acquire(ctx context.Context, n int64) error {
	if n > g.size {
		return fmt.Errorf("asked %d of a gate of %d", n, g.size)
	}
	if err := g.sem.Acquire(ctx, n); err != nil {
		return err
	}
	g.mu.Lock()
	g.lent += n
	g.most = max(g.most, g.lent)
	g.acquired = append(g.acquired, n)
	g.mu.Unlock()
	return nil
}

func (g *recordingGate) Release(n int64) {
	g.mu.Lock()
	g.lent -= n
	g.mu.Unlock()
	g.sem.Release(n)
}

// TestAssess_AssessmentsAtOnceShareTheMemoryBudget: an assessment holds
// its scan planning's estimate in the gate while it reads the snapshot
// and gives it back; a table too large to plan holds nothing; tables
// assessed at once whose estimates together exceed the budget never hold
// more than the budget, and each still gets its compaction plan.
func TestAssess_AssessmentsAtOnceShareTheMemoryBudget(t *testing.T) {
	t.Parallel()
	f := setup(t)
	tbl := f.create(t, "gated", sample(2))
	cols := len(overlapColumns(tbl.Metadata()))
	_, need, known, err := ScanPlanningMemory(context.Background(), tbl, tbl.CurrentSnapshot(), cols)
	if err != nil || !known || need == 0 {
		t.Fatalf("estimate %d, known %v, %v", need, known, err)
	}
	th, err := ThresholdsFor(tbl.Properties(), 0)
	if err != nil {
		t.Fatal(err)
	}

	// One alone: holds its estimate, gives it back.
	gate := newRecordingGate(need)
	r, err := Assess(context.Background(), tbl, time.Now(), th, WithMemoryBudget(need), WithMemoryGate(gate))
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := r.Recommends(ActionCompaction); !ok {
		t.Fatalf("no compaction recommended: %+v", r.Recommendations)
	}
	if !slices.Equal(gate.acquired, []int64{need}) || gate.lent != 0 {
		t.Fatalf("acquired %v, still lent %d; want %d acquired and given back", gate.acquired, gate.lent, need)
	}

	// Too large to plan: holds nothing, plans nothing.
	small := newRecordingGate(need - 1)
	if r, err = Assess(context.Background(), tbl, time.Now(), th, WithMemoryBudget(need-1), WithMemoryGate(small)); err != nil || r.CompactionPlanSkipped == "" {
		t.Fatalf("too large: skipped %q, %v", r.CompactionPlanSkipped, err)
	}
	if len(small.acquired) != 0 {
		t.Fatalf("a table too large to plan acquired %v", small.acquired)
	}

	// Eight at once, room for one and a half: never more than the budget.
	budget := need + need/2
	shared := newRecordingGate(budget)
	var wg sync.WaitGroup
	errs := make([]error, 8)
	for i := range errs {
		wg.Go(func() {
			r, err := Assess(context.Background(), tbl, time.Now(), th, WithMemoryBudget(budget), WithMemoryGate(shared))
			if _, ok := r.Recommends(ActionCompaction); err == nil && !ok {
				err = fmt.Errorf("no compaction recommended")
			}
			errs[i] = err
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		t.Fatal(err)
	}
	if shared.most > budget || len(shared.acquired) != 8 || shared.lent != 0 {
		t.Fatalf("most lent at once %d of %d; acquired %v; still lent %d", shared.most, budget, shared.acquired, shared.lent)
	}
}
