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

// TestPlanner_AHotPartitionsYoungFilesStayForTheWriter: with a min file
// age, compaction takes only the old files of a partition still being
// written and leaves the ones its writer added within the age; min-files
// counts the old files only, and the plan and the health report say how
// many were left and why. The ages come from the snapshots' own commit
// times and the planner's injected clock.
func TestPlanner_AHotPartitionsYoungFilesStayForTheWriter(t *testing.T) {
	e := setup(t)
	e.createTable(sampletable.Options{FormatVersion: 2, Partitions: 2, Files: 6, RowsPerFile: 50})
	old := e.load().CurrentSnapshot().TimestampMs
	before := map[string]bool{}
	for _, task := range e.liveTasks() {
		before[task.File.FilePath()] = true
	}
	for time.Now().UnixMilli() <= old { // the young files' commits come strictly later
	}
	for i := 0; i < 3; i++ {
		if _, err := sampletable.AppendRows(e.ctx, e.load(), int64(10_000+10*i), 1, 10); err != nil { // region-00 only
			t.Fatal(err)
		}
	}
	var young []string
	for _, task := range e.liveTasks() {
		if !before[task.File.FilePath()] {
			young = append(young, task.File.FilePath())
		}
	}
	var cut int64
	for _, s := range e.load().Metadata().Snapshots() {
		if s.TimestampMs > old && (cut == 0 || s.TimestampMs < cut) {
			cut = s.TimestampMs
		}
	}
	// An hour after the first young file: every partition was written
	// within the idle time (2h), and only region-00's last 3 files are
	// younger than the age (1h). Region-00 has 6 old files, region-01 6.
	now := time.UnixMilli(cut).Add(time.Hour)
	e.withClock(now)
	e.setProperties(iceberg.Properties{optin.PropertyHotPartitionIdleTime: "2h", optin.PropertyHotPartitionMinFileAge: "1h", optin.PropertyHotPartitionMinFiles: "7"})
	want := e.fingerprint()

	// min-files counts old candidates only: 6 of 7, both left alone.
	r := e.plan()
	if r.Outcome != plan.OutcomeNothingToDo || !strings.Contains(r.Reason, "3 files added within the min file age") {
		t.Fatalf("with min-files 7: %s (%s); want nothing to do, the young files named", r.Outcome, r.Reason)
	}
	if len(r.HotPartitions) != 2 || !r.HotPartitions[0].Skipped || r.HotPartitions[0].CandidateFiles != 6 || r.HotPartitions[0].YoungFiles != 3 {
		t.Fatalf("hot partitions %+v; want region-00 left with 6 old candidates and 3 young files", r.HotPartitions)
	}

	e.setProperties(iceberg.Properties{optin.PropertyHotPartitionMinFiles: "1"})
	r = e.plan()
	if r.Outcome != plan.OutcomePlanned || r.InputFiles != 12 {
		t.Fatalf("plan: %s (%s), %d input files; want the 12 old files", r.Outcome, r.Reason, r.InputFiles)
	}
	if len(r.HotPartitions) != 2 {
		t.Fatalf("hot partitions %+v; want both regions", r.HotPartitions)
	}
	h := r.HotPartitions[0]
	if h.Partition != "region=region-00" || h.Skipped || h.CandidateFiles != 6 || h.YoungFiles != 3 || !strings.Contains(h.Why, "3 files added within the min file age of 1h0m0s are not candidates: left for the writer") {
		t.Fatalf("region-00 %+v; want its 6 old files compacted and 3 young ones left, and why", h)
	}
	if h := r.HotPartitions[1]; h.YoungFiles != 0 || h.CandidateFiles != 6 {
		t.Fatalf("region-01 %+v; want its 6 files compacted, none young", h)
	}
	// The health report, at the same clock, says the same.
	rep, err := health.Assess(e.ctx, e.load(), now, mustThresholds(t, e))
	if err != nil {
		t.Fatal(err)
	}
	if len(rep.HotPartitions) != 2 || rep.HotPartitions[0].YoungFiles != 3 || rep.HotPartitions[0].CandidateFiles != 6 {
		t.Fatalf("health report hot partitions %+v; want region-00's 3 young files left", rep.HotPartitions)
	}
	if rec, ok := rep.Recommends(health.ActionCompaction); !ok || rec.EstimatedFiles != 12 {
		t.Fatalf("compaction recommendation %+v (found %t); want the 12 old files", rec, ok)
	}
	e.drainTasks()
	e.drainCommits()
	e.requireCommitted(r.JobID, want)
	if got := e.filesPerRegion(); got["region-00"] != 1+3 || got["region-01"] != 1 {
		t.Fatalf("files per region %v; want region-00's old files compacted into one beside its 3 young files, region-01 compacted", got)
	}
	live := map[string]bool{}
	for _, task := range e.liveTasks() {
		live[task.File.FilePath()] = true
	}
	for _, p := range young {
		if !live[p] {
			t.Fatalf("young file %s was rewritten", p)
		}
	}
}
