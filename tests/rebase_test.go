package tests

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/commit"
	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/harness/sampletable"
	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/messages"
	"github.com/icekeeper/icekeeper/shared/outputs"
)

// requireNoDanglingDeletes fails the test when a live position delete
// file or deletion vector committed after the job's pinned snapshot (a
// concurrent one, or what the rebase made of it) names a data file that is
// not live: a delete on a file the job removed was carried over instead of
// rebased. (Deletes from before the pin may keep naming rewritten files
// when they also apply to files the job left out: harmless, and allowed.)
func (e *env) requireNoDanglingDeletes(jobID string) {
	e.t.Helper()
	pinned := e.job(jobID).SequenceNumber
	fsys, ms := e.currentManifests()
	live := map[string]bool{}
	var deletes []iceberg.DataFile
	for _, m := range ms {
		for ent, err := range m.Entries(fsys, true) {
			if err != nil {
				e.t.Fatal(err)
			}
			switch df := ent.DataFile(); df.ContentType() {
			case iceberg.EntryContentData:
				live[df.FilePath()] = true
			case iceberg.EntryContentPosDeletes:
				if ent.SequenceNum() > pinned {
					deletes = append(deletes, df)
				}
			}
		}
	}
	for _, d := range deletes {
		targets, err := positionDeleteTargets(d)
		if err != nil {
			e.t.Fatal(err)
		}
		for _, path := range targets {
			if !live[path] {
				e.t.Fatalf("delete file %s names %s, which is not live", d.FilePath(), path)
			}
		}
	}
}

// undeleteConcurrently is another tool removing one live position delete
// file or deletion vector (undoing a delete): the rows it deleted are visible again. A job
// that rewrote those rows' files with the delete applied must abort
// rather than hide them: nothing deletes them again to rebase.
func (e *env) undeleteConcurrently() {
	e.t.Helper()
	e.undeleteWhere(func(iceberg.ManifestEntry) bool { return true })
}

// undeleteWhere removes, as another tool undoing a delete would, the first
// live position delete file or deletion vector with rows that pick takes.
func (e *env) undeleteWhere(pick func(iceberg.ManifestEntry) bool) {
	e.t.Helper()
	fsys, ms := e.currentManifests()
	var victim iceberg.DataFile
	for _, m := range ms {
		for ent, err := range m.Entries(fsys, true) {
			if err != nil {
				e.t.Fatal(err)
			}
			if df := ent.DataFile(); victim == nil && df.ContentType() == iceberg.EntryContentPosDeletes && df.Count() > 0 && pick(ent) {
				victim = df
			}
		}
	}
	if victim == nil {
		e.t.Fatal("no position delete file or deletion vector to remove")
	}
	txn := e.load().NewTransaction()
	if err := txn.NewRewrite(iceberg.Properties{"removed-by": "another-tool"}).DeleteFile(victim).Commit(e.ctx); err != nil {
		e.t.Fatal(err)
	}
	if _, err := txn.Commit(e.ctx); err != nil {
		e.t.Fatal(err)
	}
}

// undoneDelete is the abort reason undeleteConcurrently causes.
const undoneDelete = "nothing committed since deletes that row again"

// requireRebasedFilesLive fails the test when a file the job's rebase
// wrote is on disk but not live: a round that did not commit left it.
func (e *env) requireRebasedFilesLive(jobID string) {
	e.t.Helper()
	live := e.referencedFiles()
	batches := e.job(jobID).Batches()
	for p := range e.filesOnDisk() {
		for b := 0; b <= batches; b++ {
			if outputs.OfAttempt(p, jobs.RebaseAttempt(jobID, b)) && !live[p] {
				e.t.Fatalf("rebased delete file %s is on disk but not in the table", p)
			}
		}
	}
}

// TestRebase_ADeleteOnFilesInAndOutOfTheJobKeepsBoth (v2): while the job
// runs, one position delete file deletes rows of a large file the job
// leaves out and of small files it rewrites. The committer replaces it with
// one that keeps its rows on the large file as they were and carries the
// others onto the new files: every row deleted stays deleted, every other
// row is there once, and no delete names a file that is gone.
func TestRebase_ADeleteOnFilesInAndOutOfTheJobKeepsBoth(t *testing.T) {
	e := setup(t)
	large := e.survivorTable(2)
	r := e.plan()
	if r.SkippedFiles < len(large) {
		t.Fatalf("the planner skipped %d files, want the %d large ones", r.SkippedFiles, len(large))
	}
	e.drainTasks()
	// Region 0: id 2 is in a large file, 12001 and 12002 in a small one
	// (see survivorTable); none is deleted yet.
	if _, err := sampletable.DeleteByPosition(e.ctx, e.load(), []int64{2, 12001, 12002}); err != nil {
		t.Fatal(err)
	}
	mixed := false
	for _, d := range e.addedDeletes(e.load().CurrentSnapshot().SnapshotID) {
		var in, out bool
		for _, p := range d.targets {
			in, out = in || !large[p], out || large[p]
		}
		mixed = mixed || (in && out)
	}
	if !mixed {
		t.Fatal("the concurrent delete does not name both a large file and a rewritten one; the test needs one that does")
	}
	want := e.fingerprint()
	e.drainCommits()

	e.requireCommitted(r.JobID, want)
	e.requireNoDanglingDeletes(r.JobID)
	e.requireRebasedFilesLive(r.JobID)
	for p := range large {
		if !e.isLiveURI(p) {
			t.Fatalf("large file %s is gone; the job was to leave it out", p)
		}
	}
}

// TestRebase_AnUndoneDeleteAborts: while the job runs, another tool removes
// a position delete file (v2) or deletion vector (v3) that the job applied,
// so its rows are visible again. The new files do not have those rows and
// nothing deletes them again, so the job aborts, with the reason, and the
// rows stay visible.
func TestRebase_AnUndoneDeleteAborts(t *testing.T) {
	for _, version := range []int{2, 3} {
		t.Run(fmt.Sprintf("v%d", version), func(t *testing.T) {
			e := setup(t)
			opts := smallTable
			opts.FormatVersion = version
			e.createTable(opts)
			before := e.fingerprint()
			r := e.plan()
			e.drainTasks()
			e.undeleteConcurrently()
			want := e.fingerprint()
			if want.Rows <= before.Rows {
				t.Fatalf("undoing the delete brought no row back (%d, then %d)", before.Rows, want.Rows)
			}
			e.drainCommits()
			e.requireAborted(r.JobID, undoneDelete, want)
		})
	}
}

// TestRebase_RowsMovedToAnotherSpecStillAbort: a group whose rows move to
// a new partition spec is written in another order than it is read, so no
// row map is recorded and a position delete committed during the job on
// one of its files still aborts the job, with the reason; the rows stay
// deleted and the job leaves no file.
func TestRebase_RowsMovedToAnotherSpecStillAbort(t *testing.T) {
	e := setup(t)
	e.createEvolvedTable(2)
	e.evolveSpec(func(u *table.UpdateSpec) { u.AddField("id", iceberg.BucketTransform{NumBuckets: 4}, "id_bucket") })
	r := e.plan()
	e.drainTasks()
	if _, err := sampletable.DeleteByPosition(e.ctx, e.load(), []int64{3, 4, 50}); err != nil {
		t.Fatal(err)
	}
	want := e.fingerprint()
	e.drainCommits()
	e.requireAborted(r.JobID, "sorted or moved to another partition spec", want)
}

// addedDelete is a position delete file or deletion vector a snapshot
// added, with the data files it names.
type addedDelete struct {
	file    iceberg.DataFile
	targets []string
}

// addedDeletes lists the position delete files and deletion vectors the
// snapshot added, with their targets.
func (e *env) addedDeletes(snapshotID int64) []addedDelete {
	e.t.Helper()
	tbl := e.load()
	fsys, err := tbl.FS(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	ms, err := tbl.SnapshotByID(snapshotID).Manifests(fsys)
	if err != nil {
		e.t.Fatal(err)
	}
	var out []addedDelete
	for _, m := range ms {
		for ent, err := range m.Entries(fsys, false) {
			if err != nil {
				e.t.Fatal(err)
			}
			df := ent.DataFile()
			if ent.SnapshotID() != snapshotID || ent.Status() != iceberg.EntryStatusADDED || df.ContentType() != iceberg.EntryContentPosDeletes {
				continue
			}
			targets, err := positionDeleteTargets(df)
			if err != nil {
				e.t.Fatal(err)
			}
			out = append(out, addedDelete{file: df, targets: targets})
		}
	}
	return out
}

// isLiveURI reports whether the data file at path (as the table names it)
// is live.
func (e *env) isLiveURI(path string) bool {
	for _, t := range e.liveTasks() {
		if t.File.FilePath() == path {
			return true
		}
	}
	return false
}

// crashingCommits is a catalog whose first crashes commits fail before
// reaching the catalog, as if the committer died right before its catalog
// call.
type crashingCommits struct {
	commit.Catalog
	crashes int
}

func (c *crashingCommits) LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error) {
	tbl, err := c.Catalog.LoadTable(ctx, ident)
	if err != nil {
		return nil, err
	}
	return table.New(tbl.Identifier(), tbl.Metadata(), tbl.MetadataLocation(), tbl.FS, c), nil
}

func (c *crashingCommits) CommitTable(ctx context.Context, ident table.Identifier, reqs []table.Requirement, updates []table.Update) (table.Metadata, string, error) {
	if c.crashes > 0 {
		c.crashes--
		return nil, "", errors.New("simulated crash before the catalog commit")
	}
	return c.Catalog.CommitTable(ctx, ident, reqs, updates)
}

// TestRebase_ACommitterThatDiesAfterRebasingLeavesNothing: the committer
// writes a rebase round's delete files and dies before its catalog call.
// The committer that takes the job over removes them, rebases again and
// commits: the deleted rows stay deleted, and every rebased file on disk
// is in the table.
func TestRebase_ACommitterThatDiesAfterRebasingLeavesNothing(t *testing.T) {
	const takeover = 2 * time.Second
	e := setup(t, func(c *config.Config) { c.CommitTakeover = takeover })
	e.createTable(smallTable)
	r := e.plan()
	e.drainTasks()
	if _, err := sampletable.DeleteByPosition(e.ctx, e.load(), []int64{10, 11, 140}); err != nil {
		t.Fatal(err)
	}
	want := e.fingerprint()
	cat := &crashingCommits{Catalog: e.cat, crashes: 1}
	c, err := commit.New(commit.Settings{LeaseTTL: time.Minute, MaxRetries: 3, Backoff: time.Millisecond, CommitTakeover: takeover},
		cat, e.deps.Jobs, e.deps.Leases, e.deps.Blobs, e.deps.Tables, nil, nil, commit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	req := messages.CommitJob(r.JobID)
	if _, err := c.Handle(e.ctx, req, 1); err == nil {
		t.Fatal("the first commit request did not fail")
	}
	left := 0
	for p := range e.filesOnDisk() {
		if outputs.OfAttempt(p, jobs.RebaseAttempt(r.JobID, 0)) {
			left++
		}
	}
	if left == 0 {
		t.Fatal("the dead committer wrote no rebased delete file; the test needs one")
	}
	time.Sleep(takeover + 100*time.Millisecond)
	res, err := c.Handle(e.ctx, req, 2)
	if err != nil || res.Outcome != commit.OutcomeCommitted {
		t.Fatalf("takeover: %+v %v", res, err)
	}
	e.requireCommitted(r.JobID, want)
	e.requireRebasedFilesLive(r.JobID)
}
