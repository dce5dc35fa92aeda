package tests

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"

	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/expire"
	"github.com/icekeeper/icekeeper/shared/harness/fingerprint"
	"github.com/icekeeper/icekeeper/shared/harness/sampletable"
	"github.com/icekeeper/icekeeper/shared/harness/scheduled"
	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/optin"
	"github.com/icekeeper/icekeeper/shared/plan"
	plannerstage "github.com/icekeeper/icekeeper/shared/stage/planner"
	"github.com/icekeeper/icekeeper/shared/trigger"
	"github.com/icekeeper/icekeeper/shared/wakeup"
)

// TestExpire_AWakeUpExpiresATableNobodyWritesWhenItsSnapshotComesDue: a
// writer's commit leaves a replaced snapshot 4 seconds from its
// retention; the commit event's visit finds nothing due and schedules the
// table's wake-up (EventBridge Scheduler, the emulator's) for that
// moment. Nobody writes again and no sweep comes: the schedule's event,
// delivered to the planner as the bus's rule would once its moment came,
// plans the expiry, which leaves one snapshot and the rows as they were.
// Without wake-ups (the settings unset) the visit schedules nothing.
func TestExpire_AWakeUpExpiresATableNobodyWritesWhenItsSnapshotComesDue(t *testing.T) {
	// Named as the env's own resources (ownResource): the planner's
	// calls are checked against the stack's policy for them.
	group := fmt.Sprintf("t-wakeups-%d", time.Now().UnixNano())
	admin := scheduler.NewFromConfig(cloud.Clients.Config)
	if _, err := admin.CreateScheduleGroup(t.Context(), &scheduler.CreateScheduleGroupInput{Name: aws.String(group)}); err != nil {
		t.Fatal(err)
	}
	d := setupDispatch(t, config.ModeActive, "lake", func(c *config.Config) {
		c.WakeUpGroup, c.WakeUpRoleARN, c.EventBusARN = group, "arn:aws:iam::000000000000:role/t-wakeups-role-1", "arn:aws:events:us-east-1:000000000000:event-bus/default"
	})
	// The dispatcher again, with a lead of a second: the test waits for
	// the moment instead of a minute.
	d.deps.WakeUps = plannerstage.WakeUpOptions{Lead: time.Second}
	disp, err := d.deps.Dispatcher(d.cat)
	if err != nil {
		t.Fatal(err)
	}
	d.planner = plannerstage.Handler{Dispatch: disp, Metrics: d.deps.Metrics, Log: d.deps.Log}

	const retention = 4 * time.Second
	// The owner's min-input-files keeps the two files the append makes
	// (twice the partition's optimum, the file-count goal otherwise) out
	// of a compaction: this visit is the expiry's alone.
	quiet := d.createNamed("lake.quiet", withProps(sampletable.Options{FormatVersion: 2, Partitions: 1, Files: 1, RowsPerFile: 50}, map[string]string{
		optin.PropertyEnabled: "true", expire.MinSnapshotsToKeepKey: "1", expire.MaxSnapshotAgeMsKey: "4000", optin.PropertyCompactionMinInputFiles: "5",
	}))
	replaced := quiet.CurrentSnapshot().TimestampMs
	quiet, err = sampletable.AppendRows(d.ctx, quiet, 7_000_000, 1, 5)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := fingerprint.Scan(d.ctx, quiet.Scan())
	if err != nil {
		t.Fatal(err)
	}

	o := outcomeOf(t, d.handle(commitEvent("lake.quiet")), "lake.quiet")
	if o.Action == trigger.ActionPlanned || o.Plan == nil || o.Plan.NextExpiryDue == nil {
		t.Fatalf("the commit event's visit: %+v, want nothing planned and the next expiry due", o)
	}
	due := time.UnixMilli(replaced).Add(retention + time.Millisecond)
	if !o.Plan.NextExpiryDue.Equal(due) {
		t.Fatalf("next expiry due %s, want the replaced snapshot's retention later, %s", o.Plan.NextExpiryDue, due)
	}
	list, err := admin.ListSchedules(d.ctx, &scheduler.ListSchedulesInput{GroupName: aws.String(group)})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Schedules) != 1 || aws.ToString(list.Schedules[0].Name) != wakeup.Name("lake.quiet", due.UTC().Truncate(time.Second).Add(time.Second)) {
		t.Fatalf("schedules %+v, want the table's one wake-up at its due moment", list.Schedules)
	}
	woken := outcomeOf(t, d.handle(fireSchedule(t, admin, group, list.Schedules[0].Name)), "lake.quiet")
	if woken.Action != trigger.ActionPlanned || d.job(woken.Plan.JobID).Kind != jobs.KindExpire {
		t.Fatalf("the wake-up's visit: %+v, want the expiry planned", woken)
	}
	d.drainCommits()
	d.requireExpiredTo("lake.quiet", 1, rows)

	// The same visit without the wake-up settings schedules nothing.
	off := setupDispatch(t, config.ModeActive, "lake")
	other := off.createNamed("lake.quiet", withProps(sampletable.Options{FormatVersion: 2, Partitions: 1, Files: 1, RowsPerFile: 50}, map[string]string{
		optin.PropertyEnabled: "true", expire.MinSnapshotsToKeepKey: "1", expire.MaxSnapshotAgeMsKey: "4000", optin.PropertyCompactionMinInputFiles: "5",
	}))
	if _, err := sampletable.AppendRows(off.ctx, other, 7_000_000, 1, 5); err != nil {
		t.Fatal(err)
	}
	before, err := admin.ListSchedules(d.ctx, &scheduler.ListSchedulesInput{})
	if err != nil {
		t.Fatal(err)
	}
	if o := outcomeOf(t, off.handle(commitEvent("lake.quiet")), "lake.quiet"); o.Plan == nil || o.Plan.NextExpiryDue == nil {
		t.Fatalf("without wake-ups: %+v, want the next expiry due", o)
	}
	if again, err := admin.ListSchedules(d.ctx, &scheduler.ListSchedulesInput{}); err != nil || len(again.Schedules) != len(before.Schedules) {
		t.Fatalf("without wake-ups: %d schedules after, %d before (%v)", len(again.Schedules), len(before.Schedules), err)
	}
}

// TestTriggers_AWriteDuringTheCooldownIsVisitedWhenTheSlotEnds: a commit
// event's visit compacts the table and keeps its cooldown slot; a writer
// then brings one partition to twice its optimal file count, and that
// commit's event, finding the slot held, is coalesced and schedules the
// table's visit (EventBridge Scheduler, the emulator's) for the moment
// the slot ends. Nobody writes again and no sweep comes: the schedule's
// event, delivered to the planner as the bus's commit rule would once its
// moment came, compacts the table again, rows unchanged.
func TestTriggers_AWriteDuringTheCooldownIsVisitedWhenTheSlotEnds(t *testing.T) {
	v := setupVisits(t, "lake.busy")
	d := v.d
	rows := v.writeDuringTheCooldown(t)
	visit := v.onlyNewVisit(t, nil)
	woken := outcomeOf(t, d.handle(fireSchedule(t, v.admin, v.group, &visit)), v.table)
	if woken.Action != trigger.ActionPlanned || d.job(woken.Plan.JobID).Kind != jobs.KindCompaction {
		t.Fatalf("the scheduled visit: %+v, want the compaction planned", woken)
	}
	v.compactedToOneFile(t, rows)
}

// TestTriggers_AVisitThatFindsTheLeaseHeldIsRetriedShortly: the visit
// scheduled for the end of the cooldown comes while another job holds the
// table's lease (the chain's expiry, which the expiry's wake-up plans at
// the same moment); it plans nothing, keeps the slot only for
// pacing.Retry of the interval and schedules a visit for then, which,
// the other job done, compacts what was written during the cooldown.
func TestTriggers_AVisitThatFindsTheLeaseHeldIsRetriedShortly(t *testing.T) {
	v := setupVisits(t, "lake.held")
	d := v.d
	rows := v.writeDuringTheCooldown(t)
	visit := v.onlyNewVisit(t, nil)
	other, err := d.deps.Leases.Acquire(d.ctx, v.table, "expire-in-flight", time.Minute)
	if err != nil {
		t.Fatal(err)
	}
	held := outcomeOf(t, d.handle(fireSchedule(t, v.admin, v.group, &visit)), v.table)
	if held.Plan == nil || held.Plan.Outcome != plan.OutcomeLeaseHeld {
		t.Fatalf("the visit while another job holds the lease: %+v, want the lease held", held)
	}
	retry := v.onlyNewVisit(t, []string{visit})
	if err := d.deps.Leases.Release(d.ctx, other); err != nil {
		t.Fatal(err)
	}
	woken := outcomeOf(t, d.handle(fireSchedule(t, v.admin, v.group, &retry)), v.table)
	if woken.Action != trigger.ActionPlanned || d.job(woken.Plan.JobID).Kind != jobs.KindCompaction {
		t.Fatalf("the retry: %+v, want the compaction planned", woken)
	}
	v.compactedToOneFile(t, rows)
}

// visitsEnv is a table (each test its own: the emulator's schedules are
// process-wide) compacted once by a commit event's visit, with the
// planner's wake-ups in a schedule group of the emulator's and a cooldown
// of 3 seconds.
type visitsEnv struct {
	table string
	d     *dispatchEnv
	admin *scheduler.Client
	group string
}

func setupVisits(t *testing.T, table string) *visitsEnv {
	t.Helper()
	group := fmt.Sprintf("t-wakeups-%d", time.Now().UnixNano())
	admin := scheduler.NewFromConfig(cloud.Clients.Config)
	if _, err := admin.CreateScheduleGroup(t.Context(), &scheduler.CreateScheduleGroupInput{Name: aws.String(group)}); err != nil {
		t.Fatal(err)
	}
	const cooldown = 3 * time.Second
	d := setupDispatch(t, config.ModeActive, "lake", func(c *config.Config) {
		c.WakeUpGroup, c.WakeUpRoleARN, c.EventBusARN = group, "arn:aws:iam::000000000000:role/t-wakeups-role-1", "arn:aws:events:us-east-1:000000000000:event-bus/default"
		c.MinInterval = cooldown
	})
	d.deps.WakeUps = plannerstage.WakeUpOptions{Lead: time.Second}
	disp, err := d.deps.Dispatcher(d.cat)
	if err != nil {
		t.Fatal(err)
	}
	d.planner = plannerstage.Handler{Dispatch: disp, Metrics: d.deps.Metrics, Log: d.deps.Log}
	v := &visitsEnv{table: table, d: d, admin: admin, group: group}

	tbl := d.createNamed(v.table, withProps(sampletable.Options{FormatVersion: 2, Partitions: 1, Files: 6, RowsPerFile: 20}, map[string]string{optin.PropertyEnabled: "true"}))
	d.ident = tbl.Identifier()
	if o := outcomeOf(t, d.handle(commitEvent(v.table)), v.table); o.Action != trigger.ActionPlanned {
		t.Fatalf("the first commit event's visit: %+v, want the compaction planned", o)
	}
	d.drainTasks()
	d.drainCommits()
	if n := len(d.liveTasks()); n != 1 {
		t.Fatalf("%d data files after the first compaction, want 1", n)
	}
	return v
}

// writeDuringTheCooldown commits a writer's file (two in the partition,
// twice its optimum) and its event, which the cooldown coalesces; it
// returns the table's rows.
func (v *visitsEnv) writeDuringTheCooldown(t *testing.T) fingerprint.Fingerprint {
	t.Helper()
	d := v.d
	tbl, err := sampletable.AppendRows(d.ctx, d.load(), 8_000_000, 1, 5)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := fingerprint.Scan(d.ctx, tbl.Scan())
	if err != nil {
		t.Fatal(err)
	}
	o := outcomeOf(t, d.handle(commitEvent(v.table)), v.table)
	if o.Action != trigger.ActionSkipped || o.Skip != trigger.SkipCooldown {
		t.Fatalf("the writer's commit event within the cooldown: %+v, want it coalesced", o)
	}
	return rows
}

// onlyNewVisit is the one visit of the table scheduled in the group
// besides seen (the emulator keeps fired schedules and lists every
// group's: this table's by name).
func (v *visitsEnv) onlyNewVisit(t *testing.T, seen []string) string {
	t.Helper()
	list, err := v.admin.ListSchedules(v.d.ctx, &scheduler.ListSchedulesInput{GroupName: aws.String(v.group)})
	if err != nil {
		t.Fatal(err)
	}
	prefix := strings.TrimSuffix(wakeup.Name(v.table, time.Time{}), time.Time{}.Format("20060102T150405"))
	var visit string
	for _, s := range list.Schedules {
		n := aws.ToString(s.Name)
		if !strings.HasPrefix(n, prefix) || !strings.HasSuffix(n, "-v") || slices.Contains(seen, n) {
			continue
		}
		if visit != "" {
			t.Fatalf("two visits scheduled: %s and %s", visit, n)
		}
		visit = n
	}
	if visit == "" {
		t.Fatalf("schedules %+v, want a visit of the table besides %v", list.Schedules, seen)
	}
	return visit
}

// compactedToOneFile checks the table holds one data file and rows.
func (v *visitsEnv) compactedToOneFile(t *testing.T, rows fingerprint.Fingerprint) {
	t.Helper()
	d := v.d
	d.drainTasks()
	d.drainCommits()
	if n := len(d.liveTasks()); n != 1 {
		t.Fatalf("%d data files after the scheduled visit's compaction, want 1", n)
	}
	after, err := fingerprint.Scan(d.ctx, d.load().Scan())
	if err != nil {
		t.Fatal(err)
	}
	if after != rows {
		t.Fatalf("rows changed: %s, want %s", after, rows)
	}
}

// fireSchedule waits for the moment of the schedule name in group and
// returns the event its target puts on the bus then, as EventBridge
// Scheduler would (the emulator stores schedules and never fires them).
func fireSchedule(t *testing.T, admin *scheduler.Client, group string, name *string) []byte {
	t.Helper()
	s, err := admin.GetSchedule(t.Context(), &scheduler.GetScheduleInput{Name: name, GroupName: aws.String(group)})
	if err != nil {
		t.Fatal(err)
	}
	at, err := scheduled.Moment(aws.ToString(s.ScheduleExpression))
	if err != nil {
		t.Fatal(err)
	}
	time.Sleep(time.Until(at))
	raw, err := scheduled.Event("wake-up-"+aws.ToString(name), s.Target, at)
	if err != nil {
		t.Fatal(err)
	}
	return raw
}
