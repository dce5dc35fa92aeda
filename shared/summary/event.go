package summary

import "github.com/icekeeper/icekeeper/events"

// DetailType is the detail-type of the weekly summary's event (source
// "icekeeper", audit.Source), put on the stack's bus (the default bus
// unless ICEKEEPER_EVENT_BUS says otherwise).
const DetailType = events.DetailTypeSummary

// MaxDetailBytes bounds the event's detail. A PutEvents entry must be
// under 256 KB, counting its source, detail-type and detail (Amazon
// EventBridge User Guide, "Calculating Amazon EventBridge PutEvents event
// entry size"); the detail holds totals and keys only, a few hundred bytes
// whatever the deployment's size, and Event refuses more than this.
const MaxDetailBytes = 8 << 10

// Event is the weekly summary event's detail: the totals and where the
// summary is. ID is deterministic (the deployment and the week), so a
// rule's target can drop a repeated week.
type Event struct {
	ID         string `json:"summary_id"`
	Deployment string `json:"deployment"`
	Week       string `json:"week"`
	From       string `json:"from"`
	To         string `json:"to"`
	Totals     Totals `json:"totals"`
	// Bucket and the keys of the week's JSON and HTML, and of the latest.
	Bucket     string `json:"bucket,omitempty"`
	JSONKey    string `json:"json_key"`
	HTMLKey    string `json:"html_key"`
	LatestJSON string `json:"latest_json_key"`
	LatestHTML string `json:"latest_html_key"`
}

// EventOf is s's event, with the keys it was written to.
func EventOf(s Summary, bucket, jsonKey, htmlKey, latestJSON, latestHTML string) Event {
	return Event{ID: s.ID, Deployment: s.Deployment, Week: s.Week, From: s.From.Format("2006-01-02"), To: s.To.Format("2006-01-02"),
		Totals: s.Totals, Bucket: bucket, JSONKey: jsonKey, HTMLKey: htmlKey, LatestJSON: latestJSON, LatestHTML: latestHTML}
}
