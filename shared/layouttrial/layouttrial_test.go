package layouttrial

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/icekeeper/icekeeper/shared/signals"
)

const mib = 1 << 20

var (
	start = time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	trial = Trial{Layout: "sort", Columns: []string{"customer_id"}, FromOrderID: 0, At: start}
)

// days records n queries a day on each partition value, each reading
// perQuery bytes, from the first date for count days.
func days(from string, count int, perQuery map[string]int64, n int64) []signals.Day {
	d0, _ := time.Parse(time.DateOnly, from)
	var out []signals.Day
	for i := range count {
		d := signals.Day{Date: d0.AddDate(0, 0, i).Format(time.DateOnly), Partitions: map[string]int64{}, PartitionBytes: map[string]int64{}}
		for v, b := range perQuery {
			d.Partitions[v] = n
			d.PartitionBytes[v] = n * b
		}
		out = append(out, d)
	}
	return out
}

func join(ds ...[]signals.Day) []signals.Day {
	var out []signals.Day
	for _, d := range ds {
		out = append(out, d...)
	}
	return out
}

func TestJudge_DecidesFromBytesPerQueryAgainstBeforeAndTheUntouched(t *testing.T) {
	t.Parallel()
	eu := Partition{Name: "region=eu", RewrittenAt: start.Add(20 * time.Hour)} // Dec 2: after window from Dec 3
	us := Partition{Name: "region=us"}
	euLate := Partition{Name: "region=eu", RewrittenAt: start.AddDate(0, 0, 3)} // reached after Dec 2: mixed for the first
	usDone := Partition{Name: "region=us", RewrittenAt: start.Add(21 * time.Hour)}
	before := func(eu, us int64) []signals.Day {
		return days("2026-11-24", 7, map[string]int64{"region=eu": eu, "region=us": us}, 5)
	}
	after := func(eu, us int64, n int64) []signals.Day {
		return days("2026-12-03", 7, map[string]int64{"region=eu": eu, "region=us": us}, n)
	}
	done := start.AddDate(0, 0, 10) // Dec 11: the first window (Dec 3 to 9) is complete
	cases := []struct {
		name  string
		parts []Partition
		days  []signals.Day
		now   time.Time
		want  string
		why   string
	}{
		{"the sort cut the rewritten partition's reads", []Partition{eu, us}, join(before(100*mib, 100*mib), after(20*mib, 100*mib, 5)), done, Keep, "80% less"},
		{"no measurable gain", []Partition{eu, us}, join(before(100*mib, 100*mib), after(95*mib, 100*mib, 5)), done, Revert, "does not measurably beat"},
		{"every query read less that week: the control says it was not the layout", []Partition{eu, us}, join(before(100*mib, 100*mib), after(70*mib, 70*mib, 5)), done, Revert, "untouched partitions 100.0 MiB before, 70.0 MiB after"},
		{"the control read more: a partition that held its reads beat it", []Partition{eu, us}, join(before(100*mib, 100*mib), after(100*mib, 150*mib, 5)), done, Keep, "33% less"},
		{"no control: before against after only", []Partition{eu, usDone}, join(before(100*mib, 100*mib), after(50*mib, 50*mib, 5)), done, Keep, "no untouched partitions"},
		{"the window is not over", []Partition{eu, us}, join(before(100*mib, 100*mib), after(20*mib, 100*mib, 5)), start.AddDate(0, 0, 5), Pending, "waiting for evidence"},
		{"too few queries after, every window", []Partition{eu, us}, join(before(100*mib, 100*mib), after(20*mib, 100*mib, 0)), start.AddDate(0, 0, 60), Pending, "0 after"},
		{"reached no partition", []Partition{us}, before(100*mib, 100*mib), done, Pending, "reached no partition"},
		{"a partition reached late is neither side", []Partition{euLate, us}, join(before(100*mib, 100*mib), after(20*mib, 100*mib, 5)), done, Pending, ""},
	}
	for _, c := range cases {
		v := Judge(trial, c.parts, c.days, c.now, DefaultRules)
		if v.Decision != c.want || !strings.Contains(v.Why, c.why) {
			t.Errorf("%s: %s (%s); want %s (%q)\n%+v", c.name, v.Decision, v.Why, c.want, c.why, v.Evidence)
		}
	}
}

// TestJudge_TheSameEvidenceGivesTheSameVerdict: the windows are fixed by
// the trial's start, so later days (here, ones that would say the
// opposite) do not change a verdict; too few queries in the first week
// grow the window to the second.
func TestJudge_TheSameEvidenceGivesTheSameVerdict(t *testing.T) {
	t.Parallel()
	parts := []Partition{{Name: "region=eu", RewrittenAt: start.Add(20 * time.Hour)}, {Name: "region=us"}}
	before := days("2026-11-17", 14, map[string]int64{"region=eu": 100 * mib, "region=us": 100 * mib}, 2)
	week1 := days("2026-12-03", 7, map[string]int64{"region=eu": 20 * mib, "region=us": 100 * mib}, 2) // 14 queries: too few
	week2 := days("2026-12-10", 7, map[string]int64{"region=eu": 20 * mib, "region=us": 100 * mib}, 2)
	later := days("2026-12-17", 14, map[string]int64{"region=eu": 500 * mib, "region=us": 100 * mib}, 50)
	if v := Judge(trial, parts, join(before, week1), start.AddDate(0, 0, 10), DefaultRules); v.Decision != Pending {
		t.Fatalf("one thin week: %s (%s); want pending", v.Decision, v.Why)
	}
	first := Judge(trial, parts, join(before, week1, week2), start.AddDate(0, 0, 17), DefaultRules)
	if first.Decision != Keep || first.Evidence.AfterEnd != "2026-12-17" || first.Evidence.RewrittenAfter.Queries != 28 {
		t.Fatalf("two weeks: %+v; want keep on Dec 3 to 16", first)
	}
	again := Judge(trial, parts, join(before, week1, week2, later), start.AddDate(0, 0, 40), DefaultRules)
	if again.Decision != first.Decision || again.Evidence != first.Evidence {
		t.Errorf("later days changed the verdict: %+v, was %+v", again, first)
	}
}

func TestProperties_TrialAndRejectedRoundTrip(t *testing.T) {
	t.Parallel()
	tr := Trial{Layout: "z-order", Columns: []string{"a", "b"}, FromOrderID: 3, FromStrategy: "sort", FromZOrder: nil, At: start}
	got, ok, err := ParseTrial(map[string]string{PropertyTrial: tr.Format()})
	if err != nil || !ok || got.Key() != tr.Key() || got.FromOrderID != 3 || got.FromStrategy != "sort" || len(got.FromZOrder) != 0 {
		t.Fatalf("round trip %+v, %v, %v", got, ok, err)
	}
	if _, ok, err := ParseTrial(nil); ok || err != nil {
		t.Errorf("unset: %v %v", ok, err)
	}
	for _, bad := range []string{"sort", "sort:a;at=yesterday", "bogus:a;at=2026-12-01T00:00:00Z", "sort:a"} {
		if _, _, err := ParseTrial(map[string]string{PropertyTrial: bad}); !errors.Is(err, ErrBadProperty) {
			t.Errorf("%q: %v; want ErrBadProperty", bad, err)
		}
	}
	props := map[string]string{}
	for i := range MaxRejected + 2 {
		v, err := WithRejected(props, Rejection{Layout: "sort", Columns: []string{"c"}, At: start.AddDate(0, 0, i)})
		if err != nil {
			t.Fatal(err)
		}
		props[PropertyRejected] = v
	}
	rs, err := ParseRejected(props)
	if err != nil || len(rs) != MaxRejected || !rs[len(rs)-1].At.Equal(start.AddDate(0, 0, MaxRejected+1)) {
		t.Errorf("rejected %+v, %v; want the newest %d", rs, err, MaxRejected)
	}
}
