package trigger

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/events"
	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/optin"
	"github.com/icekeeper/icekeeper/shared/signals"
)

// TestDispatch_SampleEventsEndAsRecorded decodes each sample event of
// package events (events/*.json, the shapes AWS and icekeeper document)
// and dispatches it in mode active, grants "demo", to a catalog holding
// demo.events (opted in, orphan cleanup on, files to compact, at the
// sample S3 event's location) and demo.clean (opted in, healthy, no
// orphan cleanup). testdata/event_outcomes.json records, per sample, the
// table outcomes and planner calls it must end with; every sample there
// must exist, and every sample must be there.
func TestDispatch_SampleEventsEndAsRecorded(t *testing.T) {
	raw, err := os.ReadFile(filepath.Join("testdata", "event_outcomes.json"))
	if err != nil {
		t.Fatal(err)
	}
	var want []struct {
		Event    string `json:"event"`
		Outcomes []struct {
			Table  string `json:"table"`
			Action Action `json:"action"`
			Skip   string `json:"skip"`
		} `json:"outcomes"`
		Planner []string `json:"planner"`
		Signals int      `json:"signals"`
	}
	if err := json.Unmarshal(raw, &want); err != nil {
		t.Fatal(err)
	}
	samples, err := filepath.Glob(filepath.Join("..", "..", "events", "*.json"))
	if err != nil || len(samples) == 0 {
		t.Fatalf("no sample events (%v)", err)
	}
	listed := map[string]bool{}
	for _, w := range want {
		listed[w.Event] = true
	}
	for _, s := range samples {
		if !listed[filepath.Base(s)] {
			t.Errorf("sample event %s has no recorded outcome in testdata/event_outcomes.json", filepath.Base(s))
		}
	}
	for _, w := range want {
		t.Run(w.Event, func(t *testing.T) {
			body, err := os.ReadFile(filepath.Join("..", "..", "events", w.Event))
			if err != nil {
				t.Fatal(err)
			}
			trig, err := events.Decode(body)
			if err != nil {
				t.Fatalf("Decode: %v", err)
			}
			r := newRig(t, config.ModeActive, "demo")
			r.cat.tables["demo.events"] = memTableAt(t, "demo.events", "s3://lakehouse/warehouse/demo.db/events", optedIn(optin.PropertyOrphansEnabled, "true"))
			r.assessor.byTable["demo.events"] = due
			r.add(t, "demo.clean", optedIn(), Assessment{})
			r.planner.results["compaction"] = planned
			r.planner.results["orphans"] = planned
			r.signals = &fakeSignals{}
			r.queries = &fakeQueries{obs: []signals.Observation{{Table: "demo.events", BytesScanned: 1}}}
			out, err := r.dispatch(t, trig)
			if err != nil {
				t.Fatalf("Dispatch: %v", err)
			}
			if len(out.Tables) != len(w.Outcomes) {
				t.Fatalf("outcomes %+v, want %+v", out.Tables, w.Outcomes)
			}
			for i, o := range out.Tables {
				if e := w.Outcomes[i]; o.Table != e.Table || o.Action != e.Action || o.Skip != e.Skip {
					t.Errorf("outcome %d: %s %s %s, want %s %s %s", i, o.Table, o.Action, o.Skip, e.Table, e.Action, e.Skip)
				}
			}
			if got := r.planner.actions(); !slices.Equal(got, w.Planner) {
				t.Errorf("planner asked for %v, want %v", got, w.Planner)
			}
			if len(r.signals.recorded) != w.Signals {
				t.Errorf("%d query signals recorded, want %d", len(r.signals.recorded), w.Signals)
			}
		})
	}
}

// memTableAt is memTable at location loc.
func memTableAt(t *testing.T, name, loc string, props map[string]string) *table.Table {
	t.Helper()
	tbl := memTable(t, name, props)
	meta, err := table.NewMetadata(tbl.Schema(), iceberg.UnpartitionedSpec, table.UnsortedSortOrder, loc, iceberg.Properties(props))
	if err != nil {
		t.Fatal(err)
	}
	return table.New(tbl.Identifier(), meta, loc+"/metadata/v1.metadata.json", nil, nil)
}
