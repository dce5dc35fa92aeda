package wakeup

import (
	"context"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/scheduler"

	"github.com/icekeeper/icekeeper/events"
	"github.com/icekeeper/icekeeper/shared/harness/localcloud"
	"github.com/icekeeper/icekeeper/shared/harness/scheduled"
)

// scheduleName is EventBridge Scheduler's pattern and length for a
// schedule's name (API reference, CreateSchedule: Name, 1 to 64 of
// [0-9a-zA-Z-_.]).
var scheduleName = regexp.MustCompile(`^[0-9a-zA-Z\-_.]{1,64}$`)

func newWaker(t *testing.T, now func() time.Time) (*Waker, *scheduler.Client, string) {
	t.Helper()
	cloud := localcloud.Start()
	t.Cleanup(cloud.Close)
	client := scheduler.NewFromConfig(cloud.Clients.Config)
	group := "icekeeper-wakeups-" + strings.ReplaceAll(t.Name(), "/", "-")
	if len(group) > 64 {
		group = group[:64]
	}
	if _, err := client.CreateScheduleGroup(context.Background(), &scheduler.CreateScheduleGroupInput{Name: aws.String(group)}); err != nil {
		t.Fatal(err)
	}
	w, err := New(client, group, "arn:aws:events:us-east-1:123456789012:event-bus/icekeeper", "arn:aws:iam::123456789012:role/icekeeper-scheduler", now)
	if err != nil {
		t.Fatal(err)
	}
	return w, client, group
}

// TestWake_SchedulesOneSelfDeletingContinuationOfTheExpiry: one schedule
// at the moment (rounded up to the second), deleted once it fired, whose
// event on the bus the planner decodes as a continuation of the table's
// chain after the manifest rewrite (the expiry alone); a second visit that
// finds the same moment creates nothing more.
func TestWake_SchedulesOneSelfDeletingContinuationOfTheExpiry(t *testing.T) {
	now := time.Date(2026, 12, 5, 14, 0, 0, 0, time.UTC)
	w, client, group := newWaker(t, func() time.Time { return now })
	ctx := context.Background()
	due := now.Add(90*time.Minute + 1500*time.Millisecond)
	at, err := w.Wake(ctx, "shop.orders", due)
	if err != nil {
		t.Fatal(err)
	}
	if want := now.Add(90*time.Minute + 2*time.Second); !at.Equal(want) {
		t.Fatalf("scheduled at %s, want the due moment rounded up to the second, %s", at, want)
	}
	if again, err := w.Wake(ctx, "shop.orders", due); err != nil || !again.Equal(at) {
		t.Fatalf("a second wake-up for the same moment: %s, %v; want %s and no error", again, err, at)
	}
	list, err := client.ListSchedules(ctx, &scheduler.ListSchedulesInput{GroupName: aws.String(group)})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Schedules) != 1 {
		t.Fatalf("%d schedules, want 1", len(list.Schedules))
	}
	got, err := client.GetSchedule(ctx, &scheduler.GetScheduleInput{Name: list.Schedules[0].Name, GroupName: aws.String(group)})
	if err != nil {
		t.Fatal(err)
	}
	if e := aws.ToString(got.ScheduleExpression); e != "at(2026-12-05T15:30:02)" {
		t.Fatalf("expression %q", e)
	}
	if string(got.ActionAfterCompletion) != "DELETE" {
		t.Fatalf("action after completion %q, want DELETE", got.ActionAfterCompletion)
	}
	tg := got.Target
	if tg == nil || tg.EventBridgeParameters == nil || aws.ToString(tg.Arn) != w.bus || aws.ToString(tg.RoleArn) != w.role {
		t.Fatalf("target %+v", tg)
	}
	// What the bus delivers to the planner.
	raw, err := scheduled.Event("wake", tg, at)
	if err != nil {
		t.Fatal(err)
	}
	trig, err := events.Decode(raw)
	if err != nil {
		t.Fatalf("the planner refuses the wake-up: %v", err)
	}
	if trig.Kind != events.KindContinue || len(trig.Tables) != 1 || trig.Tables[0] != "shop.orders" || trig.ResumeAfter != "rewrite-manifests" {
		t.Fatalf("decoded %+v, want a continuation of shop.orders after rewrite-manifests", trig)
	}
}

// TestWakeVisit_SchedulesACommitEventBesideTheExpirysWakeUp: a visit at
// the end of a cooldown is a schedule of its own at the same moment as an
// expiry wake-up (two schedules, two names), and the bus delivers it to
// the planner as a writer's commit event of the table (nested namespace
// kept); asked again for the same moment it creates nothing more.
func TestWakeVisit_SchedulesACommitEventBesideTheExpirysWakeUp(t *testing.T) {
	now := time.Date(2026, 12, 7, 18, 0, 0, 0, time.UTC)
	w, client, group := newWaker(t, func() time.Time { return now })
	ctx := context.Background()
	ends := now.Add(15 * time.Minute)
	expiryAt, err := w.Wake(ctx, "lake.raw.events", ends)
	if err != nil {
		t.Fatal(err)
	}
	at, err := w.WakeVisit(ctx, "lake.raw.events", ends)
	if err != nil || !at.Equal(expiryAt) {
		t.Fatalf("visit scheduled at %s (%v), want the expiry's moment %s", at, err, expiryAt)
	}
	if again, err := w.WakeVisit(ctx, "lake.raw.events", ends); err != nil || !again.Equal(at) {
		t.Fatalf("the same visit again: %s, %v", again, err)
	}
	// The emulator's listing is process-wide (not by group): count this
	// table's schedules by their names.
	list, err := client.ListSchedules(ctx, &scheduler.ListSchedulesInput{GroupName: aws.String(group)})
	if err != nil {
		t.Fatal(err)
	}
	prefix := strings.TrimSuffix(Name("lake.raw.events", at), at.Format("20060102T150405"))
	var mine []string
	for _, sc := range list.Schedules {
		if strings.HasPrefix(aws.ToString(sc.Name), prefix) {
			mine = append(mine, aws.ToString(sc.Name))
		}
	}
	if len(mine) != 2 {
		t.Fatalf("schedules %v, want the expiry's and the visit's", mine)
	}
	name := VisitName("lake.raw.events", at)
	if !scheduleName.MatchString(name) {
		t.Fatalf("visit name %q is not a valid schedule name", name)
	}
	got, err := client.GetSchedule(ctx, &scheduler.GetScheduleInput{Name: aws.String(name), GroupName: aws.String(group)})
	if err != nil {
		t.Fatal(err)
	}
	if string(got.ActionAfterCompletion) != "DELETE" || aws.ToString(got.ScheduleExpression) != "at(2026-12-07T18:15:01)" {
		t.Fatalf("schedule %s: %s, after completion %q", name, aws.ToString(got.ScheduleExpression), got.ActionAfterCompletion)
	}
	raw, err := scheduled.Event("visit", got.Target, at)
	if err != nil {
		t.Fatal(err)
	}
	trig, err := events.Decode(raw)
	if err != nil {
		t.Fatalf("the planner refuses the visit: %v", err)
	}
	if trig.Kind != events.KindCommit || len(trig.Tables) != 1 || trig.Tables[0] != "lake.raw.events" {
		t.Fatalf("decoded %+v, want a commit event of lake.raw.events", trig)
	}
}

// TestWake_AMomentPassedIsScheduledALeadAhead: a due moment already past
// (or too close to fire) is scheduled DefaultLead from now.
func TestWake_AMomentPassedIsScheduledALeadAhead(t *testing.T) {
	now := time.Date(2026, 12, 5, 14, 0, 0, 0, time.UTC)
	w, _, _ := newWaker(t, func() time.Time { return now })
	at, err := w.Wake(context.Background(), "shop.orders", now.Add(-time.Hour))
	if err != nil {
		t.Fatal(err)
	}
	if want := now.Add(DefaultLead + time.Second); !at.Equal(want) {
		t.Fatalf("scheduled at %s, want %s", at, want)
	}
}

// TestName_FitsEventBridgeSchedulersPatternForAnyTable: long names,
// nested namespaces and characters a schedule's name may not hold give a
// valid name, and different tables or moments different names.
func TestName_FitsEventBridgeSchedulersPatternForAnyTable(t *testing.T) {
	at := time.Date(2026, 12, 5, 14, 0, 0, 0, time.UTC)
	seen := map[string]bool{}
	for _, table := range []string{"shop.orders", "a.b.c.d", "ns with space.tåble/ünïcode:#", strings.Repeat("x", 300) + ".y", "shop.Orders"} {
		for _, m := range []time.Time{at, at.Add(time.Second)} {
			n := Name(table, m)
			if !scheduleName.MatchString(n) {
				t.Fatalf("name %q for %q is not a valid schedule name", n, table)
			}
			if seen[n] {
				t.Fatalf("name %q given twice", n)
			}
			seen[n] = true
		}
	}
}

// TestNew_RefusesAnIncompleteConfiguration: each of the group, bus and
// role is required.
func TestNew_RefusesAnIncompleteConfiguration(t *testing.T) {
	c := scheduler.New(scheduler.Options{Region: "us-east-1"})
	for _, args := range [][3]string{{"", "b", "r"}, {"g", "", "r"}, {"g", "b", ""}} {
		if _, err := New(c, args[0], args[1], args[2], nil); err == nil {
			t.Fatalf("New(%q, %q, %q) accepted", args[0], args[1], args[2])
		}
	}
	if _, err := New(nil, "g", "b", "r", nil); err == nil {
		t.Fatal("a nil client accepted")
	}
}
