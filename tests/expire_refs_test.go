package tests

import (
	"context"
	"encoding/json"
	"maps"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/commit"
	"github.com/icekeeper/icekeeper/shared/harness/fingerprint"
	"github.com/icekeeper/icekeeper/shared/harness/sampletable"
	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/lease"
	"github.com/icekeeper/icekeeper/shared/messages"
	"github.com/icekeeper/icekeeper/shared/plan"
)

// refRacer is the catalog an expiry's committer commits through, with
// another writer acting right before the committer's first catalog commit
// (after it loaded the table and selected). It says it is a catalog of
// kind: for catalog.REST the requirements travel as a REST server would
// receive them (JSON, decoded as the spec's requirement types) and are
// then applied by the sql catalog to its current metadata, as a REST
// server applies them to its own (Iceberg Java's CatalogHandlers.commit
// validates the requirements, then applies the updates to the metadata it
// holds).
type refRacer struct {
	commit.Catalog
	kind   catalog.Type
	before func()
	fired  bool
}

func (r *refRacer) CatalogType() catalog.Type { return r.kind }

func (r *refRacer) CommitTable(ctx context.Context, ident table.Identifier, reqs []table.Requirement, updates []table.Update) (table.Metadata, string, error) {
	if !r.fired {
		r.fired = true
		r.before()
	}
	if r.kind == catalog.REST {
		b, err := json.Marshal(reqs)
		if err != nil {
			return nil, "", err
		}
		var onServer table.Requirements
		if err := json.Unmarshal(b, &onServer); err != nil {
			return nil, "", err
		}
		reqs = onServer
	}
	return r.Catalog.CommitTable(ctx, ident, reqs, updates)
}

// filesOf lists what reading snapshot id needs: its manifest list, its
// manifests and the files of their live entries (local paths).
func (e *env) filesOf(tbl *table.Table, id int64) []string {
	e.t.Helper()
	fsys, err := tbl.FS(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	s := tbl.Metadata().SnapshotByID(id)
	out := []string{s.ManifestList}
	ms, err := s.Manifests(fsys)
	if err != nil {
		e.t.Fatal(err)
	}
	for _, m := range ms {
		out = append(out, m.FilePath())
		for ent, err := range m.Entries(fsys, true) {
			if err != nil {
				e.t.Fatal(err)
			}
			out = append(out, ent.DataFile().FilePath())
		}
	}
	return out
}

// TestExpire_ATagCreatedDuringTheExpiryIsNeverDropped: after the expiry's
// committer selected, another writer tags a snapshot the expiry is about
// to remove. On a catalog that validates requirements in the client (sql,
// glue, hive) the guard refuses the commit, the committer selects again
// (the tag now keeps the snapshot) and the tag, its snapshot, its rows and
// its files all stay. On a REST catalog, whose server can only check the
// refs it was told about and then drops the new tag with its snapshot,
// the commit is checked against the metadata the server applied it to:
// the job ends failed, naming the tag, and no file the tag's snapshot
// needs is deleted (its rows still read from that metadata file).
func TestExpire_ATagCreatedDuringTheExpiryIsNeverDropped(t *testing.T) {
	for _, kind := range []catalog.Type{catalog.SQL, catalog.REST} {
		t.Run(string(kind), func(t *testing.T) {
			e := setup(t)
			compactedWithShortRetention(t, e)
			r, err := e.planner.PlanExpiry(e.ctx, e.name(), "test")
			if err != nil || r.Outcome != plan.OutcomePlanned {
				t.Fatalf("plan: %+v %v", r, err)
			}
			tbl := e.load()
			oldest := tbl.Metadata().Snapshots()[0].SnapshotID
			want := e.fingerprintAt(oldest)
			needed := e.filesOf(tbl, oldest)
			racer := &refRacer{Catalog: e.cat, kind: kind, before: func() {
				_, _, err := e.cat.CommitTable(e.ctx, e.ident, nil, []table.Update{table.NewSetSnapshotRefUpdate("audit", oldest, table.TagRef, 0, 0, 0)})
				if err != nil {
					t.Fatalf("tag: %v", err)
				}
			}}
			c, err := commit.New(commit.Settings{LeaseTTL: time.Minute, MaxRetries: 3, Backoff: time.Millisecond, CommitTakeover: time.Hour},
				racer, e.deps.Jobs, e.deps.Leases, e.deps.Blobs, e.deps.Tables, nil, nil, commit.Options{})
			if err != nil {
				t.Fatal(err)
			}
			res, err := c.Handle(e.ctx, messages.CommitJob(r.JobID), 1)
			if err != nil {
				t.Fatalf("commit: %v", err)
			}
			if !racer.fired {
				t.Fatal("the tag was never created")
			}
			for _, p := range needed {
				if _, err := os.Stat(strings.TrimPrefix(p, "file://")); err != nil {
					t.Fatalf("a file the tag's snapshot needs is gone: %s (%v); result %+v", p, err, res)
				}
			}
			after := e.load()
			switch kind {
			case catalog.SQL:
				ref, ok := maps.Collect(after.Metadata().Refs())["audit"]
				if !ok || ref.SnapshotID != oldest || after.Metadata().SnapshotByID(oldest) == nil {
					t.Fatalf("the tag or its snapshot is gone: refs %v; result %+v", maps.Collect(after.Metadata().Refs()), res)
				}
				if res.Outcome != commit.OutcomeCommitted || res.Conflicts < 1 {
					t.Fatalf("want a commit after a conflict: %+v", res)
				}
				if got := e.fingerprintAt(oldest); got != want {
					t.Fatalf("rows at the tag %s, want %s", got, want)
				}
			case catalog.REST:
				j := e.job(r.JobID)
				if j.State != jobs.Failed || !strings.Contains(j.Reason, "audit") {
					t.Fatalf("want the job failed naming the dropped tag: %s %q", j.State, j.Reason)
				}
				var rec messages.Deletions
				b, err := e.deps.Blobs.Get(e.ctx, strings.TrimSuffix(j.PlanKey, "plan.json")+"deletions.json")
				if err != nil {
					t.Fatal(err)
				}
				if err := messages.Decode(b, &rec); err != nil || !rec.Verified || len(rec.DroppedRefs) != 1 || rec.AppliedTo == "" {
					t.Fatalf("deletions record %+v %v", rec, err)
				}
				before, err := table.NewFromLocation(e.ctx, e.ident, rec.AppliedTo, after.FS, nil)
				if err != nil {
					t.Fatal(err)
				}
				if ref := maps.Collect(before.Metadata().Refs())["audit"]; ref.SnapshotID != oldest {
					t.Fatalf("the applied-to metadata has no tag at %d: %v", oldest, maps.Collect(before.Metadata().Refs()))
				}
				got, err := fingerprint.Scan(e.ctx, before.Scan(table.WithSnapshotID(oldest)))
				if err != nil || got != want {
					t.Fatalf("rows at the dropped tag's snapshot %s (%v), want %s", got, err, want)
				}
			}
		})
	}
}

// TestExpire_AnExpiryThatLostItsLeaseAfterItsCommitEndsAndTheNextFinishesIt:
// the expiry's catalog commit lands and then its lease is gone (another
// job took the table while its deletions waited). It ends committed, with
// its deletions left and its files on storage; it pins nothing, so the
// next expiry selects as usual, and that expiry's committer deletes what
// the first left (checked against the table as it is then), after which
// only referenced files remain.
func TestExpire_AnExpiryThatLostItsLeaseAfterItsCommitEndsAndTheNextFinishesIt(t *testing.T) {
	e := setup(t)
	compactedWithShortRetention(t, e)
	r, err := e.planner.PlanExpiry(e.ctx, e.name(), "test")
	if err != nil || r.Outcome != plan.OutcomePlanned {
		t.Fatalf("plan: %+v %v", r, err)
	}
	want := e.fingerprint()
	first := e.job(r.JobID)
	c, err := commit.New(commit.Settings{LeaseTTL: time.Minute, MaxRetries: 3, Backoff: time.Millisecond, CommitTakeover: time.Hour},
		e.cat, e.deps.Jobs, e.deps.Leases, e.deps.Blobs, e.deps.Tables, nil, nil, commit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	c.SetAfterCatalogCommit(func(string) error {
		// The lease is lost: released under the job's term, as if it had
		// expired and been taken.
		return e.deps.Leases.Release(e.ctx, lease.Lease{Table: first.Table, Owner: first.ID, Token: first.Token})
	})
	res, err := c.Handle(e.ctx, messages.CommitJob(r.JobID), 1)
	if err != nil {
		t.Fatalf("commit: %v", err)
	}
	j := e.job(r.JobID)
	if j.State != jobs.Committed || !j.DeletionsLeft || res.FilesDeleted != 0 {
		t.Fatalf("want committed with deletions left: %s %t %q; result %+v", j.State, j.DeletionsLeft, j.Reason, res)
	}
	if got := e.fingerprint(); got != want {
		t.Fatalf("rows %s, want %s", got, want)
	}
	onDisk, referenced := e.filesOnDisk(), e.referencedFiles()
	left := 0
	for p := range onDisk {
		if !referenced[p] {
			left++
		}
	}
	if left == 0 {
		t.Fatal("the expiry's freed files are gone, though its lease was lost before deleting")
	}

	// More snapshots become due; the next expiry finishes the first one.
	for i := range 2 {
		if _, err := sampletable.AppendRows(e.ctx, e.load(), int64(5_000_000+i*1000), 1, 5); err != nil {
			t.Fatal(err)
		}
	}
	want = e.fingerprint()
	time.Sleep(5 * time.Millisecond)
	r2, err := e.planner.PlanExpiry(e.ctx, e.name(), "test")
	if err != nil || r2.Outcome != plan.OutcomePlanned {
		t.Fatalf("plan the next expiry: %+v %v", r2, err)
	}
	var p messages.ExpiryPlan
	b, err := e.deps.Blobs.Get(e.ctx, e.job(r2.JobID).PlanKey)
	if err != nil {
		t.Fatal(err)
	}
	if err := messages.Decode(b, &p); err != nil || len(p.Leftovers) != 1 || p.Leftovers[0] != r.JobID {
		t.Fatalf("next plan's leftovers %v (%v), want [%s]", p.Leftovers, err, r.JobID)
	}
	e.drainCommits()
	if j2 := e.job(r2.JobID); j2.State != jobs.Committed {
		t.Fatalf("next expiry %s: %s", j2.State, j2.Reason)
	}
	if e.job(r.JobID).DeletionsLeft {
		t.Fatal("the first expiry's deletions are still left")
	}
	if got := e.fingerprint(); got != want {
		t.Fatalf("rows %s, want %s", got, want)
	}
	e.requireOnlyReferencedFiles()
}

// TestExpire_ABranchPastItsMaxAgeCreatedAfterThePlanKeepsWhatItsRetentionKeeps:
// after an expiry was planned, another writer creates a branch on a
// snapshot the plan expires, with a max-ref-age of 1 ms (past it at once)
// and min-snapshots-to-keep 2. The plan did not remove the branch, so the
// committer keeps it, and with it the two snapshots its retention keeps,
// their files and their rows (the harness's seed 161173871045639 found the
// branch's head kept and its parent expired).
func TestExpire_ABranchPastItsMaxAgeCreatedAfterThePlanKeepsWhatItsRetentionKeeps(t *testing.T) {
	e := setup(t)
	compactedWithShortRetention(t, e)
	r, err := e.planner.PlanExpiry(e.ctx, e.name(), "test")
	if err != nil || r.Outcome != plan.OutcomePlanned {
		t.Fatalf("plan: %+v %v", r, err)
	}
	tbl := e.load()
	line := table.AncestorsOf(tbl.CurrentSnapshot().SnapshotID, tbl.Metadata().SnapshotByID)
	if len(line) < 3 {
		t.Fatalf("main has %d snapshots, want 3 or more", len(line))
	}
	head, parent := line[1].SnapshotID, line[2].SnapshotID
	want := e.fingerprintAt(parent)
	needed := append(e.filesOf(tbl, head), e.filesOf(tbl, parent)...)
	if _, _, err := e.cat.CommitTable(e.ctx, e.ident, nil, []table.Update{table.NewSetSnapshotRefUpdate("late", head, table.BranchRef, 1, 0, 2)}); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond) // the branch is past its max-ref-age
	e.drainTasks()
	e.drainCommits()
	if j := e.job(r.JobID); j.State != jobs.Committed {
		t.Fatalf("job %s (%s), want committed", j.State, j.Reason)
	}
	after := e.load().Metadata()
	if ref, ok := maps.Collect(after.Refs())["late"]; !ok || ref.SnapshotID != head {
		t.Fatalf("branch late is gone or moved: refs %v", maps.Collect(after.Refs()))
	}
	for _, id := range []int64{head, parent} {
		if after.SnapshotByID(id) == nil {
			t.Fatalf("snapshot %d, kept by branch late's retention, was expired", id)
		}
	}
	if len(after.Snapshots()) >= len(tbl.Metadata().Snapshots()) {
		t.Fatalf("the expiry expired nothing: %d snapshots, %d before", len(after.Snapshots()), len(tbl.Metadata().Snapshots()))
	}
	for _, p := range needed {
		if _, err := os.Stat(strings.TrimPrefix(p, "file://")); err != nil {
			t.Fatalf("a file the branch's snapshots need is gone: %s (%v)", p, err)
		}
	}
	if got := e.fingerprintAt(parent); got != want {
		t.Fatalf("rows at the branch's parent %s, want %s", got, want)
	}
}
