// Package ledger weighs what maintaining a table costs against what the
// maintenance saves the table's queries, per week, and says when a table
// should be maintained less often because the first keeps exceeding the
// second.
//
// A week's cost is the estimated cost (Lambda GB-seconds and S3 requests
// at list prices, joblog.Estimate) of the compactions and delete-file
// rewrites that ended in it, whatever their outcome: a failed job costs
// too. A week's saving is, for each of those jobs that committed, what
// the queries of the Horizon after it were spared, at the engine's price
// per TB scanned and S3's per GET:
//
//   - The job's Reads (package pruning) say what one query over the
//     partitions it touched read before and after: a full scan, and a
//     point lookup per column.
//   - The query signals (package signals) say, per day, how many queries
//     the table had and how many bytes they scanned, and per column how
//     many filtered it with a point predicate. Point queries on a column
//     are charged the lookup's saving on it, the other queries the full
//     scan's.
//   - A query is taken to have crossed the rewritten partitions with the
//     probability bytes it scanned / bytes its kind of query reads over
//     the whole table (at most 1): a full scan of the table crossed them
//     for sure, a query that read a tenth of it did one time in ten.
//
// Both sides are estimates; the ledger's inputs (costs, reads, signals)
// are in the maintenance log and `icekeeper signals` for anyone to check.
//
// Invariants:
//   - Decide backs off only on evidence: two complete weeks, each with a
//     job, each costing more than it saved, on a table with query signals.
//     A table without any signal is never backed off (its savings are
//     unknown, not zero).
//   - Backing off makes maintenance less frequent, never off.
package ledger

import (
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/icekeeper/icekeeper/shared/pruning"
	"github.com/icekeeper/icekeeper/shared/signals"
)

// Entry is one job's line in the ledger.
type Entry struct {
	JobID     string         `json:"job_id"`
	Kind      string         `json:"kind"`
	Outcome   string         `json:"outcome"`
	CreatedAt time.Time      `json:"created_at"`
	EndedAt   time.Time      `json:"ended_at"`
	CostUSD   float64        `json:"cost_usd"`
	Reads     *pruning.Reads `json:"reads,omitempty"`
	// Unmeasured: the job committed, but the committer had no time left to
	// measure what it saved the queries (joblog.Record.Unmeasured). The
	// ledger weighs neither its cost nor a saving, rather than a cost
	// against nothing.
	Unmeasured bool `json:"unmeasured,omitempty"`
}

// Kinds are the job kinds the ledger weighs: the rewrites whose value is
// what queries read. (An expiry's value is storage, a manifest rewrite's
// planning time; neither is in bytes scanned.)
var Kinds = []string{"compaction", "rewrite-deletes"}

// Prices turn reads into dollars.
type Prices struct {
	// ScanPerTB is the engine's price per TB scanned (a TB taken as 2^40
	// bytes, the smaller saving of the two readings).
	ScanPerTB float64 `json:"scan_usd_per_tb"`
	// GetUSD is S3's price of one GET, and GetsPerFile the GETs an engine
	// makes per file it opens (footer, then data).
	GetUSD      float64 `json:"s3_get_usd"`
	GetsPerFile float64 `json:"gets_per_file"`
}

// DefaultScanPerTB is Athena's SQL query price, $5 per TB scanned
// (athena.guide, "Athena Basics: Pricing Model", and Amazon Athena's
// pricing page; us-east-1). ICEKEEPER_SCAN_PRICE_PER_TB sets another.
const DefaultScanPerTB = 5.0

// S3GetUSD is S3 Standard's price of one GET (us-east-1 list price, $0.0004
// per 1,000), which the maintenance log's cost estimate uses too.
const S3GetUSD = 0.0000004

// DefaultPrices are Athena's scan price and S3 Standard's GET price.
func DefaultPrices() Prices {
	return Prices{ScanPerTB: DefaultScanPerTB, GetUSD: S3GetUSD, GetsPerFile: 2}
}

// USD is what r costs a query.
func (p Prices) USD(r pruning.Read) float64 {
	return r.Bytes/(1<<40)*p.ScanPerTB + r.Files*p.GetsPerFile*p.GetUSD
}

// Horizon is how long after a job its saving is counted: a rewrite that
// pays back only later is counted as not paying (the conservative side;
// backing off only slows maintenance down).
const Horizon = 7 * 24 * time.Hour

// Week is one week (Monday to Sunday, UTC) of a table's ledger.
type Week struct {
	Start string `json:"week"` // its Monday, 2006-01-02
	// Jobs ended in the week, Committed of them committed (and weighed),
	// Unmeasured of them committed but not weighed (Entry.Unmeasured).
	Jobs       int `json:"jobs"`
	Committed  int `json:"committed"`
	Unmeasured int `json:"unmeasured,omitempty"`
	// CostUSD is their estimated cost.
	CostUSD float64 `json:"maintenance_cost_usd"`
	// SavedUSD is what they saved the queries of their horizons, and
	// Saved the bytes read and files opened behind it; Queries counts the
	// queries weighed.
	SavedUSD float64      `json:"query_cost_saved_usd"`
	Saved    pruning.Read `json:"saved"`
	Queries  int64        `json:"queries"`
	// Complete: the week and every one of its jobs' horizons have ended.
	Complete bool `json:"complete"`
}

// NetUSD is the week's saving minus its cost.
func (w Week) NetUSD() float64 { return w.SavedUSD - w.CostUSD }

// monday is the start of t's week.
func monday(t time.Time) time.Time {
	d := time.Date(t.Year(), t.Month(), t.Day(), 0, 0, 0, 0, time.UTC)
	return d.AddDate(0, 0, -((int(d.Weekday()) + 6) % 7))
}

// Weeks are the ledger's weeks from the entries and the table's query
// days, oldest first, up to now's week.
func Weeks(entries []Entry, days []signals.Day, now time.Time, p Prices) []Week {
	now = now.UTC()
	byDate := map[string]signals.Day{}
	for _, d := range days {
		byDate[d.Date] = d
	}
	weeks := map[string]*Week{}
	for _, e := range entries {
		ended := e.EndedAt.UTC()
		start := monday(ended)
		key := start.Format(time.DateOnly)
		w := weeks[key]
		if w == nil {
			w = &Week{Start: key, Complete: !now.Before(start.AddDate(0, 0, 7))}
			weeks[key] = w
		}
		w.Jobs++
		if ended.Add(Horizon).After(now) {
			w.Complete = false
		}
		if e.Unmeasured {
			w.Unmeasured++
			continue
		}
		w.CostUSD += e.CostUSD
		if e.Reads == nil {
			continue
		}
		w.Committed++
		first := time.Date(ended.Year(), ended.Month(), ended.Day(), 0, 0, 0, 0, time.UTC)
		for i := range int(Horizon / (24 * time.Hour)) {
			d, ok := byDate[signals.DateOf(first.AddDate(0, 0, i))]
			if !ok {
				continue
			}
			saved, queries := DaySaving(*e.Reads, d)
			w.Saved = w.Saved.Plus(saved)
			w.SavedUSD += p.USD(saved)
			w.Queries += queries
		}
	}
	out := make([]Week, 0, len(weeks))
	for _, w := range weeks {
		out = append(out, *w)
	}
	slices.SortFunc(out, func(a, b Week) int { return strings.Compare(a.Start, b.Start) })
	return out
}

// DaySaving is what one day's queries (d) were spared by a rewrite with
// reads r (see the package comment), and the number of queries weighed.
func DaySaving(r pruning.Reads, d signals.Day) (pruning.Read, int64) {
	if r.TableBytes <= 0 || d.Queries <= 0 {
		return pruning.Read{}, max(d.Queries, 0)
	}
	// Point queries per measured column: their bytes are the column's
	// filtered bytes in the share of its filters that were points.
	type class struct {
		queries, bytes float64
		change         pruning.Change
	}
	var classes []class
	var pointQueries, pointBytes float64
	for _, name := range slices.Sorted(maps.Keys(d.Columns)) {
		c := d.Columns[name]
		ch, ok := r.Lookups[name]
		if !ok || c.Point <= 0 || c.Filters <= 0 {
			continue
		}
		q := float64(c.Point)
		b := float64(c.BytesScanned) * q / float64(c.Filters)
		classes = append(classes, class{queries: q, bytes: b, change: ch})
		pointQueries += q
		pointBytes += b
	}
	// A query that filtered several columns counts in each: scale the
	// point classes down to the day's totals.
	scale := 1.0
	if pointQueries > float64(d.Queries) {
		scale = float64(d.Queries) / pointQueries
	}
	if pointBytes*scale > float64(d.BytesScanned) && pointBytes > 0 {
		scale = min(scale, float64(d.BytesScanned)/pointBytes)
	}
	restQ, restB := float64(d.Queries), float64(d.BytesScanned)
	for i := range classes {
		classes[i].queries *= scale
		classes[i].bytes *= scale
		restQ -= classes[i].queries
		restB -= classes[i].bytes
	}
	classes = append(classes, class{queries: math.Max(restQ, 0), bytes: math.Max(restB, 0), change: r.FullScan})
	var saved pruning.Read
	for _, c := range classes {
		if c.queries <= 0 {
			continue
		}
		// What this kind of query reads over the whole table, from what
		// it reads over the touched partitions and their share of it.
		whole := float64(r.TableBytes)
		if full := r.FullScan.Before.Bytes; full > 0 {
			whole = c.change.Before.Bytes * float64(r.TableBytes) / full
		}
		crossed := c.queries
		if whole > 0 {
			crossed = math.Min(c.queries, c.bytes/whole)
		}
		s := c.change.Saved()
		saved = saved.Plus(pruning.Read{Files: s.Files * crossed, Bytes: s.Bytes * crossed})
	}
	return saved, d.Queries
}

// WeeksWeighed is how many complete weeks with jobs Decide weighs.
const WeeksWeighed = 2

// Verdict is Decide's answer.
type Verdict struct {
	BackOff bool   `json:"back_off"`
	Reason  string `json:"reason"`
	// Weighed are the weeks it weighed, newest first.
	Weighed []Week `json:"weighed,omitempty"`
}

// Decide backs off when the last WeeksWeighed complete weeks with jobs
// each cost more than they saved; hasSignals says whether the table has
// any query signal in the ledger's window (without, savings are unknown).
func Decide(weeks []Week, hasSignals bool) Verdict {
	if !hasSignals {
		return Verdict{Reason: "no query signals recorded for the table: what its maintenance saves is unknown"}
	}
	var weighed []Week
	for i := len(weeks) - 1; i >= 0 && len(weighed) < WeeksWeighed; i-- {
		if weeks[i].Complete && weeks[i].Jobs > 0 {
			weighed = append(weighed, weeks[i])
		}
	}
	if len(weighed) < WeeksWeighed {
		return Verdict{Reason: fmt.Sprintf("%d of the %d complete weeks with maintenance needed to weigh it", len(weighed), WeeksWeighed), Weighed: weighed}
	}
	parts := make([]string, len(weighed))
	for i, w := range weighed {
		parts[i] = fmt.Sprintf("week of %s: cost $%.4f, saved $%.4f", w.Start, w.CostUSD, w.SavedUSD)
		if w.SavedUSD >= w.CostUSD {
			return Verdict{Reason: fmt.Sprintf("maintenance paid for itself (%s)", parts[i]), Weighed: weighed}
		}
	}
	return Verdict{BackOff: true, Weighed: weighed,
		Reason: fmt.Sprintf("maintenance cost more than it saved the table's queries for %d weeks (%s)", len(weighed), strings.Join(parts, "; "))}
}
