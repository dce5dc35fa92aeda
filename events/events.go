// Package events decodes the events that wake the planner into one form: the
// tables to plan and why.
//
// Accepted (EventBridge envelopes):
//   - "Scheduled Event" from aws.events: a sweep over the configured tables.
//   - "Glue Data Catalog Table State Change" from aws.glue: detail.databaseName
//     is the namespace, detail.changedTables the tables.
//
// Anything else, or a malformed event, is rejected with ErrRejected and a
// message saying why; the planner logs and counts it and never retries it.
// The JSON files beside this file are real-shaped samples of each event,
// used by the tests and by `icekeeper invoke planner --event`.
package events

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	lambdaevents "github.com/aws/aws-lambda-go/events"
)

// ErrRejected means the event is malformed or not one the planner handles.
// It is terminal: retrying the same event cannot succeed.
var ErrRejected = errors.New("events: rejected")

// Kinds of trigger.
const (
	KindSchedule = "schedule"
	KindGlue     = "glue_table_state_change"
)

// Detail types and sources.
const (
	DetailTypeSchedule = "Scheduled Event"
	SourceSchedule     = "aws.events"
	DetailTypeGlue     = "Glue Data Catalog Table State Change"
	SourceGlue         = "aws.glue"
)

// Trigger is a decoded event.
type Trigger struct {
	Kind string `json:"kind"`
	// Tables are dotted table names ("ns.table"). Empty for a sweep, whose
	// tables come from configuration.
	Tables []string `json:"tables,omitempty"`
	// Sweep means: visit every configured table.
	Sweep bool `json:"sweep,omitempty"`
	// ID is the event id, for logs.
	ID string `json:"id,omitempty"`
}

type glueDetail struct {
	DatabaseName  string   `json:"databaseName"`
	ChangedTables []string `json:"changedTables"`
	TypeOfChange  string   `json:"typeOfChange"`
}

// Decode decodes one EventBridge event.
func Decode(raw []byte) (Trigger, error) {
	var ev lambdaevents.CloudWatchEvent
	if err := json.Unmarshal(raw, &ev); err != nil {
		return Trigger{}, fmt.Errorf("%w: not an EventBridge event: %v", ErrRejected, err)
	}
	switch {
	case ev.DetailType == DetailTypeSchedule && ev.Source == SourceSchedule:
		return Trigger{Kind: KindSchedule, Sweep: true, ID: ev.ID}, nil
	case ev.DetailType == DetailTypeGlue && ev.Source == SourceGlue:
		var d glueDetail
		if err := json.Unmarshal(ev.Detail, &d); err != nil {
			return Trigger{}, fmt.Errorf("%w: glue event %s: bad detail: %v", ErrRejected, ev.ID, err)
		}
		if strings.TrimSpace(d.DatabaseName) == "" {
			return Trigger{}, fmt.Errorf("%w: glue event %s: detail.databaseName is empty", ErrRejected, ev.ID)
		}
		if len(d.ChangedTables) == 0 {
			return Trigger{}, fmt.Errorf("%w: glue event %s: detail.changedTables is empty", ErrRejected, ev.ID)
		}
		seen := map[string]bool{}
		var tables []string
		for _, t := range d.ChangedTables {
			t = strings.TrimSpace(t)
			if t == "" || strings.Contains(t, ".") {
				return Trigger{}, fmt.Errorf("%w: glue event %s: bad table name %q", ErrRejected, ev.ID, t)
			}
			name := d.DatabaseName + "." + t
			if !seen[name] {
				seen[name] = true
				tables = append(tables, name)
			}
		}
		sort.Strings(tables)
		return Trigger{Kind: KindGlue, Tables: tables, ID: ev.ID}, nil
	case ev.DetailType == "" && ev.Source == "":
		return Trigger{}, fmt.Errorf("%w: event has no source or detail-type", ErrRejected)
	default:
		return Trigger{}, fmt.Errorf("%w: unsupported event %q from %q", ErrRejected, ev.DetailType, ev.Source)
	}
}
