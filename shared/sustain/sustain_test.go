package sustain

import (
	"strings"
	"testing"
	"time"
)

func TestSustained_NeedsTheNewestConsecutiveWindows(t *testing.T) {
	t.Parallel()
	start := time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC)
	weeks := func(leaders ...string) []Window {
		var out []Window
		for i, l := range leaders {
			q := 50.0
			if l == "-" {
				l, q = "", 0
			}
			out = append(out, Window{Start: start.AddDate(0, 0, 7*i), End: start.AddDate(0, 0, 7*i+7), Leader: l, Queries: q})
		}
		return out
	}
	cases := []struct {
		name    string
		windows []Window
		rule    Rule
		want    bool
		why     string
	}{
		{"two weeks led", weeks("id", "region", "region"), Rule{Need: 2}, true, "led each of the last 2"},
		{"one heavy week is noise", weeks("id", "id", "region"), Rule{Need: 2}, false, "id led the window from 2026-11-09"},
		{"led earlier, not lately", weeks("region", "region", "id"), Rule{Need: 2}, false, "led 0 consecutive"},
		{"a quiet week breaks the run", weeks("region", "-", "region"), Rule{Need: 2}, false, "had no queries"},
		{"three needed", weeks("id", "region", "region"), Rule{Need: 3}, false, "id led the window"},
		{"one needed", weeks("id", "region"), Rule{Need: 1}, true, ""},
		{"zero means one", weeks("region"), Rule{}, true, ""},
		{"not enough windows", weeks("region"), Rule{Need: 2}, false, "not enough signals"},
		{"rejected: old evidence does not count", weeks("region", "region", "region"), Rule{Need: 2, Since: start.AddDate(0, 0, 10)}, false, "already judged"},
		{"rejected: new evidence does", weeks("region", "region", "region", "region"), Rule{Need: 2, Since: start.AddDate(0, 0, 14)}, true, ""},
	}
	for _, c := range cases {
		got, why := Sustained(c.windows, "region", c.rule)
		if got != c.want || !strings.Contains(why, c.why) {
			t.Errorf("%s: %v (%s); want %v (%q)", c.name, got, why, c.want, c.why)
		}
	}
}
