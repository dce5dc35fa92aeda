// Package layouttrial decides whether a layout icekeeper changed a table
// to has proved itself: after the new sort order or z-order has reached
// the table's most-queried partitions, it compares the bytes read per
// query on the rewritten partitions, after their rewrite, with the same
// partitions before the change and with the untouched partitions over the
// same days (the control: a week when every query reads more is not the
// layout's fault). The verdict is keep (the rollout continues), revert
// (the table's previous layout comes back, in one commit that rewrites no
// file) or pending (the rollout waits).
//
// The trial is recorded on the table by the layout change's own commit
// (PropertyTrial: the layout, the order and strategy it replaced, when),
// so the planner finds it, and the revert knows what to restore, from the
// table alone. A reverted layout is recorded in PropertyRejected: the
// query signals bring it back only on windows wholly after the rejection
// (package sustain).
//
// Invariants:
//   - Judge is a pure function of the trial, the partitions' rewrite
//     times and the recorded query days; its evidence windows are whole
//     UTC days fixed by the trial's start, so the same evidence gives the
//     same verdict. The planner records the first keep or revert and never
//     decides a trial twice.
//   - A verdict is reached only on evidence: at least MinQueries queries
//     on the rewritten partitions both before and after; until then it is
//     pending. Keep needs the rewritten partitions' bytes per query to
//     fall by at least MinGain more than the untouched partitions' did
//     (or than nothing, without a control).
//   - Revert never rewrites a file: it restores the table's previous sort
//     order (an order the metadata still holds) and strategy.
package layouttrial

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/optin"
	"github.com/icekeeper/icekeeper/shared/signals"
)

// Table properties.
const (
	// PropertyTrial is written by the layout change's commit:
	// "<layout>:<col,col>;from-order=<id>;from-strategy=<s>;from-z=<col,col>;at=<RFC3339>".
	PropertyTrial = "icekeeper.layout.trial"
	// PropertyRejected lists the layouts a trial reverted:
	// "<layout>:<col,col>@<RFC3339>" separated by ';' (newest last, at
	// most MaxRejected).
	PropertyRejected = "icekeeper.layout.rejected"
)

// MaxRejected bounds PropertyRejected's entries.
const MaxRejected = 8

// ErrBadProperty: PropertyTrial or PropertyRejected does not parse.
var ErrBadProperty = errors.New("layouttrial: malformed property")

// Trial is a layout change on trial.
type Trial struct {
	Layout  string
	Columns []string
	// FromOrderID is the sort order the change replaced, FromStrategy and
	// FromZOrder the compaction strategy and z-order columns it replaced
	// ("" when unset).
	FromOrderID  int
	FromStrategy string
	FromZOrder   []string
	At           time.Time
}

// Key names the trial (its layout and start), for recording its verdict.
func (t Trial) Key() string {
	return t.Layout + ":" + strings.Join(t.Columns, ",") + "@" + t.At.UTC().Format(time.RFC3339)
}

// Format is t as PropertyTrial holds it.
func (t Trial) Format() string {
	return fmt.Sprintf("%s:%s;from-order=%d;from-strategy=%s;from-z=%s;at=%s", t.Layout, strings.Join(t.Columns, ","),
		t.FromOrderID, t.FromStrategy, strings.Join(t.FromZOrder, ","), t.At.UTC().Format(time.RFC3339))
}

// ParseTrial reads PropertyTrial; ok is false when it is unset.
func ParseTrial(props map[string]string) (Trial, bool, error) {
	v := strings.TrimSpace(props[PropertyTrial])
	if v == "" {
		return Trial{}, false, nil
	}
	parts := strings.Split(v, ";")
	layout, cols, ok := strings.Cut(parts[0], ":")
	if !ok || (layout != "sort" && layout != "z-order") || cols == "" {
		return Trial{}, false, fmt.Errorf("%w: %s=%q: want layout:columns first", ErrBadProperty, PropertyTrial, v)
	}
	t := Trial{Layout: layout, Columns: strings.Split(cols, ",")}
	for _, kv := range parts[1:] {
		k, val, _ := strings.Cut(kv, "=")
		var err error
		switch k {
		case "from-order":
			t.FromOrderID, err = strconv.Atoi(val)
		case "from-strategy":
			t.FromStrategy = val
		case "from-z":
			if val != "" {
				t.FromZOrder = strings.Split(val, ",")
			}
		case "at":
			t.At, err = time.Parse(time.RFC3339, val)
		}
		if err != nil {
			return Trial{}, false, fmt.Errorf("%w: %s=%q: %s: %v", ErrBadProperty, PropertyTrial, v, k, err)
		}
	}
	if t.At.IsZero() {
		return Trial{}, false, fmt.Errorf("%w: %s=%q: no at=", ErrBadProperty, PropertyTrial, v)
	}
	return t, true, nil
}

// Current reports whether the table is still in the trial's layout: its
// compaction strategy is the trial's and its sort order's columns (sort)
// or its z-order columns (z-order) are the trial's. A table whose owner
// changed the layout meanwhile has no trial any more: nothing is held or
// judged, and nothing is reverted over the owner's change.
func (t Trial) Current(strategy string, sortColumns, zOrderColumns []string) bool {
	if strategy != t.Layout {
		return false
	}
	if t.Layout == "sort" {
		return slices.Equal(sortColumns, t.Columns)
	}
	return slices.Equal(zOrderColumns, t.Columns)
}

// Active is the table's layout trial, when it has one and is still in
// its layout (Current); the property's parse error otherwise.
func Active(tbl *table.Table) (Trial, bool, error) {
	props := tbl.Properties()
	t, on, err := ParseTrial(props)
	if err != nil || !on {
		return t, false, err
	}
	var sortColumns, zColumns []string
	for _, f := range tbl.SortOrder().Fields() {
		if name, ok := tbl.Schema().FindColumnName(f.SourceID()); ok {
			sortColumns = append(sortColumns, name)
		}
	}
	for _, c := range strings.Split(props[optin.PropertyZOrderColumns], ",") {
		if c = strings.TrimSpace(c); c != "" {
			zColumns = append(zColumns, c)
		}
	}
	return t, t.Current(strings.TrimSpace(props[optin.PropertyCompactionStrategy]), sortColumns, zColumns), nil
}

// Rejection is a layout a trial reverted, and when.
type Rejection struct {
	Layout  string    `json:"layout"`
	Columns []string  `json:"columns"`
	At      time.Time `json:"at"`
}

// ParseRejected reads PropertyRejected (unset: none).
func ParseRejected(props map[string]string) ([]Rejection, error) {
	var out []Rejection
	for _, e := range strings.Split(props[PropertyRejected], ";") {
		if strings.TrimSpace(e) == "" {
			continue
		}
		lc, at, ok1 := strings.Cut(strings.TrimSpace(e), "@")
		layout, cols, ok2 := strings.Cut(lc, ":")
		when, err := time.Parse(time.RFC3339, at)
		if !ok1 || !ok2 || cols == "" || err != nil {
			return nil, fmt.Errorf("%w: %s entry %q: want layout:columns@time", ErrBadProperty, PropertyRejected, e)
		}
		out = append(out, Rejection{Layout: layout, Columns: strings.Split(cols, ","), At: when})
	}
	return out, nil
}

// WithRejected is PropertyRejected's value with r added (the oldest
// dropped beyond MaxRejected).
func WithRejected(props map[string]string, r Rejection) (string, error) {
	rs, err := ParseRejected(props)
	if err != nil {
		return "", err
	}
	rs = append(rs, r)
	if len(rs) > MaxRejected {
		rs = rs[len(rs)-MaxRejected:]
	}
	out := make([]string, len(rs))
	for i, x := range rs {
		out[i] = x.Layout + ":" + strings.Join(x.Columns, ",") + "@" + x.At.UTC().Format(time.RFC3339)
	}
	return strings.Join(out, ";"), nil
}

// Partition is one of the table's partitions (named as the health report
// names them: field=value/field=value) and when the trial's layout first
// reached it (zero: not yet).
type Partition struct {
	Name        string
	RewrittenAt time.Time
}

// Rules tune Judge.
type Rules struct {
	// Window is the days of evidence on each side (before the change,
	// after the rewrite), grown a window at a time, up to MaxWindows,
	// until both have MinQueries.
	Window     int
	MaxWindows int
	MinQueries int64
	// MinGain is the least relative fall in bytes per query, beyond the
	// control's, that counts as measurably better.
	MinGain float64
}

// DefaultRules: a week each side (grown to four), 20 queries, 10%.
var DefaultRules = Rules{Window: 7, MaxWindows: 4, MinQueries: 20, MinGain: 0.1}

// Decisions.
const (
	Pending = "pending"
	Keep    = "keep"
	Revert  = "revert"
)

// Side is the queries of some partitions over some days.
type Side struct {
	Queries int64 `json:"queries"`
	Bytes   int64 `json:"bytes"`
}

// PerQuery is the bytes read per query (0 without queries).
func (s Side) PerQuery() float64 {
	if s.Queries == 0 {
		return 0
	}
	return float64(s.Bytes) / float64(s.Queries)
}

// Evidence is a trial's numbers.
type Evidence struct {
	// Rewritten are the partition values the layout reached before the
	// after window, Untouched those it had not reached by its end.
	RewrittenBefore Side `json:"rewritten_before"`
	RewrittenAfter  Side `json:"rewritten_after"`
	UntouchedBefore Side `json:"untouched_before"`
	UntouchedAfter  Side `json:"untouched_after"`
	// Gain is the rewritten partitions' fall in bytes per query beyond
	// the control's: 1 - (after/before) / (control after/control before),
	// or 1 - after/before without a control.
	Gain float64 `json:"gain"`
	// Control: the untouched partitions had MinQueries on both sides.
	Control bool `json:"control"`
	// Before and After are the windows' first days and AfterEnd the day
	// after the last.
	Before   string `json:"before_from"`
	After    string `json:"after_from"`
	AfterEnd string `json:"after_until"`
}

// Verdict is Judge's decision.
type Verdict struct {
	Trial    string   `json:"trial"`
	Decision string   `json:"decision"`
	Why      string   `json:"why"`
	Evidence Evidence `json:"evidence"`
}

// Judge decides a trial as of now from the partitions' rewrite times and
// the query days.
func Judge(t Trial, parts []Partition, days []signals.Day, now time.Time, r Rules) Verdict {
	if r.Window <= 0 {
		r = DefaultRules
	}
	v := Verdict{Trial: t.Key(), Decision: Pending}
	// When the layout first reached a partition: the after window starts
	// the next whole day.
	var first time.Time
	for _, p := range parts {
		if !p.RewrittenAt.IsZero() && (first.IsZero() || p.RewrittenAt.Before(first)) {
			first = p.RewrittenAt
		}
	}
	if first.IsZero() {
		v.Why = fmt.Sprintf("the %s on %s has reached no partition yet", t.Layout, strings.Join(t.Columns, ", "))
		return v
	}
	startDay := func(x time.Time) time.Time {
		d := x.UTC().Truncate(24 * time.Hour)
		return d
	}
	change := startDay(t.At)
	after := startDay(first).AddDate(0, 0, 1)
	// Each partition field value is rewritten when every partition that
	// holds it was reached before the after window, untouched when none
	// was reached by the window's end; the others (mixed) do not count.
	byValue := map[string][]Partition{}
	for _, p := range parts {
		for _, pair := range strings.Split(p.Name, "/") {
			byValue[pair] = append(byValue[pair], p)
		}
	}
	for k := 1; k <= max(1, r.MaxWindows); k++ {
		end := after.AddDate(0, 0, k*r.Window)
		before := change.AddDate(0, 0, -k*r.Window)
		e := Evidence{Before: before.Format(time.DateOnly), After: after.Format(time.DateOnly), AfterEnd: end.Format(time.DateOnly)}
		class := map[string]int{} // 1 rewritten, 2 untouched
		for val, ps := range byValue {
			reached, untouched := true, true
			for _, p := range ps {
				if p.RewrittenAt.IsZero() || !p.RewrittenAt.Before(after) {
					reached = false
				}
				if !p.RewrittenAt.IsZero() && p.RewrittenAt.Before(end) {
					untouched = false
				}
			}
			switch {
			case reached:
				class[val] = 1
			case untouched:
				class[val] = 2
			}
		}
		for _, d := range days {
			day, err := time.Parse(time.DateOnly, d.Date)
			if err != nil {
				continue
			}
			inBefore := !day.Before(before) && day.Before(change)
			inAfter := !day.Before(after) && day.Before(end)
			if !inBefore && !inAfter {
				continue
			}
			for val, q := range d.Partitions {
				var s *Side
				switch {
				case class[val] == 1 && inBefore:
					s = &e.RewrittenBefore
				case class[val] == 1:
					s = &e.RewrittenAfter
				case class[val] == 2 && inBefore:
					s = &e.UntouchedBefore
				case class[val] == 2:
					s = &e.UntouchedAfter
				default:
					continue
				}
				s.Queries += q
				s.Bytes += d.PartitionBytes[val]
			}
		}
		v.Evidence = e
		enough := e.RewrittenBefore.Queries >= r.MinQueries && e.RewrittenAfter.Queries >= r.MinQueries
		if !enough || now.Before(end) {
			if now.Before(end) || k == max(1, r.MaxWindows) {
				v.Why = fmt.Sprintf("waiting for evidence: %d queries on the rewritten partitions before the change and %d after (from %s until %s); %d each needed", e.RewrittenBefore.Queries, e.RewrittenAfter.Queries, e.After, e.AfterEnd, r.MinQueries)
				return v
			}
			continue
		}
		return decide(v, t, r)
	}
	return v
}

// decide turns complete evidence into keep or revert.
func decide(v Verdict, t Trial, r Rules) Verdict {
	e := &v.Evidence
	ratio := e.RewrittenAfter.PerQuery() / math.Max(e.RewrittenBefore.PerQuery(), 1e-9)
	control := 1.0
	e.Control = e.UntouchedBefore.Queries >= r.MinQueries && e.UntouchedAfter.Queries >= r.MinQueries && e.UntouchedBefore.PerQuery() > 0
	if e.Control {
		control = e.UntouchedAfter.PerQuery() / e.UntouchedBefore.PerQuery()
	}
	e.Gain = 1 - ratio/math.Max(control, 1e-9)
	numbers := fmt.Sprintf("rewritten partitions %s per query before, %s after (%d and %d queries)", signals.HumanBytes(e.RewrittenBefore.PerQuery()), signals.HumanBytes(e.RewrittenAfter.PerQuery()), e.RewrittenBefore.Queries, e.RewrittenAfter.Queries)
	if e.Control {
		numbers += fmt.Sprintf("; untouched partitions %s before, %s after (%d and %d queries)", signals.HumanBytes(e.UntouchedBefore.PerQuery()), signals.HumanBytes(e.UntouchedAfter.PerQuery()), e.UntouchedBefore.Queries, e.UntouchedAfter.Queries)
	} else {
		numbers += "; no untouched partitions with enough queries to compare with"
	}
	layout := t.Layout + " on " + strings.Join(t.Columns, ", ")
	if e.Gain >= r.MinGain {
		v.Decision = Keep
		v.Why = fmt.Sprintf("the %s reads %.0f%% less per query than the old layout (%.0f%% needed): %s", layout, 100*e.Gain, 100*r.MinGain, numbers)
	} else {
		v.Decision = Revert
		v.Why = fmt.Sprintf("the %s does not measurably beat the old layout (%.0f%% less per query, %.0f%% needed): %s", layout, 100*e.Gain, 100*r.MinGain, numbers)
	}
	return v
}
