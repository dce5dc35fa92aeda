package tests

import (
	"database/sql"
	"fmt"
	"strings"
	"sync"
	"testing"

	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/plan"
)

// repointCatalog is another tool undoing the env's table's last commits
// (repointTable).
func (e *env) repointCatalog(metadataLocation string) {
	e.t.Helper()
	if err := e.repointTable(e.ident, metadataLocation); err != nil {
		e.t.Fatal(err)
	}
}

// repointTable is another tool undoing a table's last commits: the sqlite
// catalog's row pointed back at an older metadata file, as an operator
// restoring it (or Iceberg Java's register_table after a drop) would.
func (e *env) repointTable(ident table.Identifier, metadataLocation string) error {
	db, err := sql.Open("sqlite", strings.TrimPrefix(e.cfg.Catalog.URI, "file:"))
	if err != nil {
		return err
	}
	defer db.Close()
	tbl, err := e.cat.LoadTable(e.ctx, ident)
	if err != nil {
		return err
	}
	res, err := db.ExecContext(e.ctx, `UPDATE iceberg_tables SET metadata_location = ?, previous_metadata_location = ? WHERE table_namespace = ? AND table_name = ?`,
		metadataLocation, tbl.MetadataLocation(), strings.Join(ident[:len(ident)-1], "."), ident[len(ident)-1])
	if err != nil {
		return fmt.Errorf("repoint %v: %w", ident, err)
	}
	if n, _ := res.RowsAffected(); n != 1 {
		return fmt.Errorf("repointed %d catalog rows of %v, want 1", n, ident)
	}
	if tbl, err = e.cat.LoadTable(e.ctx, ident); err != nil || tbl.MetadataLocation() != metadataLocation {
		return fmt.Errorf("after repointing %v the catalog has %v (%v), want %s", ident, tbl, err, metadataLocation)
	}
	return nil
}

// TestExpire_AnExpiryUndoneBeforeItsDeletionsDeletesNothingMore: an
// expiry commits; before its first deletion part is deleted, another tool
// points the catalog back at the metadata file from before it, so the
// expired snapshots are the table's again. Each part is checked against
// the table as the catalog has it right then (by the committer itself, or
// by a fanned-out deletion task): every file the restored snapshots need
// stays, every snapshot reads as before, and the job ends failed, naming
// the undo, instead of deleting on or failing every delivery.
func TestExpire_AnExpiryUndoneBeforeItsDeletionsDeletesNothingMore(t *testing.T) {
	for _, fanOut := range []bool{false, true} {
		name := "the committer deletes"
		if fanOut {
			name = "deletion tasks delete"
		}
		t.Run(name, func(t *testing.T) {
			e := setup(t)
			compactedWithShortRetention(t, e)
			before := e.snapshotFingerprints()
			preExpiry := e.load().MetadataLocation()
			var needed map[string]bool
			undo := func() {
				e.repointCatalog(preExpiry)
				needed = e.referencedFiles()
			}
			e.committer = e.onePartAFileCommitter(partHookBlobs{Blobs: e.deps.Blobs, once: &sync.Once{}, hook: func() {
				if !fanOut {
					undo()
				}
			}}, fanOut)
			r, err := e.planner.PlanExpiry(e.ctx, e.name(), "test")
			if err != nil || r.Outcome != plan.OutcomePlanned {
				t.Fatalf("plan: %+v %v", r, err)
			}
			e.drainCommits()
			if fanOut {
				if j := e.job(r.JobID); j.State != jobs.Committing {
					t.Fatalf("job %s (%s), want committing while its tasks delete", j.State, j.Reason)
				}
				undo()
				if st := e.drainTasks(); st.Failed != 0 {
					t.Fatalf("deletion tasks %+v: want none failed (a refusal is recorded, not retried)", st)
				}
				e.drainCommits()
			}
			if needed == nil {
				t.Fatal("the undo never ran: the test needs the expiry committed and its parts not yet deleted")
			}
			if len(e.load().Metadata().Snapshots()) < 2 {
				t.Fatal("the undo did not bring the expired snapshots back")
			}
			for p := range needed {
				if !exists(stripFile(p)) {
					t.Errorf("a file the restored snapshots need was deleted: %s", p)
				}
			}
			e.requireTimeTravelUnchanged(before)
			j := e.job(r.JobID)
			if j.State != jobs.Failed || !strings.Contains(j.Reason, "undone") {
				t.Fatalf("job %s (%s), want failed naming the undo", j.State, j.Reason)
			}
		})
	}
}
