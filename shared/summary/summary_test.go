package summary

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/icekeeper/icekeeper/shared/blob"
	"github.com/icekeeper/icekeeper/shared/harness/localcloud"
	"github.com/icekeeper/icekeeper/shared/joblog"
	"github.com/icekeeper/icekeeper/shared/lease"
	"github.com/icekeeper/icekeeper/shared/ledger"
	"github.com/icekeeper/icekeeper/shared/pruning"
	"github.com/icekeeper/icekeeper/shared/signals"
)

// at is the weekly rule's Monday 06:00 UTC: the week covered is the one
// before, 2026-11-23 to 2026-11-30 (ISO week 48).
var at = time.Date(2026, 11, 30, 6, 0, 0, 0, time.UTC)

func day(d, h int) time.Time { return time.Date(2026, 11, d, h, 0, 0, 0, time.UTC) }

// reads: the job touched half the table; a full scan of those partitions
// read 100 files and 1000 bytes before, 10 and 900 after.
var reads = pruning.Reads{Partitions: 2, TableBytes: 2000,
	FullScan: pruning.Change{Before: pruning.Read{Files: 100, Bytes: 1000}, After: pruning.Read{Files: 10, Bytes: 900}}}

func record(table, id, kind, outcome string, created, ended time.Time, usd float64, edit func(*joblog.Record)) joblog.Record {
	r := joblog.Record{JobID: id, Table: table, Kind: kind, Outcome: outcome, CreatedAt: created, EndedAt: ended, Cost: joblog.Cost{USD: usd}}
	if edit != nil {
		edit(&r)
	}
	return r
}

type capturedEvents struct {
	types   []string
	details [][]byte
}

func (c *capturedEvents) Publish(_ context.Context, detailType string, detail any) error {
	b, err := json.Marshal(detail)
	c.types, c.details = append(c.types, detailType), append(c.details, b)
	return err
}

// setup records a deployment's weeks the way the functions record them:
// the committer's recorder writes each job to the maintenance log (S3)
// and the ledger (DynamoDB); the planner records query signals and
// publishes the latest health reports; failed jobs back a table off on
// its lease item. All on the emulator.
func setup(t *testing.T) (Publisher, *capturedEvents) {
	t.Helper()
	cloud := localcloud.Start()
	t.Cleanup(cloud.Close)
	ctx := context.Background()
	res, err := cloud.Provision(ctx, "summary", "", 3)
	if err != nil {
		t.Fatal(err)
	}
	store, err := blob.NewStore(cloud.Clients.S3, res.Bucket, "")
	if err != nil {
		t.Fatal(err)
	}
	entries := ledger.Store{DB: cloud.Clients.DynamoDB, TableName: res.JobsTable}
	sig := signals.Store{DB: cloud.Clients.DynamoDB, TableName: res.JobsTable}
	rec := joblog.Recorder{Log: joblog.New(store), Ledger: entries}
	committed := func(r *joblog.Record) { r.Reads = &reads }
	for _, r := range []joblog.Record{
		// Two earlier weeks, each a dollar's compaction.
		record("shop.orders", "c1", "compaction", "committed", day(10, 9), day(10, 10), 1, committed),
		record("shop.orders", "c2", "compaction", "committed", day(17, 9), day(17, 10), 1, committed),
		// Before the week: left out.
		record("shop.orders", "e0", "expire", "committed", day(22, 21), day(22, 22), 0.001, func(r *joblog.Record) { r.SnapshotsExpired = 99 }),
		// Created before the week, ended in it: counted.
		record("shop.orders", "m1", "rewrite-manifests", "committed", day(22, 23), day(23, 0).Add(10*time.Minute), 0.002, func(r *joblog.Record) { r.ManifestsRewritten = 12 }),
		record("shop.orders", "c3", "compaction", "committed", day(24, 9), day(24, 10), 1, func(r *joblog.Record) {
			r.Reads, r.FilesIn, r.FilesOut, r.BytesIn, r.BytesOut = &reads, 48, 4, 50_000, 48_000
		}),
		record("shop.orders", "e1", "expire", "committed", day(25, 9), day(25, 10), 0.001, func(r *joblog.Record) { r.SnapshotsExpired, r.BytesFreed = 14, 262_000 }),
		record("shop.orders", "c4", "compaction", "failed", day(26, 9), day(26, 10), 0.2, func(r *joblog.Record) { r.Reason = "input file vanished" }),
		// After the week, before the run: left out of the week (but the
		// ledger's last job).
		record("shop.orders", "c5", "compaction", "committed", day(30, 4), day(30, 5), 1, committed),
	} {
		if _, err := rec.Write(ctx, r); err != nil {
			t.Fatal(err)
		}
	}
	// A query a day on orders: cents saved against a dollar a job.
	for i := range 21 {
		if err := sig.Record(ctx, signals.Observation{Table: "shop.orders", BytesScanned: 2000, At: day(9, 12).AddDate(0, 0, i)}); err != nil {
			t.Fatal(err)
		}
	}
	for _, tbl := range []string{"shop.orders", "shop.events"} {
		b, err := os.ReadFile(filepath.Join("testdata", "health-"+tbl+".json"))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := store.Put(ctx, "health/"+tbl+"/latest.json", b); err != nil {
			t.Fatal(err)
		}
	}
	// events' last two jobs failed the same way: backed off an hour.
	leases, err := lease.NewStore(cloud.Clients.DynamoDB, res.LeaseTable, func() time.Time { return at })
	if err != nil {
		t.Fatal(err)
	}
	for range 2 {
		if _, err := leases.RecordFailure(ctx, "shop.events", "input_missing"); err != nil {
			t.Fatal(err)
		}
	}
	ev := &capturedEvents{}
	return Publisher{Store: store, Ledger: ledger.Book{Entries: entries, Signals: sig}, Leases: leases, Events: ev,
		Deployment: "test-deploy", Bucket: res.Bucket}, ev
}

var tables = []string{"shop.quiet", "shop.orders", "shop.events"}

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func tableOf(t *testing.T, s Summary, name string) Table {
	t.Helper()
	for _, tb := range s.Tables {
		if tb.Table == name {
			return tb
		}
	}
	t.Fatalf("no table %s in %+v", name, s.Tables)
	return Table{}
}

func TestSummary_SaysWhatEachTableHadFromTheRecords(t *testing.T) {
	p, _ := setup(t)
	in, err := p.Gather(context.Background(), tables, at)
	if err != nil {
		t.Fatal(err)
	}
	s := Build(in)
	if s.Week != "2026-W48" || !s.From.Equal(day(23, 0)) || !s.To.Equal(day(30, 0)) || s.ID != "test-deploy/2026-W48" {
		t.Fatalf("week %s %v..%v id %s", s.Week, s.From, s.To, s.ID)
	}
	if len(s.Tables) != 3 || s.Tables[0].Table != "shop.events" || s.Tables[2].Table != "shop.quiet" {
		t.Fatalf("tables %+v, want the three sorted", s.Tables)
	}

	orders := tableOf(t, s, "shop.orders")
	want := map[string]Action{
		"compaction":        {Kind: "compaction", Jobs: 2, Committed: 1, Failed: 1, FilesIn: 48, FilesOut: 4, BytesIn: 50_000, BytesOut: 48_000, CostUSD: 1.2, LastFailure: "input file vanished"},
		"expire":            {Kind: "expire", Jobs: 1, Committed: 1, SnapshotsExpired: 14, BytesFreed: 262_000, CostUSD: 0.001},
		"rewrite-manifests": {Kind: "rewrite-manifests", Jobs: 1, Committed: 1, ManifestsRewritten: 12, CostUSD: 0.002},
	}
	if len(orders.Actions) != len(want) {
		t.Fatalf("orders' actions %+v, want %d kinds", orders.Actions, len(want))
	}
	for _, a := range orders.Actions {
		w := want[a.Kind]
		got := a
		got.CostUSD, w.CostUSD = math.Round(a.CostUSD*1e6), math.Round(w.CostUSD*1e6)
		if got != w {
			t.Errorf("orders' %s: %+v, want %+v", a.Kind, a, want[a.Kind])
		}
	}
	if !near(orders.CostUSD, 1.203) {
		t.Errorf("orders' cost %v, want 1.203", orders.CostUSD)
	}
	// The ledger's week: the compaction and the failed one; their
	// queries saved cents, and the horizon has not ended.
	imp := orders.Improvement
	if imp == nil || !near(imp.CostUSD, 1.2) || imp.SavedUSD <= 0 || imp.SavedUSD >= imp.CostUSD || imp.Complete || imp.Queries == 0 {
		t.Errorf("orders' improvement %+v, want cost 1.2, a saving under it, incomplete", imp)
	}
	// Two complete weeks cost more than they saved: backed off by the
	// ledger a week after its last job.
	if len(orders.BackedOff) != 1 || orders.BackedOff[0].Cause != CauseLedger || !orders.BackedOff[0].Until.Equal(day(30, 5).AddDate(0, 0, 7)) ||
		!strings.Contains(orders.BackedOff[0].Reason, "cost more than it saved") {
		t.Errorf("orders backed off %+v, want by the ledger until Dec 7 05:00", orders.BackedOff)
	}
	if orders.LayoutTrial == nil || orders.LayoutTrial.Decision != "keep" || len(orders.Proposals) != 1 ||
		!strings.HasPrefix(orders.Proposals[0].SQL, "ALTER TABLE shop.orders ADD PARTITION FIELD") {
		t.Errorf("orders' verdict %+v, proposals %+v", orders.LayoutTrial, orders.Proposals)
	}

	events := tableOf(t, s, "shop.events")
	if len(events.Actions) != 0 || events.Improvement != nil || events.Score == nil || *events.Score != 61 ||
		len(events.Recommendations) != 1 || events.Recommendations[0] != "compaction" {
		t.Errorf("events: %+v", events)
	}
	if len(events.BackedOff) != 1 || events.BackedOff[0].Cause != CauseFailures || !events.BackedOff[0].Until.Equal(at.Add(lease.BackoffBase)) ||
		!strings.Contains(events.BackedOff[0].Reason, "last 2 jobs failed") {
		t.Errorf("events backed off %+v, want by its failures for an hour", events.BackedOff)
	}
	quiet := tableOf(t, s, "shop.quiet")
	if len(quiet.Actions) != 0 || quiet.Improvement != nil || quiet.BackedOff != nil || quiet.Score != nil {
		t.Errorf("a table with nothing recorded: %+v", quiet)
	}

	tot := s.Totals
	if tot.Tables != 3 || tot.Maintained != 1 || tot.Jobs != 4 || tot.Committed != 3 || tot.Failed != 1 || tot.FilesRemoved != 44 ||
		tot.SnapshotsExpired != 14 || tot.BytesFreed != 262_000 || tot.BackedOff != 2 || tot.LayoutVerdicts != 1 || tot.ProposalsPending != 1 ||
		!near(tot.CostUSD, 1.203) || !near(tot.SavedUSD, imp.SavedUSD) {
		t.Errorf("totals %+v", tot)
	}
}

func TestPublisher_WritesTheWeeksKeysAgainAndPutsOneSmallEventWithTheSameID(t *testing.T) {
	p, ev := setup(t)
	ctx := context.Background()
	first, err := p.Publish(ctx, tables, at)
	if err != nil {
		t.Fatal(err)
	}
	page, err := p.Store.Get(ctx, LatestHTML)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"2026-W48", "shop.orders", "input file vanished", "ADD PARTITION FIELD day(ordered_at)", "cost more than it saved", "last 2 jobs failed", "keep"} {
		if !bytes.Contains(page, []byte(want)) {
			t.Errorf("the page does not say %q", want)
		}
	}
	for _, loads := range []string{"<script", "<link", "src=", "@import"} {
		if bytes.Contains(page, []byte(loads)) {
			t.Errorf("the page loads something (%s)", loads)
		}
	}
	// Run again later in the same week (a retried invocation, an
	// operator): the same week, keys and id.
	again, err := p.Publish(ctx, tables, at.Add(50*time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range []Event{first.Event, again.Event} {
		if e.ID != "test-deploy/2026-W48" || e.JSONKey != "summary/2026-W48.json" || e.HTMLKey != "summary/2026-W48.html" ||
			e.LatestJSON != LatestJSON || e.LatestHTML != LatestHTML || e.Bucket != p.Bucket || e.Totals.Jobs != 4 {
			t.Errorf("event %+v", e)
		}
	}
	// Two days on, the events table's failure back-off (an hour) is over;
	// orders' ledger back-off (a week) is not.
	if first.Summary.Totals.BackedOff != 2 || again.Summary.Totals.BackedOff != 1 {
		t.Errorf("backed off: %d at first, %d two days on; want 2 then 1", first.Summary.Totals.BackedOff, again.Summary.Totals.BackedOff)
	}
	if len(ev.types) != 2 || ev.types[0] != DetailType || len(ev.details[0]) > 2048 {
		t.Fatalf("events %v, first detail %d bytes", ev.types, len(ev.details[0]))
	}
	b, err := p.Store.Get(ctx, "summary/2026-W48.json")
	if err != nil {
		t.Fatal(err)
	}
	var stored Summary
	if err := json.Unmarshal(b, &stored); err != nil || stored.ID != first.Summary.ID || !stored.GeneratedAt.Equal(at.Add(50*time.Hour)) {
		t.Fatalf("stored %s (%v): want the second run's", stored.ID, err)
	}
}

// TestEvent_TheSampleDecodes: events/icekeeper-weekly-summary.json is the
// event Publish puts, as EventBridge delivers it.
func TestEvent_TheSampleDecodes(t *testing.T) {
	b, err := os.ReadFile(filepath.Join("..", "..", "events", "icekeeper-weekly-summary.json"))
	if err != nil {
		t.Fatal(err)
	}
	var env struct {
		Source     string `json:"source"`
		DetailType string `json:"detail-type"`
		Detail     Event  `json:"detail"`
	}
	dec := json.NewDecoder(bytes.NewReader(b))
	if err := dec.Decode(&env); err != nil {
		t.Fatal(err)
	}
	d := env.Detail
	if env.Source != "icekeeper" || env.DetailType != DetailType || d.ID != "icekeeper-prod/2026-W48" || d.Week != "2026-W48" ||
		d.JSONKey != "icekeeper/summary/2026-W48.json" || d.Totals.Jobs != 4 || d.Totals.BackedOff != 2 || d.Totals.ProposalsPending != 1 {
		t.Errorf("sample %+v", env)
	}
}
