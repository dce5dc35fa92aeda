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
	"github.com/icekeeper/icekeeper/shared/signals"
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
	dd, err := signals.Store{DB: clients.DynamoDB, TableName: cfg.JobsTable}.Days(ctx, name, now.AddDate(0, 0, -*days), now)
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
	r := signalsReport{Table: name, Days: *days, HalfLife: signals.DefaultHalfLife.String(), Queries: queries, Columns: ranked, SortColumns: t.SortColumns,
		Recommendation: signals.Recommend(ranked, queries, t, signals.DefaultGuard)}
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
	rec := r.Recommendation
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
