package tests

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	icebergio "github.com/apache/iceberg-go/io"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/expire"
	"github.com/icekeeper/icekeeper/shared/harness/sampletable"
	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/optin"
	"github.com/icekeeper/icekeeper/shared/plan"
	"github.com/icekeeper/icekeeper/shared/trigger"
)

// currentManifests returns the table's file IO and its current snapshot's
// manifests.
func (e *env) currentManifests() (icebergio.IO, []iceberg.ManifestFile) {
	e.t.Helper()
	tbl := e.load()
	fsys, err := tbl.FS(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	ms, err := tbl.CurrentSnapshot().Manifests(fsys)
	if err != nil {
		e.t.Fatal(err)
	}
	return fsys, ms
}

// dataManifests counts the current snapshot's data manifests.
func (e *env) dataManifests() int {
	e.t.Helper()
	_, ms := e.currentManifests()
	n := 0
	for _, m := range ms {
		if m.ManifestContent() == iceberg.ManifestContentData {
			n++
		}
	}
	return n
}

func (e *env) setProperties(props iceberg.Properties) {
	e.t.Helper()
	txn := e.load().NewTransaction()
	if err := txn.SetProperties(props); err != nil {
		e.t.Fatal(err)
	}
	if _, err := txn.Commit(e.ctx); err != nil {
		e.t.Fatal(err)
	}
}

// TestManifests_RewriteClustersManyManifestsByPartition: a table with a
// manifest per append and commit.manifest.min-count-to-merge=3 gets a
// manifest rewrite job: one REPLACE snapshot, at most one data manifest
// per partition, the same rows, no data file changed.
func TestManifests_RewriteClustersManyManifestsByPartition(t *testing.T) {
	e := setup(t)
	e.createTable(smallTable)
	e.setProperties(iceberg.Properties{table.ManifestMinMergeCountKey: "3"})
	before, files := e.dataManifests(), e.dataFilesOnDisk()
	want := e.fingerprint()
	if before <= 3 {
		t.Fatalf("only %d data manifests to start with", before)
	}
	r, err := e.planner.PlanManifestRewrite(asFunction(e.ctx, "Planner"), e.name(), "test")
	if err != nil || r.Outcome != plan.OutcomePlanned {
		t.Fatalf("plan: %+v %v", r, err)
	}
	e.drainCommits()
	j := e.job(r.JobID)
	if j.State != jobs.Committed || j.Kind != jobs.KindRewriteManifests {
		t.Fatalf("job %s %s (%s)", j.Kind, j.State, j.Reason)
	}
	if after := e.dataManifests(); after > smallTable.Partitions || after >= before {
		t.Fatalf("data manifests %d -> %d, want at most one per partition (%d)", before, after, smallTable.Partitions)
	}
	if got := e.fingerprint(); got != want {
		t.Fatalf("rows %s, want %s", got, want)
	}
	// Clustered: every data manifest holds one partition's files.
	fsys, ms := e.currentManifests()
	for _, m := range ms {
		if m.ManifestContent() != iceberg.ManifestContentData {
			continue
		}
		parts := map[string]bool{}
		for ent, err := range m.Entries(fsys, true) {
			if err != nil {
				t.Fatal(err)
			}
			parts[fmt.Sprint(ent.DataFile().Partition())] = true
		}
		if len(parts) != 1 {
			t.Errorf("manifest %s holds %d partitions, want 1", m.FilePath(), len(parts))
		}
	}
	if op := e.load().CurrentSnapshot().Summary.Operation; op != table.OpReplace {
		t.Fatalf("snapshot operation %s, want replace", op)
	}
	if after := e.dataFilesOnDisk(); len(after) != len(files) {
		t.Fatalf("data files %d -> %d: a manifest rewrite writes no data file", len(files), len(after))
	}
	if m := e.metrics.metricTotals(t); m["ManifestsRewritten"] != float64(before) {
		t.Fatalf("ManifestsRewritten %v, want %d", m["ManifestsRewritten"], before)
	}
	if r2, err := e.planner.PlanManifestRewrite(e.ctx, e.name(), "test"); err != nil || r2.Outcome != plan.OutcomeNothingToDo {
		t.Fatalf("second rewrite: %+v %v", r2, err)
	}
}

// TestManifests_TheChainRunsCompactionThenManifestsThenExpiry: visits of
// an opted-in table run the first action due: compaction, then (with a few
// more appends, fewer than the table's min-input-files, set so that the
// file-count goal is off) a manifest rewrite, then the expiry that frees
// what both replaced.
func TestManifests_TheChainRunsCompactionThenManifestsThenExpiry(t *testing.T) {
	d := setupDispatch(t, config.ModeActive, "demo", func(c *config.Config) { c.MinInterval = time.Millisecond })
	d.createNamed("demo.events", withProps(smallTable, map[string]string{
		"icekeeper.maintenance.enabled": "true", table.ManifestMinMergeCountKey: "2",
		expire.MinSnapshotsToKeepKey: "1", expire.MaxSnapshotAgeMsKey: "1", optin.PropertyCompactionMinInputFiles: "5",
	}))
	visit := func() jobs.Kind {
		t.Helper()
		time.Sleep(10 * time.Millisecond)
		o := outcomeOf(t, d.handle(commitEvent("demo.events")), "demo.events")
		if o.Action != trigger.ActionPlanned {
			t.Fatalf("nothing planned: %+v", o)
		}
		d.drainTasks()
		d.drainCommits()
		j := d.job(o.Plan.JobID)
		if j.State != jobs.Committed {
			t.Fatalf("%s job %s (%s)", j.Kind, j.State, j.Reason)
		}
		return j.Kind
	}
	want := d.fingerprint()
	if k := visit(); k != jobs.KindCompaction {
		t.Fatalf("first visit: %s, want compaction", k)
	}
	for i := range 3 {
		if _, err := sampletable.AppendRows(d.ctx, d.load(), int64(5_000_000+100*i), 1, 5); err != nil {
			t.Fatal(err)
		}
	}
	want = d.fingerprint()
	if k := visit(); k != jobs.KindRewriteManifests {
		t.Fatalf("second visit: %s, want a manifest rewrite", k)
	}
	if k := visit(); k != jobs.KindExpire {
		t.Fatalf("third visit: %s, want an expiry", k)
	}
	if got := d.fingerprint(); got != want {
		t.Fatalf("rows %s, want %s", got, want)
	}
	d.requireOnlyReferencedFiles()
}

// TestManifests_EachActionHasItsOwnSwitch: with compaction, delete-file
// rewrites and manifest rewrites turned off by the owner, a table that has
// small files, equality deletes and many manifests gets none of them; its
// due snapshots still expire.
func TestManifests_EachActionHasItsOwnSwitch(t *testing.T) {
	d := setupDispatch(t, config.ModeActive, "demo", func(c *config.Config) { c.MinInterval = time.Millisecond })
	d.createNamed("demo.events", withProps(smallTable, map[string]string{
		"icekeeper.maintenance.enabled": "true", "icekeeper.compaction.enabled": "false", "icekeeper.rewrite-manifests.enabled": "false",
		"icekeeper.rewrite-deletes.enabled": "false",
		table.ManifestMinMergeCountKey:      "2", expire.MinSnapshotsToKeepKey: "1", expire.MaxSnapshotAgeMsKey: "1",
	}))
	time.Sleep(10 * time.Millisecond)
	o := outcomeOf(t, d.handle(commitEvent("demo.events")), "demo.events")
	if o.Action != trigger.ActionPlanned || d.job(o.Plan.JobID).Kind != jobs.KindExpire {
		t.Fatalf("want only an expiry: %+v", o)
	}
	d.drainCommits()
	txn := d.load().NewTransaction()
	if err := txn.SetProperties(iceberg.Properties{"icekeeper.expire.enabled": "false"}); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(d.ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(10 * time.Millisecond)
	o = outcomeOf(t, d.handle(commitEvent("demo.events")), "demo.events")
	if o.Action == trigger.ActionPlanned || !strings.Contains(o.Reason, "compaction turned off") {
		t.Fatalf("every action off, yet: %+v", o)
	}
}
