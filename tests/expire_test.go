package tests

import (
	"errors"
	iofs "io/fs"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/commit"
	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/expire"
	"github.com/icekeeper/icekeeper/shared/harness/fingerprint"
	"github.com/icekeeper/icekeeper/shared/harness/sampletable"
	"github.com/icekeeper/icekeeper/shared/joblog"
	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/messages"
	"github.com/icekeeper/icekeeper/shared/optin"
	"github.com/icekeeper/icekeeper/shared/plan"
	"github.com/icekeeper/icekeeper/shared/trigger"
)

// compactedWithShortRetention compacts the env's table (so the files it
// replaced are referenced by old snapshots only) and sets a retention that
// makes every snapshot but the newest due: keep 1, expire after 1 ms.
func compactedWithShortRetention(t *testing.T, e *env) {
	t.Helper()
	e.createTable(smallTable)
	e.compactAndRequireSame()
	txn := e.load().NewTransaction()
	if err := txn.SetProperties(iceberg.Properties{expire.MinSnapshotsToKeepKey: "1", expire.MaxSnapshotAgeMsKey: "1"}); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(e.ctx); err != nil {
		t.Fatal(err)
	}
	time.Sleep(5 * time.Millisecond)
}

// filesOnDisk lists the table's data and metadata files (not the metadata
// JSON files).
func (e *env) filesOnDisk() map[string]bool {
	e.t.Helper()
	out := map[string]bool{}
	root := strings.TrimPrefix(e.load().Location(), "file://")
	err := filepath.WalkDir(root, func(p string, d iofs.DirEntry, err error) error {
		if err != nil || d.IsDir() || strings.HasSuffix(p, ".metadata.json") {
			return err
		}
		out["file://"+p] = true
		return nil
	})
	if err != nil {
		e.t.Fatal(err)
	}
	return out
}

// referencedFiles lists what the table's snapshots need: manifest lists,
// manifests and the files of their live entries.
func (e *env) referencedFiles() map[string]bool {
	e.t.Helper()
	tbl := e.load()
	fsys, err := tbl.FS(e.ctx)
	if err != nil {
		e.t.Fatal(err)
	}
	out := map[string]bool{}
	for _, s := range tbl.Metadata().Snapshots() {
		out[s.ManifestList] = true
		ms, err := s.Manifests(fsys)
		if err != nil {
			e.t.Fatal(err)
		}
		for _, m := range ms {
			out[m.FilePath()] = true
			for ent, err := range m.Entries(fsys, true) {
				if err != nil {
					e.t.Fatal(err)
				}
				out[ent.DataFile().FilePath()] = true
			}
		}
	}
	return out
}

// requireOnlyReferencedFiles fails unless the files on disk are exactly
// the ones the table's snapshots reference.
func (e *env) requireOnlyReferencedFiles() {
	e.t.Helper()
	onDisk, want := e.filesOnDisk(), e.referencedFiles()
	for p := range want {
		if !onDisk[p] {
			e.t.Errorf("a kept snapshot's file is gone: %s", p)
		}
	}
	for p := range onDisk {
		if !want[p] {
			e.t.Errorf("a file no snapshot references is left: %s", p)
		}
	}
}

// snapshotFingerprints reads every snapshot of the table.
func (e *env) snapshotFingerprints() map[int64]fingerprint.Fingerprint {
	e.t.Helper()
	tbl := e.load()
	out := map[int64]fingerprint.Fingerprint{}
	for _, s := range tbl.Metadata().Snapshots() {
		fp, err := fingerprint.Scan(e.ctx, tbl.Scan(table.WithSnapshotID(s.SnapshotID)))
		if err != nil {
			e.t.Fatalf("read snapshot %d: %v", s.SnapshotID, err)
		}
		out[s.SnapshotID] = fp
	}
	return out
}

// requireTimeTravelUnchanged fails unless every snapshot the table still
// has reads as it did before.
func (e *env) requireTimeTravelUnchanged(before map[int64]fingerprint.Fingerprint) {
	e.t.Helper()
	for id, fp := range e.snapshotFingerprints() {
		if want, ok := before[id]; ok && fp != want {
			e.t.Errorf("snapshot %d reads %s, before the expiry %s", id, fp, want)
		}
	}
}

// TestExpire_FreesWhatCompactionReplaced: after a compaction, an expiry
// job with the table's retention (keep 1 snapshot, expire after 1 ms)
// leaves one snapshot, deletes exactly the files only the expired ones
// used (the compacted small files, their deletes, old manifests and
// manifest lists), keeps the rows, and says so in the maintenance log and
// the metrics.
func TestExpire_FreesWhatCompactionReplaced(t *testing.T) {
	e := setup(t)
	compactedWithShortRetention(t, e)
	r := e.expireAllButTheCurrentSnapshot()
	records, err := joblog.New(e.deps.Blobs).Read(e.ctx, e.name(), 0)
	if err != nil {
		t.Fatal(err)
	}
	var rec *joblog.Record
	for i := range records {
		if records[i].JobID == r.JobID {
			rec = &records[i]
		}
	}
	if rec == nil || rec.Kind != string(jobs.KindExpire) || rec.SnapshotsExpired < 2 || rec.FilesDeleted == 0 || rec.BytesFreed == 0 {
		t.Fatalf("maintenance log record %+v", rec)
	}
	if rec.After == nil || rec.Before == nil || rec.After.Snapshots != 1 || rec.Before.Snapshots <= 1 {
		t.Fatalf("snapshots before %+v, after %+v", rec.Before, rec.After)
	}
	m := e.metrics.metricTotals(t)
	if m["SnapshotsExpired"] != float64(rec.SnapshotsExpired) || m["ExpiredFilesDeleted"] != float64(rec.FilesDeleted) || m["BytesFreed"] == 0 {
		t.Fatalf("metrics %v", m)
	}
	// Nothing is due any more.
	if r2, err := e.planner.PlanExpiry(e.ctx, e.name(), "test"); err != nil || r2.Outcome != plan.OutcomeNothingToDo {
		t.Fatalf("second expiry: %+v %v", r2, err)
	}
}

// expireAllButTheCurrentSnapshot plans an expiry of the table that
// compactedWithShortRetention made and runs it: the job commits, one
// snapshot is left, the rows and every snapshot kept are unchanged, and
// no file outside the table's references is left.
func (e *env) expireAllButTheCurrentSnapshot() plan.Result {
	e.t.Helper()
	want := e.fingerprint()
	before := e.snapshotFingerprints()
	r, err := e.planner.PlanExpiry(asFunction(e.ctx, "Planner"), e.name(), "test")
	if err != nil || r.Outcome != plan.OutcomePlanned {
		e.t.Fatalf("expiry planning: %+v %v", r, err)
	}
	e.drainCommits()
	if j := e.job(r.JobID); j.State != jobs.Committed || j.Kind != jobs.KindExpire {
		e.t.Fatalf("job %s %s (%s), want a committed expiry", j.Kind, j.State, j.Reason)
	}
	if n := len(e.load().Metadata().Snapshots()); n != 1 {
		e.t.Fatalf("%d snapshots left, want 1", n)
	}
	if got := e.fingerprint(); got != want {
		e.t.Fatalf("rows %s, want %s", got, want)
	}
	e.requireTimeTravelUnchanged(before)
	e.requireOnlyReferencedFiles()
	return r
}

// TestExpire_CrashAfterTheCommitFinishesTheDeletions: the committer dies
// after the catalog accepted the expiry and before it deleted anything.
// The redelivered request finds the durable record and a table without
// the expired snapshots, deletes the files, and ends the job: nothing
// leaks, nothing is deleted that a snapshot needs.
func TestExpire_CrashAfterTheCommitFinishesTheDeletions(t *testing.T) {
	const takeover = 2 * time.Second
	e := setup(t, func(c *config.Config) { c.CommitTakeover = takeover })
	compactedWithShortRetention(t, e)
	want := e.fingerprint()
	r, err := e.planner.PlanExpiry(e.ctx, e.name(), "test")
	if err != nil || r.Outcome != plan.OutcomePlanned {
		t.Fatalf("plan: %+v %v", r, err)
	}
	crashes := 0
	e.committer.SetAfterCatalogCommit(func(string) error {
		if crashes == 0 {
			crashes++
			time.Sleep(takeover + 100*time.Millisecond)
			return errors.New("simulated crash after the catalog commit")
		}
		return nil
	})
	st := e.drainCommits()
	if crashes != 1 || st.Failed < 1 {
		t.Fatalf("crash not exercised: %d crashes, %d failed deliveries", crashes, st.Failed)
	}
	if j := e.job(r.JobID); j.State != jobs.Committed {
		t.Fatalf("job %s (%s)", j.State, j.Reason)
	}
	if got := e.fingerprint(); got != want {
		t.Fatalf("rows %s, want %s", got, want)
	}
	e.requireOnlyReferencedFiles()
}

// TestExpire_ACommitLandingDuringTheExpiryIsKept: a writer appends right
// after the committer loaded the table. The expiry's commit asserts every
// ref, meets the moved main branch, reloads, selects again and commits;
// the writer's snapshot and files are kept, and its rows are there.
func TestExpire_ACommitLandingDuringTheExpiryIsKept(t *testing.T) {
	e := setup(t)
	compactedWithShortRetention(t, e)
	r, err := e.planner.PlanExpiry(e.ctx, e.name(), "test")
	if err != nil || r.Outcome != plan.OutcomePlanned {
		t.Fatalf("plan: %+v %v", r, err)
	}
	var want fingerprint.Fingerprint
	ic := &interloper{Catalog: e.cat, at: 1}
	ic.write = func(tbl *table.Table) {
		if _, err := sampletable.AppendRows(e.ctx, tbl, 3_000_000, 2, 10); err != nil {
			t.Fatal(err)
		}
		want = e.fingerprint()
	}
	c, err := commit.New(commit.Settings{LeaseTTL: time.Minute, MaxRetries: 3, Backoff: time.Millisecond, CommitTakeover: time.Hour},
		ic, e.deps.Jobs, e.deps.Leases, e.deps.Blobs, e.deps.Tables, nil, nil, commit.Options{})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Handle(e.ctx, messages.CommitJob(r.JobID), 1)
	if err != nil {
		t.Fatalf("commit: %v", err)
	}
	if !ic.fired || res.Outcome != commit.OutcomeCommitted || res.Conflicts < 1 {
		t.Fatalf("the writer ran %t; result %+v", ic.fired, res)
	}
	if got := e.fingerprint(); got != want || want.Rows == 0 {
		t.Fatalf("rows %s, want the writer's %s", got, want)
	}
	e.requireOnlyReferencedFiles()
}

// TestExpire_FollowsCompactionOnTheTablesNextVisit: an opted-in table
// whose compaction has nothing left to do but whose snapshots are due is
// given an expiry job by the next commit event (and by the sweep, which no
// longer counts it healthy); with icekeeper.expire.enabled=false it is
// left alone.
func TestExpire_FollowsCompactionOnTheTablesNextVisit(t *testing.T) {
	for _, enabled := range []bool{true, false} {
		t.Run(map[bool]string{true: "enabled", false: "turned off"}[enabled], func(t *testing.T) {
			d := setupDispatch(t, config.ModeActive, "demo", func(c *config.Config) { c.MinInterval = time.Millisecond })
			// The owner's min-input-files: the append below, between the
			// events, brings a partition to two small files (twice its
			// optimum), which the file-count goal would compact first.
			props := map[string]string{"icekeeper.maintenance.enabled": "true", optin.PropertyCompactionMinInputFiles: "5"}
			if !enabled {
				props["icekeeper.expire.enabled"] = "false"
			}
			d.createNamed("demo.events", withProps(smallTable, props))
			d.compactAndRequireSame()
			txn := d.load().NewTransaction()
			if err := txn.SetProperties(iceberg.Properties{expire.MinSnapshotsToKeepKey: "1", expire.MaxSnapshotAgeMsKey: "1"}); err != nil {
				t.Fatal(err)
			}
			if _, err := txn.Commit(d.ctx); err != nil {
				t.Fatal(err)
			}
			time.Sleep(10 * time.Millisecond)
			before := len(d.load().Metadata().Snapshots())
			for _, event := range [][]byte{commitEvent("demo.events"), mustRead(t, "../events/scheduled.json")} {
				resp := d.handle(event)
				o := outcomeOf(t, resp, "demo.events")
				d.drainCommits()
				if !enabled {
					if o.Action == trigger.ActionPlanned {
						t.Fatalf("expiry turned off, yet planned: %+v", o)
					}
					continue
				}
				if o.Action != trigger.ActionPlanned || o.Plan == nil || d.job(o.Plan.JobID).Kind != jobs.KindExpire {
					t.Fatalf("want an expiry job: %+v", o)
				}
				if j := d.job(o.Plan.JobID); j.State != jobs.Committed {
					t.Fatalf("expiry job %s (%s)", j.State, j.Reason)
				}
				// The next event finds nothing due: add a snapshot to expire.
				if _, err := sampletable.AppendRows(d.ctx, d.load(), 4_000_000, 1, 5); err != nil {
					t.Fatal(err)
				}
				time.Sleep(10 * time.Millisecond)
			}
			after := len(d.load().Metadata().Snapshots())
			if enabled && after >= before || !enabled && after < before {
				t.Fatalf("snapshots %d -> %d (expiry enabled %t)", before, after, enabled)
			}
		})
	}
}

// TestExpire_HasItsOwnCooldown: with icekeeper.expire.min-interval=1h, an
// expiry is planned once; the next visit, with snapshots due again, skips
// it, saying why. A visit that found nothing due spends no cooldown.
func TestExpire_HasItsOwnCooldown(t *testing.T) {
	d := setupDispatch(t, config.ModeActive, "demo", func(c *config.Config) { c.MinInterval = time.Millisecond })
	d.createNamed("demo.events", withProps(smallTable, map[string]string{
		"icekeeper.maintenance.enabled": "true", "icekeeper.compaction.enabled": "false", "icekeeper.rewrite-deletes.enabled": "false",
		"icekeeper.expire.min-interval": "1h",
		expire.MinSnapshotsToKeepKey:    "1", expire.MaxSnapshotAgeMsKey: "3600000",
	}))
	// Nothing is due yet (snapshots younger than an hour): no cooldown spent.
	time.Sleep(10 * time.Millisecond)
	if o := outcomeOf(t, d.handle(commitEvent("demo.events")), "demo.events"); o.Action == trigger.ActionPlanned {
		t.Fatalf("planned with nothing due: %+v", o)
	}
	d.setProperties(iceberg.Properties{expire.MaxSnapshotAgeMsKey: "1"})
	time.Sleep(10 * time.Millisecond)
	o := outcomeOf(t, d.handle(commitEvent("demo.events")), "demo.events")
	if o.Action != trigger.ActionPlanned || d.job(o.Plan.JobID).Kind != jobs.KindExpire {
		t.Fatalf("want an expiry: %+v", o)
	}
	d.drainCommits()
	for i := range 2 {
		if _, err := sampletable.AppendRows(d.ctx, d.load(), int64(6_000_000+100*i), 1, 5); err != nil {
			t.Fatal(err)
		}
	}
	time.Sleep(10 * time.Millisecond)
	o = outcomeOf(t, d.handle(commitEvent("demo.events")), "demo.events")
	if o.Action == trigger.ActionPlanned || !strings.Contains(o.Reason, "icekeeper.expire.min-interval") {
		t.Fatalf("want the expiry cooling down: %+v", o)
	}
}

// TestExpire_LargeDeletionsFanOutToTheRewriters: with parts of 3 files,
// the committer commits the expiry, then sends one deletion task per part
// instead of deleting; rewriters delete the parts, the last sends the
// commit request, and the committer finishes the job. The files on disk
// are then exactly those the kept snapshots reference.
func TestExpire_LargeDeletionsFanOutToTheRewriters(t *testing.T) {
	e := setup(t)
	compactedWithShortRetention(t, e)
	want := e.fingerprint()
	r, err := e.planner.PlanExpiry(e.ctx, e.name(), "test")
	if err != nil || r.Outcome != plan.OutcomePlanned {
		t.Fatalf("plan: %+v %v", r, err)
	}
	c, err := commit.New(commit.Settings{LeaseTTL: time.Minute, MaxRetries: 3, Backoff: time.Millisecond, CommitTakeover: time.Hour, DeletionPartFiles: 3},
		e.cat, e.deps.Jobs, e.deps.Leases, e.deps.Blobs, e.deps.Tables, nil, nil, commit.Options{DeletionTasks: e.deps.Tasks, DeletionFanOutParts: 2})
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.Handle(asFunction(e.ctx, "Committer"), messages.CommitJob(r.JobID), 1)
	if err != nil || res.Outcome != commit.OutcomeWaiting {
		t.Fatalf("commit: %+v %v, want the deletions fanned out", res, err)
	}
	if n := len(e.load().Metadata().Snapshots()); n != 1 {
		t.Fatalf("%d snapshots after the commit, want 1", n)
	}
	st := e.drainTasks()
	if st.Delivered < 2 || st.Failed != 0 {
		t.Fatalf("deletion tasks: %+v, want at least 2, none failed", st)
	}
	e.drainCommits()
	if j := e.job(r.JobID); j.State != jobs.Committed {
		t.Fatalf("job %s (%s)", j.State, j.Reason)
	}
	if got := e.fingerprint(); got != want {
		t.Fatalf("rows %s, want %s", got, want)
	}
	e.requireOnlyReferencedFiles()
}

// TestExpire_FollowsACompactionAtOnceOnTheCommittersContinuation: a table
// whose compaction is due at every visit (a streaming writer's) used to
// reach its expiry only on a visit with nothing to compact, so its storage
// grew with every compaction (the soak harness). Now the committer of a
// compaction announces that the maintenance chain resumes after it; that
// announcement, delivered to the planner inside the table's cooldown (an
// hour), plans the expiry the compaction made due, which leaves one
// snapshot and only its files on storage. The expiry announces nothing;
// the announcement again plans nothing; the rows never change.
func TestExpire_FollowsACompactionAtOnceOnTheCommittersContinuation(t *testing.T) {
	d := setupDispatch(t, config.ModeActive, "demo", func(c *config.Config) { c.MinInterval = time.Hour })
	d.createNamed("demo.events", withProps(smallTable, map[string]string{
		"icekeeper.maintenance.enabled": "true", expire.MinSnapshotsToKeepKey: "1", expire.MaxSnapshotAgeMsKey: "1",
	}))
	want := d.fingerprint()
	d.commitEventRunsJob("demo.events", jobs.KindCompaction, want)
	chain := d.events.chainContinuations(t)
	if len(chain) != 1 {
		t.Fatalf("the compaction announced %d chain continuations, want 1", len(chain))
	}
	time.Sleep(10 * time.Millisecond) // the compaction's snapshot ages past the 1 ms retention
	o := outcomeOf(t, d.handle(chain[0]), "demo.events")
	if o.Action != trigger.ActionPlanned || d.job(o.Plan.JobID).Kind != jobs.KindExpire {
		t.Fatalf("the continuation planned %+v, want the expiry", o)
	}
	d.drainCommits()
	if j := d.job(o.Plan.JobID); j.State != jobs.Committed {
		t.Fatalf("expiry job %s (%s)", j.State, j.Reason)
	}
	if n := len(d.load().Metadata().Snapshots()); n != 1 {
		t.Fatalf("%d snapshots after the expiry, want 1", n)
	}
	d.requireOnlyReferencedFiles()
	if got := d.fingerprint(); got != want {
		t.Fatalf("rows changed: %v, want %v", got, want)
	}
	if n := len(d.events.chainContinuations(t)); n != 1 {
		t.Fatalf("%d chain continuations after the expiry, want still 1", n)
	}
	if again := outcomeOf(t, d.handle(chain[0]), "demo.events"); again.Action == trigger.ActionPlanned {
		t.Fatalf("a redelivered continuation planned %+v", again)
	}
	if again := outcomeOf(t, d.handle(commitEvent("demo.events")), "demo.events"); again.Skip != trigger.SkipCooldown {
		t.Fatalf("a commit event inside the cooldown: %+v, want coalesced", again)
	}
}

// TestExpire_AnIdleTablesExpiryIsNotStarvedByBusyTables: a sweep whose
// job budget the busy tables' compactions use up still expires an idle
// table's snapshots (a table compacted once and left alone, whose
// replaced files only an expiry frees), and the expiry spends none of the
// data jobs' budget: metadata-only jobs have a budget of their own. In one
// budget, ranked by score, the idle table (score 20 against the busy
// tables' 26.6) was skipped for the budget, as the soak's idle tables
// were every sweep.
func TestExpire_AnIdleTablesExpiryIsNotStarvedByBusyTables(t *testing.T) {
	d := setupDispatch(t, config.ModeActive, "lake", func(c *config.Config) { c.SweepMaxJobs = 1 })
	busy := sampletable.Options{FormatVersion: 2, Partitions: 2, Files: 12, RowsPerFile: 50, PositionDeletes: true}
	d.createNamed("lake.busy1", withProps(busy, optedIn))
	d.createNamed("lake.busy2", withProps(busy, optedIn))
	idle := d.createNamed("lake.idle", withProps(sampletable.Options{FormatVersion: 2, Partitions: 1, Files: 1, RowsPerFile: 50}, map[string]string{
		optin.PropertyEnabled: "true", expire.MinSnapshotsToKeepKey: "1", expire.MaxSnapshotAgeMsKey: "1", optin.PropertyCompactionMinInputFiles: "5",
	}))
	// One more commit: two snapshots, two small files, fewer than the
	// owner's min-input-files (which turns the file-count goal off):
	// nothing to compact.
	idle, err := sampletable.AppendRows(d.ctx, idle, 7_000_000, 1, 5)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := fingerprint.Scan(d.ctx, idle.Scan())
	if err != nil {
		t.Fatal(err)
	}
	if n := len(idle.Metadata().Snapshots()); n != 2 {
		t.Fatalf("the idle table has %d snapshots, want 2", n)
	}
	time.Sleep(10 * time.Millisecond)

	resp := d.handle(mustRead(t, "../events/scheduled.json"))
	b1, b2 := outcomeOf(t, resp, "lake.busy1"), outcomeOf(t, resp, "lake.busy2")
	if (b1.Action == trigger.ActionPlanned) == (b2.Action == trigger.ActionPlanned) {
		t.Fatalf("want one busy table planned and the other over the job budget: %+v, %+v", b1, b2)
	}
	if b1.Skip != trigger.SkipBudgetJobs && b2.Skip != trigger.SkipBudgetJobs {
		t.Fatalf("no busy table skipped for the job budget: %+v, %+v", b1, b2)
	}
	o := outcomeOf(t, resp, "lake.idle")
	if o.Action != trigger.ActionPlanned || d.job(o.Plan.JobID).Kind != jobs.KindExpire {
		t.Fatalf("the idle table: %+v, want its expiry planned", o)
	}
	d.drainCommits()
	d.requireExpiredTo("lake.idle", 1, rows)
}

// requireExpiredTo fails unless the table name has snapshots snapshots
// and reads rows, after an expiry.
func (d *dispatchEnv) requireExpiredTo(name string, snapshots int, rows fingerprint.Fingerprint) {
	d.t.Helper()
	after, err := d.cat.LoadTable(d.ctx, strings.Split(name, "."))
	if err != nil {
		d.t.Fatal(err)
	}
	if n := len(after.Metadata().Snapshots()); n != snapshots {
		d.t.Errorf("%s has %d snapshots after the expiry, want %d", name, n, snapshots)
	}
	if got, err := fingerprint.Scan(d.ctx, after.Scan()); err != nil || got != rows {
		d.t.Errorf("%s's rows %v (err %v), want %v", name, got, err, rows)
	}
}
