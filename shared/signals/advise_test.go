package signals

import (
	"strings"
	"testing"
	"time"
)

// load records, for each of count days ending at noon's day (back from
// daysAgo), n queries of class filtering column col (a point filter),
// each scanning bytes.
type load struct {
	class    string
	col      string
	from, to int // days ago, inclusive
	n, bytes int64
}

func recorded(loads ...load) []Day {
	by := map[string]*Day{}
	var order []string
	for _, l := range loads {
		for ago := l.from; ago >= l.to; ago-- {
			date := DateOf(noon.AddDate(0, 0, -ago))
			d, ok := by[date]
			if !ok {
				d = &Day{Date: date, Columns: map[string]ColumnDay{}, Classes: map[string]ClassDay{}}
				by[date] = d
				order = append(order, date)
			}
			d.Queries += l.n
			d.BytesScanned += l.n * l.bytes
			c := d.Columns[l.col]
			c.Filters, c.Point, c.BytesScanned = c.Filters+l.n, c.Point+l.n, c.BytesScanned+l.n*l.bytes
			d.Columns[l.col] = c
			cd := d.Classes[l.class]
			if cd.Columns == nil {
				cd.Columns = map[string]ColumnDay{}
			}
			cd.Queries += l.n
			cd.BytesScanned += l.n * l.bytes
			cc := cd.Columns[l.col]
			cc.Filters, cc.Point, cc.BytesScanned = cc.Filters+l.n, cc.Point+l.n, cc.BytesScanned+l.n*l.bytes
			cd.Columns[l.col] = cc
			d.Classes[l.class] = cd
		}
	}
	var out []Day
	for _, date := range order {
		out = append(out, *by[date])
	}
	return out
}

func TestAdvise_RecommendsPerClassAndServesTheChosenOne(t *testing.T) {
	t.Parallel()
	days := recorded(
		load{"dashboard", "region", 20, 0, 10, 1 << 20}, // many cheap queries
		load{"pipeline", "ts", 20, 0, 3, 1 << 30},       // few costly ones
		load{"agent", "id", 20, 0, 3, 1 << 10},
	)
	cases := []struct {
		class, want, chosen string
	}{
		{"", "ts", "pipeline"},
		{"auto", "ts", "pipeline"},
		{"dashboard", "region", "dashboard"},
		{"agent", "id", "agent"},
	}
	for _, c := range cases {
		a, err := Advise(days, noon, Table{}, DefaultGuard, Policy{Class: c.class, Windows: 2})
		if err != nil {
			t.Fatal(err)
		}
		if a.Choice.Class != c.chosen || len(a.Recommendation.Columns) == 0 || a.Recommendation.Columns[0] != c.want {
			t.Errorf("class %q: chose %s, %+v; want %s on %s", c.class, a.Choice.Class, a.Recommendation, c.chosen, c.want)
		}
		if len(a.Classes) != 3 {
			t.Errorf("class %q: %d classes side by side, want 3", c.class, len(a.Classes))
		}
	}
	if _, err := Advise(days, noon, Table{}, DefaultGuard, Policy{Class: "reports"}); err == nil {
		t.Error("an unknown class in the property was accepted")
	}
}

func TestAdvise_AChangeMustBeSustained(t *testing.T) {
	t.Parallel()
	rejectedAt := func(ago int) map[string]time.Time {
		return map[string]time.Time{LayoutKey(LayoutSort, []string{"region"}): noon.AddDate(0, 0, -ago)}
	}
	cases := []struct {
		name    string
		days    []Day
		table   Table
		windows int
		change  bool
		why     string
	}{
		{"two weeks led", recorded(load{"adhoc", "region", 20, 0, 10, 1 << 20}), Table{}, 2, true, "led each of the last 2 windows"},
		{"one heavy week after three of another", recorded(load{"adhoc", "id", 27, 7, 5, 1 << 20}, load{"adhoc", "region", 6, 0, 100, 1 << 20}), Table{}, 2, false, "not sustained yet"},
		{"the same with one window needed", recorded(load{"adhoc", "id", 27, 7, 5, 1 << 20}, load{"adhoc", "region", 6, 0, 100, 1 << 20}), Table{}, 1, true, ""},
		{"rejected 10 days ago: old evidence does not count", recorded(load{"adhoc", "region", 27, 0, 10, 1 << 20}), Table{Rejected: rejectedAt(10)}, 2, false, "a trial rejected this layout"},
		{"rejected 15 days ago: two new weeks do", recorded(load{"adhoc", "region", 27, 0, 10, 1 << 20}), Table{Rejected: rejectedAt(15)}, 2, true, ""},
	}
	for _, c := range cases {
		a, err := Advise(c.days, noon, c.table, DefaultGuard, Policy{Windows: c.windows})
		if err != nil {
			t.Fatal(err)
		}
		if r := a.Recommendation; r.Change != c.change || !strings.Contains(r.Why, c.why) {
			t.Errorf("%s: change %v (%s); want %v (%q)", c.name, r.Change, r.Why, c.change, c.why)
		}
	}
}

func TestRecommend_LeavesOutASecondColumnImpliedOrCorrelated(t *testing.T) {
	t.Parallel()
	ranked := []ColumnSignal{{Column: "id", Queries: 50, BytesScanned: 1000}, {Column: "created", Queries: 50, BytesScanned: 950}, {Column: "ts", Queries: 50, BytesScanned: 900}, {Column: "region", Queries: 50, BytesScanned: 850}}
	cases := []struct {
		name    string
		table   Table
		layout  string
		columns string
		leftOut string
	}{
		{"all matter equally: z-order of four", Table{}, LayoutZOrder, "id,created,ts,region", ""},
		{"ts is day(ts)'s source", Table{Implied: []string{"ts"}}, LayoutZOrder, "id,created,region", "ts: implied by the partition spec"},
		{"created moves with id", Table{Redundant: map[[2]string]float64{{"id", "created"}: 0.98, {"created", "id"}: 0.98}}, LayoutZOrder, "id,ts,region", "created: correlated 0.98 with id"},
		{"only one column left: a sort", Table{Implied: []string{"ts"}, PartitionSources: []string{"region"}, Redundant: map[[2]string]float64{{"id", "created"}: 0.95}}, LayoutSort, "id", "created"},
	}
	for _, c := range cases {
		r := Recommend(ranked, 50, c.table, DefaultGuard)
		if r.Layout != c.layout || strings.Join(r.Columns, ",") != c.columns || !strings.Contains(strings.Join(r.LeftOut, "; "), c.leftOut) {
			t.Errorf("%s: %s on %v, left out %v; want %s on %s, left out %q", c.name, r.Layout, r.Columns, r.LeftOut, c.layout, c.columns, c.leftOut)
		}
	}
}

// TestWindows_TodaysQueriesCountAtEveryHourOfTheDay: queries recorded
// today and a week ago fall in the newest two windows whatever the hour,
// midnight to the last minute of the day (windows that ended at now left
// today out before noon).
func TestWindows_TodaysQueriesCountAtEveryHourOfTheDay(t *testing.T) {
	day := time.Date(2026, 12, 5, 0, 0, 0, 0, time.UTC)
	days := []Day{
		{Date: "2026-11-28", Queries: 3, Columns: map[string]ColumnDay{"amount": {Filters: 3, BytesScanned: 3 << 20}}},
		{Date: "2026-12-05", Queries: 4, Columns: map[string]ColumnDay{"amount": {Filters: 4, BytesScanned: 4 << 20}}},
	}
	for _, at := range []time.Duration{0, 30 * time.Minute, 11 * time.Hour, 12 * time.Hour, 23*time.Hour + 59*time.Minute} {
		now := day.Add(at)
		w := Windows(days, now, 7*24*time.Hour, 3, nil)
		if len(w) != 3 {
			t.Fatalf("at %s: %d windows", now, len(w))
		}
		if w[2].Queries != 4 || w[2].Leader != "amount" || w[1].Queries != 3 || w[1].Leader != "amount" || w[0].Queries != 0 {
			t.Errorf("at %s: windows %+v, want today's 4 queries in the newest, the week before's 3 in the next", now.Format(time.TimeOnly), w)
		}
	}
}
