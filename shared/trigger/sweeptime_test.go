package trigger

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/events"
	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/plan"
)

// invocation stands for a planner invocation's time: it starts with some
// time left and every catalog load and every planning spends a second of
// it, so that a test says in loads and plans when a sweep's time runs
// short.
type invocation struct {
	mu   sync.Mutex
	left time.Duration
}

func (i *invocation) spend() {
	i.mu.Lock()
	i.left -= time.Second
	i.mu.Unlock()
}

func (i *invocation) remaining(context.Context) (time.Duration, bool) {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.left, true
}

type timedCatalog struct {
	Catalog
	inv *invocation
}

func (c timedCatalog) LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error) {
	c.inv.spend()
	return c.Catalog.LoadTable(ctx, ident)
}

type timedPlanner struct {
	Planner
	inv *invocation
}

func (p timedPlanner) PlanTable(ctx context.Context, table, kind string) (plan.Result, error) {
	p.inv.spend()
	return p.Planner.PlanTable(ctx, table, kind)
}

func (p timedPlanner) PlanOrphanCleanup(ctx context.Context, table, kind string, age time.Duration) (plan.Result, error) {
	p.inv.spend()
	return p.Planner.PlanOrphanCleanup(ctx, table, kind, age)
}

// timedSweep runs one sweep of kind with left of invocation time (none:
// no deadline) on r's fakes, one table at a time.
func (r *rig) timedSweep(t *testing.T, kind string, left time.Duration) Outcome {
	t.Helper()
	inv := &invocation{left: left}
	deps := Deps{Catalog: timedCatalog{r.cat, inv}, Planner: timedPlanner{r.planner, inv}, Cooldowns: r.cooldowns, Auditor: r.auditor,
		Reports: r.reports, Assessor: r.assessor, Metrics: r.metrics, Log: slog.New(slog.DiscardHandler), Now: func() time.Time { return testNow }}
	if left > 0 {
		deps.Remaining = inv.remaining
	}
	d, err := New(r.settings, deps)
	if err != nil {
		t.Fatal(err)
	}
	out, err := d.Dispatch(t.Context(), events.Trigger{Kind: kind, Sweep: true})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// outcomeTables are the tables of out, by what happened to them.
func outcomeTables(out Outcome) (seen, planned, outOfTime []string) {
	for _, o := range out.Tables {
		seen = append(seen, o.Table)
		switch {
		case o.Action == ActionPlanned:
			planned = append(planned, o.Table)
		case o.Skip == SkipSweepTime:
			outOfTime = append(outOfTime, o.Table)
		}
	}
	slices.Sort(seen)
	return seen, planned, outOfTime
}

func tableNames(format string, from, to int) []string {
	var out []string
	for i := from; i < to; i++ {
		out = append(out, fmt.Sprintf(format, i))
	}
	return out
}

func (r *rig) sweepCursor(t *testing.T, kind string) sweepCursor {
	t.Helper()
	var c sweepCursor
	if data, ok := r.reports.objects[r.reports.Key(sweepCursorName(kind))]; ok {
		if err := json.Unmarshal(data, &c); err != nil {
			t.Fatal(err)
		}
	}
	return c
}

// TestSweep_StopsForTheInvocationsTimeAndTheNextStartsWhereItStopped: a
// sweep whose visits would outlast its invocation stops starting them
// with a third of its time left, plans from the tables it visited until a
// tenth is left (the rest are skipped as sweep_time), and leaves a cursor:
// the next sweep starts after the last table visited and goes round, so
// consecutive sweeps cover every granted table. A sweep that visits every
// table clears the cursor. Before, a sweep visited every table before
// planning any, so one that outlasted the planner's timeout planned
// nothing, and every sweep after it did the same.
func TestSweep_StopsForTheInvocationsTimeAndTheNextStartsWhereItStopped(t *testing.T) {
	r := newRig(t, config.ModeActive, "shop")
	r.settings.SweepConcurrency = 1 // visits in lockstep with the invocation's seconds
	r.settings.SweepMaxJobs = 100
	all := tableNames("shop.t%02d", 0, 30)
	for _, name := range all {
		r.add(t, name, optedIn(), due)
	}
	r.planner.results["compaction"] = planned

	// 30 s: visits start while 10 s or more are left (21 loads), plans
	// while 3 s or more are (7 plans).
	out := r.timedSweep(t, events.KindSchedule, 30*time.Second)
	seen, plannedTables, outOfTime := outcomeTables(out)
	if want := all[:21]; !slices.Equal(seen, want) {
		t.Fatalf("first sweep visited %v, want %v", seen, want)
	}
	if out.Deferred != 9 || r.metrics.count("SweepTablesDeferred", "") != 1 {
		t.Errorf("first sweep deferred %d tables (metric emitted %d times), want 9 (once)", out.Deferred, r.metrics.count("SweepTablesDeferred", ""))
	}
	if !slices.Equal(plannedTables, all[:7]) || !slices.Equal(outOfTime, all[7:21]) {
		t.Errorf("first sweep planned %v and ran out of time for %v, want %v and %v", plannedTables, outOfTime, all[:7], all[7:21])
	}
	if c := r.sweepCursor(t, events.KindSchedule); c.After != "shop.t20" || c.Visited != 21 || c.Tables != 30 {
		t.Errorf("cursor %+v, want after shop.t20, 21 of 30 visited", c)
	}

	// The next sweep starts at t21 and goes round to t11.
	out = r.timedSweep(t, events.KindSchedule, 30*time.Second)
	seen, _, _ = outcomeTables(out)
	if want := append(all[:12:12], all[21:]...); !slices.Equal(seen, want) {
		t.Fatalf("second sweep visited %v, want %v", seen, want)
	}
	if c := r.sweepCursor(t, events.KindSchedule); c.After != "shop.t11" {
		t.Errorf("cursor after the second sweep %+v, want after shop.t11", c)
	}

	// Without a deadline a sweep visits them all, from the cursor, and
	// clears it: the next starts at the first table.
	out = r.timedSweep(t, events.KindSchedule, 0)
	if seen, _, _ = outcomeTables(out); !slices.Equal(seen, all) || out.Deferred != 0 {
		t.Fatalf("sweep without a deadline visited %v (deferred %d), want all 30", seen, out.Deferred)
	}
	if c := r.sweepCursor(t, events.KindSchedule); c.After != "" || c.Visited != 30 {
		t.Errorf("cursor after a whole sweep %+v, want cleared", c)
	}
	r.cat.loads = nil
	r.timedSweep(t, events.KindSchedule, 30*time.Second)
	if len(r.cat.loads) == 0 || r.cat.loads[0] != "shop.t00" {
		t.Errorf("after a whole sweep the next loaded %v first, want shop.t00", r.cat.loads)
	}
}

// TestOrphanSweep_StopsForTheInvocationsTimeWithACursorOfItsOwn: the
// orphan sweep stops the same way and keeps its own cursor: a scheduled
// sweep's does not move it.
func TestOrphanSweep_StopsForTheInvocationsTimeWithACursorOfItsOwn(t *testing.T) {
	r := newRig(t, config.ModeActive, "shop")
	r.settings.SweepConcurrency = 1
	r.settings.SweepMaxJobs = 100
	all := tableNames("shop.t%02d", 0, 12)
	for _, name := range all {
		r.add(t, name, optedIn("icekeeper.orphans.enabled", "true"), due)
	}
	r.planner.results["orphans"] = planned
	r.planner.results["compaction"] = planned

	// 12 s: 9 visits (loads while 4 s or more are left), then plans while
	// 1.2 s or more are left (2 plans).
	out := r.timedSweep(t, events.KindOrphanSchedule, 12*time.Second)
	seen, plannedTables, outOfTime := outcomeTables(out)
	if !slices.Equal(seen, all[:9]) || out.Deferred != 3 {
		t.Fatalf("orphan sweep visited %v (deferred %d), want %v (3)", seen, out.Deferred, all[:9])
	}
	if !slices.Equal(plannedTables, all[:2]) || !slices.Equal(outOfTime, all[2:9]) {
		t.Errorf("orphan sweep planned %v and ran out of time for %v, want %v and %v", plannedTables, outOfTime, all[:2], all[2:9])
	}
	r.timedSweep(t, events.KindSchedule, 0)
	r.cat.loads = nil
	r.timedSweep(t, events.KindOrphanSchedule, 12*time.Second)
	if len(r.cat.loads) == 0 || r.cat.loads[0] != "shop.t09" {
		t.Errorf("the next orphan sweep loaded %v first, want shop.t09", r.cat.loads)
	}
}

// TestSweep_ASplitSweepsIndexKeepsTheTablesItDidNotVisit: the location
// index a split sweep writes keeps the locations the last index had for
// the tables it did not visit, and lists those it never located as
// unknown, so an S3 event of any granted table still resolves.
func TestSweep_ASplitSweepsIndexKeepsTheTablesItDidNotVisit(t *testing.T) {
	for _, whole := range []bool{true, false} {
		t.Run(fmt.Sprintf("a whole sweep before: %v", whole), func(t *testing.T) {
			r := newRig(t, config.ModeActive, "shop")
			r.settings.SweepConcurrency = 1
			for i := range 6 {
				name := fmt.Sprintf("shop.t%d", i)
				r.cat.tables[name] = memTableAt(t, name, fmt.Sprintf("s3://lake/own/t%d", i), optedIn())
				r.assessor.byTable[name] = Assessment{}
			}
			if whole {
				r.timedSweep(t, events.KindSchedule, 0)
			}
			// 4 s: three visits (while 1.33 s or more are left), t3 to
			// t5 not visited.
			if out := r.timedSweep(t, events.KindSchedule, 4*time.Second); out.Deferred != 3 {
				t.Fatalf("deferred %d, want 3", out.Deferred)
			}
			for i := range 6 {
				r.cooldowns.next = nil
				out, err := r.dispatch(t, events.Trigger{Kind: events.KindS3, Locations: []string{fmt.Sprintf("s3a://lake/own/t%d/", i)}})
				if err != nil {
					t.Fatal(err)
				}
				if o := onlyOutcome(t, out); o.Table != fmt.Sprintf("shop.t%d", i) {
					t.Errorf("the event of t%d resolved to %+v", i, o)
				}
			}
		})
	}
}
