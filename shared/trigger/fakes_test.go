package trigger

import (
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"log/slog"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/events"
	"github.com/icekeeper/icekeeper/shared/blob"
	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/harness/writehistory"
	"github.com/icekeeper/icekeeper/shared/lease"
	"github.com/icekeeper/icekeeper/shared/ledger"
	"github.com/icekeeper/icekeeper/shared/messages"
	"github.com/icekeeper/icekeeper/shared/metrics"
	"github.com/icekeeper/icekeeper/shared/optin"
	"github.com/icekeeper/icekeeper/shared/plan"
	"github.com/icekeeper/icekeeper/shared/signals"
	"github.com/icekeeper/icekeeper/shared/summary"
)

// The fakes below stand for the dispatcher's collaborators; each records
// what it was asked, in order, so that a test asserts the decisions the
// dispatcher made, not how it made them.

var testNow = time.Date(2026, 12, 2, 12, 0, 0, 0, time.UTC)

// optedIn are the properties of a table whose owner opted in.
func optedIn(extra ...string) map[string]string {
	p := map[string]string{optin.PropertyEnabled: "true"}
	for i := 0; i+1 < len(extra); i += 2 {
		p[extra[i]] = extra[i+1]
	}
	return p
}

// memTable makes an in-memory table (metadata only: the dispatcher reads
// properties and the location, never data) at
// s3://wh/<ns>.db/<table>.
func memTable(t *testing.T, name string, props map[string]string) *table.Table {
	t.Helper()
	ident, err := messages.TableIdent(name)
	if err != nil {
		t.Fatal(err)
	}
	schema := iceberg.NewSchema(0, iceberg.NestedField{ID: 1, Name: "id", Type: iceberg.PrimitiveTypes.Int64, Required: true})
	loc := "s3://wh/" + strings.Join(ident[:len(ident)-1], ".") + ".db/" + ident[len(ident)-1]
	meta, err := table.NewMetadata(schema, iceberg.UnpartitionedSpec, table.UnsortedSortOrder, loc, iceberg.Properties(props))
	if err != nil {
		t.Fatal(err)
	}
	return table.New(ident, meta, loc+"/metadata/v1.metadata.json", nil, nil)
}

// withWrites gives tbl a main branch of one append a file every
// minutesApart minutes, the last one at testNow: a busy writer's history.
func withWrites(t *testing.T, tbl *table.Table, appends, minutesApart int) *table.Table {
	t.Helper()
	var commits []writehistory.Commit
	for i := range appends {
		at := testNow.Add(-time.Duration((appends-1-i)*minutesApart) * time.Minute)
		commits = append(commits, writehistory.Commit{At: at, Operation: table.OpAppend, AddedDataFiles: 1})
	}
	meta, err := writehistory.Append(tbl.Metadata(), commits)
	if err != nil {
		t.Fatal(err)
	}
	return table.New(tbl.Identifier(), meta, tbl.MetadataLocation(), nil, nil)
}

// fakeCatalog, like every fake a sweep's visits share (they run
// Settings.SweepConcurrency at a time), is safe for concurrent use.
type fakeCatalog struct {
	mu     sync.Mutex
	tables map[string]*table.Table
	errs   map[string]error // LoadTable errors by table name
	loads  []string
}

func (c *fakeCatalog) LoadTable(_ context.Context, ident table.Identifier) (*table.Table, error) {
	name := messages.TableName(ident)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.loads = append(c.loads, name)
	if err := c.errs[name]; err != nil {
		return nil, err
	}
	if tbl, ok := c.tables[name]; ok {
		return tbl, nil
	}
	return nil, fmt.Errorf("%w: %s", catalog.ErrNoSuchTable, name)
}

func (c *fakeCatalog) ListTables(_ context.Context, ns table.Identifier) iter.Seq2[table.Identifier, error] {
	prefix := strings.Join(ns, ".") + "."
	return func(yield func(table.Identifier, error) bool) {
		for name := range c.tables {
			if rest, ok := strings.CutPrefix(name, prefix); ok && !strings.Contains(rest, ".") {
				ident, _ := messages.TableIdent(name)
				if !yield(ident, nil) {
					return
				}
			}
		}
		for name := range c.errs {
			if rest, ok := strings.CutPrefix(name, prefix); ok && !strings.Contains(rest, ".") {
				if _, dup := c.tables[name]; dup {
					continue
				}
				ident, _ := messages.TableIdent(name)
				if !yield(ident, nil) {
					return
				}
			}
		}
	}
}

// plannerCall is one call to the planner: the chain action and table.
type plannerCall struct{ action, table string }

// fakePlanner answers every call with results[action] (default: nothing
// to do) and errs[action].
type fakePlanner struct {
	results map[string]plan.Result
	errs    map[string]error
	calls   []plannerCall
	layout  *plan.LayoutChange
	// inputBytes are the planned jobs' input bytes by table.
	inputBytes map[string]int64
}

func (p *fakePlanner) answer(action, table string) (plan.Result, error) {
	p.calls = append(p.calls, plannerCall{action, table})
	if err := p.errs[action]; err != nil {
		return plan.Result{}, err
	}
	r, ok := p.results[action]
	if !ok {
		return plan.Result{Table: table, Outcome: plan.OutcomeNothingToDo, Reason: action + ": nothing to do"}, nil
	}
	r.Table = table
	if r.Outcome == plan.OutcomePlanned {
		r.InputBytes = p.inputBytes[table]
	}
	return r, nil
}

func (p *fakePlanner) PlanTable(_ context.Context, table, _ string) (plan.Result, error) {
	return p.answer("compaction", table)
}
func (p *fakePlanner) PlanExpiry(_ context.Context, table, _ string) (plan.Result, error) {
	return p.answer("expire", table)
}
func (p *fakePlanner) PlanManifestRewrite(_ context.Context, table, _ string) (plan.Result, error) {
	return p.answer("rewrite-manifests", table)
}
func (p *fakePlanner) PlanDeleteRewrite(_ context.Context, table, _ string) (plan.Result, error) {
	return p.answer("rewrite-deletes", table)
}
func (p *fakePlanner) PlanOrphanCleanup(_ context.Context, table, _ string, _ time.Duration) (plan.Result, error) {
	return p.answer("orphans", table)
}
func (p *fakePlanner) PlanLayoutChange(_ context.Context, table, _ string, change plan.LayoutChange) (plan.Result, error) {
	p.layout = &change
	return p.answer("change-layout", table)
}

// actions lists the chain actions the planner was asked for, in order.
func (p *fakePlanner) actions() []string {
	var out []string
	for _, c := range p.calls {
		out = append(out, c.action)
	}
	return out
}

// tables lists the tables the planner was asked about, in order.
func (p *fakePlanner) tables() []string {
	var out []string
	for _, c := range p.calls {
		out = append(out, c.table)
	}
	return out
}

// fakeCooldowns is a conditional write: a claim succeeds when the slot's
// next time is not after now, and moves it to now+interval.
type fakeCooldowns struct {
	next   map[string]time.Time
	err    error
	claims []string
}

func (c *fakeCooldowns) Claim(_ context.Context, key string, now time.Time, interval time.Duration) (lease.Slot, error) {
	c.claims = append(c.claims, key)
	if c.err != nil {
		return lease.Slot{}, c.err
	}
	if c.next == nil {
		c.next = map[string]time.Time{}
	}
	if n, ok := c.next[key]; ok && now.Before(n) {
		return lease.Slot{Ends: n}, nil
	}
	c.next[key] = now.Add(interval)
	return lease.Slot{Claimed: true}, nil
}

func (c *fakeCooldowns) SetNext(_ context.Context, key string, next time.Time) error {
	if c.next == nil {
		c.next = map[string]time.Time{}
	}
	c.next[key] = next
	return nil
}

type auditEvent struct {
	detailType string
	detail     any
}

type fakeAuditor struct {
	mu     sync.Mutex
	events []auditEvent
}

func (a *fakeAuditor) Publish(_ context.Context, detailType string, detail any) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	a.events = append(a.events, auditEvent{detailType, detail})
	return nil
}

// fakeReports keeps what was put by key; getErr fails every read.
type fakeReports struct {
	mu      sync.Mutex
	puts    []string
	objects map[string][]byte
	gets    []string
	getErr  error
}

func (r *fakeReports) Key(name string) string { return "s3://reports/" + name }

func (r *fakeReports) Put(_ context.Context, name string, data []byte) (string, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.puts = append(r.puts, name)
	if r.objects == nil {
		r.objects = map[string][]byte{}
	}
	r.objects[r.Key(name)] = append([]byte(nil), data...)
	return r.Key(name), nil
}

func (r *fakeReports) Get(_ context.Context, key string) ([]byte, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.gets = append(r.gets, key)
	if r.getErr != nil {
		return nil, r.getErr
	}
	b, ok := r.objects[key]
	if !ok {
		return nil, fmt.Errorf("%w: %s", blob.ErrNotFound, key)
	}
	return b, nil
}

type fakeAssessor struct {
	byTable map[string]Assessment
	errs    map[string]error
	orphans map[string]int
}

func (a *fakeAssessor) Assess(_ context.Context, name string, _ *table.Table) (Assessment, error) {
	if err := a.errs[name]; err != nil {
		return Assessment{}, err
	}
	return a.byTable[name], nil
}

func (a *fakeAssessor) Orphans(_ context.Context, tbl *table.Table) (int, int64, string, error) {
	n := a.orphans[messages.TableName(tbl.Identifier())]
	return n, int64(n) * 100, "", nil
}

type fakeMetrics struct {
	mu    sync.Mutex
	lines []map[string]string // dimensions plus "Name"
}

func (m *fakeMetrics) Emit(dims map[string]string, ms ...metrics.Metric) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, x := range ms {
		l := map[string]string{"Name": x.Name}
		for k, v := range dims {
			l[k] = v
		}
		m.lines = append(m.lines, l)
	}
	return nil
}

// count counts the lines named name (with Reason reason when not empty).
func (m *fakeMetrics) count(name, reason string) int {
	n := 0
	for _, l := range m.lines {
		if l["Name"] == name && (reason == "" || l["Reason"] == reason) {
			n++
		}
	}
	return n
}

type fakeSignals struct{ recorded []signals.Observation }

func (s *fakeSignals) Record(_ context.Context, o signals.Observation) error {
	s.recorded = append(s.recorded, o)
	return nil
}

type fakeQueries struct {
	obs []signals.Observation
	err error
}

func (q *fakeQueries) Observations(context.Context, string) ([]signals.Observation, error) {
	return q.obs, q.err
}

type fakeLedger struct{ a ledger.Assessment }

func (l *fakeLedger) Assess(context.Context, string, time.Time) (ledger.Assessment, error) {
	return l.a, nil
}

// fakeSummarizer records the tables each weekly summary was asked for.
type fakeSummarizer struct {
	calls [][]string
	err   error
}

func (f *fakeSummarizer) Publish(_ context.Context, tables []string, at time.Time) (summary.Published, error) {
	f.calls = append(f.calls, tables)
	_, _, week := summary.Week(at)
	jsonKey, _ := summary.Keys(week)
	return summary.Published{Summary: summary.Summary{ID: "test/" + week, Week: week}, Event: summary.Event{JSONKey: jsonKey}}, f.err
}

// rig is a dispatcher wired to fakes.
type rig struct {
	cat       *fakeCatalog
	planner   *fakePlanner
	cooldowns *fakeCooldowns
	auditor   *fakeAuditor
	reports   *fakeReports
	assessor  *fakeAssessor
	metrics   *fakeMetrics
	signals   *fakeSignals
	queries   *fakeQueries
	ledger    *fakeLedger
	summary   *fakeSummarizer
	wakeups   *fakeWakeUps
	settings  Settings
	// now is the dispatcher's clock (nil: testNow).
	now func() time.Time
}

// fakeWakeUps records each wake-up asked for (expiry wake-ups in woken,
// visits in visits); err fails them all.
type fakeWakeUps struct {
	woken  []wakeUp
	visits []wakeUp
	err    error
}

type wakeUp struct {
	table string
	at    time.Time
}

func (w *fakeWakeUps) Wake(_ context.Context, table string, at time.Time) (time.Time, error) {
	if w.err != nil {
		return at, w.err
	}
	w.woken = append(w.woken, wakeUp{table, at})
	return at, nil
}

func (w *fakeWakeUps) WakeVisit(_ context.Context, table string, at time.Time) (time.Time, error) {
	if w.err != nil {
		return at, w.err
	}
	w.visits = append(w.visits, wakeUp{table, at})
	return at, nil
}

func newRig(t *testing.T, mode config.Mode, grants string) *rig {
	t.Helper()
	g, err := optin.ParseGrants(grants)
	if err != nil {
		t.Fatal(err)
	}
	return &rig{
		cat:       &fakeCatalog{tables: map[string]*table.Table{}, errs: map[string]error{}},
		planner:   &fakePlanner{results: map[string]plan.Result{}, errs: map[string]error{}, inputBytes: map[string]int64{}},
		cooldowns: &fakeCooldowns{},
		auditor:   &fakeAuditor{},
		reports:   &fakeReports{},
		assessor:  &fakeAssessor{byTable: map[string]Assessment{}, errs: map[string]error{}, orphans: map[string]int{}},
		metrics:   &fakeMetrics{},
		summary:   &fakeSummarizer{},
		settings: Settings{Mode: mode, Grants: g, MinInterval: time.Minute, SweepMaxJobs: 10, SweepMaxBytes: 1 << 40, SweepMaxMetadataJobs: 100,
			SweepConcurrency: 4},
	}
}

// add puts a table with props in the catalog, with assessment a.
func (r *rig) add(t *testing.T, name string, props map[string]string, a Assessment) {
	t.Helper()
	r.cat.tables[name] = memTable(t, name, props)
	r.assessor.byTable[name] = a
}

func (r *rig) dispatcher(t *testing.T) *Dispatcher {
	t.Helper()
	deps := Deps{Catalog: r.cat, Planner: r.planner, Cooldowns: r.cooldowns, Auditor: r.auditor, Reports: r.reports,
		Assessor: r.assessor, Metrics: r.metrics, Log: slog.New(slog.NewTextHandler(io.Discard, nil)), Now: func() time.Time { return testNow }}
	if r.now != nil {
		deps.Now = r.now
	}
	if r.signals != nil {
		deps.Signals = r.signals
	}
	if r.queries != nil {
		deps.Queries = r.queries
	}
	if r.ledger != nil {
		deps.Ledger = r.ledger
	}
	if r.summary != nil {
		deps.Summarizer = r.summary
	}
	if r.wakeups != nil {
		deps.WakeUps = r.wakeups
	}
	d, err := New(r.settings, deps)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func (r *rig) dispatch(t *testing.T, trig events.Trigger) (Outcome, error) {
	t.Helper()
	return r.dispatcher(t).Dispatch(context.Background(), trig)
}

// errTransient stands for a catalog or AWS failure a retry may fix.
var errTransient = errors.New("ThrottlingException: rate exceeded")
