package health

import (
	"bytes"
	"encoding/json"
	"reflect"
	"regexp"
	"time"
)

// RefreshAge is how old the published report may be before an unchanged
// one is written again: a report is rewritten at least daily, so that the
// latest report of a table still visited never looks abandoned.
const RefreshAge = 24 * time.Hour

// clockFields are the report's top-level fields that move with the clock
// alone: when it was generated, and the oldest snapshot's age (its time
// is oldest_snapshot_at, compared).
var clockFields = []string{"generated_at", "oldest_snapshot_age_seconds"}

// hotAgo is the part of a hot partition's Why that moves with the clock
// alone (ScopeHot, NoteYoung: "written 1h2m3s ago, ..."); the rest of the
// text renders the partition's fields and the thresholds, compared.
var hotAgo = regexp.MustCompile(`written [0-9a-zµ.]+ ago`)

// Unchanged reports whether next, a published health report about to be
// written, says nothing prev, the one published before, did not, so that
// writing it again can be skipped: the two are equal once the fields that
// move with the clock alone are left out (generated_at,
// oldest_snapshot_age_seconds, and how long ago a hot partition was
// written in its why), and prev was generated less than refresh before
// next. Any other field that differs (the snapshot, the metadata location,
// expirable snapshots, thresholds, the layout advice, a field this
// package does not know) means changed, and so does a report either of
// which cannot be decoded or has no generated_at.
//
// The reports are compared as JSON objects, so fields that are not
// Report's (the planner's layout advice) count too.
func Unchanged(prev, next []byte, refresh time.Duration) bool {
	p, pAt, ok := clockless(prev)
	if !ok {
		return false
	}
	n, nAt, ok := clockless(next)
	if !ok {
		return false
	}
	if age := nAt.Sub(pAt); age < 0 || age >= refresh {
		return false
	}
	return reflect.DeepEqual(p, n)
}

// HistoryInterval is how often at most a table's health history
// (health/<table>/<time>.json) gets a copy of its report: the first
// change of each UTC hour. latest.json still gets every change, and the
// metrics every visit; a table written every few minutes would otherwise
// pay two S3 PUTs a visit.
const HistoryInterval = time.Hour

// HistoryDue reports whether next, a changed report about to be written
// as latest.json, also goes into the table's history: when prev, the
// latest.json it replaces (nil when there was none), was generated in an
// earlier HistoryInterval (UTC hour) than next. latest.json is written at
// every change, so a prev from the same hour means this hour's first
// change already went into the history (written before latest.json). A
// prev or next that cannot be decoded, or has no generated_at, makes the
// copy due: a history gap is worse than a PUT.
func HistoryDue(prev, next []byte) bool {
	pAt, ok := generatedAt(prev)
	if !ok {
		return true
	}
	nAt, ok := generatedAt(next)
	if !ok {
		return true
	}
	return pAt.Truncate(HistoryInterval).Before(nAt.Truncate(HistoryInterval))
}

// generatedAt is a report's generated_at.
func generatedAt(report []byte) (time.Time, bool) {
	var r struct {
		GeneratedAt string `json:"generated_at"`
	}
	if len(report) == 0 || json.Unmarshal(report, &r) != nil {
		return time.Time{}, false
	}
	at, err := time.Parse(time.RFC3339Nano, r.GeneratedAt)
	return at, err == nil
}

// clockless decodes a report into a JSON object without its clock fields,
// and returns its generated_at; ok is false when it is not a JSON object
// with a generated_at.
func clockless(report []byte) (map[string]any, time.Time, bool) {
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(report))
	dec.UseNumber() // numbers compared as written, not as float64
	if err := dec.Decode(&m); err != nil || m == nil {
		return nil, time.Time{}, false
	}
	s, _ := m["generated_at"].(string)
	at, err := time.Parse(time.RFC3339Nano, s)
	if err != nil {
		return nil, time.Time{}, false
	}
	for _, f := range clockFields {
		delete(m, f)
	}
	if hot, ok := m["hot_partitions"].([]any); ok {
		for _, h := range hot {
			if h, ok := h.(map[string]any); ok {
				if why, ok := h["why"].(string); ok {
					h["why"] = hotAgo.ReplaceAllString(why, "written ago")
				}
			}
		}
	}
	return m, at, true
}
