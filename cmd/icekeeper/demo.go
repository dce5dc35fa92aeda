package main

import (
	"context"
	"fmt"
	"io"
	iofs "io/fs"
	"os"
	"path/filepath"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/apache/iceberg-go"
	"github.com/apache/iceberg-go/catalog"

	"github.com/apache/iceberg-go/table"

	"github.com/icekeeper/icekeeper/shared/catalogs"
	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/expire"
	"github.com/icekeeper/icekeeper/shared/harness/fingerprint"
	"github.com/icekeeper/icekeeper/shared/harness/localcloud"
	"github.com/icekeeper/icekeeper/shared/harness/localrun"
	"github.com/icekeeper/icekeeper/shared/harness/sampletable"
	"github.com/icekeeper/icekeeper/shared/harness/stages"
	"github.com/icekeeper/icekeeper/shared/health"
	"github.com/icekeeper/icekeeper/shared/messages"
	"github.com/icekeeper/icekeeper/shared/plan"
)

// demoTable is one sample table of the demo. DeleteRewrite makes its job
// a delete-file rewrite instead of a compaction.
type demoTable struct {
	Name          string
	Kind          string
	Opts          sampletable.Options
	DeleteRewrite bool
	// WriterDeletes are ids a writer deletes (merge-on-read) after the
	// job's rewrites and before its commit, as a busy table's writer
	// would: the committer rebases the delete onto the new files.
	WriterDeletes []int64
}

var demoTables = []demoTable{
	{"demo.orders", "v2: position deletes + equality deletes", sampletable.Options{FormatVersion: 2, Partitions: 4, Files: 12, RowsPerFile: 500, PositionDeletes: true, EqualityDeletes: true}, false, nil},
	{"demo.events", "v3: deletion vectors + equality deletes, and a writer deleting rows while the job runs", sampletable.Options{FormatVersion: 3, Partitions: 3, Files: 10, RowsPerFile: 400, PositionDeletes: true, EqualityDeletes: true}, false, []int64{8, 1210, 4402, 7603}},
	{"demo.upserts", "v2: an upsert stream's equality deletes on wide rows, converted to position deletes without rewriting data", sampletable.Options{FormatVersion: 2, Partitions: 2, Files: 3, RowsPerFile: 1000, PayloadBytes: 200, PositionDeletes: true, EqualityDeletes: true}, true, nil},
}

// demoReport is the demo's before/after report of one table.
type demoReport struct {
	Table string `json:"table"`
	Kind  string `json:"kind"`
	// DeleteRewrite: the job was a delete-file rewrite (data files stay).
	DeleteRewrite bool           `json:"delete_rewrite,omitempty"`
	Before        health.Stats   `json:"before"`
	After         health.Stats   `json:"after"`
	LiveBefore    int64          `json:"live_rows_before"`
	LiveAfter     int64          `json:"live_rows_after"`
	Fingerprint   bool           `json:"fingerprint_unchanged"`
	Cycle         localrun.Cycle `json:"cycle"`
	// WriterDeleted are the rows a writer deleted while the job ran (live
	// rows before the job minus live rows once it had); the fingerprint
	// compares the job's outcome with the table as the writer left it.
	WriterDeleted int64 `json:"writer_deleted_rows,omitempty"`
	// The snapshot expiry that follows the compaction: its cycle, the
	// snapshots and the bytes under the table location before and after.
	Expiry          localrun.Cycle `json:"expiry"`
	SnapshotsBefore int            `json:"snapshots_before_expiry"`
	SnapshotsAfter  int            `json:"snapshots_after_expiry"`
	StorageBefore   int64          `json:"storage_bytes_before_expiry"`
	StorageAfter    int64          `json:"storage_bytes_after_expiry"`
	// ExpiryFingerprint: every row still reads the same after the expiry.
	ExpiryFingerprint bool     `json:"expiry_fingerprint_unchanged"`
	Failures          []string `json:"failures,omitempty"`
}

func runDemo(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	fs := newFlagSet("demo", stderr)
	asJSON := addOutputFlags(fs, "the report")
	keep := fs.String("keep", "", "keep the catalog and warehouse in this folder (default: a temporary folder, removed)")
	verbose := fs.Bool("v", false, "print the pipeline's JSON logs to stderr")
	quiet := fs.Bool("q", false, "no progress on stderr")
	if _, err := parseInterspersed(fs, args); err != nil {
		return err
	}
	dir := *keep
	if dir == "" {
		tmp, err := os.MkdirTemp("", "icekeeper-demo-")
		if err != nil {
			return err
		}
		defer os.RemoveAll(tmp)
		dir = tmp
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	dir, _ = filepath.Abs(dir)

	log := jsonLogger(stderr, *verbose)

	cloud := localcloud.Start()
	defer cloud.Close()
	cfg := config.Defaults()
	cfg.Catalog = catalogs.Config{Type: "sql", Name: "demo", URI: "file:" + filepath.Join(dir, "catalog.db"), Warehouse: "file://" + filepath.Join(dir, "warehouse")}
	res, err := cloud.Provision(ctx, "icekeeper-demo", "", cfg.MaxTaskAttempts)
	if err != nil {
		return err
	}
	res.Apply(&cfg)
	deps, err := stages.NewDeps(cfg, cloud.Clients, log, stages.AllNeeds...)
	if err != nil {
		return err
	}
	deps.Metrics = cliMetrics(stderr, *verbose)
	cat, err := stages.OpenCatalog(ctx, cfg, cloud.Clients)
	if err != nil {
		return err
	}
	st, _, err := deps.LocalStages(cat)
	st.Progress = newProgress(stderr, *quiet)
	if err != nil {
		return err
	}
	if !*asJSON {
		fmt.Fprintf(stdout, "icekeeper demo: AWS emulator at %s, catalog %s, warehouse %s\n\n", cloud.URL, cfg.Catalog.URI, cfg.Catalog.Warehouse)
	}

	var reports []demoReport
	failed := false
	for _, dt := range demoTables {
		ident, _ := tableIdent(dt.Name)
		tbl, err := sampletable.Create(ctx, cat, ident, dt.Opts)
		if err != nil {
			return err
		}
		rep := demoReport{Table: dt.Name, Kind: dt.Kind, DeleteRewrite: dt.DeleteRewrite}
		fpBefore, err := fingerprint.Table(ctx, tbl)
		if err != nil {
			return err
		}
		if rep.Before, err = health.Measure(ctx, tbl); err != nil {
			return err
		}
		runJob := localrun.RunCycle
		if dt.DeleteRewrite {
			runJob = localrun.RunDeleteRewrite
		}
		cycle := st
		if len(dt.WriterDeletes) > 0 {
			cycle.BeforeCommit = func(ctx context.Context, _ plan.Result) error {
				cur, err := cat.LoadTable(ctx, ident)
				if err != nil {
					return err
				}
				if cur, err = sampletable.DeleteByPosition(ctx, cur, dt.WriterDeletes); err != nil {
					return err
				}
				fp, err := fingerprint.Table(ctx, cur)
				rep.WriterDeleted, fpBefore = fpBefore.Rows-fp.Rows, fp
				return err
			}
		}
		if rep.Cycle, err = runJob(ctx, cycle, dt.Name, "demo"); err != nil {
			return interrupted(err)
		}
		after, err := cat.LoadTable(ctx, ident)
		if err != nil {
			return err
		}
		fpAfter, err := fingerprint.Table(ctx, after)
		if err != nil {
			return err
		}
		if rep.After, err = health.Measure(ctx, after); err != nil {
			return err
		}
		rep.LiveBefore, rep.LiveAfter, rep.Fingerprint = fpBefore.Rows, fpAfter.Rows, fpBefore == fpAfter
		if err := demoExpiry(ctx, st, cat, ident, dt.Name, &rep, fpAfter); err != nil {
			return err
		}
		rep.Failures = demoChecks(rep)
		failed = failed || len(rep.Failures) > 0
		reports = append(reports, rep)
	}

	if *asJSON {
		if err := printJSON(stdout, reports); err != nil {
			return err
		}
	} else {
		printDemo(stdout, reports)
		if *keep != "" {
			printContinue(stdout, cfg.Catalog, reports)
		}
	}
	if failed {
		return exitError{code: 1, err: fmt.Errorf("demo checks failed")}
	}
	return nil
}

// demoChecks lists what is wrong with one table's outcome.
func demoChecks(r demoReport) []string {
	var f []string
	if !r.Cycle.Committed {
		reason := string(r.Cycle.Plan.Outcome) + " " + r.Cycle.Plan.Reason
		if r.Cycle.Job != nil {
			reason = string(r.Cycle.Job.State) + ": " + r.Cycle.Job.Reason
		}
		f = append(f, "job did not commit: "+reason)
	}
	if !r.Fingerprint {
		f = append(f, "live rows changed")
	}
	switch {
	case r.DeleteRewrite:
		if r.After.DataFiles != r.Before.DataFiles {
			f = append(f, fmt.Sprintf("a delete-file rewrite changed the data files (%d -> %d)", r.Before.DataFiles, r.After.DataFiles))
		}
		if r.After.EqualityDeleteFiles != 0 || r.After.DeleteFiles() >= r.Before.DeleteFiles() {
			f = append(f, fmt.Sprintf("delete files %d -> %d, %d equality deletes left", r.Before.DeleteFiles(), r.After.DeleteFiles(), r.After.EqualityDeleteFiles))
		}
	default:
		if r.After.DataFiles >= r.Before.DataFiles {
			f = append(f, fmt.Sprintf("data files did not shrink (%d -> %d)", r.Before.DataFiles, r.After.DataFiles))
		}
		if r.WriterDeleted > 0 && r.After.DeleteFiles() == 0 {
			f = append(f, "the writer's delete during the job left no delete on the new files")
		}
		if r.WriterDeleted == 0 && r.After.DeleteFiles() != 0 {
			f = append(f, fmt.Sprintf("%d delete files left", r.After.DeleteFiles()))
		}
	}
	if !r.Expiry.Committed {
		f = append(f, "expiry did not commit: "+string(r.Expiry.Plan.Outcome)+" "+r.Expiry.Plan.Reason)
	}
	if r.SnapshotsAfter != 1 || r.StorageAfter >= r.StorageBefore {
		f = append(f, fmt.Sprintf("expiry left %d snapshots and %d of %d bytes", r.SnapshotsAfter, r.StorageAfter, r.StorageBefore))
	}
	if !r.ExpiryFingerprint {
		f = append(f, "live rows changed by the expiry")
	}
	return f
}

// demoExpiry follows the compaction with a snapshot expiry, as the
// dispatcher does on the table's next visit: the sample tables get a
// retention of one snapshot older than a millisecond, so everything but
// the compacted snapshot is due and the files only older snapshots used
// are freed.
func demoExpiry(ctx context.Context, st localrun.Stages, cat catalog.Catalog, ident table.Identifier, name string, rep *demoReport, want fingerprint.Fingerprint) error {
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		return err
	}
	txn := tbl.NewTransaction()
	if err := txn.SetProperties(iceberg.Properties{expire.MinSnapshotsToKeepKey: "1", expire.MaxSnapshotAgeMsKey: "1"}); err != nil {
		return err
	}
	if tbl, err = txn.Commit(ctx); err != nil {
		return err
	}
	time.Sleep(5 * time.Millisecond)
	rep.SnapshotsBefore = len(tbl.Metadata().Snapshots())
	if rep.StorageBefore, err = localBytes(tbl.Location()); err != nil {
		return err
	}
	if rep.Expiry, err = localrun.RunExpiry(ctx, st, name, "demo"); err != nil {
		return interrupted(err)
	}
	if tbl, err = cat.LoadTable(ctx, ident); err != nil {
		return err
	}
	rep.SnapshotsAfter = len(tbl.Metadata().Snapshots())
	if rep.StorageAfter, err = localBytes(tbl.Location()); err != nil {
		return err
	}
	got, err := fingerprint.Table(ctx, tbl)
	rep.ExpiryFingerprint = err == nil && got == want
	return err
}

// localBytes sums the sizes of the files under a file:// location.
func localBytes(location string) (int64, error) {
	var n int64
	err := filepath.WalkDir(strings.TrimPrefix(location, "file://"), func(_ string, d iofs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		info, err := d.Info()
		if err == nil {
			n += info.Size()
		}
		return err
	})
	return n, err
}

func printDemo(w io.Writer, reports []demoReport) {
	for _, r := range reports {
		fmt.Fprintf(w, "%s (%s)\n", r.Table, r.Kind)
		if r.Cycle.Plan.JobID != "" {
			kind := "job"
			if r.DeleteRewrite {
				kind = "delete-file rewrite job"
			}
			fmt.Fprintf(w, "  %s %s: %d groups, pinned snapshot %d", kind, r.Cycle.Plan.JobID, r.Cycle.Plan.Groups, r.Cycle.Plan.SnapshotID)
			if r.Cycle.Job != nil {
				fmt.Fprintf(w, " -> %s", r.Cycle.Job.State)
				if r.Cycle.Committed {
					fmt.Fprintf(w, ", new snapshot %d", r.Cycle.Job.CommittedSnapshotID)
				}
			}
			fmt.Fprintln(w)
		}
		tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "\t\tbefore\tafter\t")
		fmt.Fprintf(tw, "\tdata files\t%d\t%d\t\n", r.Before.DataFiles, r.After.DataFiles)
		fmt.Fprintf(tw, "\tdelete files\t%d\t%d\t\n", r.Before.DeleteFiles(), r.After.DeleteFiles())
		fmt.Fprintf(tw, "\t  position / DV / equality\t%d / %d / %d\t%d / %d / %d\t\n",
			r.Before.PositionDeleteFiles, r.Before.DeletionVectors, r.Before.EqualityDeleteFiles,
			r.After.PositionDeleteFiles, r.After.DeletionVectors, r.After.EqualityDeleteFiles)
		fmt.Fprintf(tw, "\taverage file size\t%s\t%s\t\n", humanBytes(r.Before.AvgFileBytes()), humanBytes(r.After.AvgFileBytes()))
		fmt.Fprintf(tw, "\tlive rows\t%d\t%d\t\n", r.LiveBefore, r.LiveAfter)
		_ = tw.Flush()
		verdict := "unchanged"
		if !r.Fingerprint {
			verdict = "CHANGED"
		}
		if r.WriterDeleted > 0 {
			fmt.Fprintf(w, "  while the job ran, a writer deleted %d rows of files it rewrote; the commit rebased the delete onto the new files (%d delete files after)\n", r.WriterDeleted, r.After.DeleteFiles())
			fmt.Fprintf(w, "  content fingerprint of all live rows, against the table as the writer left it: %s\n", verdict)
		} else {
			fmt.Fprintf(w, "  content fingerprint of all live rows: %s\n", verdict)
		}
		if r.Expiry.Plan.JobID != "" {
			fmt.Fprintf(w, "  then expiry job %s: snapshots %d -> %d, storage %s -> %s (%s freed)\n", r.Expiry.Plan.JobID,
				r.SnapshotsBefore, r.SnapshotsAfter, humanBytes(r.StorageBefore), humanBytes(r.StorageAfter), humanBytes(r.StorageBefore-r.StorageAfter))
		}
		for _, f := range r.Failures {
			fmt.Fprintf(w, "  FAIL: %s\n", f)
		}
		if len(r.Failures) == 0 {
			fmt.Fprintln(w, "  OK")
		}
		fmt.Fprintln(w)
	}
}

// humanBytes renders a size for people (as the health report does).
func humanBytes(n int64) string { return health.FormatBytes(n) }

func tableIdent(name string) (table.Identifier, error) {
	ident, err := messages.TableIdent(name)
	if err != nil {
		return nil, exitError{code: 2, err: err}
	}
	return ident, nil
}

// printContinue prints the exact commands to go on with the kept tables:
// the catalog flags must name the demo's catalog ("demo"), not the default.
func printContinue(w io.Writer, c catalogs.Config, reports []demoReport) {
	flags := fmt.Sprintf("--catalog sql --catalog-name %s --uri %s --warehouse %s", c.Name, c.URI, c.Warehouse)
	fmt.Fprintln(w, "\nThe tables are kept. To go on with them:")
	for _, r := range reports {
		fmt.Fprintf(w, "  icekeeper health %s %s\n", r.Table, flags)
		fmt.Fprintf(w, "  icekeeper compact %s --local %s\n", r.Table, flags)
	}
}
