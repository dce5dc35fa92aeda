// Package signals turns query observations into layout advice. Engines
// report what their queries filtered on (the "Icekeeper Query Observed"
// event, or Athena's own query events through the adapter in athena.go);
// the planner records each observation into per-table, per-day counters;
// Aggregate weighs the days with exponential decay into one signal per
// column, and Recommend chooses the layout those signals ask for: a sort
// on the column that matters most, or a z-order when several matter about
// equally, with a guard against changing an order for noise.
//
// Invariants:
//   - Recording only adds to counters (DynamoDB ADD): redelivered events
//     count twice (at-least-once delivery), which the decayed ranking
//     tolerates; nothing is ever read back and rewritten, so concurrent
//     planners cannot lose each other's counts.
//   - Recommend never proposes a partition source column (one value per
//     partition: sorting by it changes nothing) and never changes an
//     order unless the new one beats the current one by Margin with at
//     least MinQueries decayed queries behind it.
package signals

import (
	"cmp"
	"fmt"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/workload"
)

// Predicate is the kind of a filter on one column.
type Predicate string

// Predicates.
const (
	PredicateEq     Predicate = "eq"
	PredicateIn     Predicate = "in"
	PredicateRange  Predicate = "range"
	PredicateIsNull Predicate = "is_null"
	PredicatePrefix Predicate = "prefix"
	PredicateOther  Predicate = "other"
)

// Valid reports whether p is a known predicate kind.
func (p Predicate) Valid() bool {
	switch p {
	case PredicateEq, PredicateIn, PredicateRange, PredicateIsNull, PredicatePrefix, PredicateOther:
		return true
	}
	return false
}

// point reports whether the predicate selects single values (what a sort
// turns into one file per lookup).
func (p Predicate) point() bool {
	return p == PredicateEq || p == PredicateIn || p == PredicateIsNull
}

// Filter is one column a query filtered on.
type Filter struct {
	Column    string    `json:"column"`
	Predicate Predicate `json:"predicate"`
}

// Observation is one query on one table.
type Observation struct {
	// Table is the dotted table name ("ns.table").
	Table        string   `json:"table"`
	Filters      []Filter `json:"columns"`
	BytesScanned int64    `json:"bytes_scanned"`
	RowsReturned int64    `json:"rows_returned"`
	Engine       string   `json:"engine,omitempty"`
	QueryID      string   `json:"query_id,omitempty"`
	// Class is the query's workload class (package workload: agent,
	// dashboard, pipeline, adhoc); recorded as workload.Of(Class).
	Class string `json:"class,omitempty"`
	// Partitions are the partition fields' values the query read
	// (field=value, as the health report names partitions), for
	// rewriting the most-queried partitions first; at most MaxPartitions
	// are recorded.
	Partitions []string `json:"partitions,omitempty"`
	// Equals are the literal values the query compared columns with (=,
	// IN), which the planner turns into Partitions for the table's
	// identity partition columns (PartitionsOf); not recorded.
	Equals map[string][]string `json:"-"`
	At     time.Time           `json:"-"`
}

// MaxPartitions bounds the partitions one observation adds to its day.
const MaxPartitions = 16

// PartitionsOf turns a query's literal comparisons into partition names:
// for each identity partition field of spec whose source column the
// query compared with literals, field=value per literal.
func PartitionsOf(equals map[string][]string, schema *iceberg.Schema, spec iceberg.PartitionSpec) []string {
	var out []string
	for _, f := range spec.Fields() {
		if !f.Transform.Equals(iceberg.IdentityTransform{}) {
			continue
		}
		src, ok := schema.FindFieldByID(f.SourceID())
		if !ok {
			continue
		}
		for _, v := range equals[strings.ToLower(src.Name)] {
			out = append(out, f.Name+"="+v)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// Validate checks an observation before it is recorded.
func (o Observation) Validate() error {
	if strings.Count(o.Table, ".") < 1 || strings.HasPrefix(o.Table, ".") || strings.HasSuffix(o.Table, ".") {
		return fmt.Errorf("signals: table %q: want namespace.table", o.Table)
	}
	if o.BytesScanned < 0 || o.RowsReturned < 0 {
		return fmt.Errorf("signals: %s: negative bytes scanned or rows returned", o.Table)
	}
	for _, p := range o.Partitions {
		if k, v, ok := strings.Cut(p, "="); !ok || strings.TrimSpace(k) == "" || v == "" || len(p) > 256 {
			return fmt.Errorf("signals: %s: partition %q: want field=value (at most 256 characters)", o.Table, p)
		}
	}
	for _, f := range o.Filters {
		if strings.TrimSpace(f.Column) == "" {
			return fmt.Errorf("signals: %s: a filter without a column", o.Table)
		}
		if !f.Predicate.Valid() {
			return fmt.Errorf("signals: %s: column %s: unknown predicate %q (want eq, in, range, is_null, prefix or other)", o.Table, f.Column, f.Predicate)
		}
	}
	return nil
}

// ColumnDay is one column's counters of one day.
type ColumnDay struct {
	// Filters counts the queries that filtered on the column, Point those
	// of them with a point predicate (eq, in, is_null).
	Filters int64 `json:"filters"`
	Point   int64 `json:"point"`
	// BytesScanned sums the bytes those queries scanned.
	BytesScanned int64 `json:"bytes_scanned"`
}

// Day is one table's counters of one UTC day.
type Day struct {
	Date         string               `json:"date"` // 2006-01-02
	Queries      int64                `json:"queries"`
	BytesScanned int64                `json:"bytes_scanned"`
	Columns      map[string]ColumnDay `json:"columns"`
	// Partitions counts the queries that read each partition field value
	// (field=value), for those that said, and PartitionBytes the bytes
	// those queries scanned (what a layout's trial compares, package
	// layouttrial).
	Partitions     map[string]int64 `json:"partitions,omitempty"`
	PartitionBytes map[string]int64 `json:"partition_bytes,omitempty"`
	// Classes are the same counters per workload class (package
	// workload): each class's queries, bytes and columns.
	Classes map[string]ClassDay `json:"classes,omitempty"`
}

// ClassDay is one workload class's counters of one day.
type ClassDay struct {
	Queries      int64                `json:"queries"`
	BytesScanned int64                `json:"bytes_scanned"`
	Columns      map[string]ColumnDay `json:"columns,omitempty"`
}

// OfClass is the days as one workload class saw them: each day's
// queries, bytes and columns of that class only (partitions are kept
// whole: they are counted for the table). Days recorded before classes
// were counted hold no class and count as ad hoc.
func OfClass(days []Day, class string) []Day {
	out := make([]Day, 0, len(days))
	for _, d := range days {
		c, ok := d.Classes[class]
		if !ok && len(d.Classes) == 0 && class == workload.AdHoc {
			c, ok = ClassDay{Queries: d.Queries, BytesScanned: d.BytesScanned, Columns: d.Columns}, true
		}
		if !ok {
			continue
		}
		out = append(out, Day{Date: d.Date, Queries: c.Queries, BytesScanned: c.BytesScanned, Columns: c.Columns, Partitions: d.Partitions, PartitionBytes: d.PartitionBytes})
	}
	return out
}

// ClassCosts are the decayed bytes each class's queries scanned: what
// workload.Choose weighs.
func ClassCosts(days []Day, now time.Time, halfLife time.Duration) map[string]float64 {
	out := map[string]float64{}
	for _, class := range workload.Classes() {
		for _, d := range OfClass(days, class) {
			out[class] += dayWeight(d.Date, now, halfLife) * float64(d.BytesScanned)
		}
	}
	return out
}

// dayWeight is a day's weight at now: 2^(-age/halfLife), age from the
// day's noon; 0 for a date that does not parse.
func dayWeight(date string, now time.Time, halfLife time.Duration) float64 {
	if halfLife <= 0 {
		halfLife = DefaultHalfLife
	}
	day, err := time.Parse(time.DateOnly, date)
	if err != nil {
		return 0
	}
	age := max(0, now.Sub(day.Add(12*time.Hour)))
	return math.Exp2(-float64(age) / float64(halfLife))
}

// PartitionHeat weighs the days' partition counts with the same decay as
// Aggregate: how much each field=value was queried lately.
func PartitionHeat(days []Day, now time.Time, halfLife time.Duration) map[string]float64 {
	heat := map[string]float64{}
	for _, d := range days {
		w := dayWeight(d.Date, now, halfLife)
		for p, n := range d.Partitions {
			heat[p] += w * float64(n)
		}
	}
	return heat
}

// Heat is how much a partition, named as the health report names it
// (field=value/field=value), was queried: the sum of its fields' values'
// heat.
func Heat(heat map[string]float64, partition string) float64 {
	var h float64
	for _, pair := range strings.Split(partition, "/") {
		h += heat[pair]
	}
	return h
}

// DateOf is the UTC day an observation counts in.
func DateOf(t time.Time) string { return t.UTC().Format(time.DateOnly) }

// ColumnSignal is one column's decayed signal.
type ColumnSignal struct {
	Column string `json:"column"`
	// Queries is the decayed number of queries that filtered on it, and
	// PointShare the share of them with a point predicate.
	Queries    float64 `json:"queries"`
	PointShare float64 `json:"point_share"`
	// BytesScanned is the decayed bytes those queries scanned: what
	// pruning on the column can save, and the ranking's weight.
	BytesScanned float64 `json:"bytes_scanned"`
}

// Score ranks columns: the bytes their queries scanned, then how often.
func (c ColumnSignal) Score() float64 { return c.BytesScanned + c.Queries }

// DefaultHalfLife is how fast old queries stop counting: a day's
// counters weigh half after a week.
const DefaultHalfLife = 7 * 24 * time.Hour

// Aggregate sums days into one signal per column, each day weighed
// 2^(-age/halfLife) (age from the day's noon to now), ranked by Score,
// highest first (ties by name). It also returns the decayed number of
// queries.
func Aggregate(days []Day, now time.Time, halfLife time.Duration) ([]ColumnSignal, float64) {
	if halfLife <= 0 {
		halfLife = DefaultHalfLife
	}
	by := map[string]*ColumnSignal{}
	points := map[string]float64{}
	var queries float64
	for _, d := range days {
		w := dayWeight(d.Date, now, halfLife)
		queries += w * float64(d.Queries)
		for name, c := range d.Columns {
			s := by[name]
			if s == nil {
				s = &ColumnSignal{Column: name}
				by[name] = s
			}
			s.Queries += w * float64(c.Filters)
			s.BytesScanned += w * float64(c.BytesScanned)
			points[name] += w * float64(c.Point)
		}
	}
	out := make([]ColumnSignal, 0, len(by))
	for name, s := range by {
		if s.Queries > 0 {
			s.PointShare = points[name] / s.Queries
		}
		out = append(out, *s)
	}
	slices.SortFunc(out, func(a, b ColumnSignal) int {
		if c := cmp.Compare(b.Score(), a.Score()); c != 0 {
			return c
		}
		return cmp.Compare(a.Column, b.Column)
	})
	return out, queries
}

// Layout kinds a recommendation proposes.
const (
	LayoutNone   = "none"
	LayoutSort   = "sort"
	LayoutZOrder = "z-order"
)

// Guard tunes Recommend.
type Guard struct {
	// MinQueries is the decayed queries needed before anything is
	// recommended.
	MinQueries float64
	// Margin: a new layout's leading column must score this many times
	// the current order's first column.
	Margin float64
	// ZOrderShare: columns scoring at least this share of the top one
	// matter "about equally" and are z-ordered together.
	ZOrderShare float64
	// MaxZOrderColumns bounds a z-order.
	MaxZOrderColumns int
}

// DefaultGuard is Recommend's default.
var DefaultGuard = Guard{MinQueries: 20, Margin: 1.5, ZOrderShare: 0.8, MaxZOrderColumns: 4}

// Recommendation is the layout the signals ask for.
type Recommendation struct {
	Layout  string   `json:"layout"`
	Columns []string `json:"columns,omitempty"`
	// Change is true when the layout differs from the table's current
	// order and beats it by the guard's margin.
	Change bool   `json:"change"`
	Why    string `json:"why"`
	// ExpectedBytesSaved estimates the decayed bytes the layout would
	// have saved: the leading column's bytes scanned times the share of
	// files a point lookup on it opens that a sorted layout would not
	// (1 - 1/files per lookup, from the health report; 0 when unknown).
	ExpectedBytesSaved float64 `json:"expected_bytes_saved"`
	// LeftOut are the columns that scored high enough to be z-ordered
	// with the first but add nothing to it, and why.
	LeftOut []string `json:"left_out,omitempty"`
}

// Table is what Recommend needs to know about a table.
type Table struct {
	// SortColumns is the current sort order's columns ("" none).
	SortColumns []string
	// PartitionSources are the columns identity partition fields come
	// from: never recommended.
	PartitionSources []string
	// LookupFiles is, per column, the files a point lookup opens on
	// average (health's ColumnOverlap.PointLookupFiles), when known.
	LookupFiles map[string]float64
	// Implied are the columns non-identity partition fields come from
	// (day(ts), truncate(10, s); not bucket): each partition already
	// holds a narrow range of them, so they are never a second column.
	Implied []string
	// Redundant are the pairs of columns whose values move together
	// (package correlation, from health's Correlations; both orders):
	// a second column redundant with the first is left out.
	Redundant map[[2]string]float64
	// Rejected are the layouts a trial reverted (package layouttrial),
	// by LayoutKey, with when: proposed again only on windows after it.
	Rejected map[string]time.Time
}

// LayoutKey names a layout: "sort:a" or "z-order:a,b".
func LayoutKey(layout string, columns []string) string {
	return layout + ":" + strings.Join(columns, ",")
}

// Recommend chooses a layout from ranked signals (Aggregate's) and the
// decayed query count.
func Recommend(ranked []ColumnSignal, queries float64, t Table, g Guard) Recommendation {
	var cands []ColumnSignal
	for _, c := range ranked {
		if !slices.Contains(t.PartitionSources, c.Column) {
			cands = append(cands, c)
		}
	}
	if len(cands) == 0 || queries < g.MinQueries {
		return Recommendation{Layout: LayoutNone, Why: fmt.Sprintf("%.1f decayed queries with filters on non-partition columns; %.0f needed before recommending a layout", queries, g.MinQueries)}
	}
	top := cands[0]
	rec := Recommendation{Layout: LayoutSort, Columns: []string{top.Column}}
	for _, c := range cands[1:] {
		if len(rec.Columns) >= g.MaxZOrderColumns || c.Score() < g.ZOrderShare*top.Score() {
			continue
		}
		if slices.Contains(t.Implied, c.Column) {
			rec.LeftOut = append(rec.LeftOut, fmt.Sprintf("%s: implied by the partition spec", c.Column))
			continue
		}
		if rho, ok := t.Redundant[[2]string{top.Column, c.Column}]; ok {
			rec.LeftOut = append(rec.LeftOut, fmt.Sprintf("%s: correlated %.2f with %s across the files", c.Column, rho, top.Column))
			continue
		}
		rec.Columns = append(rec.Columns, c.Column)
	}
	if len(rec.Columns) > 1 {
		rec.Layout = LayoutZOrder
	}
	if l := t.LookupFiles[top.Column]; l > 1 {
		rec.ExpectedBytesSaved = top.BytesScanned * (1 - 1/l)
	}
	current := ""
	if len(t.SortColumns) > 0 {
		current = t.SortColumns[0]
	}
	switch {
	case current == top.Column && rec.Layout == LayoutSort:
		rec.Why = fmt.Sprintf("queries filter most on %s, the table's sort column already", top.Column)
	case current == "":
		rec.Change = true
		rec.Why = fmt.Sprintf("queries filter most on %s (%.1f decayed queries, %s scanned)", strings.Join(rec.Columns, ", "), top.Queries, HumanBytes(top.BytesScanned))
	default:
		var cur float64
		for _, c := range ranked {
			if c.Column == current {
				cur = c.Score()
			}
		}
		if top.Score() >= g.Margin*cur {
			rec.Change = true
			rec.Why = fmt.Sprintf("queries filter on %s %.1fx as much as on the current sort column %s (the margin is %.1fx)", top.Column, top.Score()/math.Max(cur, 1), current, g.Margin)
		} else {
			rec.Why = fmt.Sprintf("%s leads, but not by the %.1fx margin over the current sort column %s: the order stays", top.Column, g.Margin, current)
		}
	}
	return rec
}

// HumanBytes renders bytes for people, in binary units ("1.5 MiB"), as
// the recommendations' and verdicts' reasons write them.
func HumanBytes(b float64) string {
	units := []string{"B", "KiB", "MiB", "GiB", "TiB", "PiB"}
	i := 0
	for b >= 1024 && i < len(units)-1 {
		b /= 1024
		i++
	}
	return fmt.Sprintf("%.1f %s", b, units[i])
}

// TableFor describes tbl for Recommend: its sort order's source columns
// and its default spec's identity partition sources (by current name),
// with lookupFiles from the health report (nil: unknown).
func TableFor(tbl *table.Table, lookupFiles map[string]float64) Table {
	t := Table{LookupFiles: lookupFiles}
	schema := tbl.Schema()
	for _, f := range tbl.SortOrder().Fields() {
		if col, ok := schema.FindColumnName(f.SourceID()); ok {
			t.SortColumns = append(t.SortColumns, col)
		}
	}
	spec := tbl.Spec()
	for _, pf := range spec.Fields() {
		col, ok := schema.FindColumnName(pf.SourceID())
		if !ok {
			continue
		}
		switch pf.Transform.(type) {
		case iceberg.IdentityTransform:
			t.PartitionSources = append(t.PartitionSources, col)
		case iceberg.BucketTransform, iceberg.VoidTransform:
		default:
			t.Implied = append(t.Implied, col)
		}
	}
	return t
}
