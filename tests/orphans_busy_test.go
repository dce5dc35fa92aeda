package tests

import (
	"context"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/commit"
	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/plan"
)

// onePartAFileCommitter is a committer whose deletions records hold one
// file a part, over blobs; fanOut sends every part of two or more to the
// rewriters as a deletion task.
func (e *env) onePartAFileCommitter(blobs commit.Blobs, fanOut bool) *commit.Committer {
	e.t.Helper()
	var opts commit.Options
	if fanOut {
		opts = commit.Options{DeletionTasks: e.deps.Tasks, DeletionFanOutParts: 2}
	}
	c, err := commit.New(commit.Settings{LeaseTTL: time.Minute, MaxRetries: 3, Backoff: time.Millisecond, CommitTakeover: time.Hour, MaxAttempts: 3, DeletionPartFiles: 1},
		e.cat, e.deps.Jobs, e.deps.Leases, blobs, e.deps.Tables, nil, nil, opts)
	if err != nil {
		e.t.Fatal(err)
	}
	return c
}

// busy is a table whose writer keeps one previous metadata file and
// deletes older ones after each commit.
var busy = withProps(smallTable, map[string]string{
	"write.metadata.delete-after-commit.enabled": "true",
	"write.metadata.previous-versions-max":       "1",
})

// commitMore has the table's writer commit n more times (a property each
// time, the rows unchanged).
func (e *env) commitMore(n int) {
	e.t.Helper()
	for i := range n {
		tx := e.load().NewTransaction()
		if err := tx.SetProperties(iceberg.Properties{"writer.seq": time.Now().Format(time.RFC3339Nano) + string(rune('a'+i))}); err != nil {
			e.t.Fatal(err)
		}
		if _, err := tx.Commit(e.ctx); err != nil {
			e.t.Fatal(err)
		}
	}
}

// referenceInOldSnapshot commits a snapshot that adds p as a data file,
// then rolls the table back to the snapshot before: p is referenced by a
// snapshot the table still has, but not read.
func (e *env) referenceInOldSnapshot(p string) {
	e.t.Helper()
	tbl := e.load()
	current := tbl.CurrentSnapshot().SnapshotID
	b, err := iceberg.NewDataFileBuilder(tbl.Spec(), iceberg.EntryContentData, p, iceberg.ParquetFile,
		map[int]any{1000: "region-00"}, nil, nil, 1, 5)
	if err != nil {
		e.t.Fatal(err)
	}
	tx := tbl.NewTransaction()
	if err := tx.AddDataFiles(e.ctx, []iceberg.DataFile{b.Build()}, nil); err != nil {
		e.t.Fatal(err)
	}
	if tbl, err = tx.Commit(e.ctx); err != nil {
		e.t.Fatal(err)
	}
	tx = tbl.NewTransaction()
	if err := tx.RollbackToSnapshot(current); err != nil {
		e.t.Fatal(err)
	}
	if _, err := tx.Commit(e.ctx); err != nil {
		e.t.Fatal(err)
	}
}

// TestOrphans_FannedOutDeletionsOfABusyTableFinish: an orphan cleanup's
// deletions go to the rewriters one file a task; before they run, the
// table's writer commits on and deletes the metadata file the tasks were
// sent with, and references one of the orphans in a snapshot. The tasks
// check their files against the table as the catalog has it now: none
// fails, the other orphans go, the referenced one stays, and so does every
// live file and row.
func TestOrphans_FannedOutDeletionsOfABusyTableFinish(t *testing.T) {
	e := setup(t)
	e.createTable(busy)
	want := e.fingerprint()
	gone := []string{e.plant("data/region=region-00/00000-0-stray-a.parquet", 96*time.Hour),
		e.plant("data/region=region-01/00000-0-stray-b.parquet", 96*time.Hour),
		e.plant("metadata/stray-m0.avro", 96*time.Hour)}
	claimed := e.plant("data/region=region-00/00000-0-stray-c.parquet", 96*time.Hour)
	e.committer = e.onePartAFileCommitter(e.deps.Blobs, true)

	r, err := e.planner.PlanOrphanCleanup(asFunction(e.ctx, "Planner"), e.name(), "test", 0)
	if err != nil || r.Outcome != plan.OutcomePlanned {
		t.Fatalf("plan: %+v %v", r, err)
	}
	sentWith := e.load().MetadataLocation()
	e.drainCommits() // lists, records four parts, sends four tasks
	if j := e.job(r.JobID); j.State != jobs.Committing {
		t.Fatalf("job %s (%s), want committing while the tasks delete", j.State, j.Reason)
	}
	e.referenceInOldSnapshot(claimed)
	e.commitMore(2)
	if exists(stripFile(sentWith)) {
		t.Fatalf("the writer kept %s: the test needs it gone", sentWith)
	}
	referenced := e.referencedFiles()
	st := e.drainTasks()
	if st.Delivered < 4 || st.Failed != 0 {
		t.Fatalf("deletion tasks: %+v, want four delivered, none failed", st)
	}
	e.drainCommits()
	if j := e.job(r.JobID); j.State != jobs.Committed {
		t.Fatalf("job %s (%s)", j.State, j.Reason)
	}
	e.requireOrphansGone(gone, []string{claimed}, referenced, want)
}

// TestOrphans_FannedOutListingOfABusyTableFinishes: a large table's
// listing is fanned out; before the tasks run, the writer commits on and
// deletes the metadata file they were sent with. They list against the
// table as the catalog has it now: none fails, and the cleanup removes the
// old orphans and keeps every live file and row.
func TestOrphans_FannedOutListingOfABusyTableFinishes(t *testing.T) {
	e := setup(t, func(c *config.Config) { c.OrphanListFanOutFiles = 1 })
	e.createTable(busy)
	want := e.fingerprint()
	gone, stay := e.plantAround()
	r, err := e.planner.PlanOrphanCleanup(asFunction(e.ctx, "Planner"), e.name(), "test", 0)
	if err != nil || r.Outcome != plan.OutcomePlanned {
		t.Fatalf("plan: %+v %v", r, err)
	}
	e.drainCommits() // fans the listing out
	sentWith := e.load().MetadataLocation()
	e.commitMore(2)
	if exists(stripFile(sentWith)) {
		t.Fatalf("the writer kept %s: the test needs it gone", sentWith)
	}
	referenced := e.referencedFiles()
	st := e.drainTasks()
	if st.Delivered < 6 || st.Failed != 0 {
		t.Fatalf("listing tasks: %+v, want one per prefix, none failed", st)
	}
	e.drainCommits()
	if j := e.job(r.JobID); j.State != jobs.Committed {
		t.Fatalf("job %s (%s)", j.State, j.Reason)
	}
	e.requireOrphansGone(gone, stay, referenced, want)
}

// TestOrphans_AFileOnlyAnOlderMetadataFileReferencesStays: a file was
// added by a snapshot that the current metadata no longer has (rolled back
// and removed), but a metadata file still in the table's log does: it is
// not an orphan, and stays.
func TestOrphans_AFileOnlyAnOlderMetadataFileReferencesStays(t *testing.T) {
	e := setup(t)
	e.createTable(smallTable)
	want := e.fingerprint()
	stray := e.plant("data/region=region-01/00000-0-stray.parquet", 96*time.Hour)
	logged := e.plant("data/region=region-00/00000-0-logged.parquet", 96*time.Hour)
	e.referenceInOldSnapshot(logged)
	tbl := e.load()
	var dropped []int64
	for _, s := range tbl.Metadata().Snapshots() {
		if s.SnapshotID != tbl.CurrentSnapshot().SnapshotID && s.ParentSnapshotID != nil && *s.ParentSnapshotID == tbl.CurrentSnapshot().SnapshotID {
			dropped = append(dropped, s.SnapshotID)
		}
	}
	if len(dropped) != 1 {
		t.Fatalf("snapshots to drop: %v", dropped)
	}
	if _, _, err := e.cat.CommitTable(e.ctx, e.ident, nil, []table.Update{table.NewRemoveSnapshotsUpdate(dropped, false)}); err != nil {
		t.Fatal(err)
	}
	referenced := e.referencedFiles()
	r, err := e.planner.PlanOrphanCleanup(asFunction(e.ctx, "Planner"), e.name(), "test", 0)
	if err != nil || r.Outcome != plan.OutcomePlanned {
		t.Fatalf("plan: %+v %v", r, err)
	}
	e.drainCommits()
	if j := e.job(r.JobID); j.State != jobs.Committed {
		t.Fatalf("job %s (%s)", j.State, j.Reason)
	}
	e.requireOrphansGone([]string{stray}, []string{logged}, referenced, want)
}

// stripFile is the local path of a file: URI.
func stripFile(uri string) string { return strings.TrimPrefix(uri, "file://") }

// TestOrphans_ADeletionTaskThatMustRefuseKeepsItsFilesAndFailsTheJobAtOnce:
// an orphan cleanup's deletions are fanned out; before the tasks run,
// another tool deletes a metadata file the table's log still names, so
// what the table references can no longer be known (orphans.Still
// refuses). No task deletes anything, none fails into the dead-letter
// queue, and the job ends failed at once, naming the refusal; every
// orphan, live file and row is still there.
func TestOrphans_ADeletionTaskThatMustRefuseKeepsItsFilesAndFailsTheJobAtOnce(t *testing.T) {
	e := setup(t)
	e.createTable(busy)
	want := e.fingerprint()
	planted := []string{e.plant("data/region=region-00/00000-0-stray-a.parquet", 96*time.Hour),
		e.plant("data/region=region-01/00000-0-stray-b.parquet", 96*time.Hour),
		e.plant("metadata/stray-m0.avro", 96*time.Hour)}
	e.committer = e.onePartAFileCommitter(e.deps.Blobs, true)

	r, err := e.planner.PlanOrphanCleanup(asFunction(e.ctx, "Planner"), e.name(), "test", 0)
	if err != nil || r.Outcome != plan.OutcomePlanned {
		t.Fatalf("plan: %+v %v", r, err)
	}
	e.drainCommits() // lists, records the parts, sends one task a part
	if j := e.job(r.JobID); j.State != jobs.Committing {
		t.Fatalf("job %s (%s), want committing while the tasks delete", j.State, j.Reason)
	}
	var logged string
	for l := range e.load().Metadata().PreviousFiles() {
		logged = l.MetadataFile
		break
	}
	if logged == "" {
		t.Fatal("the table has no metadata log: the test needs one")
	}
	if err := os.Remove(stripFile(logged)); err != nil {
		t.Fatal(err)
	}
	st := e.drainTasks()
	if st.Delivered < 3 || st.Failed != 0 {
		t.Fatalf("deletion tasks: %+v, want every part delivered once, none failed", st)
	}
	e.drainCommits()
	j := e.job(r.JobID)
	if j.State != jobs.Failed || !strings.Contains(j.Reason, "refused") {
		t.Fatalf("job %s (%s), want failed naming the refusal", j.State, j.Reason)
	}
	for _, p := range planted {
		if !exists(p) {
			t.Errorf("%s was deleted though the cleanup refused", p)
		}
	}
	if got := e.fingerprint(); got != want {
		t.Fatalf("rows %s, want %s", got, want)
	}
}

// partHookBlobs runs hook before the committer reads the first part of a
// deletions record: what another writer does between the committer's
// listing and its deletion of a part.
type partHookBlobs struct {
	commit.Blobs
	hook func()
	once *sync.Once
}

func (b partHookBlobs) Get(ctx context.Context, key string) ([]byte, error) {
	if strings.Contains(key, "/deletions/") {
		b.once.Do(b.hook)
	}
	return b.Blobs.Get(ctx, key)
}

// TestOrphans_TheCommitterChecksEachPartAgainstTheTableAsItIsThen: the
// committer deletes an orphan cleanup's parts itself (no fan-out); after
// its listing, the table's writer references one of the orphans in a
// snapshot. The committer checks each part against the table loaded again
// from the catalog right before deleting it: that file stays, the others
// go, every live file and row stays.
func TestOrphans_TheCommitterChecksEachPartAgainstTheTableAsItIsThen(t *testing.T) {
	e := setup(t)
	e.createTable(smallTable)
	want := e.fingerprint()
	gone := []string{e.plant("data/region=region-00/00000-0-stray-a.parquet", 96*time.Hour),
		e.plant("metadata/stray-m0.avro", 96*time.Hour)}
	claimed := e.plant("data/region=region-00/00000-0-stray-c.parquet", 96*time.Hour)
	var referenced map[string]bool
	blobs := partHookBlobs{Blobs: e.deps.Blobs, once: &sync.Once{}, hook: func() {
		e.referenceInOldSnapshot(claimed)
		referenced = e.referencedFiles()
	}}
	e.committer = e.onePartAFileCommitter(blobs, false)
	r, err := e.planner.PlanOrphanCleanup(asFunction(e.ctx, "Planner"), e.name(), "test", 0)
	if err != nil || r.Outcome != plan.OutcomePlanned {
		t.Fatalf("plan: %+v %v", r, err)
	}
	e.drainCommits()
	if referenced == nil {
		t.Fatal("the committer read no deletion part: the test needs it to delete parts itself")
	}
	if j := e.job(r.JobID); j.State != jobs.Committed {
		t.Fatalf("job %s (%s)", j.State, j.Reason)
	}
	e.requireOrphansGone(gone, []string{claimed}, referenced, want)
}
