package tests

import (
	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/dv"

	"github.com/icekeeper/icekeeper/shared/deletefiles"
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
