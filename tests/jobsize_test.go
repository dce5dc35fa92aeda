package tests

import (
	"encoding/json"
	"fmt"
	"testing"
	"time"

	"github.com/icekeeper/icekeeper/events"
	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/harness/sampletable"
	"github.com/icekeeper/icekeeper/shared/optin"
	"github.com/icekeeper/icekeeper/shared/plan"
	"github.com/icekeeper/icekeeper/shared/trigger"
)

// TestPlanner_AJobTakesAtMostMaxJobFilesAndLeavesTheRestForTheNextJobs: a
// compaction of more files than one committer can commit
// (ICEKEEPER_MAX_JOB_FILES, here 12 of 40 small files in 4 partitions of
// 10) takes whole groups up to that many files, says what it left
// (deferred_groups, deferred_bytes), and the next jobs take the rest until
// nothing is left to compact; the rows never change.
func TestPlanner_AJobTakesAtMostMaxJobFilesAndLeavesTheRestForTheNextJobs(t *testing.T) {
	const maxFiles = 12
	e := setup(t, func(c *config.Config) { c.MaxJobFiles = maxFiles })
	e.createTable(sampletable.Options{FormatVersion: 2, Partitions: 4, Files: 10, RowsPerFile: 200, PositionDeletes: true})
	want := e.fingerprint()
	files := int64(len(e.liveTasks()))

	var jobs int
	var compacted int64
	for {
		r := e.plan()
		if r.Outcome == plan.OutcomeNothingToDo {
			break
		}
		if r.Outcome != plan.OutcomePlanned {
			t.Fatalf("job %d: %s (%s)", jobs+1, r.Outcome, r.Reason)
		}
		jobs++
		if r.InputFiles > maxFiles || r.InputFiles == 0 {
			t.Fatalf("job %d takes %d files, want 1 to %d", jobs, r.InputFiles, maxFiles)
		}
		if left := files - compacted - r.InputFiles; left > 0 && (r.DeferredGroups == 0 || r.DeferredBytes == 0) {
			t.Fatalf("job %d leaves %d files but says it deferred %d groups, %d bytes", jobs, left, r.DeferredGroups, r.DeferredBytes)
		}
		compacted += r.InputFiles
		e.drainTasks()
		e.drainCommits()
		e.requireCommitted(r.JobID, want)
		if jobs > 10 {
			t.Fatal("more than 10 jobs for 40 files")
		}
	}
	if jobs < 4 || compacted != files {
		t.Fatalf("%d jobs compacted %d of %d files: want one per partition (a group is a partition's 10 files) and every file", jobs, compacted, files)
	}
	if got := len(e.liveTasks()); got != 4 {
		t.Fatalf("%d files left, want one per partition", got)
	}
}

// continuations are the "Icekeeper Compaction Continues" events put on
// the bus so far that announce a compaction's next job (no resume_after),
// each as EventBridge delivers it to the planner.
func (r *recordingEventBridge) continuations(t *testing.T) [][]byte {
	return r.continuationsWhere(t, func(c events.Continuation) bool { return c.ResumeAfter == "" })
}

// chainContinuations are the continuations that resume a table's
// maintenance chain after a committed job (resume_after set).
func (r *recordingEventBridge) chainContinuations(t *testing.T) [][]byte {
	return r.continuationsWhere(t, func(c events.Continuation) bool { return c.ResumeAfter != "" })
}

func (r *recordingEventBridge) continuationsWhere(t *testing.T, keep func(events.Continuation) bool) [][]byte {
	t.Helper()
	r.mu.Lock()
	defer r.mu.Unlock()
	var out [][]byte
	for i, e := range r.entries {
		if e["detail-type"] != events.DetailTypeContinue {
			continue
		}
		var c events.Continuation
		if err := json.Unmarshal([]byte(e["detail"]), &c); err != nil {
			t.Fatalf("continuation detail %s: %v", e["detail"], err)
		}
		if !keep(c) {
			continue
		}
		b, err := json.Marshal(map[string]any{"version": "0", "id": fmt.Sprintf("continue-%d", i), "source": e["source"],
			"detail-type": e["detail-type"], "detail": json.RawMessage(e["detail"])})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, b)
	}
	return out
}

// TestCommitter_ACompactionThatLeftGroupsStartsItsNextJobAtOnce: a
// compaction larger than one job (ICEKEEPER_MAX_JOB_FILES 12 of 40 files)
// does not wait a cooldown (an hour here) per job. Each committed job that
// left groups reopens the table's cooldown and announces the next job;
// that announcement, delivered to the planner, plans it, until the last job
// leaves nothing and announces nothing. A redelivered announcement, or a
// writer's commit event, inside the new job's cooldown plans nothing more.
// The rows never change.
func TestCommitter_ACompactionThatLeftGroupsStartsItsNextJobAtOnce(t *testing.T) {
	const maxFiles = 12
	d := setupDispatch(t, config.ModeActive, "demo", func(c *config.Config) { c.MaxJobFiles = maxFiles })
	if d.cfg.MinInterval < time.Hour {
		t.Fatalf("cooldown %s: the test needs one longer than it runs", d.cfg.MinInterval)
	}
	d.createNamed("demo.events", withProps(sampletable.Options{FormatVersion: 2, Partitions: 4, Files: 10, RowsPerFile: 200, PositionDeletes: true}, optedIn))
	want := d.fingerprint()

	next := commitEvent("demo.events")
	var jobIDs []string
	for len(jobIDs) <= 10 {
		o := outcomeOf(t, d.handle(next), "demo.events")
		if o.Action != trigger.ActionPlanned || o.Plan == nil {
			t.Fatalf("job %d: %+v: the continuation did not plan the next job", len(jobIDs)+1, o)
		}
		id := o.Plan.JobID
		jobIDs = append(jobIDs, id)
		if o.Plan.Continues != (o.Plan.DeferredGroups > 0) || d.job(id).Continues != o.Plan.Continues {
			t.Fatalf("job %s: %d deferred groups, continues %v (recorded %v): only the file cap left them, so it continues", id, o.Plan.DeferredGroups, o.Plan.Continues, d.job(id).Continues)
		}
		if rec := d.job(id); rec.DeferredGroups != o.Plan.DeferredGroups || rec.DeferredBytes != o.Plan.DeferredBytes {
			t.Fatalf("job %s records %d deferred groups (%d bytes), the plan %d (%d)", id, rec.DeferredGroups, rec.DeferredBytes, o.Plan.DeferredGroups, o.Plan.DeferredBytes)
		}
		if again := outcomeOf(t, d.handle(commitEvent("demo.events")), "demo.events"); again.Skip != trigger.SkipCooldown {
			t.Fatalf("a commit event while job %s runs: %+v, want coalesced", id, again)
		}
		before := len(d.events.continuations(t))
		d.drainTasks()
		d.drainCommits()
		d.requireCommitted(id, want)
		announced := d.events.continuations(t)
		if o.Plan.DeferredGroups == 0 {
			if len(announced) != before {
				t.Fatalf("job %s left nothing but announced a next job", id)
			}
			break
		}
		if len(announced) != before+1 {
			t.Fatalf("job %s left %d groups and made %d announcements, want 1", id, o.Plan.DeferredGroups, len(announced)-before)
		}
		next = announced[len(announced)-1]
		var ev struct {
			Detail events.Continuation `json:"detail"`
		}
		if err := json.Unmarshal(next, &ev); err != nil || ev.Detail.JobID != id || ev.Detail.DeferredGroups != o.Plan.DeferredGroups {
			t.Fatalf("announcement %s (%v): want job %s with %d deferred groups", next, err, id, o.Plan.DeferredGroups)
		}
	}
	if len(jobIDs) < 4 || len(jobIDs) > 10 {
		t.Fatalf("%d jobs for 40 files in 4 partitions of 10 with at most %d per job", len(jobIDs), maxFiles)
	}
	if got := len(d.liveTasks()); got != 4 {
		t.Fatalf("%d files left, want one per partition", got)
	}
	// The last announcement again (EventBridge delivers at least once):
	// the job it planned holds the cooldown, so nothing more is planned.
	last := d.events.continuations(t)
	if again := outcomeOf(t, d.handle(last[len(last)-1]), "demo.events"); again.Skip != trigger.SkipCooldown {
		t.Fatalf("a redelivered announcement: %+v, want coalesced", again)
	}
}

// TestCommitter_AGraduallyRolledOutSortWaitsForTheNextVisits: groups the
// owner's icekeeper.compaction.max-bytes-per-job left (a sort rolling out a
// partition a job) are not the committer's file cap: the job does not
// continue at once, and the table keeps its cooldown until the planner's
// next visit.
func TestCommitter_AGraduallyRolledOutSortWaitsForTheNextVisits(t *testing.T) {
	d := setupDispatch(t, config.ModeActive, "demo")
	d.createNamed("demo.events", withProps(sampletable.Options{FormatVersion: 2, Partitions: 4, Files: 6, RowsPerFile: 50},
		map[string]string{optin.PropertyEnabled: "true", optin.PropertyCompactionStrategy: "sort"}))
	d.sortOnePartitionAJob()
	want := d.fingerprint()

	o := outcomeOf(t, d.handle(commitEvent("demo.events")), "demo.events")
	if o.Action != trigger.ActionPlanned || o.Plan.DeferredGroups != 3 || o.Plan.Continues {
		t.Fatalf("%+v: want a job of one partition, three deferred, paced by the owner's bound", o.Plan)
	}
	if rec := d.job(o.Plan.JobID); rec.Continues || rec.DeferredGroups != 3 {
		t.Fatalf("job record: continues %v, %d deferred groups", rec.Continues, rec.DeferredGroups)
	}
	d.drainTasks()
	d.drainCommits()
	d.requireCommitted(o.Plan.JobID, want)
	if n := len(d.events.continuations(t)); n != 0 {
		t.Fatalf("a paced sort announced %d next jobs", n)
	}
	if again := outcomeOf(t, d.handle(commitEvent("demo.events")), "demo.events"); again.Skip != trigger.SkipCooldown {
		t.Fatalf("a commit event after the paced job: %+v, want the cooldown kept", again)
	}
}
