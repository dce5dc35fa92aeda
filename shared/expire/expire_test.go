package expire

import (
	"context"
	"errors"
	"fmt"
	iofs "io/fs"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/icekeeper/icekeeper/shared/catalogs"
	"github.com/icekeeper/icekeeper/shared/harness/fingerprint"
	"github.com/icekeeper/icekeeper/shared/harness/sampletable"
)

type fixture struct {
	ctx   context.Context
	cat   catalog.Catalog
	ident table.Identifier
	dir   string
}

// newTable makes a table with history: 6 appends, position and equality
// deletes, then a delete of one partition (its files leave the table), then
// two more appends: 11 snapshots on main, and files only old snapshots use.
func newTable(t *testing.T, version int) (*fixture, *table.Table) {
	t.Helper()
	dir := t.TempDir()
	ctx := context.Background()
	cat, err := catalogs.Open(ctx, catalogs.Config{Type: "sql", Name: "expire", URI: "file:" + filepath.Join(dir, "cat.db"), Warehouse: "file://" + filepath.Join(dir, "wh")}, aws.Config{})
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{ctx: ctx, cat: cat, ident: table.Identifier{"ns", "t"}, dir: dir}
	tbl, err := sampletable.Create(ctx, cat, f.ident, sampletable.Options{FormatVersion: version, Partitions: 2, Files: 6, RowsPerFile: 40, PositionDeletes: true, EqualityDeletes: true})
	if err != nil {
		t.Fatal(err)
	}
	txn := tbl.NewTransaction()
	if err := txn.Delete(ctx, iceberg.EqualTo(iceberg.Reference("region"), sampletable.Region(0)), nil); err != nil {
		t.Fatal(err)
	}
	if tbl, err = txn.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	for i := range 2 {
		if tbl, err = sampletable.AppendRows(ctx, tbl, int64(10_000+100*i), 2, 10); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(5 * time.Millisecond) // every snapshot strictly in the past
	return f, tbl
}

func ids(snaps []table.Snapshot) []int64 {
	out := make([]int64, len(snaps))
	for i, s := range snaps {
		out[i] = s.SnapshotID
	}
	return out
}

// mainLine is main's snapshots, newest first.
func mainLine(meta table.Metadata) []table.Snapshot {
	return table.AncestorsOf(meta.CurrentSnapshot().SnapshotID, meta.SnapshotByID)
}

// TestSelect_KeepsTheNewestAndExpiresTheOld: with min-snapshots-to-keep 3
// and every snapshot past the age, the 3 newest of main stay.
func TestSelect_KeepsTheNewestAndExpiresTheOld(t *testing.T) {
	_, tbl := newTable(t, 2)
	meta := tbl.Metadata()
	line := mainLine(meta)
	sel := Select(meta, time.Now().Add(time.Hour), Retention{MinSnapshotsToKeep: 3, MaxSnapshotAge: time.Minute, MaxRefAge: forever})
	if got, want := ids(sel.Kept), ids(line[:3]); !sameSet(got, want) {
		t.Fatalf("kept %v, want the 3 newest %v", got, want)
	}
	if len(sel.Expired) != len(line)-3 || len(sel.RemovedRefs) != 0 {
		t.Fatalf("expired %d of %d, removed refs %v", len(sel.Expired), len(line), sel.RemovedRefs)
	}
	// Young snapshots stay whatever the count.
	if sel := Select(meta, time.Now(), Retention{MinSnapshotsToKeep: 1, MaxSnapshotAge: time.Hour, MaxRefAge: forever}); !sel.Empty() {
		t.Fatalf("expired young snapshots: %v", ids(sel.Expired))
	}
}

// TestSelect_KeepsPinnedSnapshotsAndTheirBranchUpToItsHead: a job in
// flight pinned an old snapshot: it and every newer snapshot of main stay.
func TestSelect_KeepsPinnedSnapshotsAndTheirBranchUpToItsHead(t *testing.T) {
	_, tbl := newTable(t, 2)
	meta := tbl.Metadata()
	line := mainLine(meta)
	pin := line[7].SnapshotID
	sel := Select(meta, time.Now().Add(time.Hour), Retention{MinSnapshotsToKeep: 1, MaxSnapshotAge: time.Minute, MaxRefAge: forever}, pin)
	if got, want := ids(sel.Kept), ids(line[:8]); !sameSet(got, want) {
		t.Fatalf("kept %v, want the pin and everything after it %v", got, want)
	}
}

// TestSelect_RefsFollowTheirRetention: a tag keeps its snapshot; a branch
// older than max-ref-age is removed and keeps nothing; main is never
// removed.
func TestSelect_RefsFollowTheirRetention(t *testing.T) {
	f, tbl := newTable(t, 2)
	line := mainLine(tbl.Metadata())
	tagged, branched := line[8].SnapshotID, line[6].SnapshotID
	old := int64(1) // ms: older than anything
	if _, _, err := f.cat.CommitTable(f.ctx, f.ident, nil, []table.Update{
		table.NewSetSnapshotRefUpdate("audit", tagged, table.TagRef, 0, 0, 0),
		table.NewSetSnapshotRefUpdate("scratch", branched, table.BranchRef, old, 0, 0),
	}); err != nil {
		t.Fatal(err)
	}
	tbl, err := f.cat.LoadTable(f.ctx, f.ident)
	if err != nil {
		t.Fatal(err)
	}
	sel := Select(tbl.Metadata(), time.Now().Add(time.Hour), Retention{MinSnapshotsToKeep: 1, MaxSnapshotAge: time.Minute, MaxRefAge: forever})
	if !slices.Equal(sel.RemovedRefs, []string{"scratch"}) {
		t.Fatalf("removed refs %v, want scratch", sel.RemovedRefs)
	}
	if got, want := ids(sel.Kept), []int64{line[0].SnapshotID, tagged}; !sameSet(got, want) {
		t.Fatalf("kept %v, want main's head and the tag %v", got, want)
	}
	// max-ref-age on the table removes old refs, never main.
	sel = Select(tbl.Metadata(), time.Now().Add(time.Hour), Retention{MinSnapshotsToKeep: 1, MaxSnapshotAge: time.Minute, MaxRefAge: time.Minute})
	if !slices.Equal(sel.RemovedRefs, []string{"audit", "scratch"}) {
		t.Fatalf("removed refs %v, want audit and scratch", sel.RemovedRefs)
	}
}

// TestSelectRemoving_ARefNotRemovableKeepsWhatItsRetentionKeeps: a branch
// past its max-ref-age that keeps 2 snapshots: Select removes it and
// expires both; SelectRemoving without it among the removable refs keeps
// the branch, its head and its head's parent, and SelectRemoving with it
// selects what Select does.
func TestSelectRemoving_ARefNotRemovableKeepsWhatItsRetentionKeeps(t *testing.T) {
	f, tbl := newTable(t, 2)
	line := mainLine(tbl.Metadata())
	head, parent := line[6].SnapshotID, line[7].SnapshotID
	if _, _, err := f.cat.CommitTable(f.ctx, f.ident, nil, []table.Update{
		table.NewSetSnapshotRefUpdate("late", head, table.BranchRef, 1, 0, 2),
	}); err != nil {
		t.Fatal(err)
	}
	tbl, err := f.cat.LoadTable(f.ctx, f.ident)
	if err != nil {
		t.Fatal(err)
	}
	now, r := time.Now().Add(time.Hour), Retention{MinSnapshotsToKeep: 1, MaxSnapshotAge: time.Minute, MaxRefAge: forever}
	all := Select(tbl.Metadata(), now, r)
	if !slices.Equal(all.RemovedRefs, []string{"late"}) || !slices.Contains(ids(all.Expired), head) || !slices.Contains(ids(all.Expired), parent) {
		t.Fatalf("Select: removed refs %v, expired %v: want late removed, %d and %d expired", all.RemovedRefs, ids(all.Expired), head, parent)
	}
	kept := SelectRemoving(tbl.Metadata(), now, r, []string{"other"})
	if len(kept.RemovedRefs) != 0 {
		t.Fatalf("removed refs %v, want none", kept.RemovedRefs)
	}
	if got, want := ids(kept.Kept), []int64{line[0].SnapshotID, head, parent}; !sameSet(got, want) {
		t.Fatalf("kept %v, want main's head, the branch's head and its parent %v", got, want)
	}
	same := SelectRemoving(tbl.Metadata(), now, r, []string{"late"})
	if !slices.Equal(same.RemovedRefs, all.RemovedRefs) || !sameSet(ids(same.Expired), ids(all.Expired)) {
		t.Fatalf("SelectRemoving with late: %v %v, Select: %v %v", same.RemovedRefs, ids(same.Expired), all.RemovedRefs, ids(all.Expired))
	}
}

// TestSelect_AgreesWithIcebergGo: without pins, Select keeps exactly what
// iceberg-go's Transaction.ExpireSnapshots keeps, for several retentions.
func TestSelect_AgreesWithIcebergGo(t *testing.T) {
	_, tbl := newTable(t, 3)
	for _, c := range []struct {
		keep int
		age  time.Duration
	}{{1, 0}, {3, 0}, {5, time.Millisecond}, {20, 0}, {1, time.Hour}} {
		txn := tbl.NewTransaction()
		if err := txn.ExpireSnapshots(table.WithRetainLast(c.keep), table.WithOlderThan(c.age), table.WithPostCommit(false)); err != nil {
			t.Fatal(err)
		}
		staged, err := txn.StagedTable()
		if err != nil {
			t.Fatal(err)
		}
		sel := Select(tbl.Metadata(), time.Now(), Retention{MinSnapshotsToKeep: c.keep, MaxSnapshotAge: c.age, MaxRefAge: forever})
		if got, want := ids(sel.Kept), ids(staged.Metadata().Snapshots()); !sameSet(got, want) {
			t.Errorf("keep %d, age %s: kept %v, iceberg-go keeps %v", c.keep, c.age, got, want)
		}
	}
}

// TestUnreferenced_ExpiryFreesExactlyTheFilesOnlyExpiredSnapshotsUse: the
// expiry is committed, then the files Unreferenced lists are deleted. Time
// travel to every kept snapshot returns the same rows as before; every
// file a kept snapshot references is still there; and no file that only
// expired snapshots referenced is left.
func TestUnreferenced_ExpiryFreesExactlyTheFilesOnlyExpiredSnapshotsUse(t *testing.T) {
	for _, version := range []int{2, 3} {
		t.Run(map[int]string{2: "v2", 3: "v3"}[version], func(t *testing.T) {
			f, tbl := newTable(t, version)
			pre := tbl.Metadata()
			before := map[int64]fingerprint.Fingerprint{}
			for _, s := range pre.Snapshots() {
				fp, err := fingerprint.Scan(f.ctx, tbl.Scan(table.WithSnapshotID(s.SnapshotID)))
				if err != nil {
					t.Fatal(err)
				}
				before[s.SnapshotID] = fp
			}
			sel := Select(pre, time.Now().Add(time.Hour), Retention{MinSnapshotsToKeep: 3, MaxSnapshotAge: time.Minute, MaxRefAge: forever})
			reqs, updates := Updates(pre, sel, false)
			postMeta, _, err := f.cat.CommitTable(f.ctx, f.ident, reqs, updates)
			if err != nil {
				t.Fatal(err)
			}
			fsys, err := tbl.FS(f.ctx)
			if err != nil {
				t.Fatal(err)
			}
			freed, err := Unreferenced(f.ctx, fsys, pre, sel)
			if err != nil {
				t.Fatal(err)
			}
			if freed, err = StillUnreferenced(f.ctx, fsys, postMeta, ids(sel.Kept), sel.ExpiredIDs(), freed); err != nil {
				t.Fatal(err)
			}
			kinds := map[string]int{}
			for _, file := range freed {
				kinds[file.Kind]++
				if err := os.Remove(strings.TrimPrefix(file.Path, "file://")); err != nil {
					t.Fatalf("delete %s: %v", file.Path, err)
				}
			}
			// The deleted partition's data files (iceberg-go's Delete leaves
			// their delete files live, so those stay), the old manifests and
			// the manifest lists.
			if kinds[KindData] == 0 || kinds[KindManifest] == 0 || kinds[KindManifestList] != len(sel.Expired) {
				t.Fatalf("freed by kind %v (expired %d snapshots)", kinds, len(sel.Expired))
			}
			post, err := f.cat.LoadTable(f.ctx, f.ident)
			if err != nil {
				t.Fatal(err)
			}
			for _, s := range post.Metadata().Snapshots() {
				fp, err := fingerprint.Scan(f.ctx, post.Scan(table.WithSnapshotID(s.SnapshotID)))
				if err != nil {
					t.Fatalf("time travel to kept snapshot %d: %v", s.SnapshotID, err)
				}
				if fp != before[s.SnapshotID] {
					t.Fatalf("snapshot %d reads %s, before the expiry %s", s.SnapshotID, fp, before[s.SnapshotID])
				}
			}
			// On disk: exactly what the kept snapshots reference, plus the
			// metadata files.
			want := referenced(t, f.ctx, post)
			got := map[string]bool{}
			root := strings.TrimPrefix(post.Location(), "file://")
			err = filepath.WalkDir(root, func(p string, d iofs.DirEntry, err error) error {
				if err != nil || d.IsDir() || strings.HasSuffix(p, ".metadata.json") {
					return err
				}
				got["file://"+p] = true
				return nil
			})
			if err != nil {
				t.Fatal(err)
			}
			for p := range want {
				if !got[p] {
					t.Errorf("a kept snapshot's file was deleted: %s", p)
				}
			}
			for p := range got {
				if !want[p] {
					t.Errorf("a file only expired snapshots used is left: %s", p)
				}
			}
		})
	}
}

// referenced lists what the table's snapshots need: manifest lists,
// manifests and the files their live entries name.
func referenced(t *testing.T, ctx context.Context, tbl *table.Table) map[string]bool {
	t.Helper()
	fsys, err := tbl.FS(ctx)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]bool{}
	for _, s := range tbl.Metadata().Snapshots() {
		out[s.ManifestList] = true
		ms, err := s.Manifests(fsys)
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			out[m.FilePath()] = true
			for e, err := range m.Entries(fsys, true) {
				if err != nil {
					t.Fatal(err)
				}
				out[e.DataFile().FilePath()] = true
			}
		}
	}
	return out
}

// TestRetentionFor_IcekeeperOverridesIcebergWhichOverridesLegacy.
func TestRetentionFor_IcekeeperOverridesIcebergWhichOverridesLegacy(t *testing.T) {
	r, err := RetentionFor(map[string]string{
		legacyMinSnapshotsToKeepKey: "9", MinSnapshotsToKeepKey: "4",
		MaxSnapshotAgeMsKey: "60000", OverrideMaxSnapshotAgeMsKey: "1000",
		legacyMaxRefAgeMsKey: "5000",
	})
	if err != nil {
		t.Fatal(err)
	}
	if r.MinSnapshotsToKeep != 4 || r.MaxSnapshotAge != time.Second || r.MaxRefAge != 5*time.Second {
		t.Fatalf("retention %+v", r)
	}
	if r, _ := RetentionFor(nil); r.MinSnapshotsToKeep != 1 || r.MaxSnapshotAge != 5*24*time.Hour || r.MaxRefAge != forever {
		t.Fatalf("defaults %+v", r)
	}
	for _, bad := range []map[string]string{{MaxSnapshotAgeMsKey: "-1"}, {OverrideMinSnapshotsToKeepKey: "x"}, {MinSnapshotsToKeepKey: "0"}} {
		if _, err := RetentionFor(bad); !errors.Is(err, ErrRetention) {
			t.Errorf("%v: err %v, want ErrRetention", bad, err)
		}
	}
}

func sameSet(a, b []int64) bool {
	a, b = slices.Clone(a), slices.Clone(b)
	slices.Sort(a)
	slices.Sort(b)
	return slices.Equal(a, b)
}

// TestStillUnreferenced_DropsWhatSnapshotsCommittedSinceReference: files
// listed before the commit are kept when a snapshot committed since then
// references them; only those snapshots are read.
func TestStillUnreferenced_DropsWhatSnapshotsCommittedSinceReference(t *testing.T) {
	f, tbl := newTable(t, 2)
	fsys, err := tbl.FS(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	head := tbl.CurrentSnapshot()
	ms, err := head.Manifests(fsys)
	if err != nil {
		t.Fatal(err)
	}
	var live []File
	for e, err := range ms[0].Entries(fsys, true) {
		if err != nil {
			t.Fatal(err)
		}
		live = append(live, File{Path: e.DataFile().FilePath(), Kind: KindData})
	}
	listed := append(slices.Clone(live), File{Path: head.ManifestList, Kind: KindManifestList}, File{Path: "file:///nowhere/x.parquet", Kind: KindData})
	var before []int64
	for _, s := range tbl.Metadata().Snapshots() {
		if s.SnapshotID != head.SnapshotID {
			before = append(before, s.SnapshotID)
		}
	}
	got, err := StillUnreferenced(f.ctx, fsys, tbl.Metadata(), before, nil, listed)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 1 || got[0].Path != "file:///nowhere/x.parquet" {
		t.Fatalf("still unreferenced %v, want only the file no snapshot names", got)
	}
	// The same files under another spelling (a local path for a file: URI,
	// as s3a:// for s3://) are the same files: still referenced.
	var respelled []File
	for _, l := range live {
		respelled = append(respelled, File{Path: strings.TrimPrefix(l.Path, "file://"), Kind: l.Kind})
	}
	if got, err := StillUnreferenced(f.ctx, fsys, tbl.Metadata(), before, nil, respelled); err != nil || len(got) != 0 {
		t.Fatalf("respelled live files: still unreferenced %v (%v), want none", got, err)
	}
	if got, _ := StillUnreferenced(f.ctx, fsys, tbl.Metadata(), ids(tbl.Metadata().Snapshots()), nil, listed); len(got) != len(listed) {
		t.Fatalf("with every snapshot known, %d of %d files kept; want all (only new snapshots are read)", len(got), len(listed))
	}
}

// TestStillUnreferenced_AnUndoneExpiryDeletesNothing: when a snapshot the
// expiry removed is in the table again (another tool pointed the catalog
// back at an older metadata file), nothing is still unreferenced: the
// answer is ErrUndone, not the files the other snapshots do not name.
func TestStillUnreferenced_AnUndoneExpiryDeletesNothing(t *testing.T) {
	f, tbl := newTable(t, 2)
	fsys, err := tbl.FS(f.ctx)
	if err != nil {
		t.Fatal(err)
	}
	snaps := tbl.Metadata().Snapshots()
	if len(snaps) < 2 {
		t.Fatalf("%d snapshots, the test needs two", len(snaps))
	}
	listed := []File{{Path: "file:///nowhere/x.parquet", Kind: KindData}}
	got, err := StillUnreferenced(f.ctx, fsys, tbl.Metadata(), nil, []int64{snaps[0].SnapshotID}, listed)
	if !errors.Is(err, ErrUndone) || len(got) != 0 {
		t.Fatalf("still unreferenced %v (%v), want none and ErrUndone", got, err)
	}
}

// TestNextDue_IsTheFirstMomentTheSelectionGrows: on a table with a tag and
// an ageing branch, for random retentions, pins and moments, the selection
// at NextDue holds more than at now, one millisecond before it holds what
// it holds at now, and when nothing comes due a century later selects
// what now does. Seed-replayable.
func TestNextDue_IsTheFirstMomentTheSelectionGrows(t *testing.T) {
	f, tbl := newTable(t, 2)
	line := mainLine(tbl.Metadata())
	if _, _, err := f.cat.CommitTable(f.ctx, f.ident, nil, []table.Update{
		table.NewSetSnapshotRefUpdate("audit", line[8].SnapshotID, table.TagRef, 0, 0, 0),
		table.NewSetSnapshotRefUpdate("scratch", line[6].SnapshotID, table.BranchRef, 40, 0, 0),
	}); err != nil {
		t.Fatal(err)
	}
	tbl, err := f.cat.LoadTable(f.ctx, f.ident)
	if err != nil {
		t.Fatal(err)
	}
	meta := tbl.Metadata()
	oldest, newest := line[len(line)-1].TimestampMs, line[0].TimestampMs
	span := newest - oldest + 1
	count := func(at time.Time, r Retention, pins []int64) int {
		sel := Select(meta, at, r, pins...)
		return len(sel.Expired) + len(sel.RemovedRefs)
	}
	seed := time.Now().UnixNano()
	if v := os.Getenv("ICEKEEPER_FUZZ_SEED"); v != "" {
		if _, err := fmt.Sscan(v, &seed); err != nil {
			t.Fatalf("ICEKEEPER_FUZZ_SEED=%q: %v", v, err)
		}
	}
	rng := rand.New(rand.NewPCG(uint64(seed), 0))
	t.Logf("seed %d (ICEKEEPER_FUZZ_SEED replays the choices)", seed)
	dues := 0
	for range 300 {
		r := Retention{MinSnapshotsToKeep: 1 + rng.IntN(12), MaxSnapshotAge: time.Duration(rng.Int64N(span+20)) * time.Millisecond, MaxRefAge: forever}
		if rng.IntN(3) == 0 {
			r.MaxRefAge = time.Duration(rng.Int64N(span+60)) * time.Millisecond
		}
		if rng.IntN(5) == 0 {
			r.MaxSnapshotAge = forever
		}
		var pins []int64
		if rng.IntN(3) == 0 {
			pins = append(pins, line[rng.IntN(len(line))].SnapshotID)
		}
		now := time.UnixMilli(oldest + rng.Int64N(span+2*span) - span/2)
		base := count(now, r, pins)
		due, ok := NextDue(meta, now, r, pins...)
		if !ok {
			if later := count(now.Add(100*365*24*time.Hour), r, pins); later != base {
				t.Fatalf("seed %d: retention %+v pins %v at %d: nothing due, yet a century later %d selected against %d", seed, r, pins, now.UnixMilli(), later, base)
			}
			continue
		}
		dues++
		if !due.After(now) {
			t.Fatalf("seed %d: due %d not after now %d", seed, due.UnixMilli(), now.UnixMilli())
		}
		if got := count(due, r, pins); got <= base {
			t.Fatalf("seed %d: retention %+v pins %v: at due %d the selection holds %d, at now %d holds %d", seed, r, pins, due.UnixMilli(), got, now.UnixMilli(), base)
		}
		if got := count(due.Add(-time.Millisecond), r, pins); got != base {
			t.Fatalf("seed %d: retention %+v pins %v: a millisecond before due %d the selection holds %d, at now %d", seed, r, pins, due.UnixMilli(), got, base)
		}
	}
	if dues == 0 {
		t.Fatalf("seed %d: no retention came due: the test checked nothing", seed)
	}
}
