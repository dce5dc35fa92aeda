package soak

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/icekeeper/icekeeper/shared/harness/bench"
	"github.com/icekeeper/icekeeper/shared/harness/catalogcalls"
)

// TestSoak_AFleetKeepsEveryRowCommitAndByte is the short soak `make test`
// runs: 12 tables (three namespaces, v2 and v3, partitioned and not,
// every workload, queried and not) over three simulated hours at 150x
// (longer than the snapshot retention of 2 hours, so expiries delete),
// icekeeper driven only by its triggers. It asserts the outcomes, never
// the timings: no writer's commit lost, every table's rows equal to its
// writer's model, no leaked byte, no stuck job, no alarm of the stack's
// defaults firing; and that the run did maintain (jobs committed, the
// writers wrote).
func TestSoak_AFleetKeepsEveryRowCommitAndByte(t *testing.T) {
	if testing.Short() {
		t.Skip("the short soak takes a couple of minutes")
	}
	res, err := Run(context.Background(), Options{
		Dir: t.TempDir(), Seed: 7, Tables: 12, Namespaces: 3, Scale: 150, Duration: 3 * time.Hour,
		SampleEvery: 20 * time.Minute, Settle: 90 * time.Second, Progress: testWriter{t},
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Log("\n" + res.Markdown())
	for _, f := range res.Failures {
		t.Error(f)
	}
	kinds := map[Workload]bool{}
	for _, tbl := range res.Tables {
		kinds[tbl.Workload] = true
	}
	if len(kinds) != len(workloads) {
		t.Errorf("workloads %v: the fleet lacks some", kinds)
	}
	if res.WriterCommits == 0 || res.JobsCommitted == 0 {
		t.Fatalf("writers committed %d times and icekeeper %d jobs: the soak did not run", res.WriterCommits, res.JobsCommitted)
	}
	if res.WakeUpsFired == 0 || res.Bill["EventBridge Scheduler"] == 0 {
		t.Errorf("%d expiry wake-ups fired (billed $%.6f): the planner's schedules did not reach it", res.WakeUpsFired, res.Bill["EventBridge Scheduler"])
	}
	// Every committed job committed through the counted catalog (a job of
	// partial progress commits more than once), and the commits and loads
	// are billed as Glue requests.
	if c := res.Catalog; c.Call(catalogcalls.CommitTable) < int64(res.JobsCommitted) || c.Call(catalogcalls.LoadTable) == 0 || c.Call(catalogcalls.ListTables) == 0 ||
		res.Bill["Glue Data Catalog requests"] != float64(c.GlueRequests)*bench.GlueRequest || c.GlueRequests <= c.Call(catalogcalls.CommitTable)*2 {
		t.Errorf("the functions' catalog calls %v (%d Glue requests, billed $%.6f) for %d jobs committed: not every call counted",
			c.Calls, c.GlueRequests, res.Bill["Glue Data Catalog requests"], res.JobsCommitted)
	}
	var rewritten int64
	for _, w := range res.Workloads {
		if w.Tables == 0 || w.WrittenBytes == 0 || w.Samples == 0 {
			t.Errorf("workload %s: %d tables, %d bytes written, %d samples: not measured", w.Workload, w.Tables, w.WrittenBytes, w.Samples)
		}
		rewritten += w.RewrittenBytes
	}
	if rewritten == 0 {
		t.Error("no rewritten bytes counted, though jobs committed")
	}
}

// An owner's tuning under measurement reaches every maintained table and
// wins over the fleet's own properties.
func TestTableProperties_TheMeasuredTuningIsSetOnEveryTable(t *testing.T) {
	o := Options{Scale: 48, TableProperties: map[string]string{"icekeeper.compaction.min-input-files": "2", "icekeeper.compaction.min-interval": "10s"}}
	props := o.tableProperties()
	if props["icekeeper.compaction.min-input-files"] != "2" || props["icekeeper.compaction.min-interval"] != "10s" {
		t.Fatalf("properties %v", props)
	}
	if props["icekeeper.maintenance.enabled"] != "true" {
		t.Fatalf("the fleet's own properties are lost: %v", props)
	}
	// Untuned, the fleet's owners set no compaction cooldown of their
	// own: the deployment's applies, with its pacing of busy tables.
	if v, ok := (Options{Scale: 48}).tableProperties()["icekeeper.compaction.min-interval"]; ok {
		t.Fatalf("the fleet sets icekeeper.compaction.min-interval=%s, which turns pacing off", v)
	}
}

type testWriter struct{ t *testing.T }

func (w testWriter) Write(p []byte) (int, error) {
	w.t.Log(strings.TrimRight(string(p), "\n"))
	return len(p), nil
}
