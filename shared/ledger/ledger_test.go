package ledger

import (
	"context"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/icekeeper/icekeeper/shared/harness/localcloud"
	"github.com/icekeeper/icekeeper/shared/pruning"
	"github.com/icekeeper/icekeeper/shared/signals"
)

func near(a, b float64) bool { return math.Abs(a-b) <= 1e-9*math.Max(1, math.Abs(b)) }

func nearRead(a, b pruning.Read) bool { return near(a.Files, b.Files) && near(a.Bytes, b.Bytes) }

// reads: the job touched half the table (1000 of 2000 bytes); a full scan
// of those partitions read 100 files and 1000 bytes before, 10 and 900
// after; a lookup on id 10 files and 500 bytes before, 1 and 50 after.
var reads = pruning.Reads{
	Partitions: 2, TableBytes: 2000,
	FullScan: pruning.Change{Before: pruning.Read{Files: 100, Bytes: 1000}, After: pruning.Read{Files: 10, Bytes: 900}},
	Lookups:  map[string]pruning.Change{"id": {Before: pruning.Read{Files: 10, Bytes: 500}, After: pruning.Read{Files: 1, Bytes: 50}}},
}

func TestDaySaving_WeighsEachQueryKindByTheShareOfTheTableItRead(t *testing.T) {
	for _, tc := range []struct {
		name string
		day  signals.Day
		want pruning.Read
	}{
		{
			// Four queries that each read half the table: two full
			// crossings of the rewritten partitions.
			name: "full scans",
			day:  signals.Day{Queries: 4, BytesScanned: 4000},
			want: pruning.Read{Files: 2 * 90, Bytes: 2 * 100},
		},
		{
			// A lookup on id over the whole table reads 500×2000/1000 =
			// 1000 bytes; five point queries read 1000 in all: one
			// crossing, saving 9 files and 450 bytes. The other five
			// queries read 2000: one full crossing.
			name: "point lookups and the rest",
			day:  signals.Day{Queries: 10, BytesScanned: 3000, Columns: map[string]signals.ColumnDay{"id": {Filters: 10, Point: 5, BytesScanned: 2000}}},
			want: pruning.Read{Files: 9 + 90, Bytes: 450 + 100},
		},
		{
			// Range filters on id are not point lookups: full-scan model.
			name: "range filters count as scans",
			day:  signals.Day{Queries: 2, BytesScanned: 2000, Columns: map[string]signals.ColumnDay{"id": {Filters: 2, BytesScanned: 2000}}},
			want: pruning.Read{Files: 90, Bytes: 100},
		},
		{
			// A column the job did not measure: full-scan model.
			name: "an unmeasured column",
			day:  signals.Day{Queries: 1, BytesScanned: 2000, Columns: map[string]signals.ColumnDay{"note": {Filters: 1, Point: 1, BytesScanned: 2000}}},
			want: pruning.Read{Files: 90, Bytes: 100},
		},
		{
			// Tiny queries cross the partitions rarely, and never more
			// often than there are queries.
			name: "crossings are at most the queries",
			day:  signals.Day{Queries: 1, BytesScanned: 1 << 30},
			want: pruning.Read{Files: 90, Bytes: 100},
		},
		{
			name: "no queries",
			day:  signals.Day{},
		},
	} {
		got, _ := DaySaving(reads, tc.day)
		if !nearRead(got, tc.want) {
			t.Errorf("%s: saved %+v, want %+v", tc.name, got, tc.want)
		}
	}
}

// TestDaySaving_QueriesOnSeveralColumnsAreNotCountedTwice: ten queries
// that each filter id and region with points count as ten, not twenty.
func TestDaySaving_QueriesOnSeveralColumnsAreNotCountedTwice(t *testing.T) {
	r := reads
	r.Lookups = map[string]pruning.Change{"id": reads.Lookups["id"], "region": reads.Lookups["id"]}
	for _, tc := range []struct {
		day       signals.Day
		crossings float64
	}{
		// Scaled to 5 queries and 5000 bytes each: 5 crossings per
		// column (5000/1000, at most 5).
		{signals.Day{Queries: 10, BytesScanned: 10000, Columns: map[string]signals.ColumnDay{
			"id": {Filters: 10, Point: 10, BytesScanned: 10000}, "region": {Filters: 10, Point: 10, BytesScanned: 10000}}}, 5},
		// The bytes add up, the queries do not: both are halved (5
		// queries, 2500 bytes: 2.5 crossings per column).
		{signals.Day{Queries: 10, BytesScanned: 10000, Columns: map[string]signals.ColumnDay{
			"id": {Filters: 10, Point: 10, BytesScanned: 5000}, "region": {Filters: 10, Point: 10, BytesScanned: 5000}}}, 2.5},
	} {
		got, _ := DaySaving(r, tc.day)
		// Each crossing saves 9 files and 450 bytes.
		if want := (pruning.Read{Files: 2 * tc.crossings * 9, Bytes: 2 * tc.crossings * 450}); !nearRead(got, want) {
			t.Errorf("%+v: saved %+v, want %+v", tc.day.Columns, got, want)
		}
	}
}

func TestPrices_ScanBytesAndGets(t *testing.T) {
	p := DefaultPrices()
	if got := p.USD(pruning.Read{Bytes: 1 << 40}); !near(got, 5) {
		t.Errorf("a TB scanned: $%v, want $5", got)
	}
	if got := p.USD(pruning.Read{Files: 1000}); !near(got, 1000*2*0.0000004) {
		t.Errorf("1000 files: $%v, want 2000 GETs", got)
	}
}

var monday1 = time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC) // a Monday

func entry(id string, ended time.Time, cost float64, r *pruning.Reads) Entry {
	return Entry{JobID: id, Kind: "compaction", Outcome: "committed", CreatedAt: ended.Add(-time.Minute), EndedAt: ended, CostUSD: cost, Reads: r}
}

func TestWeeks_CostsTheWeekTheJobEndedAndSavesItsHorizon(t *testing.T) {
	// One query a day reading the whole table: one full crossing a day,
	// $ of 90 files and 100 bytes.
	var days []signals.Day
	for i := range 30 {
		days = append(days, signals.Day{Date: signals.DateOf(monday1.AddDate(0, 0, i)), Queries: 1, BytesScanned: 2000})
	}
	entries := []Entry{
		entry("a", monday1.Add(10*time.Hour), 0.01, &reads),
		entry("b", monday1.AddDate(0, 0, 6).Add(23*time.Hour), 0.02, &reads), // Sunday night
		{JobID: "c", Kind: "compaction", Outcome: "failed", CreatedAt: monday1.AddDate(0, 0, 8), EndedAt: monday1.AddDate(0, 0, 8), CostUSD: 0.005},
		// Committed, but its saving was not measured: weighed on neither side.
		{JobID: "d", Kind: "compaction", Outcome: "committed", CreatedAt: monday1.AddDate(0, 0, 2), EndedAt: monday1.AddDate(0, 0, 2), CostUSD: 0.5, Unmeasured: true},
	}
	now := monday1.AddDate(0, 0, 14).Add(12 * time.Hour)
	weeks := Weeks(entries, days, now, DefaultPrices())
	if len(weeks) != 2 {
		t.Fatalf("%d weeks, want 2: %+v", len(weeks), weeks)
	}
	w1, w2 := weeks[0], weeks[1]
	if w1.Start != "2026-11-02" || w1.Jobs != 3 || w1.Committed != 2 || w1.Unmeasured != 1 || !near(w1.CostUSD, 0.03) {
		t.Errorf("first week %+v, want 2 committed jobs costing $0.03 and one unmeasured, not weighed", w1)
	}
	// Each committed job: 7 days × one crossing.
	if want := (pruning.Read{Files: 2 * 7 * 90, Bytes: 2 * 7 * 100}); !nearRead(w1.Saved, want) || w1.Queries != 14 {
		t.Errorf("first week saved %+v over %d queries, want %+v over 14", w1.Saved, w1.Queries, want)
	}
	if !near(w1.SavedUSD, DefaultPrices().USD(w1.Saved)) {
		t.Errorf("saved $%v, the prices say $%v", w1.SavedUSD, DefaultPrices().USD(w1.Saved))
	}
	// b's horizon ends on day 13 (c's on day 15): the first week is
	// complete on day 14, the second is not.
	if !w1.Complete {
		t.Error("the first week is not complete though its week and horizons ended")
	}
	if w2.Jobs != 1 || w2.Committed != 0 || w2.SavedUSD != 0 || !near(w2.CostUSD, 0.005) || w2.Complete {
		t.Errorf("second week %+v, want one failed job costing $0.005, saving nothing, horizon open", w2)
	}
	if weeks := Weeks(entries, days, monday1.AddDate(0, 0, 10), DefaultPrices()); weeks[0].Complete {
		t.Error("a week whose last job's horizon has not ended is complete")
	}
}

func TestDecide_BacksOffOnlyOnTwoCompleteLosingWeeksWithSignals(t *testing.T) {
	losing := func(start string) Week {
		return Week{Start: start, Jobs: 3, CostUSD: 0.3, SavedUSD: 0.1, Complete: true}
	}
	paying := func(start string) Week {
		return Week{Start: start, Jobs: 3, CostUSD: 0.1, SavedUSD: 0.3, Complete: true}
	}
	for _, tc := range []struct {
		name    string
		weeks   []Week
		signals bool
		backOff bool
		reason  string
	}{
		{"two losing weeks", []Week{losing("2026-11-02"), losing("2026-11-09")}, true, true, "cost more than it saved"},
		{"no query signals", []Week{losing("2026-11-02"), losing("2026-11-09")}, false, false, "unknown"},
		{"one losing week", []Week{losing("2026-11-09")}, true, false, "1 of the 2"},
		{"the last week paid", []Week{losing("2026-11-02"), paying("2026-11-09")}, true, false, "paid for itself"},
		{"the one before paid", []Week{paying("2026-11-02"), losing("2026-11-09")}, true, false, "paid for itself"},
		{"the week in progress does not count", []Week{losing("2026-11-02"), paying("2026-11-09"), {Start: "2026-11-16", Jobs: 1, CostUSD: 1}}, true, false, "paid for itself"},
		{"weeks without jobs are skipped", []Week{losing("2026-11-02"), {Start: "2026-11-09", Complete: true}, losing("2026-11-16")}, true, true, "2 weeks"},
	} {
		v := Decide(tc.weeks, tc.signals)
		if v.BackOff != tc.backOff || !strings.Contains(v.Reason, tc.reason) {
			t.Errorf("%s: back off %v (%s), want %v and %q", tc.name, v.BackOff, v.Reason, tc.backOff, tc.reason)
		}
	}
}

// TestBook_AssessesFromTheStoredEntriesAndSignals runs against the
// emulator's DynamoDB: entries written twice (a retried committer) count
// once; two losing weeks back the table off until a week after its last
// job.
func TestBook_AssessesFromTheStoredEntriesAndSignals(t *testing.T) {
	cloud := localcloud.Start()
	t.Cleanup(cloud.Close)
	ctx := context.Background()
	res, err := cloud.Provision(ctx, "ledger", "", 3)
	if err != nil {
		t.Fatal(err)
	}
	store := Store{DB: cloud.Clients.DynamoDB, TableName: res.JobsTable}
	sig := signals.Store{DB: cloud.Clients.DynamoDB, TableName: res.JobsTable}
	book := Book{Entries: store, Signals: sig, Prices: DefaultPrices()}
	now := monday1.AddDate(0, 0, 21).Add(12 * time.Hour)
	// No signals yet: never backed off.
	last := monday1.AddDate(0, 0, 8)
	for _, e := range []Entry{entry("a", monday1.Add(time.Hour), 1, &reads), entry("b", last, 1, &reads)} {
		for range 2 {
			if err := store.Put(ctx, "ns.t", e); err != nil {
				t.Fatal(err)
			}
		}
	}
	a, err := book.Assess(ctx, "ns.t", now)
	if err != nil {
		t.Fatal(err)
	}
	if len(a.Weeks) != 2 || a.Weeks[0].Jobs != 1 || a.Weeks[1].Jobs != 1 {
		t.Fatalf("weeks %+v, want one job in each of two weeks", a.Weeks)
	}
	if a.Verdict.BackOff || !a.Allows(now) {
		t.Errorf("backed off without query signals: %+v", a.Verdict)
	}
	// A query a day on the table: it saves cents against a dollar a job.
	for i := range 21 {
		if err := sig.Record(ctx, signals.Observation{Table: "ns.t", BytesScanned: 2000, At: monday1.AddDate(0, 0, i).Add(12 * time.Hour)}); err != nil {
			t.Fatal(err)
		}
	}
	a, err = book.Assess(ctx, "ns.t", now)
	if err != nil {
		t.Fatal(err)
	}
	if !a.Verdict.BackOff || !a.NextAllowed.Equal(last.Add(DefaultBackOff)) {
		t.Fatalf("verdict %+v, next %v; want backed off until %v", a.Verdict, a.NextAllowed, last.Add(DefaultBackOff))
	}
	if a.Allows(last.Add(DefaultBackOff-time.Minute)) || !a.Allows(last.Add(DefaultBackOff)) {
		t.Error("a backed-off table is allowed before, or refused after, its interval")
	}
	if other, err := book.Assess(ctx, "ns.other", now); err != nil || len(other.Weeks) != 0 {
		t.Errorf("another table's ledger: %+v %v", other, err)
	}
}
