package trigger

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"slices"
	"sort"
	"time"

	"github.com/icekeeper/icekeeper/shared/blob"
	"github.com/icekeeper/icekeeper/shared/metrics"
)

// A sweep's time, and where the next one starts.
//
// A planner invocation ends at its function's timeout (5 minutes in the
// stack, infra/settings.go; the context's deadline on Lambda). A sweep
// visits the granted tables before it ranks and plans any, so a sweep
// whose visits outlasted the invocation planned nothing at all, and every
// sweep after it died the same way. At S3's and Glue's latency, 16 tables
// at once, 10,000 tables took 171 s (docs/PERFORMANCE.md, "A sweep at
// S3's and Glue's latency"): about 17,000 fill a 5-minute planner, fewer
// when Glue throttles.
//
// So a sweep keeps a third of the time it started with for ranking and
// planning (sweepTime): it stops starting visits when less than that is
// left, ranks and plans the tables it visited, and writes a cursor
// (sweepCursorName, in icekeeper's bucket) naming the last table it
// visited. The next sweep of the same kind starts after that table in
// name order and goes round, so the granted tables are covered over
// consecutive sweeps and none is starved by its place in the order. A
// sweep that visits every table writes the cursor cleared: every sweep
// writes it, so that it is missing only before the first sweep (S3
// answers a missing key with 403 to a role that may not list the
// bucket, and a denied read is logged as one). Planning stops too
// when less than a tenth of the starting time is left: a candidate not
// planned then is skipped as SkipSweepTime (a later sweep that visits it
// plans it). Without a deadline (the CLI, the harnesses' own calls) a
// sweep visits every table.
//
// Each invocation ranks the tables it visited and has the whole sweep
// budget; a split sweep is not one ranking of the fleet.

// SweepCursorPrefix holds the sweeps' cursors, one per kind of sweep
// (sweeps/schedule.json, sweeps/orphan_schedule.json), in icekeeper's
// bucket under its prefix.
const SweepCursorPrefix = "sweeps/"

// Shares of the time a sweep starts with: visits stop when less than
// visitsStopAt is left, planning when less than planningStopAt is.
const (
	visitsStopAt   = 3  // a third: ranking and planning keep it
	planningStopAt = 10 // a tenth: the invocation's end keeps it
)

// sweepCursorName is the cursor of the sweeps of kind (a trigger kind).
func sweepCursorName(kind string) string { return SweepCursorPrefix + kind + ".json" }

// sweepCursor is a cursor's JSON: when it was written, the last table
// the sweep visited (empty: the sweep went round, the next starts at the
// first table), and how many of how many tables it visited.
type sweepCursor struct {
	WrittenAt time.Time `json:"written_at"`
	After     string    `json:"after,omitempty"`
	Visited   int       `json:"visited"`
	Tables    int       `json:"tables"`
}

// remainingTime is how long an invocation has left: until the context's
// deadline (Lambda's), or unbounded without one.
func remainingTime(ctx context.Context) (time.Duration, bool) {
	deadline, ok := ctx.Deadline()
	if !ok {
		return 0, false
	}
	return time.Until(deadline), true
}

// sweepTime says whether a sweep may still start a visit, or plan a
// table, from the time left when it started.
type sweepTime struct {
	left          func() (time.Duration, bool)
	visitsFloor   time.Duration
	planningFloor time.Duration
	bounded       bool
}

func (d *Dispatcher) sweepTime(ctx context.Context) sweepTime {
	left := func() (time.Duration, bool) { return d.remaining(ctx) }
	start, ok := left()
	if !ok {
		return sweepTime{}
	}
	return sweepTime{left: left, visitsFloor: start / visitsStopAt, planningFloor: start / planningStopAt, bounded: true}
}

// visiting: another visit may start.
func (t sweepTime) visiting() bool { return t.enough(t.visitsFloor) }

// planning: another table may be planned.
func (t sweepTime) planning() bool { return t.enough(t.planningFloor) }

func (t sweepTime) enough(floor time.Duration) bool {
	if !t.bounded {
		return true
	}
	left, ok := t.left()
	return !ok || left >= floor
}

// sweepOrder is names (sorted) in the order a sweep of kind visits them:
// from the first name after the cursor's, round to the one before.
func (d *Dispatcher) sweepOrder(ctx context.Context, log *slog.Logger, kind string, names []string) []string {
	var c sweepCursor
	if err := d.readJSON(ctx, sweepCursorName(kind), &c); err != nil {
		if !errors.Is(err, blob.ErrNotFound) {
			log.Warn("sweep cursor not read (expected once, before the first sweep writes it); the sweep starts at the first table", "err", err.Error())
		}
		return names
	}
	if c.After == "" {
		return names
	}
	i := sort.SearchStrings(names, c.After)
	if i < len(names) && names[i] == c.After {
		i++
	}
	return append(slices.Clone(names[i:]), names[:i]...)
}

// finishSweepOrder records how far a sweep of kind got through order:
// the cursor for the next sweep (cleared when it went round), and when it
// stopped short, a warning and the SweepTablesDeferred metric. Best
// effort: without the cursor the next sweep starts at the first table.
func (d *Dispatcher) finishSweepOrder(ctx context.Context, log *slog.Logger, kind string, order []string, visited int) {
	c := sweepCursor{Visited: visited, Tables: len(order)}
	if visited < len(order) {
		deferred := len(order) - visited
		log.Warn("sweep stopped visiting for the invocation's time: the next sweep starts where it stopped",
			"visited", visited, "tables", len(order), "deferred", deferred, "next", order[visited])
		if err := d.metrics.Emit(map[string]string{"Function": "planner"}, metrics.Metric{Name: "SweepTablesDeferred", Value: float64(deferred), Unit: metrics.Count}); err != nil {
			log.Warn("emit metric", "metric", "SweepTablesDeferred", "err", err.Error())
		}
		if visited == 0 {
			return // nothing to move past; the next sweep starts here again
		}
		c.After = order[visited-1]
	}
	c.WrittenAt = d.now().UTC()
	data, err := json.Marshal(c)
	if err == nil {
		_, err = d.reports.Put(ctx, sweepCursorName(kind), data)
	}
	if err != nil {
		log.Warn("sweep cursor not written: the next sweep starts at the first table", "err", err.Error())
	}
}
