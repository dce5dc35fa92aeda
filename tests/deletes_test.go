package tests

import (
	"fmt"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/commit"
	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/harness/fingerprint"
	"github.com/icekeeper/icekeeper/shared/harness/sampletable"
	"github.com/icekeeper/icekeeper/shared/joblog"
	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/messages"
	"github.com/icekeeper/icekeeper/shared/optin"
	"github.com/icekeeper/icekeeper/shared/plan"
	"github.com/icekeeper/icekeeper/shared/trigger"
)

// deleteLayout is what a snapshot's delete files look like.
type deleteLayout struct {
	// posFiles and dvs count position delete files and deletion vectors
	// per partition (messages.PartitionKey).
	posFiles, dvs map[string]int
	// dvsPerDataFile counts live deletion vectors per data file.
	dvsPerDataFile map[string]int
	// records is the sum of the position delete files' and deletion
	// vectors' record counts; eqFiles counts equality delete files.
	records int64
	eqFiles int
	// dataFiles are the live data files' paths; dataRows their rows before
	// deletes.
	dataFiles []string
	dataRows  int64
}

func (e *env) deleteLayout() deleteLayout {
	e.t.Helper()
	fsys, ms := e.currentManifests()
	l := deleteLayout{posFiles: map[string]int{}, dvs: map[string]int{}, dvsPerDataFile: map[string]int{}}
	for _, m := range ms {
		for ent, err := range m.Entries(fsys, true) {
			if err != nil {
				e.t.Fatal(err)
			}
			df := ent.DataFile()
			switch {
			case df.ContentType() == iceberg.EntryContentData:
				l.dataFiles = append(l.dataFiles, df.FilePath())
				l.dataRows += df.Count()
			case table.IsDeletionVector(df):
				l.dvs[messages.PartitionKey(df)]++
				l.dvsPerDataFile[*df.ReferencedDataFile()]++
				l.records += df.Count()
			case df.ContentType() == iceberg.EntryContentPosDeletes:
				l.posFiles[messages.PartitionKey(df)]++
				l.records += df.Count()
			case df.ContentType() == iceberg.EntryContentEqDeletes:
				l.eqFiles++
			}
		}
	}
	sort.Strings(l.dataFiles)
	return l
}

// planDeleteRewrite plans a delete-file rewrite and fails the test unless
// a job was planned.
func (e *env) planDeleteRewrite() plan.Result {
	e.t.Helper()
	r, err := e.planner.PlanDeleteRewrite(asFunction(e.ctx, "Planner"), e.name(), "test")
	if err != nil || r.Outcome != plan.OutcomePlanned {
		e.t.Fatalf("plan a delete-file rewrite: %+v %v", r, err)
	}
	return r
}

// upgradeToV3 upgrades the table to format version 3.
func (e *env) upgradeToV3() {
	e.t.Helper()
	txn := e.load().NewTransaction()
	if err := txn.UpgradeFormatVersion(3); err != nil {
		e.t.Fatal(err)
	}
	if _, err := txn.Commit(e.ctx); err != nil {
		e.t.Fatal(err)
	}
}

// visibleRows is the number of rows a scan returns.
func (e *env) visibleRows() int64 {
	e.t.Helper()
	return e.fingerprint().Rows
}

// fingerprintAt fingerprints the rows of one snapshot (time travel).
func (e *env) fingerprintAt(snapshotID int64) fingerprint.Fingerprint {
	e.t.Helper()
	f, err := fingerprint.Scan(e.ctx, e.load().Scan(table.WithSnapshotID(snapshotID)))
	if err != nil {
		e.t.Fatal(err)
	}
	return f
}

// positionDeletesInEveryPartition commits n merge-on-read deletes, each
// removing one row of every data file of the table made with o (position
// delete files on v2, deletion vectors on v3), and then drops the whole
// first data file of partition 0 with a copy-on-write delete, which leaves
// the deletes that named it dangling.
func (e *env) positionDeletesInEveryPartition(o sampletable.Options, n int) {
	e.t.Helper()
	tbl := e.load()
	perAppend := int64(o.Partitions * o.RowsPerFile)
	for k := 0; k < n; k++ {
		var ids []int64
		for a := 0; a < o.Files; a++ {
			for p := 0; p < o.Partitions; p++ {
				ids = append(ids, int64(a)*perAppend+int64(p*o.RowsPerFile)+int64(3+7*k))
			}
		}
		var err error
		if tbl, err = sampletable.DeleteByPosition(e.ctx, tbl, ids); err != nil {
			e.t.Fatal(err)
		}
	}
	whole := iceberg.NewAnd(iceberg.GreaterThanEqual(iceberg.Reference("id"), int64(0)), iceberg.LessThan(iceberg.Reference("id"), int64(o.RowsPerFile)))
	if _, err := tbl.Delete(e.ctx, whole, nil); err != nil {
		e.t.Fatal(err)
	}
}

var deletesTable = sampletable.Options{FormatVersion: 2, Partitions: 2, Files: 3, RowsPerFile: 50}

// TestDeletes_PositionDeleteFilesOfAPartitionBecomeOne: a v2 table with
// six position delete files per partition, some of whose deletes name a
// data file that is gone, gets a rewrite-deletes job: one replace snapshot,
// one position delete file per partition holding exactly the deletes that
// still apply (no dangling one, none twice), the same data files and the
// same rows; time travel to the snapshot before returns the same rows too.
func TestDeletes_PositionDeleteFilesOfAPartitionBecomeOne(t *testing.T) {
	e := setup(t)
	e.createTable(deletesTable)
	e.positionDeletesInEveryPartition(deletesTable, 6)
	before := e.deleteLayout()
	want := e.fingerprint()
	for k, n := range before.posFiles {
		if n < 6 {
			t.Fatalf("partition %s has %d position delete files, want 6 or more to start with", k, n)
		}
	}
	if before.records <= before.dataRows-e.visibleRows() {
		t.Fatalf("no dangling delete to start with: %d delete records, %d rows deleted", before.records, before.dataRows-e.visibleRows())
	}
	prev := e.load().CurrentSnapshot().SnapshotID

	r := e.planDeleteRewrite()
	if r.Groups != deletesTable.Partitions {
		t.Fatalf("%d groups, want %d", r.Groups, deletesTable.Partitions)
	}
	e.drainTasks()
	e.drainCommits()
	e.requireCommitted(r.JobID, want)
	if j := e.job(r.JobID); j.Kind != jobs.KindRewriteDeletes {
		t.Fatalf("job kind %s", j.Kind)
	}
	if op := e.load().CurrentSnapshot().Summary.Operation; op != table.OpReplace {
		t.Fatalf("snapshot operation %s, want replace", op)
	}
	after := e.deleteLayout()
	for k, n := range after.posFiles {
		if n != 1 {
			t.Errorf("partition %s has %d position delete files after, want 1", k, n)
		}
	}
	if len(after.posFiles) != len(before.posFiles) {
		t.Errorf("position deletes in %d partitions after, %d before", len(after.posFiles), len(before.posFiles))
	}
	if deleted := after.dataRows - e.visibleRows(); after.records != deleted {
		t.Errorf("delete files hold %d records for %d deleted rows: dangling or repeated deletes were kept", after.records, deleted)
	}
	if !slices.Equal(after.dataFiles, before.dataFiles) {
		t.Errorf("data files changed: %v -> %v", before.dataFiles, after.dataFiles)
	}
	if got := e.fingerprintAt(prev); got != want {
		t.Errorf("time travel to %d: rows %s, want %s", prev, got, want)
	}
	// The maintenance log: the delete files in and out, the rows a scan
	// returns, the deletes carried.
	records, err := joblog.New(e.deps.Blobs).Read(e.ctx, e.name(), 0)
	if err != nil || len(records) != 1 {
		t.Fatalf("maintenance log %+v %v", records, err)
	}
	var in int
	for _, n := range before.posFiles {
		in += n
	}
	rec := records[0]
	if rec.Kind != string(jobs.KindRewriteDeletes) || rec.Outcome != "committed" || rec.FilesIn != int64(in) || rec.FilesOut != int64(len(after.posFiles)) ||
		rec.DeleteFilesOut != in || rec.RowsOut != want.Rows || rec.DeletedRows != after.records || rec.Cost.USD <= 0 {
		t.Errorf("maintenance log record %+v", rec)
	}
	if r2, err := e.planner.PlanDeleteRewrite(e.ctx, e.name(), "test"); err != nil || r2.Outcome != plan.OutcomeNothingToDo {
		t.Fatalf("second plan: %+v %v", r2, err)
	}
}

// TestDeletes_AV3TablesPositionDeletesBecomeDeletionVectors: position
// delete files left from before an upgrade to v3 are turned into one
// deletion vector per data file (the v3 spec's form), in one Puffin file
// per partition, with the same rows.
func TestDeletes_AV3TablesPositionDeletesBecomeDeletionVectors(t *testing.T) {
	e := setup(t)
	e.createTable(deletesTable)
	e.positionDeletesInEveryPartition(deletesTable, 2)
	e.upgradeToV3()
	want := e.fingerprint()

	r := e.planDeleteRewrite()
	e.drainTasks()
	e.drainCommits()
	e.requireCommitted(r.JobID, want)
	after := e.deleteLayout()
	if len(after.posFiles) != 0 {
		t.Errorf("position delete files left on a v3 table: %v", after.posFiles)
	}
	if len(after.dvsPerDataFile) == 0 {
		t.Fatal("no deletion vector written")
	}
	for f, n := range after.dvsPerDataFile {
		if n != 1 {
			t.Errorf("%s has %d deletion vectors, want 1", f, n)
		}
	}
	if deleted := after.dataRows - e.visibleRows(); after.records != deleted {
		t.Errorf("deletion vectors hold %d positions for %d deleted rows", after.records, deleted)
	}
}

// TestDeletes_AConcurrentPositionDeleteIsKept: on v2, a position delete
// committed while the job runs names data files the job does not change:
// the job commits, and both its deletes and the concurrent ones hold.
func TestDeletes_AConcurrentPositionDeleteIsKept(t *testing.T) {
	e := setup(t)
	e.createTable(deletesTable)
	e.positionDeletesInEveryPartition(deletesTable, 5)
	r := e.planDeleteRewrite()
	e.drainTasks()
	// Rows 1 and 51 of the second append: partitions 0 and 1.
	perAppend := int64(deletesTable.Partitions * deletesTable.RowsPerFile)
	if _, err := sampletable.DeleteByPosition(e.ctx, e.load(), []int64{perAppend + 1, perAppend + 51}); err != nil {
		t.Fatal(err)
	}
	want := e.fingerprint()
	e.drainCommits()
	e.requireCommitted(r.JobID, want)
}

// TestDeletes_AConcurrentDeletionVectorOnATargetAborts: on v3, a deletion
// vector committed while the job runs, on a data file the job writes a new
// deletion vector for, would make two live vectors for one file (the
// spec allows one, and the job's would hide the other's rows): the job
// aborts, and the rows are as the other writer left them.
func TestDeletes_AConcurrentDeletionVectorOnATargetAborts(t *testing.T) {
	e := setup(t)
	o := deletesTable
	e.createTable(o)
	e.positionDeletesInEveryPartition(o, 2)
	e.upgradeToV3()
	r := e.planDeleteRewrite()
	e.drainTasks()
	perAppend := int64(o.Partitions * o.RowsPerFile)
	if _, err := sampletable.DeleteByPosition(e.ctx, e.load(), []int64{perAppend + 1}); err != nil {
		t.Fatal(err)
	}
	want := e.fingerprint()
	e.drainCommits()
	e.requireAborted(r.JobID, "rewritten file", want)
}

// TestDeletes_ADeleteThatDoesNotApplyIsNotCarriedOver: position deletes
// apply only to data files whose data sequence number is at most theirs
// (spec, "Scan Planning"). A data file dropped and added again at the same
// path has a newer sequence number, so the deletes written before name it
// but do not apply to it; a newer delete does. The rewritten file takes the
// newest input's sequence number, so carrying the old entries over would
// start deleting rows a scan returns: they are dropped.
func TestDeletes_ADeleteThatDoesNotApplyIsNotCarriedOver(t *testing.T) {
	e := setup(t)
	o := deletesTable
	e.createTable(o)
	first := e.deleteLayout().dataFiles
	e.positionDeletesInEveryPartition(o, 5) // the last step drops ids 0..49, one whole file
	gone := map[string]bool{}
	for _, f := range first {
		gone[f] = true
	}
	for _, f := range e.deleteLayout().dataFiles {
		delete(gone, f)
	}
	if len(gone) != 1 {
		t.Fatalf("%d data files dropped, want 1", len(gone))
	}
	var readded string
	for f := range gone {
		readded = f
	}
	txn := e.load().NewTransaction()
	if err := txn.AddFiles(e.ctx, []string{readded}, nil, false); err != nil {
		t.Fatal(err)
	}
	tbl, err := txn.Commit(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	// A newer delete on the re-added file (id 10) and on another file of
	// its partition (id 110).
	if _, err := sampletable.DeleteByPosition(e.ctx, tbl, []int64{10, int64(o.Partitions*o.RowsPerFile) + 10}); err != nil {
		t.Fatal(err)
	}
	want := e.fingerprint()
	r := e.planDeleteRewrite()
	e.drainTasks()
	e.drainCommits()
	e.requireCommitted(r.JobID, want)
}

// eqTable has wide rows, so that converting equality deletes (reading the
// key columns) costs less than applying them by rewriting the files.
var eqTable = sampletable.Options{FormatVersion: 2, Partitions: 2, Files: 3, RowsPerFile: 50, PayloadBytes: 200}

// equalityDeletes commits two equality deletes per partition (key id and
// region), and, if asked, one position delete.
func (e *env) equalityDeletes(o sampletable.Options, withPosition bool) {
	e.t.Helper()
	regionOf := sampletable.RegionOf(o.Partitions, o.RowsPerFile)
	tbl := e.load()
	var err error
	for _, ids := range [][]int64{{1, 2, 51, 52, 101, 152}, {5, 55, 205, 255}} {
		if tbl, err = sampletable.DeleteByEquality(e.ctx, tbl, ids, regionOf); err != nil {
			e.t.Fatal(err)
		}
	}
	if !withPosition {
		return
	}
	if _, err := sampletable.DeleteByPosition(e.ctx, tbl, []int64{7, 57}); err != nil {
		e.t.Fatal(err)
	}
}

func (e *env) equalityDeleteFiles() int { return e.deleteLayout().eqFiles }

// TestDeletes_EqualityDeletesBecomePositionDeletes: partition-scoped
// equality deletes on a wide table are converted, without rewriting a data
// file, into position deletes (v2) or deletion vectors (v3) that delete
// exactly the rows they deleted; the equality delete files are gone, the
// rows are the same, and the delete files hold exactly the deleted rows.
func TestDeletes_EqualityDeletesBecomePositionDeletes(t *testing.T) {
	for _, v := range []int{2, 3} {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) {
			e := setup(t)
			o := eqTable
			o.FormatVersion = v
			e.createTable(o)
			e.equalityDeletes(o, true)
			before := e.deleteLayout()
			want := e.fingerprint()
			if n := e.equalityDeleteFiles(); n != 2*o.Partitions {
				t.Fatalf("%d equality delete files to start with, want %d", n, 2*o.Partitions)
			}
			r := e.planDeleteRewrite()
			if r.Groups != o.Partitions {
				t.Fatalf("%d groups, want %d", r.Groups, o.Partitions)
			}
			e.drainTasks()
			e.drainCommits()
			e.requireCommitted(r.JobID, want)
			after := e.deleteLayout()
			if n := e.equalityDeleteFiles(); n != 0 {
				t.Errorf("%d equality delete files left", n)
			}
			if !slices.Equal(after.dataFiles, before.dataFiles) {
				t.Errorf("data files changed: %v -> %v", before.dataFiles, after.dataFiles)
			}
			if deleted := after.dataRows - e.visibleRows(); after.records != deleted {
				t.Errorf("delete files hold %d deletes for %d deleted rows", after.records, deleted)
			}
			for f, n := range after.dvsPerDataFile {
				if n != 1 {
					t.Errorf("%s has %d deletion vectors", f, n)
				}
			}
			// One catalog commit, two snapshots: only the second carries
			// the job id; the first names it, and shows the same rows.
			if n := e.jobSnapshots(r.JobID); n != 1 {
				t.Errorf("%d snapshots stamped with the job id, want 1", n)
			}
			cur := e.load().CurrentSnapshot()
			staged := e.load().SnapshotByID(*cur.ParentSnapshotID)
			if staged.Summary.Properties[commit.SummaryStagedFor] != r.JobID {
				t.Errorf("the snapshot before the job's is %+v, want it staged for the job", staged.Summary)
			}
			if got := e.fingerprintAt(staged.SnapshotID); got != want {
				t.Errorf("time travel to the staged snapshot: rows %s, want %s", got, want)
			}
		})
	}
}

// TestDeletes_AnEqualityDeleteDoesNotReachARowWrittenAfterIt: an upsert
// deletes a key and writes it again in a newer data file; the equality
// delete applies only to older data files (spec: data sequence number
// strictly lower), so its conversion deletes the old row and keeps the
// new one.
func TestDeletes_AnEqualityDeleteDoesNotReachARowWrittenAfterIt(t *testing.T) {
	e := setup(t)
	o := eqTable
	e.createTable(o)
	e.equalityDeletes(o, true)
	// Write ids 1 and 51 again (regions 0 and 1), in new files.
	if _, err := sampletable.AppendRows(e.ctx, e.load(), 1, o.Partitions, 1); err != nil {
		t.Fatal(err)
	}
	want := e.fingerprint()
	r := e.planDeleteRewrite()
	e.drainTasks()
	e.drainCommits()
	e.requireCommitted(r.JobID, want)
}

// TestDeletes_AConcurrentRewriteBelowAnEqualityDeleteAborts: a rewrite by
// another engine that keeps an old data sequence number commits while the
// job converts the partition's equality deletes; the equality deletes
// apply to its new file, the job's conversion does not: removing them
// would bring rows back, so the job aborts (mutation-checked: without the
// check the rows come back).
func TestDeletes_AConcurrentRewriteBelowAnEqualityDeleteAborts(t *testing.T) {
	e := setup(t)
	o := eqTable
	e.createTable(o)
	e.equalityDeletes(o, false)
	r := e.planDeleteRewrite()
	e.drainTasks()

	// Another engine, which pinned the table before the equality deletes,
	// rewrites a data file of partition 0 that they apply to, keeping its data sequence number 1. The
	// equality deletes still apply to its new file, so a scan sees the
	// same rows; they must not be removed.
	tbl := e.load()
	tasks, err := tbl.Scan().PlanFiles(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	var victim table.FileScanTask
	for _, task := range tasks {
		if task.File.Partition()[1000] == sampletable.Region(0) && len(task.EqualityDeleteFiles) > 0 {
			victim = task
		}
	}
	victim.EqualityDeleteFiles = nil // not yet committed at its snapshot
	if victim.File == nil {
		t.Fatal("no data file of partition 0 with equality deletes")
	}
	sc, records, err := tbl.Scan().ReadTasks(e.ctx, []table.FileScanTask{victim})
	if err != nil {
		t.Fatal(err)
	}
	var added []iceberg.DataFile
	for df, err := range table.WriteRecords(e.ctx, tbl, sc, records) {
		if err != nil {
			t.Fatal(err)
		}
		added = append(added, df)
	}
	txn := tbl.NewTransaction()
	rw := txn.NewRewrite(nil).DataSequenceNumber(1).DeleteFile(victim.File)
	for _, df := range added {
		rw.AddDataFile(df)
	}
	if err := rw.Commit(e.ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := txn.Commit(e.ctx); err != nil {
		t.Fatal(err)
	}
	want := e.fingerprint()
	e.drainCommits()
	e.requireAborted(r.JobID, "below that of an equality delete", want)
}

// TestDeletes_TheChainRunsADeleteRewriteAndItHasItsOwnSwitch: a commit
// event on an opted-in table whose compaction is off, and which has
// equality deletes worth converting, plans a delete-file rewrite (the
// chain's second action), which commits the same rows without equality
// deletes; with icekeeper.rewrite-deletes.enabled=false the next visit
// says it is turned off.
func TestDeletes_TheChainRunsADeleteRewriteAndItHasItsOwnSwitch(t *testing.T) {
	d := setupDispatch(t, config.ModeActive, "demo", func(c *config.Config) { c.MinInterval = time.Millisecond })
	d.createNamed("demo.events", withProps(eqTable, map[string]string{
		"icekeeper.maintenance.enabled": "true", "icekeeper.compaction.enabled": "false", "icekeeper.rewrite-manifests.enabled": "false",
		"icekeeper.expire.enabled": "false",
	}))
	d.equalityDeletes(eqTable, true)
	want := d.fingerprint()
	time.Sleep(10 * time.Millisecond)
	o := d.commitEventRunsJob("demo.events", jobs.KindRewriteDeletes, want)
	if n := d.equalityDeleteFiles(); n != 0 {
		t.Fatalf("%d equality delete files left", n)
	}

	d.equalityDeletes(eqTable, false)
	d.setProperties(iceberg.Properties{optin.PropertyRewriteDeletesEnabled: "false"})
	time.Sleep(10 * time.Millisecond)
	o = outcomeOf(t, d.handle(commitEvent("demo.events")), "demo.events")
	if o.Action == trigger.ActionPlanned || !strings.Contains(o.Reason, "delete-file rewrite turned off") {
		t.Fatalf("delete-file rewrite off, yet: %+v", o)
	}
}

// TestDeletes_AnEqualityDeleteThatAppliesToNothingIsRemoved: an equality
// delete of a partition with no data file deletes no row; converting it
// writes nothing and removes it.
func TestDeletes_AnEqualityDeleteThatAppliesToNothingIsRemoved(t *testing.T) {
	e := setup(t)
	e.createTable(eqTable)
	if _, err := sampletable.DeleteByEquality(e.ctx, e.load(), []int64{1, 2}, func(int64) string { return "region-09" }); err != nil {
		t.Fatal(err)
	}
	want := e.fingerprint()
	r := e.planDeleteRewrite()
	e.drainTasks()
	e.drainCommits()
	e.requireCommitted(r.JobID, want)
	if n := e.equalityDeleteFiles(); n != 0 {
		t.Fatalf("%d equality delete files left", n)
	}
}
