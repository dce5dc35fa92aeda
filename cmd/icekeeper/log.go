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
