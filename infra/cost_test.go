package main

import (
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

func TestCost_CustomMetricsArePricedByTier(t *testing.T) {
	for _, tc := range []struct {
		n    int
		want float64
	}{
		{0, 0}, {1, 0.30}, {10_000, 3_000}, {10_001, 3_000.10},
		{250_000, 3_000 + 24_000}, {1_000_001, 3_000 + 24_000 + 37_500 + 0.02},
	} {
		if got := DefaultPrices.metricsCost(tc.n); math.Abs(got-tc.want) > 1e-6 {
			t.Errorf("%d metrics: $%.4f, want $%.4f", tc.n, got, tc.want)
		}
	}
}

func TestCost_PerTableSignaturesScaleWithTheTables(t *testing.T) {
	sigs := []Signature{
		{Name: "JobsCommitted", Dimensions: []string{"Function"}, Function: "committer"},
		{Name: "ConflictAborts", Dimensions: []string{"Function", "Table"}, Function: "committer"},
		{Name: "TablesSkipped", Dimensions: []string{"Function", "Reason"}, Function: "planner"},
	}
	a := DefaultAssumptions
	a.DimensionValues = map[string]map[string]int{"Reason": {"TablesSkipped": 4}}
	st := ObservedStack{StandardAlarms: 2, InsightsQueries: []string{`SELECT SUM(ConflictAborts) FROM Icekeeper GROUP BY "Table"`}, Dashboards: 1}
	c, err := Cost(sigs, st, 50, DefaultPrices, a)
	if err != nil {
		t.Fatal(err)
	}
	if c.CustomMetrics != 1+50+4 || c.AlarmMetrics != 2+50 {
		t.Fatalf("cost %+v, want 55 metrics and 52 alarm metrics", c)
	}
	if _, err := Cost(sigs, ObservedStack{InsightsQueries: []string{"SELECT SUM(Nope) FROM Icekeeper"}}, 1, DefaultPrices, a); err == nil {
		t.Error("an alarm on a metric the contract does not list was priced")
	}
}

// observedStack reads the alarms and dashboards of a synthesized stack.
func observedStack(t *testing.T, f *fixture) ObservedStack {
	t.Helper()
	var st ObservedStack
	for _, r := range f.ofType("AWS::CloudWatch::Alarm") {
		p := props(r)
		if strings.Contains(flat(p["Metrics"]), "SELECT ") {
			for _, m := range p["Metrics"].([]any) {
				if e, ok := m.(map[string]any)["Expression"].(string); ok {
					st.InsightsQueries = append(st.InsightsQueries, e)
				}
			}
			continue
		}
		st.StandardAlarms++
	}
	for _, r := range f.ofType("AWS::CloudWatch::Dashboard") {
		st.Dashboards++
		st.LogWidgets += strings.Count(strings.ReplaceAll(flat(props(r)["DashboardBody"]), `\"`, `"`), `"type":"log"`)
	}
	if st.StandardAlarms == 0 || len(st.InsightsQueries) == 0 || st.Dashboards != 1 || st.LogWidgets == 0 {
		t.Fatalf("stack %+v: the alarm and dashboard patterns no longer match", st)
	}
	return st
}

// costAssumptions are DefaultAssumptions with the Reason dimension's
// values counted from the code: every Skip* reason constant of package
// trigger (an upper bound: not every reason occurs in every hour).
func costAssumptions(t *testing.T, sigs []Signature) CostAssumptions {
	t.Helper()
	src, err := os.ReadFile(filepath.Join("..", "shared", "trigger", "trigger.go"))
	if err != nil {
		t.Fatal(err)
	}
	reasons := len(regexp.MustCompile(`(?m)^\s+Skip\w+\s+= "\w+"`).FindAll(src, -1))
	if reasons < 10 {
		t.Fatalf("found %d skip reasons in shared/trigger/trigger.go; the pattern no longer matches", reasons)
	}
	a := DefaultAssumptions
	a.DimensionValues = map[string]map[string]int{"Reason": {}}
	for _, s := range sigs {
		for _, d := range s.Dimensions {
			switch d {
			case "Function", "Table":
			case "Reason":
				a.DimensionValues["Reason"][s.Name] = reasons
			default:
				t.Errorf("%s carries dimension %s, whose number of values the cost model does not know", s.Name, d)
			}
		}
	}
	return a
}

func contractForCost(t *testing.T) []Signature {
	t.Helper()
	var sigs []Signature
	for _, s := range contractSignatures(t) {
		sigs = append(sigs, Signature(s))
	}
	return sigs
}

// costReadmeBegin and costReadmeEnd enclose the table in README.md.
const (
	costReadmeBegin = "<!-- metrics-cost: begin (infra/cost_test.go; make metrics-cost) -->\n"
	costReadmeEnd   = "<!-- metrics-cost: end -->"
)

// TestCost_READMEGivesTheMonthlyCostOf10_100And1000Tables: the table in
// README.md is the one computed from the metric contract, the synthesized
// stack's alarms and dashboard, and CloudWatch's prices; and at 100 tables
// a table costs at most $1 a month.
func TestCost_READMEGivesTheMonthlyCostOf10_100And1000Tables(t *testing.T) {
	sigs := contractForCost(t)
	st := observedStack(t, mustSynth(t, activeContext()))
	a := costAssumptions(t, sigs)
	var costs []MonthlyCost
	for _, n := range []int{10, 100, 1000} {
		c, err := Cost(sigs, st, n, DefaultPrices, a)
		if err != nil {
			t.Fatal(err)
		}
		costs = append(costs, c)
	}
	table := CostTable(costs)
	t.Logf("stack %+v\n%s", st, table)
	if c := costs[1]; c.PerTable() > 1.00 {
		t.Errorf("at 100 tables a table costs $%.2f a month, over $1", c.PerTable())
	}
	raw, err := os.ReadFile(filepath.Join("..", "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	readme := string(raw)
	i, j := strings.Index(readme, costReadmeBegin), strings.Index(readme, costReadmeEnd)
	if i < 0 || j < i {
		t.Fatalf("README.md lacks the markers %q ... %q", costReadmeBegin, costReadmeEnd)
	}
	if got := readme[i+len(costReadmeBegin) : j]; got != table {
		t.Errorf("README.md's cost table is out of date; want\n%s\ngot\n%s", table, got)
	}
}
