package tests

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/icekeeper/icekeeper/shared/commit"
	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/harness/localrun"
	"github.com/icekeeper/icekeeper/shared/harness/sampletable"
	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/ledger"
	"github.com/icekeeper/icekeeper/shared/pruning"
	"github.com/icekeeper/icekeeper/shared/signals"
	"github.com/icekeeper/icekeeper/shared/trigger"
)

// TestLedger_ACommittedCompactionRecordsItsCostAndWhatItSavedReads: the
// committer's ledger entry of a compaction carries its cost and the reads
// of the partitions it touched: fewer files opened by a full scan after
// than before, the deletes it applied gone, without the files a writer
// appended meanwhile, and no row lost (fingerprint).
func TestLedger_ACommittedCompactionRecordsItsCostAndWhatItSavedReads(t *testing.T) {
	d, o := plannedCompaction(t)
	// A writer appends to both partitions while the job runs: its files
	// are not what the job saved or cost.
	if _, err := sampletable.AppendRows(d.ctx, d.load(), 100000, 2, 10); err != nil {
		t.Fatal(err)
	}
	before := d.fingerprint()
	d.drainTasks()
	d.drainCommits()
	d.requireCommitted(o.Plan.JobID, before)
	store := ledger.Store{DB: cloud.Clients.DynamoDB, TableName: d.cfg.JobsTable}
	entries, err := store.Entries(d.ctx, "demo.events", time.Now().Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].JobID != o.Plan.JobID || entries[0].Kind != "compaction" || entries[0].Outcome != "committed" {
		t.Fatalf("ledger entries %+v, want the committed compaction", entries)
	}
	e := entries[0]
	if e.CostUSD <= 0 || e.Reads == nil {
		t.Fatalf("entry %+v: want a cost and reads", e)
	}
	r := *e.Reads
	if r.Partitions != 2 || r.TableBytes <= 0 {
		t.Errorf("reads over %d partitions of a %d-byte table, want both partitions", r.Partitions, r.TableBytes)
	}
	full := r.FullScan
	// 12 data files and their position and equality deletes, rewritten
	// into one file per partition without deletes.
	if full.Before.Files < 12 || full.After.Files != 2 || full.Saved().Files < 10 {
		t.Errorf("full scan %+v, want at least 12 files before and 2 after", full)
	}
	if _, ok := r.Lookups["id"]; !ok {
		t.Errorf("no point lookup on id measured: %v", r.Lookups)
	}
	if stats := d.stats(); stats.DataFiles != 4 {
		t.Errorf("the table has %d data files, want the job's 2 and the writer's 2", stats.DataFiles)
	}
}

// TestLedger_ACommitterNearItsDeadlineRecordsTheJobWithoutItsMeasures: the
// record's measures of the table read every manifest, and on a large
// table could outlast the invocation (Lambda would end it after the
// commit, and the redelivered request would measure again). A committer
// invoked with less than commit.RecordMargin left after its commit still
// commits and records the job, its cost and counts, without the reads it
// had no time to measure, and marks it unmeasured so that the ledger does
// not weigh its cost against a saving of nothing.
func TestLedger_ACommitterNearItsDeadlineRecordsTheJobWithoutItsMeasures(t *testing.T) {
	d, o := plannedCompaction(t)
	before := d.fingerprint()
	d.drainTasks()
	ctx, cancel := context.WithTimeout(asFunction(d.ctx, "Committer"), commit.RecordMargin/2)
	defer cancel()
	if _, err := localrun.Drain(ctx, d.deps.Commits, d.committerHandler(), 1, 0); err != nil {
		t.Fatal(err)
	}
	d.requireCommitted(o.Plan.JobID, before)
	store := ledger.Store{DB: cloud.Clients.DynamoDB, TableName: d.cfg.JobsTable}
	entries, err := store.Entries(d.ctx, "demo.events", time.Now().Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 || entries[0].JobID != o.Plan.JobID || entries[0].Outcome != "committed" {
		t.Fatalf("ledger entries %+v, want the committed compaction", entries)
	}
	if e := entries[0]; e.CostUSD <= 0 || e.Reads != nil || !e.Unmeasured {
		t.Fatalf("entry %+v: want its cost, no reads (no time was left to measure them), and marked unmeasured", e)
	}
}

// TestLedger_ATableWhoseMaintenanceLosesMoneyIsBackedOff: two complete
// weeks whose compactions cost more than the table's queries were spared,
// and a compaction a day ago: the planner does not compact the table
// though it needs it, says why, and publishes the ledger; a table with
// the same costs but no query signals is compacted.
func TestLedger_ATableWhoseMaintenanceLosesMoneyIsBackedOff(t *testing.T) {
	d := setupDispatch(t, config.ModeActive, "demo", func(c *config.Config) { c.MinInterval = 0 })
	d.createNamed("demo.events", withProps(smallTable, optedIn))
	d.createNamed("demo.unqueried", withProps(smallTable, optedIn))
	store := ledger.Store{DB: cloud.Clients.DynamoDB, TableName: d.cfg.JobsTable}
	sig := signals.Store{DB: cloud.Clients.DynamoDB, TableName: d.cfg.JobsTable}
	now := time.Now().UTC()
	monday := time.Date(now.Year(), now.Month(), now.Day(), 0, 0, 0, 0, time.UTC)
	monday = monday.AddDate(0, 0, -((int(monday.Weekday()) + 6) % 7))
	// A compaction that saved a full scan one file, at $1 each.
	reads := &pruning.Reads{Partitions: 1, TableBytes: 1 << 20,
		FullScan: pruning.Change{Before: pruning.Read{Files: 3, Bytes: 1 << 20}, After: pruning.Read{Files: 2, Bytes: 1 << 20}}}
	for _, table := range []string{"demo.events", "demo.unqueried"} {
		for i, ended := range []time.Time{monday.AddDate(0, 0, -21).Add(time.Hour), monday.AddDate(0, 0, -14).Add(time.Hour), now.Add(-24 * time.Hour)} {
			e := ledger.Entry{JobID: "old-" + string(rune('a'+i)), Kind: "compaction", Outcome: "committed", CreatedAt: ended.Add(-time.Minute), EndedAt: ended, CostUSD: 1, Reads: reads}
			if err := store.Put(d.ctx, table, e); err != nil {
				t.Fatal(err)
			}
		}
	}
	for i := range 28 {
		if err := sig.Record(d.ctx, signals.Observation{Table: "demo.events", BytesScanned: 1 << 20, At: now.AddDate(0, 0, -i)}); err != nil {
			t.Fatal(err)
		}
	}
	o := outcomeOf(t, d.handle(commitEvent("demo.events")), "demo.events")
	if o.Action == trigger.ActionPlanned {
		t.Fatalf("a backed-off table was planned: %+v", o.Plan)
	}
	if o.Plan == nil || !strings.Contains(o.Plan.Reason, "compaction backed off by the ledger until") || !strings.Contains(o.Plan.Reason, "cost more than it saved") {
		t.Fatalf("outcome %+v, want the ledger's reason", o.Plan)
	}
	m := d.metrics.metricTotals(t)
	if m["MaintenanceBackedOff/demo.events"] != 1 || m["MaintenanceCostWeekUSD/demo.events"] != 1 || m["QueryCostSavedWeekUSD/demo.events"] <= 0 {
		t.Errorf("ledger gauges %v", m)
	}
	if m["LedgerBackOffs/demo.events"] < 1 {
		t.Errorf("back-offs not counted: %v", m)
	}
	o = outcomeOf(t, d.handle(commitEvent("demo.unqueried")), "demo.unqueried")
	if o.Action != trigger.ActionPlanned || d.job(o.Plan.JobID).Kind != jobs.KindCompaction {
		t.Fatalf("a table without query signals was not compacted: %+v", o)
	}
}

// plannedCompaction is an active deployment with an opted-in table
// demo.events of small files, and the planner's outcome of a commit event
// for it: a planned compaction.
func plannedCompaction(t *testing.T) (*dispatchEnv, trigger.TableOutcome) {
	t.Helper()
	d := setupDispatch(t, config.ModeActive, "demo", func(c *config.Config) { c.MinInterval = 0 })
	d.createNamed("demo.events", withProps(smallTable, optedIn))
	o := outcomeOf(t, d.handle(commitEvent("demo.events")), "demo.events")
	if o.Action != trigger.ActionPlanned || o.Plan == nil {
		t.Fatalf("outcome %+v", o)
	}
	return d, o
}
