package main

import (
	"context"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/icekeeper/icekeeper/shared/audit"
	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/harness/stages"
	"github.com/icekeeper/icekeeper/shared/ledger"
	"github.com/icekeeper/icekeeper/shared/signals"
	plannerstage "github.com/icekeeper/icekeeper/shared/stage/planner"
	"github.com/icekeeper/icekeeper/shared/summary"
)

// runSummary prints the weekly summary (package summary) of a deployment
// or a local run: of the tables named, or of every table with a
// maintenance log. It only reads, unless --publish writes it to the
// bucket and puts its event as the planner's weekly rule does.
func runSummary(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("summary", stderr)
	asJSON := addOutputFlags(fs, "the summary")
	at := fs.String("at", "", "build the summary as at this time (RFC 3339; default now): the week covered is the last complete one before it")
	htmlFile := fs.String("html", "", "also write the summary's page to this file")
	publish := fs.Bool("publish", false, "write the summary to the bucket (summary/<yyyy>-W<ww>.json and .html, summary/latest.*) and put its event, as the planner does")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	when := time.Now()
	if *at != "" {
		if when, err = time.Parse(time.RFC3339, *at); err != nil {
			return exitError{code: 2, err: fmt.Errorf("--at: %w", err)}
		}
	}
	cfg, clients, err := deployment(ctx)
	if err != nil {
		return err
	}
	need := []config.Need{config.NeedBucket}
	if cfg.LeaseTable != "" {
		need = append(need, config.NeedLeases)
	}
	deps, err := stages.NewDeps(cfg, clients, jsonLogger(stderr, false), need...)
	if err != nil {
		return exitError{code: 2, err: err}
	}
	p := summary.Publisher{Store: deps.Blobs, Deployment: plannerstage.Deployment(cfg), Bucket: cfg.Bucket}
	if deps.Leases != nil {
		p.Leases = deps.Leases
	}
	if cfg.JobsTable != "" {
		p.Ledger = ledger.Book{Entries: ledger.Store{DB: clients.DynamoDB, TableName: cfg.JobsTable},
			Signals: signals.Store{DB: clients.DynamoDB, TableName: cfg.JobsTable},
			Prices:  ledger.Prices{ScanPerTB: cfg.ScanPricePerTB}, BackOff: cfg.LedgerBackOff}
	}
	tables := pos
	if len(tables) == 0 {
		if tables, err = loggedTables(ctx, p.Store); err != nil {
			return err
		}
	}
	var s summary.Summary
	if *publish {
		if p.Events, err = audit.NewPublisher(deps.Events, cfg.EventBus); err != nil {
			return err
		}
		out, err := p.Publish(ctx, tables, when)
		if err != nil {
			return err
		}
		s = out.Summary
		fmt.Fprintf(stderr, "written to s3://%s/%s and %s; event %q put (summary_id %s)\n", cfg.Bucket, out.Event.JSONKey, out.Event.HTMLKey, summary.DetailType, out.Event.ID)
	} else {
		in, err := p.Gather(ctx, tables, when)
		if err != nil {
			return err
		}
		s = summary.Build(in)
	}
	if *htmlFile != "" {
		f, err := os.Create(*htmlFile)
		if err != nil {
			return err
		}
		if err := summary.Render(f, s); err != nil {
			f.Close()
			return err
		}
		if err := f.Close(); err != nil {
			return err
		}
	}
	if *asJSON {
		return printJSON(stdout, s)
	}
	return printSummary(stdout, s)
}

// loggedTables are the tables with a maintenance log (log/<table>/...).
func loggedTables(ctx context.Context, store summary.Store) ([]string, error) {
	keys, err := store.List(ctx, "log/")
	if err != nil {
		return nil, err
	}
	var out []string
	for _, k := range keys {
		_, rest, ok := strings.Cut(k, "log/")
		if !ok {
			continue
		}
		if t, _, ok := strings.Cut(rest, "/"); ok && !slices.Contains(out, t) {
			out = append(out, t)
		}
	}
	slices.Sort(out)
	return out, nil
}

// printSummary shows the summary as text.
func printSummary(w io.Writer, s summary.Summary) error {
	t := s.Totals
	fmt.Fprintf(w, "icekeeper weekly summary %s (%s to %s), %s\n", s.Week, s.From.Format(time.DateOnly), s.To.Format(time.DateOnly), s.Deployment)
	fmt.Fprintf(w, "%d tables (%d maintained): %d jobs (%d committed, %d failed, %d aborted), cost $%.4f, saved the queries $%.4f\n",
		t.Tables, t.Maintained, t.Jobs, t.Committed, t.Failed, t.Aborted, t.CostUSD, t.SavedUSD)
	fmt.Fprintf(w, "%d data files removed, %d snapshots expired, %s freed, %d orphans removed; %d backed off, %d layout verdicts, %d partition proposals pending\n",
		t.FilesRemoved, t.SnapshotsExpired, humanBytes(t.BytesFreed), t.OrphansRemoved, t.BackedOff, t.LayoutVerdicts, t.ProposalsPending)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "TABLE\tACTION\tJOBS\tCOMMITTED\tFAILED\tABORTED\tCOST\t")
	for _, tb := range s.Tables {
		for _, a := range tb.Actions {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%d\t%d\t%d\t$%.4f\t\n", tb.Table, a.Kind, a.Jobs, a.Committed, a.Failed, a.Aborted, a.CostUSD)
		}
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, tb := range s.Tables {
		if i := tb.Improvement; i != nil {
			fmt.Fprintf(w, "%s: ledger cost $%.4f, saved $%.4f (%d queries weighed%s)\n", tb.Table, i.CostUSD, i.SavedUSD, i.Queries, map[bool]string{true: "", false: ", horizon not over"}[i.Complete])
		}
		for _, b := range tb.BackedOff {
			fmt.Fprintf(w, "%s: backed off (%s) until %s: %s\n", tb.Table, b.Cause, b.Until.Format(time.RFC3339), b.Reason)
		}
		if v := tb.LayoutTrial; v != nil {
			fmt.Fprintf(w, "%s: layout trial %s: %s: %s\n", tb.Table, v.Trial, v.Decision, v.Why)
		}
		for _, p := range tb.Proposals {
			fmt.Fprintf(w, "%s: proposed (not applied): %s -- %s\n", tb.Table, p.SQL, p.Why)
		}
	}
	return nil
}
