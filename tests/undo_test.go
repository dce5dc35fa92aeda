package tests

import (
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/dv"

	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/messages"
)

// appliedTo maps each live delete file (messages.DeleteFileKey) to the
// delete file and the live data files iceberg-go's own scan applies it to.
func (e *env) appliedTo() map[string]struct {
	file    iceberg.DataFile
	targets map[string]bool
} {
	e.t.Helper()
	out := map[string]struct {
		file    iceberg.DataFile
		targets map[string]bool
	}{}
	for _, task := range e.liveTasks() {
		for _, d := range append(append(append([]iceberg.DataFile{}, task.DeleteFiles...), task.EqualityDeleteFiles...), task.DeletionVectorFiles...) {
			k := messages.DeleteFileKey(d)
			a, ok := out[k]
			if !ok {
				a.file, a.targets = d, map[string]bool{}
			}
			a.targets[task.File.FilePath()] = true
			out[k] = a
		}
	}
	return out
}

// jobInputs are the data files a job's plan rewrites.
func (e *env) jobInputs(jobID string) map[string]bool {
	e.t.Helper()
	in := map[string]bool{}
	for _, g := range e.planOf(jobID).Groups {
		for _, p := range g.InputPaths {
			in[p] = true
		}
	}
	return in
}

// removeDeleteFile removes one live delete file as another tool undoing a
// delete would (a RewriteFiles that drops it, as Iceberg Java's
// RewriteFiles or OverwriteFiles can): the rows it deleted are live again.
func (e *env) removeDeleteFile(d iceberg.DataFile) {
	e.t.Helper()
	txn := e.load().NewTransaction()
	if err := txn.NewRewrite(iceberg.Properties{"removed-by": "another-tool"}).DeleteFile(d).Commit(e.ctx); err != nil {
		e.t.Fatal(err)
	}
	if _, err := txn.Commit(e.ctx); err != nil {
		e.t.Fatal(err)
	}
}

// shrinkDeletionVector replaces a live deletion vector with one that no
// longer deletes its first position (a row delta that removes it and adds
// its replacement, as a v3 writer merging DVs does): that row is live
// again.
func (e *env) shrinkDeletionVector(old iceberg.DataFile) {
	e.t.Helper()
	tbl := e.load()
	fsys, err := tbl.FS(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	bm, err := dv.ReadDV(fsys, old)
	if err != nil {
		e.t.Fatal(err)
	}
	kept := dv.NewRoaringPositionBitmap()
	first := true
	for p := range bm.Positions() {
		if first {
			first = false
			continue
		}
		kept.Set(p)
	}
	if kept.IsEmpty() {
		e.t.Fatalf("deletion vector %s deletes one row; the test needs more", messages.DeleteFileKey(old))
	}
	locs, err := table.LoadLocationProvider(tbl.Location(), tbl.Properties())
	if err != nil {
		e.t.Fatal(err)
	}
	meta := tbl.Metadata()
	w := dv.NewDVWriter(fsys.(icebergio.WriteFileIO), func(id int32) *iceberg.PartitionSpec { return meta.PartitionSpecByID(int(id)) })
	w.Load(*old.ReferencedDataFile(), kept, old.SpecID(), old.Partition())
	files, err := w.Flush(e.ctx, locs.NewDataLocation("another-tool-dv.puffin"))
	if err != nil {
		e.t.Fatal(err)
	}
	txn := tbl.NewTransaction()
	if err := txn.NewRowDelta(iceberg.Properties{"replaced-by": "another-tool"}).RemoveDeletes(old).AddDeletes(files...).Commit(e.ctx); err != nil {
		e.t.Fatal(err)
	}
	if _, err := txn.Commit(e.ctx); err != nil {
		e.t.Fatal(err)
	}
}

// rewriteEveryGroup drains the task queue until every group of the job is
// done (a failed attempt's task may come back after a drain saw the queue
// empty).
func (e *env) rewriteEveryGroup(jobID string) {
	e.t.Helper()
	for range 5 {
		e.drainTasks()
		if j := e.job(jobID); len(j.DoneGroups) == j.Groups {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	e.t.Fatalf("job %s: not every group was rewritten\n%s", jobID, e.diagnose(jobID))
}

// commitUntilEnded drains the commit queue until the job ends.
func (e *env) commitUntilEnded(jobID string) {
	e.t.Helper()
	for range 5 {
		e.drainCommits()
		if e.job(jobID).State.Terminal() {
			return
		}
		time.Sleep(100 * time.Millisecond)
	}
	e.t.Fatalf("job %s did not end\n%s", jobID, e.diagnose(jobID))
}

// TestCommitter_UndoneDeleteOnFilesInAndOutOfTheJobAborts: the job rewrites
// the small files of a table whose large files it leaves out (see
// survivorTable); one delete file applies to a file it rewrites and to a
// file it leaves out, so it is not dead for the job and stays in the table.
// After the rewrites, which applied it, another tool removes it (an undo)
// or, for a deletion vector, replaces it with one that deletes fewer rows.
// The rows it deleted are live again, and the new files do not have them:
// the job must abort, with the reason, leave no file, and the table's rows
// must be the rows the other tool left (committing would delete the
// undone rows of the rewritten files again).
func TestCommitter_UndoneDeleteOnFilesInAndOutOfTheJobAborts(t *testing.T) {
	const appliedRemoved = "which the rewriters applied to this job's inputs"
	type victim struct {
		content iceberg.ManifestEntryContent
		dv      bool
		// mixed: it must apply to a file the job leaves out too.
		mixed bool
	}
	tests := []struct {
		name     string
		version  int
		noRebase bool
		pick     victim
		shrink   bool
		why      string
	}{
		{"v2 position delete", 2, false, victim{iceberg.EntryContentPosDeletes, false, true}, false, undoneDelete},
		{"v2 position delete without rebase", 2, true, victim{iceberg.EntryContentPosDeletes, false, true}, false, appliedRemoved},
		{"v2 equality delete", 2, false, victim{iceberg.EntryContentEqDeletes, false, true}, false, appliedRemoved},
		{"v3 equality delete", 3, false, victim{iceberg.EntryContentEqDeletes, false, true}, false, appliedRemoved},
		{"v3 deletion vector removed", 3, false, victim{iceberg.EntryContentPosDeletes, true, false}, false, undoneDelete},
		{"v3 deletion vector replaced by a smaller one", 3, false, victim{iceberg.EntryContentPosDeletes, true, false}, true, undoneDelete},
		{"v3 deletion vector removed without rebase", 3, true, victim{iceberg.EntryContentPosDeletes, true, false}, false, "removed delete file"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := setup(t, func(c *config.Config) { c.RebaseDeletes = !tc.noRebase })
			large := e.survivorTable(tc.version)
			r := e.plan()
			inputs := e.jobInputs(r.JobID)
			for p := range large {
				if inputs[p] {
					t.Fatalf("the job rewrites large file %s; the test needs it left out", p)
				}
			}
			e.rewriteEveryGroup(r.JobID)

			var pick iceberg.DataFile
			for _, a := range e.appliedTo() {
				d := a.file
				if pick != nil || d.ContentType() != tc.pick.content || table.IsDeletionVector(d) != tc.pick.dv || d.Count() < 2 {
					continue
				}
				var in, out bool
				for p := range a.targets {
					in, out = in || inputs[p], out || large[p]
				}
				if in && (out || !tc.pick.mixed) {
					pick = d
				}
			}
			if pick == nil {
				t.Fatal("no delete file of the kind applies to a rewritten file (and to a file left out); the test needs one")
			}
			before := e.fingerprint()
			if tc.shrink {
				e.shrinkDeletionVector(pick)
			} else {
				e.removeDeleteFile(pick)
			}
			want := e.fingerprint()
			if want.Rows <= before.Rows {
				t.Fatalf("undoing %s brought no row back (%d, then %d)", pick.FilePath(), before.Rows, want.Rows)
			}

			e.commitUntilEnded(r.JobID)
			if got := e.fingerprint(); got != want {
				j := e.job(r.JobID)
				t.Fatalf("rows %s after the job (%s: %s), want the rows the other tool left, %s", got, j.State, j.Reason, want)
			}
			e.requireAborted(r.JobID, tc.why, want)
		})
	}
}
