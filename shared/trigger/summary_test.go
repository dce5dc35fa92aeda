package trigger

import (
	"errors"
	"slices"
	"testing"

	"github.com/icekeeper/icekeeper/events"
	"github.com/icekeeper/icekeeper/shared/config"
)

// TestDispatch_SummaryScheduleSummarizesTheGrantedTablesAndRetriesAFailure:
// the weekly rule's trigger summarizes every granted table (a granted
// namespace's tables and tables granted by name), plans nothing, and a
// failure to publish fails the trigger (retried; the week's keys and id
// do not change); without a summarizer it is ignored, in mode off ignored.
func TestDispatch_SummaryScheduleSummarizesTheGrantedTablesAndRetriesAFailure(t *testing.T) {
	trig := events.Trigger{Kind: events.KindSummarySchedule, Sweep: true, ID: "e"}
	r := newRig(t, config.ModeActive, "demo.*,sales.orders")
	r.add(t, "demo.a", optedIn(), due)
	r.add(t, "demo.b", map[string]string{}, Assessment{})
	r.add(t, "other.c", optedIn(), due)
	out, err := r.dispatch(t, trig)
	if err != nil {
		t.Fatal(err)
	}
	if len(out.Tables) != 1 || out.Tables[0].Action != ActionSummarized || out.Tables[0].Table != "test/2026-W48" || out.Tables[0].ReportKey != "summary/2026-W48.json" {
		t.Fatalf("outcome %+v", out.Tables)
	}
	if len(r.summary.calls) != 1 || !slices.Equal(r.summary.calls[0], []string{"demo.a", "demo.b", "sales.orders"}) {
		t.Errorf("summarized %v, want the granted tables", r.summary.calls)
	}
	if got := r.planner.actions(); len(got) != 0 {
		t.Errorf("the summary planned %v", got)
	}

	r.summary.err = errTransient
	if _, err := r.dispatch(t, trig); !errors.Is(err, errTransient) {
		t.Errorf("a failed publish: %v, want the error returned (retried)", err)
	}

	r.summary = nil
	out, err = r.dispatch(t, trig)
	if err != nil || len(out.Tables) != 1 || out.Tables[0].Skip != SkipNoTableChange {
		t.Errorf("without a summarizer: %+v %v", out.Tables, err)
	}

	off := newRig(t, config.ModeOff, "demo.*")
	if out, err := off.dispatch(t, trig); err != nil || len(off.summary.calls) != 0 || out.Tables[0].Skip != SkipModeOff {
		t.Errorf("mode off: %+v %v, summarized %v", out, err, off.summary.calls)
	}
}
