package tests

import (
	"log/slog"
	"testing"

	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/harness/sampletable"
	plannerstage "github.com/icekeeper/icekeeper/shared/stage/planner"
)

// TestMetrics_PipelineEmitsTheDocumentedMetrics: every stage's EMF lines
// parse, and a committed job's counts add up to what the job did.
func TestMetrics_PipelineEmitsTheDocumentedMetrics(t *testing.T) {
	e := setup(t)
	e.createTable(smallTable)
	before := e.stats()
	want := e.fingerprint()
	r := e.plan()
	e.drainTasks()
	e.drainCommits()
	e.requireCommitted(r.JobID, want)

	m := e.metrics.metricTotals(t)
	table := "/" + e.name()
	checks := map[string]float64{
		"JobsCommitted" + table:      1,
		"GroupsRewritten" + table:    float64(r.Groups),
		"FilesIn" + table:            float64(before.DataFiles),
		"FilesOut" + table:           float64(r.Groups),
		"DataFilesRemoved" + table:   float64(before.DataFiles),
		"DataFilesAdded" + table:     float64(r.Groups),
		"DeleteFilesRemoved" + table: float64(before.DeleteFiles()),
		"RowsRewritten" + table:      float64(want.Rows),
		"BytesIn" + table:            float64(before.DataBytes),
	}
	for name, v := range checks {
		if m[name] != v {
			t.Errorf("%s = %v, want %v", name, m[name], v)
		}
	}
	if m["BytesOut"+table] <= 0 || m["RewriteDuration"+table] <= 0 || m["CommitDuration"+table] < 0 {
		t.Errorf("missing sizes or durations: %v", m)
	}
	if m["JobsFailed"] != 0 || m["JobsAborted"] != 0 || m["GroupsFailed"] != 0 {
		t.Errorf("failure metrics on a clean run: %v", m)
	}
}

// plannerBytesPerTableSweep is what infra/cost.go prices the planner's
// logging at, per table per sweep (DefaultAssumptions.
// PlannerBytesPerTableSweep, the README's cost table).
const plannerBytesPerTableSweep = 4 << 10

// countingWriter counts the bytes written to it.
type countingWriter struct{ n int }

func (w *countingWriter) Write(p []byte) (int, error) { w.n += len(p); return len(p), nil }

// TestMetrics_ThePlannersLogPerTableIsWithinTheCostModel: a sweep in
// active mode over opted-in tables (assessed, planned or skipped for the
// budget) logs, EMF lines and JSON log lines together, no more per table
// than the cost model assumes.
func TestMetrics_ThePlannersLogPerTableIsWithinTheCostModel(t *testing.T) {
	d := setupDispatch(t, config.ModeActive, "lake", func(c *config.Config) { c.SweepMaxJobs = 2 })
	logs := &countingWriter{}
	d.deps.Log = slog.New(slog.NewJSONHandler(logs, nil)).With("function", "planner")
	disp, err := d.deps.Dispatcher(d.cat)
	if err != nil {
		t.Fatal(err)
	}
	d.planner = plannerstage.Handler{Dispatch: disp, Metrics: d.deps.Metrics, Log: d.deps.Log}
	tables := []string{"lake.a", "lake.b", "lake.c"}
	for _, name := range tables {
		d.createNamed(name, withProps(sampletable.Options{FormatVersion: 2, Partitions: 2, Files: 12, RowsPerFile: 50, PositionDeletes: true, EqualityDeletes: true}, optedIn))
	}
	before := d.metrics.len()
	resp := d.handle(mustRead(t, "../events/scheduled.json"))
	if len(resp.Tables) != len(tables) {
		t.Fatalf("sweep visited %+v, want %v", resp.Tables, tables)
	}
	emf := d.metrics.len() - before
	perTable := (emf + logs.n) / len(tables)
	t.Logf("a sweep logged %d bytes of EMF and %d of JSON logs for %d tables: %d per table", emf, logs.n, len(tables), perTable)
	if emf == 0 || logs.n == 0 {
		t.Fatalf("nothing measured: %d EMF bytes, %d log bytes", emf, logs.n)
	}
	if perTable > plannerBytesPerTableSweep {
		t.Errorf("the planner logs %d bytes per table per sweep, more than the %d the cost model (infra/cost.go) assumes: raise the assumption and the README's table", perTable, plannerBytesPerTableSweep)
	}
}
