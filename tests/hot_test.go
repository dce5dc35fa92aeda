package tests

import (
	"strings"
	"testing"
	"time"

	"github.com/apache/iceberg-go"

	"github.com/icekeeper/icekeeper/shared/harness/sampletable"
	"github.com/icekeeper/icekeeper/shared/health"
	"github.com/icekeeper/icekeeper/shared/optin"
	"github.com/icekeeper/icekeeper/shared/plan"
)

// filesPerRegion counts the live data files of each region.
func (e *env) filesPerRegion() map[string]int {
	e.t.Helper()
	out := map[string]int{}
	for _, t := range e.liveTasks() {
		out[t.File.Partition()[1000].(string)]++
	}
	return out
}

// TestPlanner_HotPartitionsAreLeftUntilWritesPause: with a hot-partition
// idle time, a partition a writer committed to within it is left alone
// while its candidate files are fewer than the threshold, and the others
// are compacted; the plan and the health report say which partition is
// hot and why. At the threshold it is compacted anyway, and once writes
// pause for the idle time it is compacted like any other.
func TestPlanner_HotPartitionsAreLeftUntilWritesPause(t *testing.T) {
	const idle = 3 * time.Second
	e := setup(t)
	e.createTable(sampletable.Options{FormatVersion: 2, Partitions: 2, Files: 6, RowsPerFile: 50, PositionDeletes: true})
	e.setProperties(iceberg.Properties{optin.PropertyHotPartitionIdleTime: idle.String(), optin.PropertyHotPartitionMinFiles: "20"})
	time.Sleep(idle + 200*time.Millisecond) // the table's creation is no longer a recent write
	for i := 0; i < 3; i++ {
		if _, err := sampletable.AppendRows(e.ctx, e.load(), int64(10_000+10*i), 1, 10); err != nil { // region-00 only
			t.Fatal(err)
		}
	}
	before := e.filesPerRegion()
	want := e.fingerprint()

	r := e.plan()
	if r.Outcome != plan.OutcomePlanned {
		t.Fatalf("plan: %s (%s)", r.Outcome, r.Reason)
	}
	if len(r.HotPartitions) != 1 || r.HotPartitions[0].Partition != "region=region-00" || !r.HotPartitions[0].Skipped || !strings.Contains(r.HotPartitions[0].Why, "left until writes pause") {
		t.Fatalf("hot partitions %+v, want region-00 skipped", r.HotPartitions)
	}
	rep, err := health.Assess(e.ctx, e.load(), time.Now(), mustThresholds(t, e))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.HotPartitions) != 1 || !rep.HotPartitions[0].Skipped {
		t.Fatalf("health report hot partitions %+v, want region-00 skipped", rep.HotPartitions)
	}
	if rec, ok := rep.Recommends(health.ActionCompaction); !ok || strings.Contains(rec.Why, "region-00") {
		t.Fatalf("compaction recommendation %+v (found %t): want region-01 only", rec, ok)
	}
	e.drainTasks()
	e.drainCommits()
	e.requireCommitted(r.JobID, want)
	after := e.filesPerRegion()
	if after["region-00"] != before["region-00"] || after["region-01"] != 1 {
		t.Fatalf("files per region %v, then %v: want region-00 untouched and region-01 compacted", before, after)
	}

	// At the threshold, compacted anyway.
	e.setProperties(iceberg.Properties{optin.PropertyHotPartitionMinFiles: "3"})
	if _, err := sampletable.AppendRows(e.ctx, e.load(), 20_000, 1, 10); err != nil {
		t.Fatal(err)
	}
	r = e.plan()
	if r.Outcome != plan.OutcomePlanned || len(r.HotPartitions) != 1 || r.HotPartitions[0].Skipped || !strings.Contains(r.HotPartitions[0].Why, "compacted anyway") {
		t.Fatalf("plan at the threshold: %s (%s), hot %+v", r.Outcome, r.Reason, r.HotPartitions)
	}
	e.drainTasks()
	e.drainCommits()
	if got := e.filesPerRegion(); got["region-00"] != 1 {
		t.Fatalf("files per region %v: want region-00 compacted at the threshold", got)
	}

	// Only a hot partition to compact: nothing to do, with the reason;
	// after the idle time, compacted.
	e.setProperties(iceberg.Properties{optin.PropertyHotPartitionMinFiles: "20"})
	for i := 0; i < 5; i++ { // enough files for a group (min-input-files)
		if _, err := sampletable.AppendRows(e.ctx, e.load(), int64(30_000+10*i), 1, 10); err != nil {
			t.Fatal(err)
		}
	}
	if r = e.plan(); r.Outcome != plan.OutcomeNothingToDo || !strings.Contains(r.Reason, "being written") {
		t.Fatalf("plan with only a hot partition: %s (%s)", r.Outcome, r.Reason)
	}
	time.Sleep(idle + 200*time.Millisecond)
	if r = e.plan(); r.Outcome != plan.OutcomePlanned || len(r.HotPartitions) != 0 {
		t.Fatalf("plan after the idle time: %s (%s), hot %+v", r.Outcome, r.Reason, r.HotPartitions)
	}
}

func mustThresholds(t *testing.T, e *env) health.Thresholds {
	t.Helper()
	th, err := health.ThresholdsFor(e.load().Properties(), 0)
	if err != nil {
		t.Fatal(err)
	}
	return th
}
