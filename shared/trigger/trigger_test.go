package trigger

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go/catalog"

	"github.com/icekeeper/icekeeper/events"
	"github.com/icekeeper/icekeeper/shared/audit"
	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/health"
	"github.com/icekeeper/icekeeper/shared/ledger"
	"github.com/icekeeper/icekeeper/shared/optin"
	"github.com/icekeeper/icekeeper/shared/pacing"
	"github.com/icekeeper/icekeeper/shared/plan"
	"github.com/icekeeper/icekeeper/shared/signals"
)

var planned = plan.Result{Outcome: plan.OutcomePlanned, JobID: "job-1"}

// due is the assessment of a table with files to compact.
var due = Assessment{Score: 1, CompactionBytes: 10}

// onlyOutcome returns the outcome's one table outcome.
func onlyOutcome(t *testing.T, out Outcome) TableOutcome {
	t.Helper()
	if len(out.Tables) != 1 {
		t.Fatalf("want one table outcome, got %+v", out.Tables)
	}
	return out.Tables[0]
}

// TestDispatch_EachEventKindReachesItsTables: every kind of trigger the
// planner decodes ends where it should: a table-change event (Glue table
// or database, S3 metadata object, icekeeper commit or continuation)
// plans the table it names or whose location it names; a schedule sweeps
// every granted table; the orphan schedule sweeps for orphan cleanups
// only; a query signal is recorded and plans nothing.
func TestDispatch_EachEventKindReachesItsTables(t *testing.T) {
	cases := []struct {
		name        string
		trig        events.Trigger
		wantActions []string // planner calls
		wantAction  Action
	}{
		{"glue table change", events.Trigger{Kind: events.KindGlue, Tables: []string{"shop.orders"}}, []string{"compaction"}, ActionPlanned},
		{"glue database change", events.Trigger{Kind: events.KindGlueDB, Tables: []string{"shop.orders"}}, []string{"compaction"}, ActionPlanned},
		{"icekeeper commit", events.Trigger{Kind: events.KindCommit, Tables: []string{"shop.orders"}}, []string{"compaction"}, ActionPlanned},
		{"icekeeper continue", events.Trigger{Kind: events.KindContinue, Tables: []string{"shop.orders"}, ContinuesJob: "job-0"}, []string{"compaction"}, ActionPlanned},
		{"s3 metadata object, by the ns.db layout", events.Trigger{Kind: events.KindS3, Locations: []string{"s3://wh/shop.db/orders/"}}, []string{"compaction"}, ActionPlanned},
		{"schedule sweep", events.Trigger{Kind: events.KindSchedule, Sweep: true}, []string{"compaction"}, ActionPlanned},
		{"orphan schedule", events.Trigger{Kind: events.KindOrphanSchedule, Sweep: true}, []string{"orphans"}, ActionPlanned},
		{"query signal", events.Trigger{Kind: events.KindQuery, Tables: []string{"shop.orders"}, Query: &events.Query{BytesScanned: 5}}, nil, ActionObserved},
		{"athena query", events.Trigger{Kind: events.KindAthena, AthenaQueryID: "q-1"}, nil, ActionObserved},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, config.ModeActive, "shop")
			r.add(t, "shop.orders", optedIn(optin.PropertyOrphansEnabled, "true"), due)
			r.planner.results["compaction"] = planned
			r.planner.results["orphans"] = planned
			r.signals = &fakeSignals{}
			r.queries = &fakeQueries{obs: []signals.Observation{{Table: "shop.orders", BytesScanned: 7}}}
			out, err := r.dispatch(t, c.trig)
			if err != nil {
				t.Fatalf("Dispatch: %v", err)
			}
			o := onlyOutcome(t, out)
			if o.Table != "shop.orders" || o.Action != c.wantAction {
				t.Errorf("outcome %+v, want %s of shop.orders", o, c.wantAction)
			}
			if got := r.planner.actions(); !slices.Equal(got, c.wantActions) {
				t.Errorf("planner asked for %v, want %v", got, c.wantActions)
			}
			if c.wantAction == ActionObserved && len(r.signals.recorded) != 1 {
				t.Errorf("recorded %d observations, want 1", len(r.signals.recorded))
			}
		})
	}
}

// TestDispatch_AnUngrantedLayoutLocationLoadsNothing: a metadata write of
// an ungranted table under the <ns>.db/<table> layout (what a stack whose
// S3 rules widened to whole buckets sends) is skipped as unresolved
// without loading any table; a granted one still resolves.
func TestDispatch_AnUngrantedLayoutLocationLoadsNothing(t *testing.T) {
	r := newRig(t, config.ModeActive, "shop.*,sales.orders")
	r.add(t, "shop.orders", optedIn(), due)
	r.add(t, "sales.orders", optedIn(), due)
	r.planner.results["compaction"] = planned
	for _, loc := range []string{"s3://wh/shop.db/other_x/", "s3://wh/sales.db/customers", "s3://wh/hr.db/people"} {
		r.cat.loads = nil
		if loc == "s3://wh/shop.db/other_x/" {
			// A granted namespace: its tables are granted, so the
			// location is looked up (and found nowhere).
			out, err := r.dispatch(t, events.Trigger{Kind: events.KindS3, Locations: []string{loc}})
			if err != nil || onlyOutcome(t, out).Skip != SkipUnresolved || len(r.cat.loads) == 0 {
				t.Fatalf("%s: %+v, %v, loads %v: want looked up, then unresolved", loc, out.Tables, err, r.cat.loads)
			}
			continue
		}
		out, err := r.dispatch(t, events.Trigger{Kind: events.KindS3, Locations: []string{loc}})
		if err != nil {
			t.Fatal(err)
		}
		if o := onlyOutcome(t, out); o.Skip != SkipUnresolved || len(r.cat.loads) != 0 {
			t.Errorf("%s: %+v after loading %v, want skipped %s with no load", loc, o, r.cat.loads, SkipUnresolved)
		}
	}
	if got := r.planner.tables(); len(got) != 0 {
		t.Errorf("planned %v, want nothing", got)
	}
}

// TestDispatch_S3LocationResolvedByComparingLocations: a location outside
// the <ns>.db/<table> layout is resolved by comparing the granted tables'
// locations; a location no granted table has is skipped as unresolved.
func TestDispatch_S3LocationResolvedByComparingLocations(t *testing.T) {
	r := newRig(t, config.ModeActive, "shop")
	r.add(t, "shop.orders", optedIn(), due)
	r.add(t, "shop.items", optedIn(), due)
	r.planner.results["compaction"] = planned
	loc := r.cat.tables["shop.items"].Location()
	out, err := r.dispatch(t, events.Trigger{Kind: events.KindS3, Locations: []string{loc + "/", "s3://elsewhere/x/y"}})
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Tables) != 2 {
		t.Fatalf("outcomes %+v", out.Tables)
	}
	if o := out.Tables[0]; o.Table != "s3://elsewhere/x/y" || o.Skip != SkipUnresolved {
		t.Errorf("unknown location: %+v, want skipped %s", o, SkipUnresolved)
	}
	if o := out.Tables[1]; o.Table != "shop.items" || o.Action != ActionPlanned {
		t.Errorf("known location: %+v, want shop.items planned", o)
	}
	if got := r.planner.tables(); !slices.Equal(got, []string{"shop.items"}) {
		t.Errorf("planned %v, want [shop.items]", got)
	}
}

// TestDispatch_RejectionsSkipWithTheirReason: each rule that keeps a
// table from maintenance skips it with its own reason, plans nothing, and
// the loud ones publish an audit event.
func TestDispatch_RejectionsSkipWithTheirReason(t *testing.T) {
	glue := func(names ...string) events.Trigger { return events.Trigger{Kind: events.KindGlue, Tables: names} }
	cases := []struct {
		name      string
		mode      config.Mode
		grants    string
		setup     func(t *testing.T, r *rig)
		trig      events.Trigger
		wantSkip  string
		wantAudit string // audit detail type, if one is published
	}{
		{name: "mode off ignores every trigger", mode: config.ModeOff, trig: glue("shop.orders"), wantSkip: SkipModeOff},
		{name: "an event that changes no table's data", trig: events.Trigger{Kind: events.KindGlue, Ignored: "partition change"}, wantSkip: SkipNoTableChange},
		{name: "neither opted in nor granted", grants: "other", setup: func(t *testing.T, r *rig) { r.add(t, "shop.orders", nil, due) }, trig: glue("shop.orders"), wantSkip: SkipNotGranted},
		{name: "granted but not opted in", setup: func(t *testing.T, r *rig) { r.add(t, "shop.orders", nil, due) }, trig: glue("shop.orders"), wantSkip: SkipNotOptedIn},
		{name: "opted in with enabled=false", setup: func(t *testing.T, r *rig) {
			r.add(t, "shop.orders", map[string]string{optin.PropertyEnabled: "false"}, due)
		}, trig: glue("shop.orders"), wantSkip: SkipNotOptedIn},
		{name: "opted in without a grant is loud", grants: "other", setup: func(t *testing.T, r *rig) { r.add(t, "shop.orders", optedIn(), due) }, trig: glue("shop.orders"), wantSkip: SkipOptInWithoutGrant, wantAudit: audit.DetailOptInWithoutGrant},
		{name: "a credential-shaped property", setup: func(t *testing.T, r *rig) {
			r.add(t, "shop.orders", optedIn("icekeeper.aws.secret", "x"), due)
		}, trig: glue("shop.orders"), wantSkip: SkipInvalidProperties, wantAudit: audit.DetailInvalidProperties},
		{name: "a malformed property", setup: func(t *testing.T, r *rig) {
			r.add(t, "shop.orders", optedIn(optin.PropertyMinInterval, "soon"), due)
		}, trig: glue("shop.orders"), wantSkip: SkipInvalidProperties, wantAudit: audit.DetailInvalidProperties},
		{name: "properties the assessor cannot use", setup: func(t *testing.T, r *rig) {
			r.add(t, "shop.orders", optedIn(), due)
			r.assessor.errs["shop.orders"] = fmt.Errorf("%w: write.target-file-size-bytes=big", ErrTableProperties)
		}, trig: glue("shop.orders"), wantSkip: SkipInvalidProperties, wantAudit: audit.DetailInvalidProperties},
		{name: "no such table", trig: glue("shop.orders"), wantSkip: SkipNoSuchTable},
		{name: "no such namespace", setup: func(t *testing.T, r *rig) {
			r.cat.errs["shop.orders"] = fmt.Errorf("%w: shop", catalog.ErrNoSuchNamespace)
		}, trig: glue("shop.orders"), wantSkip: SkipNoSuchTable},
		{name: "a name without a namespace", trig: glue("orders"), wantSkip: SkipNoSuchTable},
		{name: "not an iceberg table", setup: func(t *testing.T, r *rig) {
			r.cat.errs["shop.orders"] = fmt.Errorf("table shop.orders is not an iceberg table")
		}, trig: glue("shop.orders"), wantSkip: SkipNotIceberg},
		{name: "not granted and not readable", grants: "other", setup: func(t *testing.T, r *rig) {
			r.cat.errs["shop.orders"] = fmt.Errorf("AccessDeniedException: not authorized")
		}, trig: glue("shop.orders"), wantSkip: SkipNotGranted},
		{name: "the planner backs the table off", setup: func(t *testing.T, r *rig) {
			r.add(t, "shop.orders", optedIn(), due)
			r.planner.results["compaction"] = plan.Result{Outcome: plan.OutcomeBackedOff, Reason: "failed 3 times"}
		}, trig: glue("shop.orders"), wantSkip: SkipBackoff},
		{name: "in the cooldown", setup: func(t *testing.T, r *rig) {
			r.add(t, "shop.orders", optedIn(), due)
			r.cooldowns.next = map[string]time.Time{"shop.orders": testNow.Add(time.Second)}
		}, trig: glue("shop.orders"), wantSkip: SkipCooldown},
		{name: "a query signal without a signal store", trig: events.Trigger{Kind: events.KindQuery, Tables: []string{"shop.orders"}, Query: &events.Query{}}, wantSkip: SkipNoSignalStore},
		{name: "an athena query without a lookup", setup: func(t *testing.T, r *rig) { r.signals = &fakeSignals{} },
			trig: events.Trigger{Kind: events.KindAthena, AthenaQueryID: "q"}, wantSkip: SkipNoSignalStore},
		{name: "an unparsable athena query", setup: func(t *testing.T, r *rig) {
			r.signals = &fakeSignals{}
			r.queries = &fakeQueries{err: fmt.Errorf("%w: SELECT ???", signals.ErrUnparsable)}
		}, trig: events.Trigger{Kind: events.KindAthena, AthenaQueryID: "q"}, wantSkip: SkipInvalidSignal},
		{name: "a query signal for a table outside the grants", grants: "other", setup: func(t *testing.T, r *rig) { r.signals = &fakeSignals{} },
			trig: events.Trigger{Kind: events.KindQuery, Tables: []string{"shop.orders"}, Query: &events.Query{}}, wantSkip: SkipNotGranted},
		{name: "an invalid query signal", setup: func(t *testing.T, r *rig) { r.signals = &fakeSignals{} },
			trig: events.Trigger{Kind: events.KindQuery, Tables: []string{"shop.orders"}, Query: &events.Query{BytesScanned: -1}}, wantSkip: SkipInvalidSignal},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			mode, grants := c.mode, c.grants
			if mode == "" {
				mode = config.ModeActive
			}
			if grants == "" {
				grants = "shop"
			}
			r := newRig(t, mode, grants)
			r.planner.results["compaction"] = planned
			if c.setup != nil {
				c.setup(t, r)
			}
			out, err := r.dispatch(t, c.trig)
			if err != nil {
				t.Fatalf("Dispatch: %v (a rejection is an outcome, not an error)", err)
			}
			o := onlyOutcome(t, out)
			if o.Action != ActionSkipped || o.Skip != c.wantSkip {
				t.Fatalf("outcome %+v, want skipped %s", o, c.wantSkip)
			}
			if r.metrics.count("TablesSkipped", c.wantSkip)+r.metrics.count("TriggersIgnored", c.wantSkip) != 1 {
				t.Errorf("no skip counted with reason %s: %v", c.wantSkip, r.metrics.lines)
			}
			if c.wantSkip != SkipBackoff && len(r.planner.calls) != 0 {
				t.Errorf("planner asked for %v, want nothing", r.planner.actions())
			}
			var audits []string
			for _, e := range r.auditor.events {
				audits = append(audits, e.detailType)
			}
			switch {
			case c.wantAudit == "" && len(audits) > 0:
				t.Errorf("audit events %v, want none", audits)
			case c.wantAudit != "" && !slices.Equal(audits, []string{c.wantAudit}):
				t.Errorf("audit events %v, want [%s]", audits, c.wantAudit)
			}
		})
	}
}

// TestDispatch_TransientFailuresAreReturnedAndGiveTheSlotBack: a catalog
// or planner failure of a granted table is returned (EventBridge retries
// the event), and the cooldown slot it claimed is given back so that the
// retry is not refused as a cooldown.
func TestDispatch_TransientFailuresAreReturnedAndGiveTheSlotBack(t *testing.T) {
	cases := []struct {
		name  string
		setup func(t *testing.T, r *rig)
	}{
		{"catalog", func(t *testing.T, r *rig) { r.cat.errs["shop.orders"] = errTransient }},
		{"compaction planner", func(t *testing.T, r *rig) {
			r.add(t, "shop.orders", optedIn(), due)
			r.planner.errs["compaction"] = errTransient
		}},
		{"compaction planner after a layout change with nothing to do", func(t *testing.T, r *rig) {
			a := due
			a.Layout = &plan.LayoutChange{Layout: "sort", Columns: []string{"ts"}}
			r.add(t, "shop.orders", optedIn(optin.PropertyLayoutAuto, "true"), a)
			r.planner.errs["compaction"] = errTransient
		}},
		{"layout change planner", func(t *testing.T, r *rig) {
			a := due
			a.Layout = &plan.LayoutChange{Layout: "sort", Columns: []string{"ts"}}
			r.add(t, "shop.orders", optedIn(optin.PropertyLayoutAuto, "true"), a)
			r.planner.errs["change-layout"] = errTransient
		}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, config.ModeActive, "shop")
			c.setup(t, r)
			out, err := r.dispatch(t, events.Trigger{Kind: events.KindGlue, Tables: []string{"shop.orders"}})
			if err == nil || !strings.Contains(err.Error(), "ThrottlingException") {
				t.Fatalf("err %v, want the transient failure", err)
			}
			if len(out.Errors) != 1 {
				t.Errorf("outcome errors %v, want one", out.Errors)
			}
			if next := r.cooldowns.next["shop.orders"]; next.After(testNow) {
				t.Errorf("slot held until %v, want it given back (now %v)", next, testNow)
			}
		})
	}
}

// TestDispatch_CooldownCoalescesABurstOnlyWhenAJobWasPlanned: a second
// event within the cooldown is coalesced when the first planned a job (or
// found one in flight); when the first found nothing to do, the slot is
// given back and the second is visited again.
func TestDispatch_CooldownCoalescesABurstOnlyWhenAJobWasPlanned(t *testing.T) {
	cases := []struct {
		name       string
		first      plan.Result
		wantSecond []string // planner calls of the second event
		wantSkip   string
	}{
		{"planned: coalesced", planned, nil, SkipCooldown},
		{"lease held: coalesced", plan.Result{Outcome: plan.OutcomeLeaseHeld, Reason: "job in flight"}, nil, SkipCooldown},
		{"nothing to do: visited again", plan.Result{Outcome: plan.OutcomeNothingToDo}, []string{"compaction", "rewrite-deletes", "rewrite-manifests", "expire"}, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, config.ModeActive, "shop")
			r.add(t, "shop.orders", optedIn(), due)
			r.planner.results["compaction"] = c.first
			d := r.dispatcher(t)
			trig := events.Trigger{Kind: events.KindCommit, Tables: []string{"shop.orders"}}
			if _, err := d.Dispatch(t.Context(), trig); err != nil {
				t.Fatal(err)
			}
			r.planner.calls = nil
			out, err := d.Dispatch(t.Context(), trig)
			if err != nil {
				t.Fatal(err)
			}
			if o := onlyOutcome(t, out); o.Skip != c.wantSkip {
				t.Errorf("second event: %+v, want skip %q", o, c.wantSkip)
			}
			if got := r.planner.actions(); !slices.Equal(got, c.wantSecond) {
				t.Errorf("second event asked the planner for %v, want %v", got, c.wantSecond)
			}
		})
	}
}

// TestDispatch_ABusyTablesSlotIsPacedToItsWriters: a compaction planned on
// a table its writers fill at 12 files an hour keeps the cooldown slot
// only until the table is expected at twice its optimum (6 files of
// headroom: half an hour), by commit event or sweep; an idle table keeps
// the deployment's hour, and an owner's own min-interval stands.
func TestDispatch_ABusyTablesSlotIsPacedToItsWriters(t *testing.T) {
	busy := due
	busy.Pace = pacing.Table{FilesAfter: 4, Optimum: 5}
	cases := []struct {
		name    string
		props   map[string]string
		appends int
		trig    events.Trigger
		want    time.Duration
	}{
		{"busy, commit event", optedIn(), 12, events.Trigger{Kind: events.KindCommit, Tables: []string{"shop.orders"}}, 30 * time.Minute},
		{"busy, sweep", optedIn(), 12, events.Trigger{Kind: events.KindSchedule, Sweep: true}, 30 * time.Minute},
		{"written once", optedIn(), 1, events.Trigger{Kind: events.KindCommit, Tables: []string{"shop.orders"}}, time.Hour},
		{"busy, the owner's interval", optedIn(optin.PropertyMinInterval, "2h"), 12, events.Trigger{Kind: events.KindCommit, Tables: []string{"shop.orders"}}, 2 * time.Hour},
		{"busy, the owner's shorter interval", optedIn(optin.PropertyMinInterval, "5m"), 12, events.Trigger{Kind: events.KindSchedule, Sweep: true}, 5 * time.Minute},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, config.ModeActive, "shop")
			r.settings.MinInterval = time.Hour
			r.add(t, "shop.orders", c.props, busy)
			r.cat.tables["shop.orders"] = withWrites(t, r.cat.tables["shop.orders"], c.appends, 5)
			r.planner.results["compaction"] = planned
			out, err := r.dispatch(t, c.trig)
			if err != nil {
				t.Fatal(err)
			}
			if o := onlyOutcome(t, out); o.Action != ActionPlanned {
				t.Fatalf("outcome %+v, want planned", o)
			}
			if got := r.cooldowns.next["shop.orders"].Sub(testNow); got != c.want {
				t.Fatalf("next planning in %v, want %v", got, c.want)
			}
		})
	}
}

// TestPlan_ChainTriesEachDueActionInOrderUntilOnePlans: layout change (only
// with icekeeper.layout.auto and a recommendation), compaction, delete-file
// rewrite, manifest rewrite, snapshot expiry: the first that plans a job
// ends the chain; an action its owner turned off is not asked; a failure
// of a later action is a reason, not an error.
func TestPlan_ChainTriesEachDueActionInOrderUntilOnePlans(t *testing.T) {
	layout := &plan.LayoutChange{Layout: "sort", Columns: []string{"ts"}, Why: "ts filtered"}
	all := []string{"compaction", "rewrite-deletes", "rewrite-manifests", "expire"}
	cases := []struct {
		name        string
		props       map[string]string
		layout      *plan.LayoutChange
		results     map[string]plan.Result
		errs        map[string]error
		wantActions []string
		wantAction  Action
		wantReason  string // a substring of the outcome's reason
	}{
		{name: "compaction planned ends the chain", results: map[string]plan.Result{"compaction": planned}, wantActions: []string{"compaction"}, wantAction: ActionPlanned},
		{name: "nothing to compact: delete-file rewrite", results: map[string]plan.Result{"rewrite-deletes": planned}, wantActions: []string{"compaction", "rewrite-deletes"}, wantAction: ActionPlanned},
		{name: "then manifest rewrite", results: map[string]plan.Result{"rewrite-manifests": planned}, wantActions: []string{"compaction", "rewrite-deletes", "rewrite-manifests"}, wantAction: ActionPlanned},
		{name: "then snapshot expiry", results: map[string]plan.Result{"expire": planned}, wantActions: all, wantAction: ActionPlanned},
		{name: "nothing due anywhere: every reason joined", wantActions: all, wantAction: ActionAssessed, wantReason: "compaction: nothing to do; rewrite-deletes: nothing to do; rewrite-manifests: nothing to do; expire: nothing to do"},
		{name: "compaction turned off", props: optedIn(optin.PropertyCompactionEnabled, "false"), results: map[string]plan.Result{"compaction": planned, "rewrite-deletes": planned},
			wantActions: []string{"rewrite-deletes"}, wantAction: ActionPlanned},
		{name: "every action turned off", props: optedIn(optin.PropertyCompactionEnabled, "false", optin.PropertyRewriteDeletesEnabled, "false", optin.PropertyRewriteManifestsEnabled, "false", optin.PropertyExpireEnabled, "false"),
			wantAction: ActionAssessed, wantReason: "snapshot expiry turned off by the table's owner"},
		{name: "a recommended layout without layout.auto is not changed", layout: layout, results: map[string]plan.Result{"change-layout": planned, "compaction": planned},
			wantActions: []string{"compaction"}, wantAction: ActionPlanned},
		{name: "a recommended layout with layout.auto comes first", props: optedIn(optin.PropertyLayoutAuto, "true"), layout: layout, results: map[string]plan.Result{"change-layout": planned, "compaction": planned},
			wantActions: []string{"change-layout"}, wantAction: ActionPlanned},
		{name: "layout.auto without a recommendation", props: optedIn(optin.PropertyLayoutAuto, "true"), results: map[string]plan.Result{"compaction": planned},
			wantActions: []string{"compaction"}, wantAction: ActionPlanned},
		{name: "a later action's failure moves on", errs: map[string]error{"rewrite-deletes": errTransient}, results: map[string]plan.Result{"rewrite-manifests": planned},
			wantActions: []string{"compaction", "rewrite-deletes", "rewrite-manifests"}, wantAction: ActionPlanned},
		{name: "a job in flight ends the chain", results: map[string]plan.Result{"compaction": {Outcome: plan.OutcomeLeaseHeld, Reason: "lease held by job-0"}},
			wantActions: []string{"compaction"}, wantAction: ActionAssessed, wantReason: "lease held by job-0"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, config.ModeActive, "shop")
			props := c.props
			if props == nil {
				props = optedIn()
			}
			a := due
			a.Layout = c.layout
			r.add(t, "shop.orders", props, a)
			for k, v := range c.results {
				r.planner.results[k] = v
			}
			for k, v := range c.errs {
				r.planner.errs[k] = v
			}
			out, err := r.dispatch(t, events.Trigger{Kind: events.KindCommit, Tables: []string{"shop.orders"}})
			if err != nil {
				t.Fatalf("Dispatch: %v", err)
			}
			o := onlyOutcome(t, out)
			if got := r.planner.actions(); !slices.Equal(got, c.wantActions) {
				t.Errorf("planner asked for %v, want %v", got, c.wantActions)
			}
			if o.Action != c.wantAction {
				t.Errorf("action %s, want %s (%+v)", o.Action, c.wantAction, o)
			}
			if !strings.Contains(o.Reason, c.wantReason) {
				t.Errorf("reason %q, want it to contain %q", o.Reason, c.wantReason)
			}
			if c.wantAction == ActionPlanned && r.metrics.count("JobsPlanned", "") != 1 {
				t.Errorf("JobsPlanned counted %d times, want once", r.metrics.count("JobsPlanned", ""))
			}
			if slices.Contains(c.wantActions, "change-layout") && (r.planner.layout == nil || r.planner.layout.Layout != "sort") {
				t.Errorf("layout change planned with %+v, want the recommendation", r.planner.layout)
			}
		})
	}
}

// TestPlan_AnActionsOwnCooldownIsSpentOnlyByAPlannedJob: with
// icekeeper.rewrite-deletes.min-interval set, a planned delete-file
// rewrite keeps the next visit from asking for another (the chain goes on
// to the manifest rewrite); one that found nothing to do gives the slot
// back.
func TestPlan_AnActionsOwnCooldownIsSpentOnlyByAPlannedJob(t *testing.T) {
	cases := []struct {
		name       string
		first      plan.Result
		wantSecond []string
	}{
		{"planned: cools down", planned, []string{"compaction", "rewrite-manifests", "expire"}},
		{"nothing to do: asked again", plan.Result{Outcome: plan.OutcomeNothingToDo}, []string{"compaction", "rewrite-deletes", "rewrite-manifests", "expire"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, config.ModeActive, "shop")
			r.settings.MinInterval = 0 // the table's own cooldown does not coalesce here
			r.add(t, "shop.orders", optedIn(optin.PropertyRewriteDeletesMinInterval, "6h"), due)
			r.planner.results["rewrite-deletes"] = c.first
			d := r.dispatcher(t)
			trig := events.Trigger{Kind: events.KindCommit, Tables: []string{"shop.orders"}}
			if _, err := d.Dispatch(t.Context(), trig); err != nil {
				t.Fatal(err)
			}
			r.planner.calls = nil
			out, err := d.Dispatch(t.Context(), trig)
			if err != nil {
				t.Fatal(err)
			}
			if got := r.planner.actions(); !slices.Equal(got, c.wantSecond) {
				t.Errorf("second visit asked for %v, want %v", got, c.wantSecond)
			}
			if o := onlyOutcome(t, out); c.first.Outcome == plan.OutcomePlanned && !strings.Contains(o.Reason, "delete-file rewrite planned less than its "+optin.PropertyRewriteDeletesMinInterval) {
				t.Errorf("reason %q does not say the delete-file rewrite cools down", o.Reason)
			}
		})
	}
}

// TestPlan_LedgerBacksOffOnlyTheRewritesItWeighs: a ledger verdict of back
// off, until a time still to come, skips compaction and delete-file
// rewrites (ledger.Kinds) but not manifest rewrites or expiry; once that
// time has come, nothing is backed off.
func TestPlan_LedgerBacksOffOnlyTheRewritesItWeighs(t *testing.T) {
	cases := []struct {
		name        string
		nextAllowed time.Time
		wantActions []string
	}{
		{"backed off", testNow.Add(time.Hour), []string{"rewrite-manifests", "expire"}},
		{"back-off over", testNow, []string{"compaction", "rewrite-deletes", "rewrite-manifests", "expire"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, config.ModeActive, "shop")
			r.add(t, "shop.orders", optedIn(), due)
			r.ledger = &fakeLedger{a: ledger.Assessment{Verdict: ledger.Verdict{BackOff: true, Reason: "costs more than it saves"}, NextAllowed: c.nextAllowed}}
			if _, err := r.dispatch(t, events.Trigger{Kind: events.KindCommit, Tables: []string{"shop.orders"}}); err != nil {
				t.Fatal(err)
			}
			if got := r.planner.actions(); !slices.Equal(got, c.wantActions) {
				t.Errorf("planner asked for %v, want %v", got, c.wantActions)
			}
		})
	}
}

// TestDispatch_AdvisoryAssessesAndNeverPlans: advisory mode publishes the
// health report and plans nothing.
func TestDispatch_AdvisoryAssessesAndNeverPlans(t *testing.T) {
	r := newRig(t, config.ModeAdvisory, "shop")
	r.add(t, "shop.orders", optedIn(), Assessment{Score: 3, CompactionBytes: 10})
	out, err := r.dispatch(t, events.Trigger{Kind: events.KindGlue, Tables: []string{"shop.orders"}})
	if err != nil {
		t.Fatal(err)
	}
	o := onlyOutcome(t, out)
	if o.Action != ActionAssessed || o.Score != 3 || o.ReportKey != "s3://reports/health/shop.orders/latest.json" {
		t.Errorf("outcome %+v, want assessed with score 3 and the latest report", o)
	}
	if len(r.planner.calls) != 0 {
		t.Errorf("advisory asked the planner for %v", r.planner.actions())
	}
	if want := []string{"health/shop.orders/20261202T120000Z.json", "health/shop.orders/latest.json"}; !slices.Equal(r.reports.puts, want) {
		t.Errorf("reports %v, want %v", r.reports.puts, want)
	}
}

// TestSweep_AnUnchangedHealthReportIsNotWrittenAgain: a sweep writes a
// table's two reports; the next sweep, an hour later with the table as it
// was, reads latest.json and writes nothing, yet still names it; once the
// table changed, both are written again; a second change in the same hour
// rewrites latest.json only (the history has the hour's first); both are
// written when the published report cannot be read.
func TestSweep_AnUnchangedHealthReportIsNotWrittenAgain(t *testing.T) {
	r := newRig(t, config.ModeAdvisory, "shop")
	report := func(at time.Time, snapshot int) []byte {
		return []byte(fmt.Sprintf(`{"table":"shop.orders","snapshot_id":"%d","generated_at":%q,"oldest_snapshot_age_seconds":%d,"score":3}`,
			snapshot, at.Format(time.RFC3339), at.Unix()))
	}
	const latest = "s3://reports/health/shop.orders/latest.json"
	sweep := func(at time.Time, snapshot int) (TableOutcome, []string) {
		t.Helper()
		r.add(t, "shop.orders", optedIn(), Assessment{Score: 3, Report: report(at, snapshot)})
		r.reports.puts = nil
		d := r.dispatcher(t)
		d.now = func() time.Time { return at }
		out, err := d.Dispatch(context.Background(), events.Trigger{Kind: events.KindSchedule, Sweep: true})
		if err != nil {
			t.Fatal(err)
		}
		var health []string // the sweep also writes the location index
		for _, p := range r.reports.puts {
			if strings.HasPrefix(p, "health/") {
				health = append(health, p)
			}
		}
		return onlyOutcome(t, out), health
	}
	stamped := func(at time.Time) []string {
		return []string{"health/shop.orders/" + at.UTC().Format("20060102T150405Z") + ".json", "health/shop.orders/latest.json"}
	}

	if o, puts := sweep(testNow, 1); !slices.Equal(puts, stamped(testNow)) || o.ReportKey != latest {
		t.Fatalf("first sweep wrote %v (report %q), want %v", puts, o.ReportKey, stamped(testNow))
	}
	next := testNow.Add(time.Hour)
	o, puts := sweep(next, 1)
	if len(puts) != 0 {
		t.Errorf("sweep of an unchanged table wrote %v, want nothing", puts)
	}
	if o.Action != ActionAssessed || o.ReportKey != latest {
		t.Errorf("outcome %+v, want assessed, naming %s", o, latest)
	}
	if got := r.reports.gets; len(got) == 0 || got[len(got)-1] != latest {
		t.Errorf("read %v, want %s read", got, latest)
	}
	next = next.Add(time.Hour)
	if _, puts := sweep(next, 2); !slices.Equal(puts, stamped(next)) {
		t.Errorf("sweep of a changed table wrote %v, want %v", puts, stamped(next))
	}
	next = next.Add(50 * time.Minute)
	if _, puts := sweep(next, 3); !slices.Equal(puts, []string{"health/shop.orders/latest.json"}) {
		t.Errorf("sweep of a table changed again in the same hour wrote %v, want latest.json alone", puts)
	}
	next = next.Add(10 * time.Minute)
	if _, puts := sweep(next, 4); !slices.Equal(puts, stamped(next)) {
		t.Errorf("sweep of a table changed in the next hour wrote %v, want %v", puts, stamped(next))
	}
	r.reports.getErr = errors.New("timeout")
	next = next.Add(time.Hour)
	if _, puts := sweep(next, 2); !slices.Equal(puts, stamped(next)) {
		t.Errorf("sweep with the published report unreadable wrote %v, want %v", puts, stamped(next))
	}
}

// sweepTable is one granted table of a sweep.
type sweepTable struct {
	name  string
	props map[string]string
	a     Assessment
	input int64 // the planned job's input bytes
}

// TestSweep_RanksByScoreThenSpendsTheBudget: a sweep plans the tables
// with debt in descending score order (ties keep the tables' name order),
// at most SweepMaxJobs jobs and SweepMaxBytes input bytes; what it skips
// it skips with its reason; healthy tables are not candidates.
func TestSweep_RanksByScoreThenSpendsTheBudget(t *testing.T) {
	cases := []struct {
		name            string
		maxJobs         int
		maxMetadataJobs int // 0: the rig's 100
		maxBytes        int64
		cooling         []string // tables in their cooldown
		// wantActions: the chain actions the planner was asked for, by
		// table (nil: not checked).
		wantActions map[string][]string
		// expiryOnly: only the expiry planner plans (the others find
		// nothing to do).
		expiryOnly bool
		tables     []sweepTable
		wantPlan   []string          // PlanTable calls, in order
		wantSkips  map[string]string // table: skip reason
		wantOrder  []string          // the outcomes' tables, in order (nil: not checked)
		plannedOut bool              // the compaction planner plans (else finds nothing)
	}{
		{
			name: "descending score, ties in name order", maxJobs: 10, maxBytes: 1 << 40, plannedOut: true,
			tables: []sweepTable{
				{name: "shop.a", a: Assessment{Score: 1, CompactionBytes: 1}},
				{name: "shop.b", a: Assessment{Score: 5, CompactionBytes: 1}},
				{name: "shop.c", a: Assessment{Score: 5, CompactionBytes: 1}},
				{name: "shop.d", a: Assessment{Score: 3, CompactionBytes: 1}},
			},
			wantPlan:  []string{"shop.b", "shop.c", "shop.d", "shop.a"},
			wantOrder: []string{"shop.b", "shop.c", "shop.d", "shop.a"},
		},
		{
			name: "the job budget keeps the lowest scores for the next sweep", maxJobs: 2, maxBytes: 1 << 40, plannedOut: true,
			tables: []sweepTable{
				{name: "shop.a", a: Assessment{Score: 1, CompactionBytes: 1}},
				{name: "shop.b", a: Assessment{Score: 4, CompactionBytes: 1}},
				{name: "shop.c", a: Assessment{Score: 3, CompactionBytes: 1}},
			},
			wantPlan:  []string{"shop.b", "shop.c"},
			wantSkips: map[string]string{"shop.a": SkipBudgetJobs},
		},
		{
			name: "the byte budget skips what would exceed it, and a smaller one still fits", maxJobs: 10, maxBytes: 100, plannedOut: true,
			tables: []sweepTable{
				{name: "shop.a", a: Assessment{Score: 3, CompactionBytes: 60}, input: 60},
				{name: "shop.b", a: Assessment{Score: 2, CompactionBytes: 50}, input: 50},
				{name: "shop.c", a: Assessment{Score: 1, CompactionBytes: 40}, input: 40},
			},
			wantPlan:  []string{"shop.a", "shop.c"},
			wantSkips: map[string]string{"shop.b": SkipBudgetBytes},
		},
		{
			name: "a job that planned nothing spends no budget", maxJobs: 1, maxBytes: 1 << 40, plannedOut: false,
			tables: []sweepTable{
				{name: "shop.a", a: Assessment{Score: 2, CompactionBytes: 1}},
				{name: "shop.b", a: Assessment{Score: 1, CompactionBytes: 1}},
			},
			wantPlan: []string{"shop.a", "shop.b"},
		},
		{
			name: "healthy tables are not candidates", maxJobs: 10, maxBytes: 1 << 40, plannedOut: true,
			tables: []sweepTable{
				{name: "shop.clean", a: Assessment{Score: 9}},
				{name: "shop.expiry-off", props: optedIn(optin.PropertyExpireEnabled, "false"), a: Assessment{Score: 8, ExpiryDue: true}},
				{name: "shop.expiry", a: Assessment{Score: 2, ExpiryDue: true}},
				{name: "shop.manifests", a: Assessment{Score: 1, ManifestsDue: true}},
			},
			wantPlan:  []string{"shop.expiry", "shop.manifests"},
			wantSkips: map[string]string{"shop.clean": SkipHealthy, "shop.expiry-off": SkipHealthy},
		},
		{
			// An idle table compacted once has only its expiry due, a low
			// score: in one budget with the busy tables' compactions it
			// lost every sweep and its replaced files stayed on storage.
			name: "metadata-only jobs have their own budget, apart from the data jobs'", maxJobs: 1, maxMetadataJobs: 2, maxBytes: 1 << 40, plannedOut: true,
			tables: []sweepTable{
				{name: "shop.busy1", a: Assessment{Score: 9, CompactionBytes: 1}},
				{name: "shop.busy2", a: Assessment{Score: 8, CompactionBytes: 1}},
				{name: "shop.idle1", a: Assessment{Score: 3, ExpiryDue: true}},
				{name: "shop.idle2", a: Assessment{Score: 2, ManifestsDue: true}},
				{name: "shop.idle3", a: Assessment{Score: 1, ExpiryDue: true}},
			},
			wantPlan:    []string{"shop.busy1", "shop.idle1", "shop.idle2"},
			wantSkips:   map[string]string{"shop.busy2": SkipBudgetJobs, "shop.idle3": SkipBudgetMetadataJobs},
			wantActions: map[string][]string{"shop.idle1": {"rewrite-manifests"}, "shop.idle2": {"rewrite-manifests"}},
		},
		{
			name: "a metadata-only job plans no data, and a table with a layout change to make is a data job", maxJobs: 1, maxMetadataJobs: 10, maxBytes: 1 << 40, plannedOut: true,
			tables: []sweepTable{
				{name: "shop.busy", a: Assessment{Score: 9, CompactionBytes: 1}},
				{name: "shop.layout", props: optedIn(optin.PropertyLayoutAuto, "true"), a: Assessment{Score: 5, ExpiryDue: true, Layout: &plan.LayoutChange{}}},
				{name: "shop.idle", a: Assessment{Score: 1, ExpiryDue: true}},
			},
			expiryOnly:  true,
			wantPlan:    []string{"shop.busy", "shop.idle"},
			wantSkips:   map[string]string{"shop.layout": SkipBudgetJobs},
			wantActions: map[string][]string{"shop.idle": {"rewrite-manifests", "expire"}},
		},
		{
			name: "a table in its cooldown is skipped and spends no budget", maxJobs: 1, maxBytes: 1 << 40, plannedOut: true, cooling: []string{"shop.a"},
			tables: []sweepTable{
				{name: "shop.a", a: Assessment{Score: 2, CompactionBytes: 1}},
				{name: "shop.b", a: Assessment{Score: 1, CompactionBytes: 1}},
			},
			wantPlan:  []string{"shop.b"},
			wantSkips: map[string]string{"shop.a": SkipCooldown},
		},
		{
			name: "tables not opted in are skipped before ranking", maxJobs: 10, maxBytes: 1 << 40, plannedOut: true,
			tables: []sweepTable{
				{name: "shop.out", props: map[string]string{}, a: Assessment{Score: 9, CompactionBytes: 1}},
				{name: "shop.in", a: Assessment{Score: 1, CompactionBytes: 1}},
			},
			wantPlan:  []string{"shop.in"},
			wantSkips: map[string]string{"shop.out": SkipNotOptedIn},
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, config.ModeActive, "shop")
			r.settings.SweepMaxJobs, r.settings.SweepMaxBytes = c.maxJobs, c.maxBytes
			if c.maxMetadataJobs > 0 {
				r.settings.SweepMaxMetadataJobs = c.maxMetadataJobs
			}
			for _, st := range c.tables {
				props := st.props
				if props == nil {
					props = optedIn()
				}
				r.add(t, st.name, props, st.a)
				r.planner.inputBytes[st.name] = st.input
			}
			if c.plannedOut {
				r.planner.results["compaction"] = planned
				r.planner.results["rewrite-manifests"] = planned
				r.planner.results["expire"] = planned
			}
			if c.expiryOnly {
				delete(r.planner.results, "rewrite-manifests")
			}
			for _, name := range c.cooling {
				r.cooldowns.SetNext(t.Context(), name, testNow.Add(time.Hour))
			}
			out, err := r.dispatch(t, events.Trigger{Kind: events.KindSchedule, Sweep: true})
			if err != nil {
				t.Fatalf("Dispatch: %v", err)
			}
			var first []string // the first table each planner call was for
			for _, call := range r.planner.calls {
				if len(first) == 0 || first[len(first)-1] != call.table {
					first = append(first, call.table)
				}
			}
			if !slices.Equal(first, c.wantPlan) {
				t.Errorf("planned %v, want %v", first, c.wantPlan)
			}
			for table, want := range c.wantActions {
				var got []string
				for _, call := range r.planner.calls {
					if call.table == table {
						got = append(got, call.action)
					}
				}
				if !slices.Equal(got, want) {
					t.Errorf("%s: the planner was asked for %v, want %v", table, got, want)
				}
			}
			var order []string
			for _, o := range out.Tables {
				order = append(order, o.Table)
				want, skipped := c.wantSkips[o.Table]
				switch {
				case skipped && (o.Action != ActionSkipped || o.Skip != want):
					t.Errorf("%s: %+v, want skipped %s", o.Table, o, want)
				case !skipped && o.Action == ActionSkipped:
					t.Errorf("%s: skipped %s (%s), want it visited", o.Table, o.Skip, o.Reason)
				}
			}
			if c.wantOrder != nil && !slices.Equal(order, c.wantOrder) {
				t.Errorf("outcomes in order %v, want %v", order, c.wantOrder)
			}
			if len(out.Tables) != len(c.tables) {
				t.Errorf("%d outcomes for %d tables", len(out.Tables), len(c.tables))
			}
		})
	}
}

// TestSweep_VisitsEveryGrantedTableOnce: a sweep visits the tables of the
// granted namespaces and the individually granted tables, each once, and
// never a table outside the grants; a granted table missing from the
// catalog is skipped.
func TestSweep_VisitsEveryGrantedTableOnce(t *testing.T) {
	r := newRig(t, config.ModeActive, "shop,shop.a,other.x,other.gone")
	r.add(t, "shop.a", optedIn(), due)
	r.add(t, "shop.b", optedIn(), due)
	r.add(t, "other.x", optedIn(), due)
	r.add(t, "other.y", optedIn(), due) // not granted
	r.planner.results["compaction"] = planned
	out, err := r.dispatch(t, events.Trigger{Kind: events.KindSchedule, Sweep: true})
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]TableOutcome{}
	for _, o := range out.Tables {
		if _, dup := got[o.Table]; dup {
			t.Errorf("%s visited twice", o.Table)
		}
		got[o.Table] = o
	}
	if len(got) != 4 || got["other.gone"].Skip != SkipNoSuchTable {
		t.Errorf("outcomes %+v, want shop.a, shop.b, other.x planned and other.gone skipped %s", out.Tables, SkipNoSuchTable)
	}
	if _, ok := got["other.y"]; ok {
		t.Error("a table outside the grants was visited")
	}
	if tables := r.planner.tables(); len(tables) != 3 || slices.Contains(tables, "other.y") {
		t.Errorf("planned %v", tables)
	}
}

// TestSweep_AdvisoryAssessesEveryEligibleTableAndPlansNone.
func TestSweep_AdvisoryAssessesEveryEligibleTableAndPlansNone(t *testing.T) {
	r := newRig(t, config.ModeAdvisory, "shop")
	r.add(t, "shop.a", optedIn(), Assessment{Score: 2, CompactionBytes: 1})
	r.add(t, "shop.b", nil, Assessment{Score: 1, CompactionBytes: 1})
	out, err := r.dispatch(t, events.Trigger{Kind: events.KindSchedule, Sweep: true})
	if err != nil {
		t.Fatal(err)
	}
	if len(r.planner.calls) != 0 {
		t.Errorf("advisory sweep planned %v", r.planner.tables())
	}
	if len(out.Tables) != 2 || out.Tables[0].Action != ActionAssessed || out.Tables[1].Skip != SkipNotOptedIn {
		t.Errorf("outcomes %+v, want shop.a assessed and shop.b skipped %s", out.Tables, SkipNotOptedIn)
	}
}

// TestOrphanSweep_OnlyTablesWhoseOwnerAskedForIt: the orphan sweep plans
// a cleanup only where icekeeper.orphans.enabled=true, at most
// SweepMaxJobs, counts a refused cleanup as MaintenanceRefused, and in
// advisory mode only reports what it would remove.
func TestOrphanSweep_OnlyTablesWhoseOwnerAskedForIt(t *testing.T) {
	on := optedIn(optin.PropertyOrphansEnabled, "true")
	cases := []struct {
		name      string
		mode      config.Mode
		maxJobs   int
		result    plan.Result
		tables    map[string]map[string]string
		wantPlan  []string
		wantSkips map[string]string
		wantCount string // a metric counted once
		wantIn    string // a substring of every non-skipped outcome's reason
	}{
		{name: "enabled only", mode: config.ModeActive, maxJobs: 10, result: planned,
			tables:    map[string]map[string]string{"shop.a": on, "shop.b": optedIn(), "shop.c": optedIn(optin.PropertyOrphansEnabled, "false")},
			wantPlan:  []string{"shop.a"},
			wantSkips: map[string]string{"shop.b": SkipOrphansNotEnabled, "shop.c": SkipOrphansNotEnabled}},
		{name: "job budget", mode: config.ModeActive, maxJobs: 1, result: planned,
			tables:    map[string]map[string]string{"shop.a": on, "shop.b": on},
			wantPlan:  []string{"shop.a"},
			wantSkips: map[string]string{"shop.b": SkipBudgetJobs}},
		{name: "a refused cleanup is counted", mode: config.ModeActive, maxJobs: 10,
			result:   plan.Result{Outcome: plan.OutcomeNothingToDo, Reason: plan.ReasonOrphansRefused + "a location outside the table"},
			tables:   map[string]map[string]string{"shop.a": on},
			wantPlan: []string{"shop.a"}, wantCount: "MaintenanceRefused", wantIn: plan.ReasonOrphansRefused},
		{name: "advisory reports and plans nothing", mode: config.ModeAdvisory, maxJobs: 10, result: planned,
			tables: map[string]map[string]string{"shop.a": on}, wantIn: "3 orphan files (300 bytes); advisory: nothing removed"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, c.mode, "shop")
			r.settings.SweepMaxJobs = c.maxJobs
			for name, props := range c.tables {
				r.add(t, name, props, due)
				r.assessor.orphans[name] = 3
			}
			r.planner.results["orphans"] = c.result
			out, err := r.dispatch(t, events.Trigger{Kind: events.KindOrphanSchedule, Sweep: true})
			if err != nil {
				t.Fatal(err)
			}
			if got := r.planner.tables(); !slices.Equal(got, c.wantPlan) {
				t.Errorf("cleanups planned on %v, want %v", got, c.wantPlan)
			}
			for _, a := range r.planner.actions() {
				if a != "orphans" {
					t.Errorf("the orphan sweep asked for %s", a)
				}
			}
			for _, o := range out.Tables {
				want, skipped := c.wantSkips[o.Table]
				switch {
				case skipped && o.Skip != want:
					t.Errorf("%s: %+v, want skipped %s", o.Table, o, want)
				case !skipped && o.Action == ActionSkipped:
					t.Errorf("%s: skipped %s, want it visited", o.Table, o.Skip)
				case !skipped && !strings.Contains(o.Reason, c.wantIn):
					t.Errorf("%s: reason %q, want %q", o.Table, o.Reason, c.wantIn)
				}
			}
			if c.wantCount != "" && r.metrics.count(c.wantCount, "") != 1 {
				t.Errorf("%s counted %d times, want once", c.wantCount, r.metrics.count(c.wantCount, ""))
			}
		})
	}
}

// TestNew_RefusesSettingsTheModeCannotRunWith.
func TestNew_RefusesSettingsTheModeCannotRunWith(t *testing.T) {
	grants, _ := optin.ParseGrants("shop")
	full := func(r *rig) Deps {
		return Deps{Catalog: r.cat, Planner: r.planner, Cooldowns: r.cooldowns, Auditor: r.auditor, Reports: r.reports, Assessor: r.assessor, Metrics: r.metrics}
	}
	cases := []struct {
		name  string
		s     Settings
		deps  func(r *rig) Deps
		valid bool
	}{
		{"mode off needs only metrics", Settings{Mode: config.ModeOff}, func(r *rig) Deps { return Deps{Metrics: r.metrics} }, true},
		{"no metrics", Settings{Mode: config.ModeOff}, func(r *rig) Deps { return Deps{} }, false},
		{"active without grants", Settings{Mode: config.ModeActive}, full, false},
		{"active without a planner", Settings{Mode: config.ModeActive, Grants: grants}, func(r *rig) Deps { d := full(r); d.Planner = nil; return d }, false},
		{"advisory without a planner", Settings{Mode: config.ModeAdvisory}, func(r *rig) Deps { d := full(r); d.Planner = nil; return d }, true},
		{"advisory without cooldowns", Settings{Mode: config.ModeAdvisory}, func(r *rig) Deps { d := full(r); d.Cooldowns = nil; return d }, false},
		{"active, complete", Settings{Mode: config.ModeActive, Grants: grants}, full, true},
		{"an unknown mode", Settings{Mode: "aggressive"}, full, false},
		{"a negative budget", Settings{Mode: config.ModeActive, Grants: grants, SweepMaxJobs: -1}, full, false},
		{"a negative interval", Settings{Mode: config.ModeAdvisory, MinInterval: -time.Second}, full, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := New(c.s, c.deps(newRig(t, config.ModeOff, "")))
			if (err == nil) != c.valid {
				t.Errorf("New: err %v, want valid=%v", err, c.valid)
			}
		})
	}
}

// TestResume_AChainContinuationPlansOnlyTheActionsAfterTheCommittedJob: the
// committer's continuation after a compaction plans the next due action of
// the chain (here the snapshot expiry) while the table's cooldown, spent by
// the visit that planned the compaction, still runs; it never plans a
// compaction (a busy table's compactions stay a cooldown apart), leaves the
// cooldown as it was, and a continuation after an expiry, or after a kind
// the chain does not know, or on an ungranted table, plans nothing.
func TestResume_AChainContinuationPlansOnlyTheActionsAfterTheCommittedJob(t *testing.T) {
	cases := []struct {
		name        string
		table       string
		after       string
		wantActions []string
		wantAction  Action
	}{
		{"after a compaction", "shop.orders", "compaction", []string{"rewrite-deletes", "rewrite-manifests", "expire"}, ActionPlanned},
		{"after a delete-file rewrite", "shop.orders", "rewrite-deletes", []string{"rewrite-manifests", "expire"}, ActionPlanned},
		{"after a manifest rewrite", "shop.orders", "rewrite-manifests", []string{"expire"}, ActionPlanned},
		{"after an expiry: nothing", "shop.orders", "expire", nil, ActionAssessed},
		{"after an unknown kind: nothing", "shop.orders", "vacuum", nil, ActionSkipped},
		{"an ungranted table: nothing", "other.orders", "compaction", nil, ActionSkipped},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, config.ModeActive, "shop")
			r.settings.MinInterval = time.Hour
			r.add(t, c.table, optedIn(), due)
			r.planner.results["compaction"] = planned
			r.planner.results["expire"] = planned
			d := r.dispatcher(t)
			// The visit that planned the compaction spent the cooldown.
			if slot, _ := r.cooldowns.Claim(t.Context(), c.table, testNow, time.Hour); !slot.Claimed {
				t.Fatal("claim")
			}
			next := r.cooldowns.next[c.table]
			out, err := d.Dispatch(t.Context(), events.Trigger{Kind: events.KindContinue, Tables: []string{c.table}, ContinuesJob: "job-1", ResumeAfter: c.after})
			if err != nil {
				t.Fatal(err)
			}
			o := onlyOutcome(t, out)
			if got := r.planner.actions(); !slices.Equal(got, c.wantActions) {
				t.Errorf("planner asked for %v, want %v", got, c.wantActions)
			}
			if o.Action != c.wantAction {
				t.Errorf("action %s, want %s (%+v)", o.Action, c.wantAction, o)
			}
			if got := r.cooldowns.next[c.table]; !got.Equal(next) {
				t.Errorf("the table's cooldown moved from %s to %s", next, got)
			}
			// A commit event in the cooldown is still coalesced.
			out, err = d.Dispatch(t.Context(), events.Trigger{Kind: events.KindCommit, Tables: []string{c.table}})
			if err != nil {
				t.Fatal(err)
			}
			if o := onlyOutcome(t, out); c.table == "shop.orders" && o.Skip != SkipCooldown {
				t.Errorf("a commit event after the continuation: %+v, want coalesced", o)
			}
		})
	}
}

// TestResume_AContinuationWithoutAKindStartsTheChainOverAsAnyEvent: a
// compaction that deferred groups announces a continuation without
// resume_after; it claims the cooldown as any event (the committer
// reopened it) and starts the chain from the compaction.
func TestResume_AContinuationWithoutAKindStartsTheChainOverAsAnyEvent(t *testing.T) {
	r := newRig(t, config.ModeActive, "shop")
	r.settings.MinInterval = time.Hour
	r.add(t, "shop.orders", optedIn(), due)
	r.planner.results["compaction"] = planned
	d := r.dispatcher(t)
	trig := events.Trigger{Kind: events.KindContinue, Tables: []string{"shop.orders"}, ContinuesJob: "job-1"}
	if _, err := d.Dispatch(t.Context(), trig); err != nil {
		t.Fatal(err)
	}
	if got := r.planner.actions(); !slices.Equal(got, []string{"compaction"}) {
		t.Fatalf("planner asked for %v, want the compaction", got)
	}
	out, err := d.Dispatch(t.Context(), trig)
	if err != nil {
		t.Fatal(err)
	}
	if o := onlyOutcome(t, out); o.Skip != SkipCooldown {
		t.Fatalf("a redelivered continuation: %+v, want coalesced", o)
	}
}

// TestPaceOf_CountsTheFilesTheRecommendedCompactionLeaves: the optimum is
// per partition with data files (at least one file each), and the
// compaction's input files become a target-sized file per target of input.
func TestPaceOf_CountsTheFilesTheRecommendedCompactionLeaves(t *testing.T) {
	r := health.Report{
		Thresholds: health.Thresholds{TargetFileSize: 100},
		FileStats:  health.FileStats{DataFiles: 10},
		Partitions: []health.PartitionHealth{
			{Partition: "day=1", FileStats: health.FileStats{DataFiles: 9, DataBytes: 250}},
			{Partition: "day=2", FileStats: health.FileStats{DataFiles: 1, DataBytes: 10}},
			{Partition: "day=3", FileStats: health.FileStats{DeleteFiles: 2}},
		},
		Recommendations: []health.Recommendation{{Action: health.ActionCompaction, EstimatedBytes: 250, EstimatedFiles: 9}},
	}
	if got, want := paceOf(r), (pacing.Table{FilesAfter: 10 - 9 + 3, Optimum: 3 + 1}); got != want {
		t.Fatalf("paceOf = %+v, want %+v", got, want)
	}
	r.Recommendations = nil
	if got := paceOf(r); got.FilesAfter != 10 {
		t.Fatalf("paceOf without a compaction = %+v, want its 10 files", got)
	}
}

// TestDispatch_AnExpiryWakesTheTableWhenItsNextSnapshotComesDue: the
// visit whose chain reached the snapshot expiry schedules the table's
// next visit: after a planned expiry when the expiry's own interval (or
// the deployment's) ends, or when the next snapshot comes due if later,
// even with none to come on this metadata (a writer's commit meanwhile is
// coalesced by the cooldown the job keeps); with nothing due, at the
// moment the next snapshot comes due. Nothing ever due, a chain that
// stopped before the expiry, or a failed schedule: no wake-up, and the
// visit's outcome is the same.
func TestDispatch_AnExpiryWakesTheTableWhenItsNextSnapshotComesDue(t *testing.T) {
	at := func(d time.Duration) *time.Time { t := testNow.Add(d); return &t }
	expiry := func(o plan.Outcome, next *time.Time) map[string]plan.Result {
		return map[string]plan.Result{"expire": {Outcome: o, JobID: "job-1", NextExpiryDue: next}}
	}
	cases := []struct {
		name    string
		props   map[string]string
		results map[string]plan.Result
		fail    bool
		want    *time.Time // nil: no wake-up
		action  Action
	}{
		{"planned, the next due within the expiry's interval", optedIn(optin.PropertyExpireMinInterval, "2h"), expiry(plan.OutcomePlanned, at(10*time.Minute)), false, at(2 * time.Hour), ActionPlanned},
		{"planned, the next due within the deployment's interval", optedIn(), expiry(plan.OutcomePlanned, at(10*time.Minute)), false, at(time.Hour), ActionPlanned},
		{"planned, the next due after the interval", optedIn(optin.PropertyExpireMinInterval, "2h"), expiry(plan.OutcomePlanned, at(5*time.Hour)), false, at(5 * time.Hour), ActionPlanned},
		{"nothing due: at the moment", optedIn(optin.PropertyExpireMinInterval, "2h"), expiry(plan.OutcomeNothingToDo, at(20*time.Minute)), false, at(20 * time.Minute), ActionAssessed},
		{"planned, nothing more ever due: when the interval ends", optedIn(optin.PropertyExpireMinInterval, "2h"), expiry(plan.OutcomePlanned, nil), false, at(2 * time.Hour), ActionPlanned},
		{"nothing ever comes due", optedIn(), expiry(plan.OutcomeNothingToDo, nil), false, nil, ActionAssessed},
		{"the chain stopped at compaction", optedIn(), map[string]plan.Result{"compaction": planned, "expire": {Outcome: plan.OutcomePlanned, NextExpiryDue: at(time.Minute)}}, false, nil, ActionPlanned},
		{"the schedule failed", optedIn(), expiry(plan.OutcomePlanned, at(10*time.Minute)), true, nil, ActionPlanned},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, config.ModeActive, "shop")
			r.settings.MinInterval = time.Hour
			r.wakeups = &fakeWakeUps{}
			if c.fail {
				r.wakeups.err = errTransient
			}
			r.add(t, "shop.orders", c.props, due)
			r.planner.results = c.results
			out, err := r.dispatch(t, events.Trigger{Kind: events.KindCommit, Tables: []string{"shop.orders"}})
			if err != nil {
				t.Fatal(err)
			}
			if o := onlyOutcome(t, out); o.Action != c.action {
				t.Fatalf("outcome %+v, want %s", o, c.action)
			}
			switch {
			case c.want == nil && len(r.wakeups.woken) != 0:
				t.Fatalf("woken %+v, want no wake-up", r.wakeups.woken)
			case c.want != nil && (len(r.wakeups.woken) != 1 || r.wakeups.woken[0].table != "shop.orders" || !r.wakeups.woken[0].at.Equal(*c.want)):
				t.Fatalf("woken %+v, want shop.orders at %s", r.wakeups.woken, c.want.Sub(testNow))
			}
		})
	}
}

// TestDispatch_AnEventInTheCooldownSchedulesAVisitWhenTheSlotEnds: a
// commit event that finds the table's slot held (a job planned a moment
// ago) is coalesced and schedules one visit of the table for the moment
// the slot ends, so that what was written meanwhile is looked at then and
// not at the next event or sweep; more events within the same slot ask
// nothing more of this instance; once that visit's slot ends, an event
// within the next one asks again. A failed schedule is asked again by the
// next event. Advisory mode, and a deployment without wake-ups, schedule
// no visit.
func TestDispatch_AnEventInTheCooldownSchedulesAVisitWhenTheSlotEnds(t *testing.T) {
	r, d, clock := wakingRig(t, planned)
	dispatch := func(want Action) {
		t.Helper()
		if o := commitOutcome(t, d); o.Action != want {
			t.Fatalf("outcome %+v, want %s", o, want)
		}
	}
	dispatch(ActionPlanned)
	slotEnds := r.cooldowns.next["shop.orders"]
	if len(r.wakeups.visits) != 0 {
		t.Fatalf("the visit that claimed the slot scheduled %+v", r.wakeups.visits)
	}
	*clock = clock.Add(5 * time.Minute)
	dispatch(ActionSkipped)
	if len(r.wakeups.visits) != 1 || r.wakeups.visits[0].table != "shop.orders" || !r.wakeups.visits[0].at.Equal(slotEnds) {
		t.Fatalf("visits %+v, want shop.orders at the slot's end %s", r.wakeups.visits, slotEnds)
	}
	*clock = clock.Add(5 * time.Minute)
	dispatch(ActionSkipped)
	if len(r.wakeups.visits) != 1 {
		t.Fatalf("a second event in the same slot: visits %+v, want still one", r.wakeups.visits)
	}
	// The scheduled visit comes: it claims the next slot and plans.
	*clock = slotEnds
	dispatch(ActionPlanned)
	next := r.cooldowns.next["shop.orders"]
	r.wakeups.err = errTransient
	*clock = clock.Add(time.Minute)
	dispatch(ActionSkipped)
	r.wakeups.err = nil
	*clock = clock.Add(time.Minute)
	dispatch(ActionSkipped)
	if len(r.wakeups.visits) != 2 || !r.wakeups.visits[1].at.Equal(next) {
		t.Fatalf("visits %+v, want a second at the next slot's end %s (asked again after the failure)", r.wakeups.visits, next)
	}

	for _, c := range []struct {
		name    string
		mode    config.Mode
		wakeups bool
	}{{"advisory", config.ModeAdvisory, true}, {"no wake-ups", config.ModeActive, false}} {
		t.Run(c.name, func(t *testing.T) {
			r := newRig(t, c.mode, "shop")
			r.settings.MinInterval = time.Hour
			w := &fakeWakeUps{}
			if c.wakeups {
				r.wakeups = w
			}
			r.add(t, "shop.orders", optedIn(), due)
			r.planner.results["compaction"] = planned
			if _, err := r.cooldowns.Claim(t.Context(), "shop.orders", testNow, time.Hour); err != nil {
				t.Fatal(err)
			}
			out, err := r.dispatch(t, events.Trigger{Kind: events.KindCommit, Tables: []string{"shop.orders"}})
			if err != nil {
				t.Fatal(err)
			}
			if o := onlyOutcome(t, out); o.Action != ActionSkipped || len(w.visits) != 0 {
				t.Fatalf("outcome %+v, visits %+v: want skipped and none", o, w.visits)
			}
		})
	}
}

// TestDispatch_AVisitThatFindsTheLeaseHeldIsRetriedShortly: a visit that
// claims the table's slot and finds another job holding its lease (the
// chain's expiry, planned by the expiry's wake-up at the same moment)
// keeps the slot only for pacing.Retry of the interval, not the whole
// interval, and schedules a visit for its end; an event meanwhile is
// coalesced, and the retry plans the compaction.
func TestDispatch_AVisitThatFindsTheLeaseHeldIsRetriedShortly(t *testing.T) {
	r, d, clock := wakingRig(t, plan.Result{Outcome: plan.OutcomeLeaseHeld, Reason: "lease held by an expiry"})
	if o := commitOutcome(t, d); o.Plan == nil || o.Plan.Outcome != plan.OutcomeLeaseHeld {
		t.Fatalf("outcome %+v, want the lease held", o)
	}
	retryAt := testNow.Add(pacing.Retry(time.Hour))
	if next := r.cooldowns.next["shop.orders"]; !next.Equal(retryAt) {
		t.Fatalf("slot held until %v, want %v (the retry, not the hour)", next, retryAt)
	}
	if len(r.wakeups.visits) != 1 || !r.wakeups.visits[0].at.Equal(retryAt) {
		t.Fatalf("visits %+v, want one at the retry %v", r.wakeups.visits, retryAt)
	}
	*clock = testNow.Add(time.Minute)
	if o := commitOutcome(t, d); o.Skip != SkipCooldown {
		t.Fatalf("an event before the retry: %+v, want coalesced", o)
	}
	r.planner.results["compaction"] = planned
	*clock = retryAt
	if o := commitOutcome(t, d); o.Action != ActionPlanned {
		t.Fatalf("the retry: %+v, want the compaction planned", o)
	}
	if next := r.cooldowns.next["shop.orders"]; !next.Equal(retryAt.Add(time.Hour)) {
		t.Fatalf("slot after the retry planned held until %v, want the interval %v", next, retryAt.Add(time.Hour))
	}
}

// wakingRig is a rig of one opted-in table, shop.orders, in mode active
// with wake-ups and an hour's interval, whose compaction plans first; the
// test moves the clock it returns.
func wakingRig(t *testing.T, first plan.Result) (*rig, *Dispatcher, *time.Time) {
	t.Helper()
	clock := new(time.Time)
	*clock = testNow
	r := newRig(t, config.ModeActive, "shop")
	r.settings.MinInterval = time.Hour
	r.wakeups = &fakeWakeUps{}
	r.now = func() time.Time { return *clock }
	r.add(t, "shop.orders", optedIn(), due)
	r.planner.results["compaction"] = first
	return r, r.dispatcher(t), clock
}

// commitOutcome dispatches a commit event of shop.orders and returns its
// outcome.
func commitOutcome(t *testing.T, d *Dispatcher) TableOutcome {
	t.Helper()
	out, err := d.Dispatch(t.Context(), events.Trigger{Kind: events.KindCommit, Tables: []string{"shop.orders"}})
	if err != nil {
		t.Fatal(err)
	}
	return onlyOutcome(t, out)
}
