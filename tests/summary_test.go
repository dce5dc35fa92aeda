package tests

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/jobs"
	plannerstage "github.com/icekeeper/icekeeper/shared/stage/planner"
	"github.com/icekeeper/icekeeper/shared/summary"
	"github.com/icekeeper/icekeeper/shared/trigger"
)

// TestSummary_TheWeeklyRuleWritesTheWeekAndPutsItsEvent: a sweep plans a
// compaction that commits; on the weekly rule's event (the planner's
// clock at the next Monday 06:00) the planner, within its IAM policy
// (every call is checked against infra/testdata/policies.json), writes
// the week's summary and the latest to summary/ and puts one "Icekeeper
// Weekly Summary" event with the totals and the keys; a second run
// rewrites the same keys with the same summary_id.
func TestSummary_TheWeeklyRuleWritesTheWeekAndPutsItsEvent(t *testing.T) {
	d := setupDispatch(t, config.ModeActive, "shop")
	d.createNamed("shop.orders", withProps(smallTable, optedIn))
	o := outcomeOf(t, d.handle(mustRead(t, "../events/scheduled.json")), "shop.orders")
	if o.Action != trigger.ActionPlanned {
		t.Fatalf("sweep: %+v, want a compaction planned", o)
	}
	d.drainTasks()
	d.drainCommits()
	if j := d.job(o.Plan.JobID); j.State != jobs.Committed {
		t.Fatalf("job %s (%s)", j.State, j.Reason)
	}
	now := time.Now().UTC()
	monday := time.Date(now.Year(), now.Month(), now.Day(), 6, 0, 0, 0, time.UTC).AddDate(0, 0, 7-(int(now.Weekday())+6)%7)
	d.withDispatchClock(monday)
	var ids []string
	for range 2 {
		resp := d.handle(mustRead(t, "../events/summary-schedule.json"))
		if len(resp.Tables) != 1 || resp.Tables[0].Action != trigger.ActionSummarized {
			t.Fatalf("summary: %+v", resp)
		}
		ids = append(ids, resp.Tables[0].Table)
	}
	_, _, week := summary.Week(monday)
	if ids[0] != ids[1] || ids[0] != plannerstage.Deployment(d.cfg)+"/"+week {
		t.Errorf("summary ids %v", ids)
	}
	jsonKey, _ := summary.Keys(week)
	b, err := d.deps.Blobs.Get(d.ctx, d.deps.Blobs.Key(jsonKey))
	if err != nil {
		t.Fatal(err)
	}
	var s summary.Summary
	if err := json.Unmarshal(b, &s); err != nil {
		t.Fatal(err)
	}
	if s.Totals.Tables != 1 || s.Totals.Jobs != 1 || s.Totals.Committed != 1 || s.Totals.FilesRemoved <= 0 || s.Totals.CostUSD <= 0 ||
		len(s.Tables) != 1 || s.Tables[0].Score == nil {
		t.Errorf("the week's summary %+v", s)
	}
	if _, err := d.deps.Blobs.Get(d.ctx, d.deps.Blobs.Key(summary.LatestHTML)); err != nil {
		t.Errorf("no latest page: %v", err)
	}
	var sent []summary.Event
	for _, e := range d.events.entries {
		if e["detail-type"] != summary.DetailType {
			continue
		}
		var ev summary.Event
		if err := json.Unmarshal([]byte(e["detail"]), &ev); err != nil {
			t.Fatal(err)
		}
		if e["source"] != "icekeeper" || len(e["detail"]) > summary.MaxDetailBytes {
			t.Errorf("event %v", e)
		}
		sent = append(sent, ev)
	}
	if len(sent) != 2 || sent[0].ID != sent[1].ID || sent[0].ID != ids[0] || sent[0].JSONKey != d.deps.Blobs.Key(jsonKey) || sent[0].Totals.Jobs != 1 {
		t.Errorf("events %+v", sent)
	}
}
