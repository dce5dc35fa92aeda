package trigger

import (
	"context"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"reflect"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/events"
	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/optin"
)

// loadGate holds the first loads until want of them are in flight at
// once (or a second has passed, so that a sweep that never gets there
// still ends), then lets every load through, and records the most that
// ever were in flight.
type loadGate struct {
	Catalog
	want int

	mu       sync.Mutex
	inFlight int
	most     int
	opened   bool
	full     chan struct{}
}

func (g *loadGate) LoadTable(ctx context.Context, ident table.Identifier) (*table.Table, error) {
	g.mu.Lock()
	g.inFlight++
	g.most = max(g.most, g.inFlight)
	if g.inFlight == g.want && !g.opened {
		g.opened = true
		close(g.full)
	}
	g.mu.Unlock()
	select {
	case <-g.full:
	case <-time.After(time.Second):
	}
	defer func() {
		g.mu.Lock()
		g.inFlight--
		g.mu.Unlock()
	}()
	return g.Catalog.LoadTable(ctx, ident)
}

// TestSweep_VisitsSweepConcurrencyTablesAtOnce: a sweep loads and
// assesses SweepConcurrency tables at once, never more: at S3's and
// Glue's latency one table after another did not fit 10,000 tables in
// Lambda's 15 minutes.
func TestSweep_VisitsSweepConcurrencyTablesAtOnce(t *testing.T) {
	for _, concurrency := range []int{1, 4} {
		t.Run(fmt.Sprintf("%d at once", concurrency), func(t *testing.T) {
			r := newRig(t, config.ModeActive, "shop")
			r.settings.SweepConcurrency = concurrency
			for i := range 12 {
				r.add(t, fmt.Sprintf("shop.t%02d", i), optedIn(), due)
			}
			r.planner.results["compaction"] = planned
			gate := &loadGate{Catalog: r.cat, want: concurrency, full: make(chan struct{})}
			deps := Deps{Catalog: gate, Planner: r.planner, Cooldowns: r.cooldowns, Auditor: r.auditor, Reports: r.reports,
				Assessor: r.assessor, Metrics: r.metrics, Log: slog.New(slog.DiscardHandler), Now: func() time.Time { return testNow }}
			d, err := New(r.settings, deps)
			if err != nil {
				t.Fatal(err)
			}
			out, err := d.Dispatch(t.Context(), events.Trigger{Kind: events.KindSchedule, Sweep: true})
			if err != nil {
				t.Fatal(err)
			}
			if len(out.Tables) != 12 {
				t.Fatalf("%d outcomes, want 12", len(out.Tables))
			}
			// The sweep loads 12 tables, then each planned job's
			// planning (the fake planner) loads none.
			if gate.most != concurrency {
				t.Errorf("at most %d loads at once, want %d (Settings.SweepConcurrency)", gate.most, concurrency)
			}
		})
	}
}

// TestSweep_DecidesAsOneTableAfterAnother: whatever the concurrency, a
// sweep of a random fleet (opted in or not, to orphan cleanup too,
// healthy, due, cooling down, missing, unreadable, with properties
// rejected; the budgets drawn), and an orphan sweep of it, plan the same
// jobs in the same order, and report the same outcomes in the same order,
// as one table after another. Seeds replay with -run.
func TestSweep_DecidesAsOneTableAfterAnother(t *testing.T) {
	for _, trig := range []events.Trigger{{Kind: events.KindSchedule, Sweep: true}, {Kind: events.KindOrphanSchedule, Sweep: true}} {
		for seed := range uint64(20) {
			t.Run(fmt.Sprintf("%s seed %d", trig.Kind, seed), func(t *testing.T) { sweepBothWays(t, trig, seed) })
		}
	}
}

func sweepBothWays(t *testing.T, trig events.Trigger, seed uint64) {
	sweep := func(concurrency int) (Outcome, error, []plannerCall, map[string]time.Time) {
		rnd := rand.New(rand.NewPCG(seed, 0))
		r := newRig(t, config.ModeActive, "shop,other.gone")
		r.settings.SweepConcurrency = concurrency
		r.settings.SweepMaxJobs = 1 + rnd.IntN(6)
		r.settings.SweepMaxMetadataJobs = 1 + rnd.IntN(4)
		r.settings.SweepMaxBytes = int64(5 + rnd.IntN(40))
		r.planner.results["compaction"] = planned
		r.planner.results["expire"] = planned
		r.planner.results["orphans"] = planned
		for i := range 30 {
			name := fmt.Sprintf("shop.t%02d", i)
			a := Assessment{Score: float64(rnd.IntN(5)), CompactionBytes: int64(rnd.IntN(3) * 5)}
			a.ExpiryDue = rnd.IntN(3) == 0
			props := optedIn()
			if rnd.IntN(2) == 0 {
				props[optin.PropertyOrphansEnabled] = "true"
			}
			switch rnd.IntN(8) {
			case 0:
				props = nil // not opted in
			case 1:
				props = optedIn(optin.PropertyMinInterval, "soon") // rejected
			case 2:
				r.cat.errs[name] = errTransient
			case 3:
				r.cooldowns.SetNext(t.Context(), name, testNow.Add(time.Hour))
			}
			r.add(t, name, props, a)
			r.planner.inputBytes[name] = a.CompactionBytes
		}
		out, err := r.dispatch(t, trig)
		return out, err, r.planner.calls, r.cooldowns.next
	}
	wantOut, wantErr, wantCalls, wantNext := sweep(1)
	gotOut, gotErr, gotCalls, gotNext := sweep(8)
	if !reflect.DeepEqual(gotOut, wantOut) {
		t.Errorf("outcomes at 8 at once:\n%+v\nwant, as one after another:\n%+v", gotOut, wantOut)
	}
	if fmt.Sprint(gotErr) != fmt.Sprint(wantErr) {
		t.Errorf("error at 8 at once %v, want %v", gotErr, wantErr)
	}
	if !reflect.DeepEqual(gotCalls, wantCalls) {
		t.Errorf("planned at 8 at once %v, want %v", gotCalls, wantCalls)
	}
	if !reflect.DeepEqual(gotNext, wantNext) {
		t.Errorf("cooldowns at 8 at once %v, want %v", gotNext, wantNext)
	}
	if len(wantCalls) == 0 {
		t.Error("the fleet planned nothing: the comparison proves little")
	}
}
