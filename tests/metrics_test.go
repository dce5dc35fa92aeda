package tests

import "testing"

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
