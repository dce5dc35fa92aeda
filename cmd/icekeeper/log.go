package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/icekeeper/icekeeper/shared/awsclients"
	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/harness/stages"
	"github.com/icekeeper/icekeeper/shared/joblog"
	"github.com/icekeeper/icekeeper/shared/ledger"
	"github.com/icekeeper/icekeeper/shared/signals"
)

func runLog(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("log", stderr)
	asJSON := addOutputFlags(fs, "the records")
	limit := fs.Int("limit", 20, "newest records to show (0: all)")
	onlyLedger := fs.Bool("ledger", false, "show only the ledger: each week's maintenance cost against the query cost it saved, and whether the table is backed off")
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return exitError{code: 2, err: fmt.Errorf("log takes one table (namespace.table), got %d arguments", len(pos))}
	}
	ident, err := tableIdent(pos[0])
	if err != nil {
		return err
	}
	cfg, clients, err := deployment(ctx)
	if err != nil {
		return err
	}
	deps, err := stages.NewDeps(cfg, clients, jsonLogger(stderr, false), config.NeedBucket)
	if err != nil {
		return exitError{code: 2, err: err}
	}
	name := joinIdent(ident)
	if *onlyLedger {
		if cfg.JobsTable == "" {
			return exitError{code: 2, err: fmt.Errorf("--ledger needs the jobs table (%s)", config.EnvJobsTable)}
		}
		book, err := readLedger(ctx, cfg, clients, name)
		if err != nil {
			return err
		}
		if *asJSON {
			return printJSON(stdout, book)
		}
		return printLedger(stdout, book)
	}
	records, err := joblog.New(deps.Blobs).Read(ctx, name, *limit)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, records)
	}
	if len(records) == 0 {
		fmt.Fprintf(stdout, "no maintenance recorded for %s\n", name)
		return nil
	}
	if err := printRecords(stdout, records); err != nil {
		return err
	}
	if cfg.JobsTable == "" {
		return nil // no ledger without the jobs table
	}
	book, err := readLedger(ctx, cfg, clients, name)
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout)
	return printLedger(stdout, book)
}

// readLedger weighs the table's ledger as the planner does.
func readLedger(ctx context.Context, cfg config.Config, clients *awsclients.Clients, table string) (ledger.Assessment, error) {
	return ledger.Book{Entries: ledger.Store{DB: clients.DynamoDB, TableName: cfg.JobsTable},
		Signals: signals.Store{DB: clients.DynamoDB, TableName: cfg.JobsTable},
		Prices:  ledger.Prices{ScanPerTB: cfg.ScanPricePerTB}, BackOff: cfg.LedgerBackOff}.Assess(ctx, table, time.Now())
}

// printLedger shows the weeks and the verdict.
func printLedger(w io.Writer, a ledger.Assessment) error {
	if len(a.Weeks) == 0 {
		fmt.Fprintf(w, "ledger: no compaction or delete-file rewrite of %s in the last %d weeks\n", a.Table, int(ledger.Window/(7*24*time.Hour)))
		return nil
	}
	fmt.Fprintf(w, "ledger of %s (queries at $%g per TB scanned; a job's saving counts for %s after it):\n", a.Table, a.Prices.ScanPerTB, ledger.Horizon)
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "WEEK\tJOBS\tCOST\tSAVED\tNET\tQUERIES\tBYTES SAVED\tFILES SAVED\t")
	for _, wk := range a.Weeks {
		state := ""
		if !wk.Complete {
			state = "(in progress)"
		}
		fmt.Fprintf(tw, "%s\t%d\t$%.4f\t$%.4f\t$%+.4f\t%d\t%s\t%.0f\t%s\n", wk.Start, wk.Jobs, wk.CostUSD, wk.SavedUSD, wk.NetUSD(), wk.Queries, humanBytes(int64(wk.Saved.Bytes)), wk.Saved.Files, state)
	}
	if err := tw.Flush(); err != nil {
		return err
	}
	if a.Verdict.BackOff {
		fmt.Fprintf(w, "backed off: compactions and delete-file rewrites wait until %s (%s after the last): %s\n", a.NextAllowed.UTC().Format(time.RFC3339), a.BackOff, a.Verdict.Reason)
	} else {
		fmt.Fprintf(w, "not backed off: %s\n", a.Verdict.Reason)
	}
	return nil
}

// printRecords shows the records, newest first.
func printRecords(stdout io.Writer, records []joblog.Record) error {
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ENDED\tJOB\tKIND\tTRIGGER\tOUTCOME\tFILES\tBYTES\tROWS\tDELETED ROWS\tPLAN/REWRITE/COMMIT\tCOST\tREASON")
	for _, r := range records {
		kind := r.Kind
		if kind == "" {
			kind = "compaction" // records written before kinds
		}
		files, bytes := fmt.Sprintf("%d -> %d", r.FilesIn, r.FilesOut), fmt.Sprintf("%s -> %s", humanBytes(r.BytesIn), humanBytes(r.BytesOut))
		switch kind {
		case "expire":
			files, bytes = fmt.Sprintf("%d snapshots, %d files deleted", r.SnapshotsExpired, r.FilesDeleted), humanBytes(r.BytesFreed)+" freed"
		case "rewrite-deletes":
			files = fmt.Sprintf("%d -> %d delete files", r.FilesIn, r.FilesOut)
		case "rewrite-manifests":
			files, bytes = fmt.Sprintf("%d -> %d manifests", r.ManifestsRewritten, r.ManifestsAdded), "-"
		case "remove-orphans":
			files, bytes = fmt.Sprintf("%d orphans removed", r.OrphansRemoved), "-"
		}
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%d\t%s/%s/%s\t$%.4f\t%s\n",
			r.EndedAt.UTC().Format(time.RFC3339), r.JobID, kind, r.Trigger, r.Outcome, files, bytes, r.RowsOut, r.DeletedRows,
			ms(r.PlanMillis), ms(r.RewriteMillis), ms(r.CommitMillis), r.Cost.USD, r.Reason)
	}
	return tw.Flush()
}

func ms(n int64) string { return (time.Duration(n) * time.Millisecond).String() }

func joinIdent(ident []string) string {
	s := ""
	for i, p := range ident {
		if i > 0 {
			s += "."
		}
		s += p
	}
	return s
}
