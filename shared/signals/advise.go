package signals

import (
	"fmt"
	"slices"
	"time"

	"github.com/icekeeper/icekeeper/shared/sustain"
	"github.com/icekeeper/icekeeper/shared/workload"
)

// Policy is what a table's owner set for its layout advice (its
// properties, read by PolicyOf).
type Policy struct {
	// Class is workload.PropertyClass's value ("" or auto: the costliest).
	Class string
	// Windows is how many consecutive windows of Width a change needs
	// (sustain.PropertyWindows; 0: sustain.DefaultWindows).
	Windows int
	Width   time.Duration
}

// PolicyOf reads a table's layout policy from its properties; a malformed
// value is an error naming the property.
func PolicyOf(props map[string]string) (Policy, error) {
	p := Policy{Class: props[workload.PropertyClass], Windows: sustain.DefaultWindows, Width: sustain.DefaultWidth}
	if _, err := workload.Choose(p.Class, nil); err != nil {
		return p, err
	}
	n, err := sustain.WindowsOf(props)
	if err != nil {
		return p, fmt.Errorf("signals: %w", err)
	}
	p.Windows = n
	return p, nil
}

// ClassAdvice is one workload class's signals and the layout they ask
// for.
type ClassAdvice struct {
	Class          string         `json:"class"`
	Queries        float64        `json:"queries"`
	BytesScanned   float64        `json:"bytes_scanned"`
	Columns        []ColumnSignal `json:"columns"`
	Recommendation Recommendation `json:"recommendation"`
}

// Advice is the layout advice of a table: each class's recommendation
// side by side, the class the layout serves, and its recommendation (the
// one the planner acts on).
type Advice struct {
	Choice         workload.Choice `json:"class_choice"`
	Classes        []ClassAdvice   `json:"classes"`
	Recommendation Recommendation  `json:"recommendation"`
}

// Advise recommends a layout per workload class (Recommend on the class's
// days) and chooses the class the table's layout serves. A change must be
// sustained (the new leading column leads each of the last p.Windows
// windows, package sustain) and, for a layout a trial rejected, sustained
// on windows after the rejection only; otherwise Change is false and Why
// says what is missing.
func Advise(days []Day, now time.Time, t Table, g Guard, p Policy) (Advice, error) {
	choice, err := workload.Choose(p.Class, ClassCosts(days, now, DefaultHalfLife))
	if err != nil {
		return Advice{}, err
	}
	a := Advice{Choice: choice}
	for _, class := range workload.Classes() {
		cd := OfClass(days, class)
		ranked, queries := Aggregate(cd, now, DefaultHalfLife)
		if queries == 0 && class != choice.Class {
			continue
		}
		var bytes float64
		for _, d := range cd {
			bytes += dayWeight(d.Date, now, DefaultHalfLife) * float64(d.BytesScanned)
		}
		rec := Recommend(ranked, queries, t, g)
		if rec.Change {
			sustained(&rec, cd, now, t, p)
		}
		ca := ClassAdvice{Class: class, Queries: queries, BytesScanned: bytes, Columns: ranked, Recommendation: rec}
		a.Classes = append(a.Classes, ca)
		if class == choice.Class {
			a.Recommendation = rec
		}
	}
	return a, nil
}

// sustained withdraws a change its windows do not sustain.
func sustained(rec *Recommendation, days []Day, now time.Time, t Table, p Policy) {
	width := p.Width
	if width <= 0 {
		width = sustain.DefaultWidth
	}
	need := max(1, p.Windows)
	rule := sustain.Rule{Need: need}
	if at, ok := t.Rejected[LayoutKey(rec.Layout, rec.Columns)]; ok {
		rule.Since = at
	}
	windows := Windows(days, now, width, need+1, t.PartitionSources)
	ok, why := sustain.Sustained(windows, rec.Columns[0], rule)
	if !ok {
		rec.Change = false
		prefix := ""
		if !rule.Since.IsZero() {
			prefix = fmt.Sprintf("a trial rejected this layout on %s; ", rule.Since.UTC().Format(time.DateOnly))
		}
		rec.Why = fmt.Sprintf("%s, but the change is not sustained yet: %s%s", rec.Why, prefix, why)
		return
	}
	rec.Why = fmt.Sprintf("%s; %s", rec.Why, why)
}

// Windows splits the days into count consecutive windows of width ending
// with now's UTC day, oldest first, each with its leading column
// (Aggregate's first, partition sources excluded) and queries. Signals are
// counted by UTC day, so the windows are whole days: the newest one ends at
// the end of today and holds today's queries at any hour (windows ending
// at now itself left today out before noon, since a day is placed by its
// noon, and a change sustained in the afternoon was not in the morning).
func Windows(days []Day, now time.Time, width time.Duration, count int, exclude []string) []sustain.Window {
	var out []sustain.Window
	today := now.UTC().Truncate(24 * time.Hour).Add(24 * time.Hour)
	for i := count - 1; i >= 0; i-- {
		end := today.Add(-time.Duration(i) * width)
		w := sustain.Window{Start: end.Add(-width), End: end}
		var in []Day
		for _, d := range days {
			day, err := time.Parse(time.DateOnly, d.Date)
			if err != nil {
				continue
			}
			noon := day.Add(12 * time.Hour)
			if !noon.Before(w.Start) && noon.Before(end) {
				in = append(in, d)
			}
		}
		ranked, _ := Aggregate(in, end, DefaultHalfLife)
		for _, d := range in {
			w.Queries += float64(d.Queries)
		}
		for _, c := range ranked {
			if !slices.Contains(exclude, c.Column) {
				w.Leader = c.Column
				break
			}
		}
		out = append(out, w)
	}
	return out
}
