package trigger

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strings"

	"github.com/icekeeper/icekeeper/events"
	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/messages"
	"github.com/icekeeper/icekeeper/shared/optin"
	"github.com/icekeeper/icekeeper/shared/plan"
)

// orphanSweep visits every granted table whose owner asked for orphan
// cleanup (icekeeper.orphans.enabled=true; off by default) and, in mode
// active, plans a cleanup on each, at most SweepMaxJobs; in mode advisory
// it only reports how many orphans each has. It runs on the orphan
// schedule only, never on commit events.
//
// Which tables asked is learned Settings.SweepConcurrency tables at a
// time, as the sweep does (a load each); the cleanups are then planned,
// or assessed, one table at a time in the granted tables' order: each
// lists the table's location, which holds every file name at once.
// Visits and planning stop, as the sweep's do, when the invocation's time
// runs short (sweeptime.go), with a cursor of the orphan sweeps' own.
func (d *Dispatcher) orphanSweep(ctx context.Context, log *slog.Logger, trig events.Trigger) ([]TableOutcome, int, error) {
	names, err := d.grantedTables(ctx)
	if err != nil {
		return nil, 0, err
	}
	clock := d.sweepTime(ctx)
	order := d.sweepOrder(ctx, log, trig.Kind, names)
	visits := d.eachTable(order, clock.visiting, func(name string) sweepVisit {
		tlog := log.With("table", name)
		tbl, v := d.admit(ctx, tlog, name, trig.Kind)
		switch {
		case tbl == nil:
			return v
		case !optin.OrphansEnabled(tbl.Properties()):
			return sweepVisit{out: d.skip(tlog, v.out, SkipOrphansNotEnabled, optin.PropertyOrphansEnabled+" is not true")}
		}
		return sweepVisit{candidate: true, out: v.out, props: tbl.Properties()}
	})
	d.finishSweepOrder(ctx, log, trig.Kind, order, len(visits))
	var outs []TableOutcome
	var errs []error
	planned := 0
	for i, v := range visits {
		name := order[i]
		tlog := log.With("table", name)
		o := v.out
		switch {
		case v.err != nil:
			errs = append(errs, v.err)
			continue
		case !v.candidate:
			outs = append(outs, o)
			continue
		case !clock.planning():
			outs = append(outs, d.skip(tlog, o, SkipSweepTime, "the invocation's time ran short before this table's turn"))
			continue
		}
		if d.s.Mode != config.ModeActive {
			o, err := d.assessOrphans(ctx, tlog, o)
			if err != nil {
				errs = append(errs, err)
				continue
			}
			outs = append(outs, o)
			continue
		}
		if planned >= d.s.SweepMaxJobs {
			outs = append(outs, d.skip(tlog, o, SkipBudgetJobs, fmt.Sprintf("sweep budget of %d jobs used", d.s.SweepMaxJobs)))
			continue
		}
		settle, ok, err := d.claimAction(ctx, name, "orphans", v.props, optin.PropertyOrphansMinInterval)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if !ok {
			outs = append(outs, d.skip(tlog, o, SkipCooldown, "orphan cleanup planned less than its "+optin.PropertyOrphansMinInterval+" ago"))
			continue
		}
		res, err := d.planner.PlanOrphanCleanup(ctx, name, trig.Kind, 0)
		settle(err == nil && res.Outcome == plan.OutcomePlanned)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		o.Plan = &res
		o.Reason = res.Reason
		if strings.HasPrefix(res.Reason, plan.ReasonOrphansRefused) {
			d.count(name, "MaintenanceRefused", "")
			tlog.Error("orphan cleanup refused", "reason", res.Reason, "metric", "MaintenanceRefused")
		}
		switch res.Outcome {
		case plan.OutcomePlanned:
			o.Action = ActionPlanned
			planned++
			d.count(name, "JobsPlanned", "")
		case plan.OutcomeBackedOff:
			o = d.skip(tlog, o, SkipBackoff, res.Reason)
		default:
			o.Action = ActionAssessed
		}
		outs = append(outs, o)
	}
	return outs, len(order) - len(visits), errors.Join(errs...)
}

// assessOrphans reports, in mode advisory, how many orphans a table has:
// it loads the table again (the sweep keeps only the properties of the
// tables it visited) and lists its location.
func (d *Dispatcher) assessOrphans(ctx context.Context, log *slog.Logger, o TableOutcome) (TableOutcome, error) {
	ident, _ := messages.TableIdent(o.Table)
	tbl, err := d.catalog.LoadTable(ctx, ident)
	if err != nil {
		return o, fmt.Errorf("trigger: load %s: %w", o.Table, err)
	}
	files, bytes, refused, err := d.assessor.Orphans(ctx, tbl)
	if err != nil {
		return o, fmt.Errorf("trigger: orphans of %s: %w", o.Table, err)
	}
	o.Action = ActionAssessed
	o.Reason = fmt.Sprintf("%d orphan files (%d bytes); advisory: nothing removed", files, bytes)
	if refused != "" {
		o.Reason = "orphan cleanup would be refused: " + refused
	}
	log.Info("orphans assessed", "files", files, "bytes", bytes, "refused", refused)
	return o, nil
}
