package tests

import (
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/dv"

	"github.com/icekeeper/icekeeper/shared/commit"
	"github.com/icekeeper/icekeeper/shared/deletefiles"
	"github.com/icekeeper/icekeeper/shared/outputs"
)

// requireNoDanglingDeletes fails the test when a live position delete
// file or deletion vector names a data file that is not live: a delete on
// a file the job removed was carried over instead of rebased.
func (e *env) requireNoDanglingDeletes() {
	e.t.Helper()
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
				deletes = append(deletes, df)
			}
		}
	}
	for _, d := range deletes {
		if table.IsDeletionVector(d) {
			if ref := *d.ReferencedDataFile(); !live[ref] {
				e.t.Fatalf("deletion vector %s names %s, which is not live", d.FilePath(), ref)
			}
			continue
		}
		byFile := map[string]*dv.RoaringPositionBitmap{}
		if err := deletefiles.ReadPositions(e.ctx, fsys, d, nil, byFile); err != nil {
			e.t.Fatal(err)
		}
		for path := range byFile {
			if !live[path] {
				e.t.Fatalf("position delete file %s names %s, which is not live", d.FilePath(), path)
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
	fsys, ms := e.currentManifests()
	var victim iceberg.DataFile
	for _, m := range ms {
		for ent, err := range m.Entries(fsys, true) {
			if err != nil {
				e.t.Fatal(err)
			}
			if df := ent.DataFile(); victim == nil && df.ContentType() == iceberg.EntryContentPosDeletes && df.Count() > 0 {
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
	for p := range e.filesOnDisk() {
		if outputs.OfAttempt(p, commit.RebaseAttempt(jobID)) && !live[p] {
			e.t.Fatalf("rebased delete file %s is on disk but not in the table", p)
		}
	}
}
