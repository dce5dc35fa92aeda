package main

import (
	"context"
	"fmt"
	"io"
	"text/tabwriter"
	"time"

	"github.com/icekeeper/icekeeper/shared/awsclients"
	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/joblog"
	"github.com/icekeeper/icekeeper/shared/stages"
)

func runLog(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("log", stderr)
	asJSON := addOutputFlags(fs, "the records")
	limit := fs.Int("limit", 20, "newest records to show (0: all)")
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
	cfg, err := config.FromEnv()
	if err != nil {
		return exitError{code: 2, err: err}
	}
	clients, err := awsclients.Load(ctx)
	if err != nil {
		return err
	}
	deps, err := stages.NewDeps(cfg, clients, jsonLogger(stderr, false), config.NeedBucket)
	if err != nil {
		return exitError{code: 2, err: err}
	}
	records, err := joblog.New(deps.Blobs).Read(ctx, joinIdent(ident), *limit)
	if err != nil {
		return err
	}
	if *asJSON {
		return printJSON(stdout, records)
	}
	if len(records) == 0 {
		fmt.Fprintf(stdout, "no maintenance recorded for %s\n", joinIdent(ident))
		return nil
	}
	tw := tabwriter.NewWriter(stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "ENDED\tJOB\tTRIGGER\tOUTCOME\tFILES\tBYTES\tROWS\tDELETED ROWS\tPLAN/REWRITE/COMMIT\tCOST\tREASON")
	for _, r := range records {
		fmt.Fprintf(tw, "%s\t%s\t%s\t%s\t%d -> %d\t%s -> %s\t%d\t%d\t%s/%s/%s\t$%.4f\t%s\n",
			r.EndedAt.UTC().Format(time.RFC3339), r.JobID, r.Trigger, r.Outcome, r.FilesIn, r.FilesOut,
			humanBytes(r.BytesIn), humanBytes(r.BytesOut), r.RowsOut, r.DeletedRows,
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
