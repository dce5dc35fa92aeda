package main

import (
	"context"
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/icekeeper/icekeeper/shared/awsclients"
	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/health"
	"github.com/icekeeper/icekeeper/shared/layouttrial"
	"github.com/icekeeper/icekeeper/shared/signals"
	"github.com/icekeeper/icekeeper/shared/trigger"
	"github.com/icekeeper/icekeeper/shared/workload"
)

// signalsReport is what `icekeeper signals TABLE` prints.
type signalsReport struct {
	Table          string                 `json:"table"`
	Days           int                    `json:"days"`
	HalfLife       string                 `json:"half_life"`
	Queries        float64                `json:"queries"`
	Columns        []signals.ColumnSignal `json:"columns"`
	SortColumns    []string               `json:"sort_columns,omitempty"`
	Recommendation signals.Recommendation `json:"recommendation"`
	// Class is the workload class the layout serves, Classes each
	// class's recommendation side by side, Trial the verdict on a layout
	// on trial (trigger.AdviseLayout).
	Class   *workload.Choice      `json:"class,omitempty"`
	Classes []signals.ClassAdvice `json:"classes,omitempty"`
	Trial   *layouttrial.Verdict  `json:"trial,omitempty"`
}

func runSignals(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("signals", stderr)
	asJSON := addOutputFlags(fs, "the signals and the recommendation")
	days := fs.Int("days", 28, "days of query signals to weigh")
	cf := addCatalogFlags(fs)
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if *days < 1 {
		return exitError{code: 2, err: fmt.Errorf("--days %d: want at least 1", *days)}
	}
	name, cfg, tbl, err := cf.loadOneTable(ctx, "signals", pos)
	if err != nil {
		return err
	}
	if cfg.JobsTable == "" {
		return exitError{code: 2, err: fmt.Errorf("signals: %s is not set: the query signals are in the jobs table", config.EnvJobsTable)}
	}
	clients, err := awsclients.Load(ctx)
	if err != nil {
		return err
	}
	now := time.Now()
	store := signals.Store{DB: clients.DynamoDB, TableName: cfg.JobsTable}
	dd, err := store.Days(ctx, name, now.AddDate(0, 0, -*days), now)
	if err != nil {
		return err
	}
	ranked, queries := signals.Aggregate(dd, now, signals.DefaultHalfLife)
	// What a point lookup opens today, for the saving estimate.
	th, err := health.ThresholdsFor(tbl.Properties(), cfg.TargetFileSize)
	if err != nil {
		return fmt.Errorf("signals %s: %w", name, err)
	}
	rep, err := health.Assess(ctx, tbl, now, th)
	if err != nil {
		return err
	}
	lookups := map[string]float64{}
	for _, c := range rep.Columns {
		lookups[c.Column] = c.PointLookupFiles
	}
	t := signals.TableFor(tbl, lookups)
	rep.Table = name
	lr, _, _, err := trigger.AdviseLayout(ctx, store, name, tbl, rep, now)
	if err != nil {
		return fmt.Errorf("signals %s: %w", name, err)
	}
	r := signalsReport{Table: name, Days: *days, HalfLife: signals.DefaultHalfLife.String(), Queries: queries, Columns: ranked, SortColumns: t.SortColumns,
		Recommendation: *lr.Layout, Class: lr.LayoutClass, Classes: lr.LayoutClasses, Trial: lr.LayoutTrial}
	if *asJSON {
		return printJSON(stdout, r)
	}
	fmt.Fprintf(stdout, "%s: %.1f queries over %d days (decayed, half-life %s)\n", name, queries, *days, signals.DefaultHalfLife)
	if len(ranked) > 0 {
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "COLUMN\tQUERIES\tPOINT\tBYTES SCANNED")
		for _, c := range ranked {
			fmt.Fprintf(tw, "%s\t%.1f\t%.0f%%\t%s\n", c.Column, c.Queries, 100*c.PointShare, humanBytes(int64(c.BytesScanned)))
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	if len(r.Classes) > 0 {
		tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "CLASS\tQUERIES\tBYTES SCANNED\tRECOMMENDS\tCHANGE")
		for _, c := range r.Classes {
			what := c.Recommendation.Layout
			if len(c.Recommendation.Columns) > 0 {
				what += " " + strings.Join(c.Recommendation.Columns, ", ")
			}
			served := ""
			if r.Class != nil && c.Class == r.Class.Class {
				served = " (served)"
			}
			fmt.Fprintf(tw, "%s%s\t%.1f\t%s\t%s\t%v\n", c.Class, served, c.Queries, humanBytes(int64(c.BytesScanned)), what, c.Recommendation.Change)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
		if r.Class != nil {
			fmt.Fprintf(stdout, "the layout serves %s: %s\n", r.Class.Class, r.Class.Why)
		}
	}
	rec := r.Recommendation
	if r.Trial != nil {
		fmt.Fprintf(stdout, "layout on trial: %s (%s)\n", r.Trial.Decision, r.Trial.Why)
	}
	for _, l := range rec.LeftOut {
		fmt.Fprintf(stdout, "left out: %s\n", l)
	}
	switch rec.Layout {
	case signals.LayoutNone:
		fmt.Fprintf(stdout, "recommended: nothing yet (%s)\n", rec.Why)
	default:
		change := "keep"
		if rec.Change {
			change = "change to"
		}
		fmt.Fprintf(stdout, "recommended: %s %s %s (%s)\n", change, rec.Layout, strings.Join(rec.Columns, ", "), rec.Why)
		if rec.ExpectedBytesSaved > 0 {
			fmt.Fprintf(stdout, "expected saving: about %s of the bytes those queries scanned\n", humanBytes(int64(rec.ExpectedBytesSaved)))
		}
	}
	return nil
}
