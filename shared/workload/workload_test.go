package workload

import (
	"errors"
	"testing"
)

func TestParse_AcceptsTheClassesAsPeopleSpellThem(t *testing.T) {
	t.Parallel()
	for in, want := range map[string]string{"Ad hoc": AdHoc, "ad-hoc": AdHoc, "adhoc": AdHoc, "DASHBOARD": Dashboard, "dashboards": Dashboard, "pipeline": Pipeline, " agent ": Agent, "agents": Agent} {
		if got, ok := Parse(in); !ok || got != want {
			t.Errorf("Parse(%q) = %q, %v; want %q", in, got, ok, want)
		}
	}
	for _, in := range []string{"", "etl", "report", "other"} {
		if got, ok := Parse(in); ok {
			t.Errorf("Parse(%q) = %q; want no class", in, got)
		}
	}
	if Of("whatever") != AdHoc || Of("") != AdHoc {
		t.Error("an unknown or missing class must be ad hoc")
	}
}

func TestOfAthena_TagThenSettingThenWorkGroupName(t *testing.T) {
	t.Parallel()
	set := map[string]string{"primary": Pipeline, "finance": Dashboard}
	cases := []struct {
		query, wg, want string
	}{
		{"/* icekeeper-class: agent */ SELECT 1 FROM t", "primary", Agent},
		{"SELECT 1 -- icekeeper-class: Dashboards\n", "etl", Dashboard},
		{"SELECT 1", "primary", Pipeline},
		{"SELECT 1", "finance", Dashboard},
		{"SELECT 1", "bi-team", Dashboard},
		{"SELECT 1", "etl_nightly", Pipeline},
		{"SELECT 1", "support-agents", Agent},
		{"SELECT 1", "maintenance", AdHoc}, // "ai" is only a whole word
		{"SELECT 1", "workgroup", AdHoc},
		{"SELECT 1 -- icekeeper-class: nonsense", "etl", Pipeline},
	}
	for _, c := range cases {
		if got := OfAthena(c.query, c.wg, set); got != c.want {
			t.Errorf("OfAthena(%q, %q) = %q; want %q", c.query, c.wg, got, c.want)
		}
	}
	if got := OfAthena("SELECT 1", "primary", nil); got != AdHoc {
		t.Errorf("primary without a setting = %q; want adhoc", got)
	}
}

func TestParseWorkGroupClasses_RefusesAnUnknownClass(t *testing.T) {
	t.Parallel()
	m, err := ParseWorkGroupClasses("primary=ad hoc, bi=dashboard")
	if err != nil || m["primary"] != AdHoc || m["bi"] != Dashboard {
		t.Fatalf("got %v, %v", m, err)
	}
	if _, err := ParseWorkGroupClasses("bi=reports"); !errors.Is(err, ErrBadClass) {
		t.Fatalf("err = %v; want ErrBadClass", err)
	}
}

func TestChoose_PropertyElseTheCostliestClass(t *testing.T) {
	t.Parallel()
	cost := map[string]float64{Dashboard: 10, Pipeline: 90, Agent: 5}
	cases := []struct {
		prop, want, chosen string
	}{
		{"", Pipeline, "cost"},
		{"auto", Pipeline, "cost"},
		{"Dashboard", Dashboard, "property"},
		{"ad hoc", AdHoc, "property"},
	}
	for _, c := range cases {
		got, err := Choose(c.prop, cost)
		if err != nil || got.Class != c.want || got.Chosen != c.chosen {
			t.Errorf("Choose(%q) = %+v, %v; want %s by %s", c.prop, got, err, c.want, c.chosen)
		}
	}
	if got, _ := Choose("", map[string]float64{Dashboard: 5, Agent: 5}); got.Class != Dashboard {
		t.Errorf("a tie = %s; want the first in Classes order (dashboard)", got.Class)
	}
	if got, _ := Choose("", nil); got.Class != AdHoc {
		t.Errorf("no cost = %s; want adhoc", got.Class)
	}
	if _, err := Choose("reports", cost); !errors.Is(err, ErrBadClass) {
		t.Errorf("err = %v; want ErrBadClass", err)
	}
}
