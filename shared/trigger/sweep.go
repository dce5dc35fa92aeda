package trigger

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sort"
	"sync"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/events"
	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/messages"
	"github.com/icekeeper/icekeeper/shared/optin"
)

// sweep visits every granted table, ranks the eligible ones by score and
// plans within the budget; it returns the outcomes and how many granted
// tables it left for the next sweep for lack of time.
//
// The visits (load, opt-in, assessment) run Settings.SweepConcurrency at
// a time: each is a chain of requests that mostly wait (the catalog's
// GetTable, the metadata file, the manifest list and manifests, the
// published health report), and one after another a sweep of 10,000
// tables at S3's and Glue's latency outlasted Lambda's 15 minutes. What
// the sweep does with them does not depend on their order: the outcomes
// are kept in the order visited and ranked by score (ties by name), and
// the planning (the budget, the cooldown claims, the jobs) stays one
// table at a time. The assessments share the planner's memory budget
// (HealthAssessor.MemoryGate). Visits start in the cursor's order and
// stop, as planning does, when the invocation's time runs short
// (sweeptime.go).
func (d *Dispatcher) sweep(ctx context.Context, log *slog.Logger, trig events.Trigger) ([]TableOutcome, int, error) {
	names, err := d.grantedTables(ctx)
	if err != nil {
		return nil, 0, err
	}
	clock := d.sweepTime(ctx)
	order := d.sweepOrder(ctx, log, trig.Kind, names)
	visits := d.eachTable(order, clock.visiting, func(name string) sweepVisit {
		return d.visitForSweep(ctx, log.With("table", name), name, trig.Kind)
	})
	visited := order[:len(visits)]
	d.finishSweepOrder(ctx, log, trig.Kind, order, len(visits))
	idx := locatedTables(visited, visits)
	if len(visited) < len(order) {
		d.keepUnvisitedLocations(ctx, log, &idx, order[len(visited):])
	}
	d.writeLocationIndex(ctx, log, idx)
	var outs []TableOutcome
	var cands []candidate
	var errs []error
	for i, v := range visits {
		switch {
		case v.err != nil:
			errs = append(errs, v.err)
		case v.candidate:
			cands = append(cands, candidate{name: visited[i], props: v.props, a: v.a, out: v.out, order: i})
		default:
			outs = append(outs, v.out)
		}
	}
	sort.SliceStable(cands, func(i, j int) bool {
		if cands[i].a.Score != cands[j].a.Score {
			return cands[i].a.Score > cands[j].a.Score
		}
		return cands[i].name < cands[j].name
	})
	jobs, metadataJobs, bytes := 0, 0, int64(0)
	for _, c := range cands {
		tlog := log.With("table", c.name, "score", c.a.Score)
		metadataOnly := c.metadataOnly()
		switch {
		case !clock.planning():
			outs = append(outs, d.skip(tlog, c.out, SkipSweepTime, "the invocation's time ran short before this table's turn to be planned"))
			continue
		case metadataOnly && metadataJobs >= d.s.SweepMaxMetadataJobs:
			outs = append(outs, d.skip(tlog, c.out, SkipBudgetMetadataJobs, fmt.Sprintf("sweep budget of %d metadata-only jobs used", d.s.SweepMaxMetadataJobs)))
			continue
		case metadataOnly:
		case jobs >= d.s.SweepMaxJobs:
			outs = append(outs, d.skip(tlog, c.out, SkipBudgetJobs, fmt.Sprintf("sweep budget of %d jobs used", d.s.SweepMaxJobs)))
			continue
		case bytes+c.a.CompactionBytes > d.s.SweepMaxBytes:
			outs = append(outs, d.skip(tlog, c.out, SkipBudgetBytes, fmt.Sprintf("would exceed the sweep budget of %d bytes (%d used, %d needed)", d.s.SweepMaxBytes, bytes, c.a.CompactionBytes)))
			continue
		}
		slot, err := d.cooldowns.Claim(ctx, c.name, d.now(), optin.MinInterval(c.props, d.s.MinInterval))
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !slot.Claimed {
			outs = append(outs, d.skip(tlog, c.out, SkipCooldown, "planned less than the cooldown ago"))
			continue
		}
		after := ""
		if metadataOnly {
			// Only what its budget pays for: the chain's metadata
			// actions (a delete-file rewrite writes data).
			after = lastDataAction
		}
		o, err := d.plan(ctx, tlog, c.out, c.props, trig.Kind, c.a.Layout, after)
		d.settleSlot(ctx, tlog, c.name, o, err)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if o.Action == ActionPlanned {
			if metadataOnly {
				metadataJobs++
			} else {
				jobs++
				bytes += o.Plan.InputBytes
			}
		}
		outs = append(outs, o)
	}
	return outs, len(order) - len(visited), errors.Join(errs...)
}

// eachTable runs visit for names in order, Settings.SweepConcurrency at a
// time, starting each only while more() (nil: always) says so once a slot
// is free, and returns what each visit returned, in names' order: one for
// each of the names it started, which are the first ones.
func (d *Dispatcher) eachTable(names []string, more func() bool, visit func(name string) sweepVisit) []sweepVisit {
	out := make([]sweepVisit, len(names))
	slots := make(chan struct{}, max(d.s.SweepConcurrency, 1))
	var wg sync.WaitGroup
	started := 0
	for i, name := range names {
		slots <- struct{}{}
		if more != nil && !more() {
			break
		}
		started++
		wg.Go(func() {
			defer func() { <-slots }()
			out[i] = visit(name) // a visit's error is in its sweepVisit
		})
	}
	wg.Wait()
	return out[:started]
}

// sweepVisit is what a sweep learned of one table: an error (the table
// has no outcome), a candidate to rank (its properties and assessment),
// or its outcome; and its location when it loaded.
type sweepVisit struct {
	err       error
	candidate bool
	out       TableOutcome
	props     map[string]string
	a         Assessment
	location  string
}

// visitForSweep loads, admits and assesses one table of a sweep. Safe to
// run for several tables at once: it writes only its own result, and
// what it shares (the catalog, the stores, the metrics emitter, the log)
// is safe for concurrent use.
func (d *Dispatcher) visitForSweep(ctx context.Context, log *slog.Logger, name, kind string) sweepVisit {
	tbl, v := d.admit(ctx, log, name, kind)
	if tbl == nil {
		return v
	}
	a, o, err := d.assess(ctx, log, v.out, tbl)
	switch {
	case errors.Is(err, errSkipped):
		return sweepVisit{out: o, location: v.location}
	case err != nil:
		return sweepVisit{err: err, location: v.location}
	case d.s.Mode != config.ModeActive:
		return sweepVisit{out: o, location: v.location}
	case a.CompactionBytes == 0 && !a.ManifestsDue && !(a.ExpiryDue && optin.ExpireEnabled(tbl.Properties())):
		return sweepVisit{out: d.skip(log, o, SkipHealthy, "no compaction, manifest rewrite or snapshot expiry due"), location: v.location}
	}
	a.Report, a.Gauges = nil, nil // published by assess
	return sweepVisit{candidate: true, out: o, props: tbl.Properties(), a: a, location: v.location}
}

// admit loads a table a sweep visits and applies the double key and the
// property rules (decide): the table when it is eligible, else nil and
// its outcome or error; its location whenever it loaded.
func (d *Dispatcher) admit(ctx context.Context, log *slog.Logger, name, kind string) (*table.Table, sweepVisit) {
	o := TableOutcome{Table: name}
	ident, _ := messages.TableIdent(name)
	tbl, err := d.catalog.LoadTable(ctx, ident)
	if err != nil {
		switch {
		case errors.Is(err, catalog.ErrNoSuchTable):
			return nil, sweepVisit{out: d.skip(log, o, SkipNoSuchTable, err.Error())}
		case NotIceberg(err):
			return nil, sweepVisit{out: d.skip(log, o, SkipNotIceberg, err.Error())}
		}
		return nil, sweepVisit{err: fmt.Errorf("trigger: load %s: %w", name, err)}
	}
	eligible, o := d.decide(ctx, log, o, tbl, kind)
	if !eligible {
		return nil, sweepVisit{out: o, location: tbl.Location()}
	}
	return tbl, sweepVisit{out: o, location: tbl.Location()}
}

// candidate is an eligible table a sweep ranks. A sweep holds one per
// table that has maintenance due until every table is assessed, so it
// keeps only what ranking and planning read: the table's properties and
// the assessment without its published report and gauges (not the loaded
// table and its metadata, which made the planner's memory grow by about
// 30 KB a table: 394 MB at 10,000 tables, docs/PERFORMANCE.md "Sweeps at
// fleet scale").
type candidate struct {
	name  string
	props map[string]string
	a     Assessment
	out   TableOutcome
	order int
}

// metadataOnly: the table has only metadata maintenance due (a manifest
// rewrite or a snapshot expiry), nothing to compact and no layout change
// to make. Such a job costs one planning and one commit, no rewriters, so
// a sweep counts it in its own budget (Settings.SweepMaxMetadataJobs): in
// the data jobs' budget, ranked by score, an idle table's expiry lost to
// busy tables' compactions every sweep and its replaced files stayed on
// storage for good.
func (c candidate) metadataOnly() bool {
	return c.a.CompactionBytes == 0 && !(c.a.Layout != nil && optin.LayoutAuto(c.props))
}
