// Package sustain decides whether a change the query signals ask for is
// sustained or noise: a new layout's leading column must lead the queries
// in each of the last few consecutive windows (weeks by default), not
// only in the decayed sum of them, where one heavy day can tip the
// balance.
//
// Invariants:
//   - A change is sustained only on evidence: Need consecutive windows,
//     the newest ones, each with queries, each led by the column. A
//     window without queries breaks the run (no evidence is not a win).
//   - Evidence older than Since does not count: after a layout was tried
//     and rejected (package layouttrial), only windows wholly after the
//     rejection can bring it back, so the same evidence never flips the
//     table twice.
package sustain

import (
	"fmt"
	"strings"
	"time"
)

// WindowsOf reads PropertyWindows from a table's properties:
// DefaultWindows when it is unset, an error naming the property when it is
// not a whole number from 1.
func WindowsOf(props map[string]string) (int, error) {
	v, ok := props[PropertyWindows]
	if !ok || v == "" {
		return DefaultWindows, nil
	}
	var n int
	if _, err := fmt.Sscanf(v, "%d", &n); err != nil || n < 1 || fmt.Sprint(n) != v {
		return 0, fmt.Errorf("%s=%q: want a whole number from 1", PropertyWindows, v)
	}
	return n, nil
}

// DefaultWindows is how many consecutive windows a new leading column
// must win (the table property PropertyWindows).
const DefaultWindows = 2

// DefaultWidth is a window's width: a week, so that every weekday counts
// once in each.
const DefaultWidth = 7 * 24 * time.Hour

// PropertyWindows is the table property that sets how many consecutive
// windows a layout change needs (a whole number from 1; default
// DefaultWindows).
const PropertyWindows = "icekeeper.layout.sustained-windows"

// Window is one window of query signals and the column its queries
// filtered most.
type Window struct {
	// Start and End bound the window: [Start, End).
	Start, End time.Time
	// Leader is the column that scored most in the window ("" when its
	// queries filtered on no candidate column), Queries the window's
	// queries.
	Leader  string
	Queries float64
}

// Rule is what a change needs.
type Rule struct {
	// Need is the consecutive windows, newest first, the column must
	// lead (at least 1).
	Need int
	// Since: windows starting before it do not count (zero: all count).
	Since time.Time
}

// Sustained reports whether column led the newest Need windows (windows
// oldest first, as Windows makes them), and why or why not.
func Sustained(windows []Window, column string, r Rule) (bool, string) {
	need := max(1, r.Need)
	var run []string
	for i := len(windows) - 1; i >= 0 && len(run) < need; i-- {
		w := windows[i]
		day := w.Start.UTC().Format(time.DateOnly)
		switch {
		case !r.Since.IsZero() && w.Start.Before(r.Since):
			return false, fmt.Sprintf("%s led %d of the %d windows needed since %s (older evidence was already judged)", column, len(run), need, r.Since.UTC().Format(time.DateOnly))
		case w.Queries == 0:
			return false, fmt.Sprintf("%s led %d consecutive windows, %d needed: the window from %s had no queries", column, len(run), need, day)
		case w.Leader != column:
			return false, fmt.Sprintf("%s led %d consecutive windows, %d needed: %s led the window from %s", column, len(run), need, w.Leader, day)
		}
		run = append(run, day)
	}
	if len(run) < need {
		return false, fmt.Sprintf("%s led %d consecutive windows, %d needed: not enough signals yet", column, len(run), need)
	}
	return true, fmt.Sprintf("%s led each of the last %d windows (from %s)", column, need, strings.Join(run, ", "))
}
