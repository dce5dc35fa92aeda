package tests

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"
	lambdaevents "github.com/aws/aws-lambda-go/events"

	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/harness/fingerprint"
	"github.com/icekeeper/icekeeper/shared/harness/localrun"
	"github.com/icekeeper/icekeeper/shared/harness/sampletable"
	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/messages"
	"github.com/icekeeper/icekeeper/shared/optin"
	"github.com/icekeeper/icekeeper/shared/plan"
	"github.com/icekeeper/icekeeper/shared/trigger"
)

// plant writes a file under the table's location, aged by age.
func (e *env) plant(rel string, age time.Duration) string {
	e.t.Helper()
	p := filepath.Join(strings.TrimPrefix(e.load().Location(), "file://"), rel)
	if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
		e.t.Fatal(err)
	}
	if err := os.WriteFile(p, []byte("stray"), 0o644); err != nil {
		e.t.Fatal(err)
	}
	when := time.Now().Add(-age)
	if err := os.Chtimes(p, when, when); err != nil {
		e.t.Fatal(err)
	}
	return p
}

func exists(p string) bool { _, err := os.Stat(p); return err == nil }

// TestOrphans_OldOrphansGoYoungOnesAndLiveFilesStay: planted files under
// the table's location: an old one under data/ and under metadata/ are
// removed; a young one (younger than the 72h default) and an old one
// outside data/ and metadata/ stay; every file a snapshot references
// stays, so the rows read the same.
func TestOrphans_OldOrphansGoYoungOnesAndLiveFilesStay(t *testing.T) {
	e := setup(t)
	e.createTable(smallTable)
	e.compactAndRequireSame() // leaves the replaced files referenced by old snapshots
	want := e.fingerprint()
	oldData := e.plant("data/region=region-00/00000-0-stray.parquet", 96*time.Hour)
	oldMeta := e.plant("metadata/stray-m0.avro", 96*time.Hour)
	young := e.plant("data/region=region-01/00000-0-young.parquet", time.Hour)
	elsewhere := e.plant("scratch/notes.txt", 96*time.Hour)
	referenced := e.referencedFiles()

	r, err := e.planner.PlanOrphanCleanup(asFunction(e.ctx, "Planner"), e.name(), "test", 0)
	if err != nil || r.Outcome != plan.OutcomePlanned {
		t.Fatalf("plan: %+v %v", r, err)
	}
	e.drainCommits()
	j := e.job(r.JobID)
	if j.State != jobs.Committed || j.Kind != jobs.KindRemoveOrphans {
		t.Fatalf("job %s %s (%s)", j.Kind, j.State, j.Reason)
	}
	if exists(oldData) || exists(oldMeta) {
		t.Fatal("an old orphan under data/ or metadata/ is left")
	}
	if !exists(young) || !exists(elsewhere) {
		t.Fatal("a young orphan, or one outside data/ and metadata/, was removed")
	}
	for p := range referenced {
		if !exists(strings.TrimPrefix(p, "file://")) {
			t.Fatalf("a referenced file was removed: %s", p)
		}
	}
	if got := e.fingerprint(); got != want {
		t.Fatalf("rows %s, want %s", got, want)
	}
	if m := e.metrics.metricTotals(t); m["OrphanFilesRemoved"] != 2 {
		t.Fatalf("OrphanFilesRemoved %v, want 2", m["OrphanFilesRemoved"])
	}
	// Nothing old is left to remove.
	if r2, err := e.planner.PlanOrphanCleanup(e.ctx, e.name(), "test", 0); err != nil || r2.Outcome != plan.OutcomeNothingToDo {
		t.Fatalf("second cleanup: %+v %v", r2, err)
	}
}

// TestOrphans_RefusesALocationSharedWithAnotherTable: another table lives
// inside this table's location; its files would look like orphans. The
// cleanup is refused with the reason and nothing is removed.
func TestOrphans_RefusesALocationSharedWithAnotherTable(t *testing.T) {
	e := setup(t)
	tbl := e.createTable(smallTable)
	inside := strings.TrimSuffix(tbl.Location(), "/") + "/data/nested"
	other, err := sampletable.Create(e.ctx, e.cat, table.Identifier{"demo", "nested"}, sampletable.Options{FormatVersion: 2, Partitions: 1, Files: 2, RowsPerFile: 10, Properties: map[string]string{}})
	if err != nil {
		t.Fatal(err)
	}
	// Move the other table's files inside this one's location, as a table
	// created there would have them, and age them.
	moved := filepath.Join(strings.TrimPrefix(inside, "file://"), "metadata", "00000-other.metadata.json")
	if err := os.MkdirAll(filepath.Dir(moved), 0o755); err != nil {
		t.Fatal(err)
	}
	body, err := os.ReadFile(strings.TrimPrefix(other.MetadataLocation(), "file://"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(moved, body, 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-96 * time.Hour)
	if err := os.Chtimes(moved, old, old); err != nil {
		t.Fatal(err)
	}
	stray := e.plant("data/region=region-00/00000-0-stray.parquet", 96*time.Hour)
	r, err := e.planner.PlanOrphanCleanup(e.ctx, e.name(), "test", 0)
	if err != nil || r.Outcome != plan.OutcomeNothingToDo || !strings.Contains(r.Reason, "shared") {
		t.Fatalf("want a refusal naming the shared location: %+v %v", r, err)
	}
	if !exists(moved) || !exists(stray) {
		t.Fatal("a refused cleanup removed files")
	}
}

// TestOrphans_SafetyAgeIsNeverUnderADay: a safety age under 24 hours is
// refused, from the property or the caller.
func TestOrphans_SafetyAgeIsNeverUnderADay(t *testing.T) {
	e := setup(t)
	e.createTable(withProps(smallTable, map[string]string{optin.PropertyOrphansOlderThan: "2h"}))
	if _, err := e.planner.PlanOrphanCleanup(e.ctx, e.name(), "test", 0); !errors.Is(err, optin.ErrBadProperty) {
		t.Fatalf("2h property: err %v, want ErrBadProperty", err)
	}
	if _, err := e.planner.PlanOrphanCleanup(e.ctx, e.name(), "test", 12*time.Hour); !errors.Is(err, optin.ErrBadProperty) {
		t.Fatalf("12h override: err %v, want ErrBadProperty", err)
	}
}

// TestOrphans_TheOrphanScheduleCleansOnlyTablesThatAskedForIt: the orphan
// schedule's event plans a cleanup on an opted-in table whose owner set
// icekeeper.orphans.enabled=true, and skips one that did not; a commit
// event never plans one. In advisory mode the schedule only reports.
func TestOrphans_TheOrphanScheduleCleansOnlyTablesThatAskedForIt(t *testing.T) {
	for _, mode := range []config.Mode{config.ModeActive, config.ModeAdvisory} {
		t.Run(string(mode), func(t *testing.T) {
			d := setupDispatch(t, mode, "shop")
			asked := withProps(smallTable, map[string]string{optin.PropertyEnabled: "true", optin.PropertyOrphansEnabled: "true"})
			d.createNamed("shop.asked", asked)
			d.createNamed("shop.quiet", withProps(smallTable, map[string]string{optin.PropertyEnabled: "true"}))
			for _, name := range []string{"shop.asked", "shop.quiet"} {
				ident, _ := messages.TableIdent(name)
				tbl, err := d.cat.LoadTable(d.ctx, ident)
				if err != nil {
					t.Fatal(err)
				}
				p := filepath.Join(strings.TrimPrefix(tbl.Location(), "file://"), "data", "stray.parquet")
				if err := os.WriteFile(p, []byte("x"), 0o644); err != nil {
					t.Fatal(err)
				}
				old := time.Now().Add(-100 * time.Hour)
				if err := os.Chtimes(p, old, old); err != nil {
					t.Fatal(err)
				}
			}
			resp := d.handle(mustRead(t, "../events/orphan-schedule.json"))
			asked1, quiet := outcomeOf(t, resp, "shop.asked"), outcomeOf(t, resp, "shop.quiet")
			if quiet.Skip != trigger.SkipOrphansNotEnabled {
				t.Fatalf("shop.quiet: %+v, want skipped (orphans not enabled)", quiet)
			}
			if mode == config.ModeActive {
				if asked1.Action != trigger.ActionPlanned {
					t.Fatalf("shop.asked: %+v, want an orphan cleanup planned", asked1)
				}
				d.drainCommits()
				if j := d.job(asked1.Plan.JobID); j.Kind != jobs.KindRemoveOrphans || j.State != jobs.Committed {
					t.Fatalf("job %s %s (%s)", j.Kind, j.State, j.Reason)
				}
				// A commit event never plans an orphan cleanup.
				o := outcomeOf(t, d.handle(commitEvent("shop.asked")), "shop.asked")
				if o.Plan != nil && o.Plan.JobID != "" && d.job(o.Plan.JobID).Kind == jobs.KindRemoveOrphans {
					t.Fatalf("a commit event planned an orphan cleanup: %+v", o)
				}
				return
			}
			if asked1.Action != trigger.ActionAssessed || !strings.Contains(asked1.Reason, "1 orphan files") {
				t.Fatalf("advisory shop.asked: %+v, want a report of 1 orphan", asked1)
			}
		})
	}
}

// TestOrphans_ARefusalOnTheScheduleIsCountedForTheAlarm: the orphan
// schedule meets a table whose location holds another table's metadata:
// the cleanup is refused, and MaintenanceRefused (which the stack alarms
// on) is counted for the table.
func TestOrphans_ARefusalOnTheScheduleIsCountedForTheAlarm(t *testing.T) {
	d := setupDispatch(t, config.ModeActive, "shop")
	tbl := d.createNamed("shop.shared", withProps(smallTable, map[string]string{optin.PropertyEnabled: "true", optin.PropertyOrphansEnabled: "true"}))
	other := d.createNamed("shop.other", sampletable.Options{FormatVersion: 2, Partitions: 1, Files: 1, RowsPerFile: 5})
	body, err := os.ReadFile(strings.TrimPrefix(other.MetadataLocation(), "file://"))
	if err != nil {
		t.Fatal(err)
	}
	planted := filepath.Join(strings.TrimPrefix(tbl.Location(), "file://"), "data", "nested", "metadata", "00000-x.metadata.json")
	if err := os.MkdirAll(filepath.Dir(planted), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(planted, body, 0o644); err != nil {
		t.Fatal(err)
	}
	old := time.Now().Add(-100 * time.Hour)
	if err := os.Chtimes(planted, old, old); err != nil {
		t.Fatal(err)
	}
	o := outcomeOf(t, d.handle(mustRead(t, "../events/orphan-schedule.json")), "shop.shared")
	if o.Action == trigger.ActionPlanned || !strings.Contains(o.Reason, "refused") {
		t.Fatalf("want a refusal: %+v", o)
	}
	if m := d.metrics.metricTotals(t); m["MaintenanceRefused/shop.shared"] != 1 {
		t.Fatalf("MaintenanceRefused %v, want 1 for shop.shared", m["MaintenanceRefused/shop.shared"])
	}
	if !exists(planted) {
		t.Fatal("the other table's metadata was removed")
	}
}

// plantAround plants old orphans at every level the listing is split at
// (the location's top, data/ itself, partition folders, a nested folder,
// metadata/) plus a young one and an old one outside data/ and metadata/.
// It returns the old ones under data/ and metadata/ (to be removed) and the
// others (to stay).
func (e *env) plantAround() (gone, stay []string) {
	for _, rel := range []string{"data/direct-stray.parquet", "data/region=region-00/00000-0-stray.parquet",
		"data/region=region-01/deeper/stray.parquet", "metadata/stray-m0.avro"} {
		gone = append(gone, e.plant(rel, 96*time.Hour))
	}
	stay = append(stay, e.plant("data/region=region-02/00000-0-young.parquet", time.Hour),
		e.plant("top-stray.bin", 96*time.Hour), e.plant("scratch/notes.txt", 96*time.Hour))
	return gone, stay
}

// requireOrphansGone checks the cleanup's outcome on disk and in the rows.
func (e *env) requireOrphansGone(gone, stay []string, referenced map[string]bool, want fingerprint.Fingerprint) {
	e.t.Helper()
	for _, p := range gone {
		if exists(p) {
			e.t.Fatalf("an old orphan is left: %s", p)
		}
	}
	for _, p := range stay {
		if !exists(p) {
			e.t.Fatalf("a young orphan, or one outside data/ and metadata/, was removed: %s", p)
		}
	}
	for p := range referenced {
		if !exists(strings.TrimPrefix(p, "file://")) {
			e.t.Fatalf("a referenced file was removed: %s", p)
		}
	}
	if got := e.fingerprint(); got != want {
		e.t.Fatalf("rows %s, want %s", got, want)
	}
}

// TestOrphans_ALargeTablesListingFansOutByPrefix: a table at or above
// ICEKEEPER_ORPHAN_LIST_FANOUT_FILES is not listed by the planner: the
// committer splits its location into prefixes and sends one listing task
// per prefix to the rewriters; the last one hands back to the committer,
// which merges what they found and removes exactly what a single listing
// would have: the old orphans at every level, not the young one, not the
// ones outside data/ and metadata/, no referenced file.
func TestOrphans_ALargeTablesListingFansOutByPrefix(t *testing.T) {
	e := setup(t, func(c *config.Config) { c.OrphanListFanOutFiles = 1 })
	e.createTable(smallTable)
	e.compactAndRequireSame()
	want := e.fingerprint()
	gone, stay := e.plantAround()
	referenced := e.referencedFiles()

	r, err := e.planner.PlanOrphanCleanup(asFunction(e.ctx, "Planner"), e.name(), "test", 0)
	if err != nil || r.Outcome != plan.OutcomePlanned || !strings.Contains(r.Reason, "listed by") {
		t.Fatalf("plan: %+v %v, want the listing fanned out", r, err)
	}
	e.drainCommits() // the committer fans the listing out
	if j := e.job(r.JobID); j.State != jobs.Committing {
		t.Fatalf("job %s (%s), want committing while the prefixes are listed", j.State, j.Reason)
	}
	for _, p := range gone {
		if !exists(p) {
			t.Fatalf("%s removed before the listing was merged", p)
		}
	}
	st := e.drainTasks()
	if st.Delivered < 6 || st.Failed != 0 {
		t.Fatalf("listing tasks: %+v, want one per prefix (at least 6), none failed", st)
	}
	e.drainCommits()
	if j := e.job(r.JobID); j.State != jobs.Committed || j.Kind != jobs.KindRemoveOrphans {
		t.Fatalf("job %s %s (%s)", j.Kind, j.State, j.Reason)
	}
	e.requireOrphansGone(gone, stay, referenced, want)
	if m := e.metrics.metricTotals(t); m["OrphanFilesRemoved"] != float64(len(gone)) {
		t.Fatalf("OrphanFilesRemoved %v, want %d", m["OrphanFilesRemoved"], len(gone))
	}
}

// TestOrphans_ACommitterTakingOverListsThePrefixesLeft: the listing tasks
// are lost (a queue purged, a bug): the job stays committing until another
// committer may take it over, which lists the prefixes whose markers are
// left itself, and the cleanup ends as if the tasks had run.
func TestOrphans_ACommitterTakingOverListsThePrefixesLeft(t *testing.T) {
	const takeover = 2 * time.Second
	e := setup(t, func(c *config.Config) { c.OrphanListFanOutFiles, c.CommitTakeover = 1, takeover })
	e.createTable(smallTable)
	e.compactAndRequireSame()
	want := e.fingerprint()
	gone, stay := e.plantAround()
	referenced := e.referencedFiles()

	r, err := e.planner.PlanOrphanCleanup(asFunction(e.ctx, "Planner"), e.name(), "test", 0)
	if err != nil || r.Outcome != plan.OutcomePlanned {
		t.Fatalf("plan: %+v %v", r, err)
	}
	e.drainCommits()
	lost, err := localrun.Drain(e.ctx, e.deps.Tasks, func(context.Context, lambdaevents.SQSEvent) (lambdaevents.SQSEventResponse, error) {
		return lambdaevents.SQSEventResponse{}, nil
	}, 10, 0)
	if err != nil || lost.Delivered < 6 {
		t.Fatalf("lose the listing tasks: %+v %v", lost, err)
	}
	time.Sleep(takeover + 100*time.Millisecond)
	body, err := messages.Encode(messages.CommitJob(r.JobID))
	if err != nil {
		t.Fatal(err)
	}
	if err := e.deps.Commits.Send(e.ctx, string(body)); err != nil {
		t.Fatal(err)
	}
	e.drainCommits()
	if j := e.job(r.JobID); j.State != jobs.Committed {
		t.Fatalf("job %s (%s)", j.State, j.Reason)
	}
	e.requireOrphansGone(gone, stay, referenced, want)
}

// TestOrphans_AfterAnExpiryTheExpiredSnapshotsMissingFilesArePassedOver:
// an expiry deleted the manifest lists of the snapshots it removed, which
// the metadata log's older metadata files still name (as after Spark's
// expire_snapshots). The cleanup passes over them, removes the planted
// orphan and keeps every file the table references; a manifest list of a
// current snapshot that is gone still refuses it.
func TestOrphans_AfterAnExpiryTheExpiredSnapshotsMissingFilesArePassedOver(t *testing.T) {
	e := setup(t)
	compactedWithShortRetention(t, e)
	r, err := e.planner.PlanExpiry(asFunction(e.ctx, "Planner"), e.name(), "test")
	if err != nil || r.Outcome != plan.OutcomePlanned {
		t.Fatalf("expiry: %+v %v", r, err)
	}
	e.drainCommits()
	if j := e.job(r.JobID); j.State != jobs.Committed {
		t.Fatalf("expiry %s (%s)", j.State, j.Reason)
	}
	tbl := e.load()
	var gone int
	for prev := range tbl.Metadata().PreviousFiles() {
		_ = prev
		gone++
	}
	if gone == 0 {
		t.Fatal("the table has no metadata log: the test proves nothing")
	}
	want := e.fingerprint()
	orphan := e.plant("data/region=region-00/00000-0-stray.parquet", 96*time.Hour)
	referenced := e.referencedFiles()
	r, err = e.planner.PlanOrphanCleanup(asFunction(e.ctx, "Planner"), e.name(), "test", 0)
	if err != nil || r.Outcome != plan.OutcomePlanned {
		t.Fatalf("orphan cleanup after an expiry: %+v %v", r, err)
	}
	e.drainTasks()
	e.drainCommits()
	if j := e.job(r.JobID); j.State != jobs.Committed {
		t.Fatalf("orphan cleanup %s (%s)", j.State, j.Reason)
	}
	if exists(orphan) {
		t.Fatal("the orphan is left")
	}
	for p := range referenced {
		if !exists(strings.TrimPrefix(p, "file://")) {
			t.Fatalf("a referenced file was removed: %s", p)
		}
	}
	if got := e.fingerprint(); got != want {
		t.Fatalf("rows %s, want %s", got, want)
	}

	// A current snapshot's manifest list gone: refused, nothing deleted.
	list := strings.TrimPrefix(e.load().CurrentSnapshot().ManifestList, "file://")
	hidden := list + ".hidden"
	if err := os.Rename(list, hidden); err != nil {
		t.Fatal(err)
	}
	orphan = e.plant("data/region=region-00/00000-0-stray-2.parquet", 96*time.Hour)
	r, err = e.planner.PlanOrphanCleanup(asFunction(e.ctx, "Planner"), e.name(), "test", 0)
	if err == nil && r.Outcome == plan.OutcomePlanned {
		e.drainTasks()
		e.drainCommits()
		if j := e.job(r.JobID); j.State == jobs.Committed {
			t.Fatal("a cleanup ran with a current snapshot's manifest list gone")
		}
	}
	if !exists(orphan) {
		t.Fatal("a file was deleted while the table could not be read")
	}
	if err := os.Rename(hidden, list); err != nil {
		t.Fatal(err)
	}
}
