// Package workload names the classes of a table's query workload (agents,
// dashboards, pipelines, ad hoc queries), says which class a query is in,
// and chooses the class a table's layout serves.
//
// Different readers want different layouts: a dashboard filters the same
// column all day, a pipeline scans by date, an agent looks single rows up.
// The query signals are counted per class (package signals), each class
// gets its own recommendation, and the table's layout follows one of them:
// the class its owner names (PropertyClass) or, by default, the class
// whose queries cost the most (bytes scanned).
//
// Invariants:
//   - Every query is in exactly one class: an unknown or missing class is
//     AdHoc, never dropped.
//   - Choose is a pure function of the property and the classes' costs;
//     ties go to the first class in Classes order, so the choice does not
//     flap between equals.
package workload

import (
	"errors"
	"fmt"
	"strings"
)

// Classes of queries.
const (
	Agent     = "agent"
	Dashboard = "dashboard"
	Pipeline  = "pipeline"
	AdHoc     = "adhoc"
)

// Classes lists every class, in the order ties are broken.
func Classes() []string { return []string{Dashboard, Pipeline, Agent, AdHoc} }

// PropertyClass is the table property naming the class whose queries the
// table's layout serves: agent, dashboard, pipeline, adhoc, or auto (the
// default: the class whose queries scanned the most bytes).
const PropertyClass = "icekeeper.layout.class"

// Auto is PropertyClass's default value.
const Auto = "auto"

// ErrBadClass: a class name that is none of Classes.
var ErrBadClass = errors.New("workload: unknown class")

// Parse reads a class name as an event or a property spells it: case and
// separators do not matter ("Ad hoc", "ad-hoc", "adhoc"); plurals are
// accepted ("dashboards"). ok is false for anything else.
func Parse(s string) (string, bool) {
	n := strings.NewReplacer(" ", "", "-", "", "_", "").Replace(strings.ToLower(strings.TrimSpace(s)))
	n = strings.TrimSuffix(n, "s")
	for _, c := range Classes() {
		if n == c {
			return c, true
		}
	}
	return "", false
}

// Of is the class of a query that says it is in class (an event's
// "class"): the class when it parses, AdHoc otherwise.
func Of(class string) string {
	if c, ok := Parse(class); ok {
		return c
	}
	return AdHoc
}

// workGroupHints are the words in an Athena workgroup's name that say its
// queries' class, checked in this order.
var workGroupHints = []struct{ word, class string }{
	{"dashboard", Dashboard}, {"bi", Dashboard}, {"report", Dashboard}, {"quicksight", Dashboard}, {"superset", Dashboard}, {"tableau", Dashboard},
	{"pipeline", Pipeline}, {"etl", Pipeline}, {"elt", Pipeline}, {"batch", Pipeline}, {"dbt", Pipeline}, {"airflow", Pipeline}, {"glue", Pipeline},
	{"agent", Agent}, {"llm", Agent}, {"ai", Agent}, {"bot", Agent},
	{"adhoc", AdHoc}, {"analyst", AdHoc},
}

// OfAthena is the class of an Athena query: a tag in its text first (a
// comment "icekeeper-class: NAME", which tools and agents can add to the
// queries they send), then its workgroup: the workgroup's entry in
// byWorkGroup (the stack's athenaWorkGroupClasses setting), else a word
// of the workgroup's name split at '-', '_' and '.' ("bi-dashboards",
// "etl_nightly", "agents"), else AdHoc ("primary" is AdHoc).
func OfAthena(query, workGroup string, byWorkGroup map[string]string) string {
	if i := strings.Index(strings.ToLower(query), "icekeeper-class:"); i >= 0 {
		rest := strings.TrimSpace(query[i+len("icekeeper-class:"):])
		if f := strings.FieldsFunc(rest, func(r rune) bool { return r == ' ' || r == '\n' || r == '*' || r == '/' || r == '\t' }); len(f) > 0 {
			if c, ok := Parse(f[0]); ok {
				return c
			}
		}
	}
	if c, ok := byWorkGroup[workGroup]; ok {
		return Of(c)
	}
	words := strings.FieldsFunc(strings.ToLower(workGroup), func(r rune) bool { return r == '-' || r == '_' || r == '.' || r == ' ' })
	for _, h := range workGroupHints {
		for _, w := range words {
			if w == h.word || w == h.word+"s" {
				return h.class
			}
		}
	}
	return AdHoc
}

// ParseWorkGroupClasses reads the athenaWorkGroupClasses setting
// ("workgroup=class,..."; empty: none).
func ParseWorkGroupClasses(s string) (map[string]string, error) {
	out := map[string]string{}
	for _, pair := range strings.Split(s, ",") {
		if strings.TrimSpace(pair) == "" {
			continue
		}
		wg, c, ok := strings.Cut(pair, "=")
		class, known := Parse(c)
		if !ok || strings.TrimSpace(wg) == "" || !known {
			return nil, fmt.Errorf("%w: %q: want workgroup=class with class one of %s", ErrBadClass, pair, strings.Join(Classes(), ", "))
		}
		out[strings.TrimSpace(wg)] = class
	}
	return out, nil
}

// Choice is the class a table's layout serves, and why.
type Choice struct {
	Class string `json:"class"`
	// Chosen is "property" when the owner named the class, "cost" when
	// it is the costliest.
	Chosen string `json:"chosen"`
	Why    string `json:"why"`
}

// Choose picks the class the layout serves from the table's PropertyClass
// value and each class's cost (decayed bytes scanned): the named class,
// or with auto or no property the class that cost the most (ties in
// Classes order; AdHoc when no class cost anything). A value that is no
// class is ErrBadClass.
func Choose(property string, cost map[string]float64) (Choice, error) {
	if p := strings.TrimSpace(property); p != "" && !strings.EqualFold(p, Auto) {
		c, ok := Parse(p)
		if !ok {
			return Choice{}, fmt.Errorf("%w: %s=%q: want auto or one of %s", ErrBadClass, PropertyClass, property, strings.Join(Classes(), ", "))
		}
		return Choice{Class: c, Chosen: "property", Why: fmt.Sprintf("the table's %s names %s", PropertyClass, c)}, nil
	}
	best, bestCost := AdHoc, 0.0
	for _, c := range Classes() {
		if cost[c] > bestCost {
			best, bestCost = c, cost[c]
		}
	}
	if bestCost == 0 {
		return Choice{Class: AdHoc, Chosen: "cost", Why: "no class's queries scanned anything yet: ad hoc"}, nil
	}
	var total float64
	for _, v := range cost {
		total += v
	}
	return Choice{Class: best, Chosen: "cost", Why: fmt.Sprintf("%s queries cost the most: %.0f%% of the bytes scanned", best, 100*bestCost/total)}, nil
}
