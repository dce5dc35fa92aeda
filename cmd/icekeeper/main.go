// Command icekeeper is the operator CLI: it runs icekeeper's pipeline
// locally through the same handler code the Lambda functions run.
//
//	icekeeper demo                      the embedded default: compact sample tables end to end
//	icekeeper compact TABLE [--sort]    one complete cycle on a configured table
//	icekeeper local-cloud               serve the AWS emulator on 127.0.0.1:4566
//	icekeeper invoke planner|rewriter|committer
//	                                    run one function's handler locally
//
// Configuration comes from the same ICEKEEPER_* environment variables the
// Lambda functions read; catalog flags follow iceberg-go's CLI.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/icekeeper/icekeeper/shared/catalogs"
	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/harness/localrun"
)

const usage = `icekeeper: autonomous maintenance for Apache Iceberg tables

Usage:
  icekeeper demo [--json] [--keep DIR]
      Start the AWS emulator in-process, create sample merge-on-read tables,
      run the full pipeline and print a before/after report. Exits non-zero
      if any check fails.
  icekeeper compact TABLE [--sort | --z-order COL,COL] [--local] [--json] [catalog flags]
      Run one complete cycle (plan, rewrite, commit) on TABLE ("ns.table").
      --sort sorts the rewritten files by the table's sort order, rewriting
      together the files whose ranges on its first column overlap
      (icekeeper.compaction.strategy=sort for this run); --z-order clusters
      them on the columns together (strategy z-order).
      --local starts an in-process emulator for the pipeline's queues,
      tables and bucket; otherwise they come from ICEKEEPER_* variables and
      the AWS endpoint from the standard SDK configuration.
  icekeeper expire TABLE [--dry-run] [--local] [--json] [catalog flags]
      Expire TABLE's snapshots with its retention (history.expire.*, or
      icekeeper.expire.* overrides) as an expiry job through the same
      pipeline, and delete the files only expired snapshots used.
      --dry-run only says what would be expired and freed.
  icekeeper rewrite-manifests TABLE [--local] [--json] [catalog flags]
      Rewrite TABLE's data manifests, clustered by partition, when it has
      more than commit.manifest.min-count-to-merge (default 100), as a job
      through the same pipeline. Changes no data file.
  icekeeper rewrite-deletes TABLE [--local] [--json] [catalog flags]
      Rewrite the position delete files of TABLE's partitions that have
      icekeeper.rewrite-deletes.min-input-files (default 5) or more into
      one per partition (v2), or into deletion vectors (v3), dropping
      deletes whose data file is gone, and convert equality deletes into
      them where that costs less than a rewrite, as a job through the same
      pipeline. Changes no data file and no row a query returns.
  icekeeper remove-orphans TABLE [--dry-run] [--older-than 72h] [--local] [--json] [catalog flags]
      Remove TABLE's orphan files (under its location, referenced by no
      metadata, older than the safety age: --older-than, else the table's
      icekeeper.orphans.older-than, else 72h; never under 24h) under data/
      and metadata/, as a job through the same pipeline. Refused when the
      location is shared with another table. --dry-run lists them.
  icekeeper maintain TABLE [--local] [--json] [catalog flags]
      Every maintenance action due on TABLE, in order, each a job through
      the same pipeline: compaction, delete-file rewrite, manifest rewrite,
      snapshot expiry, and orphan cleanup if the owner set
      icekeeper.orphans.enabled=true.
      Exit code 3 when none was due.
  icekeeper sample TABLE [--format-version 2|3] [--partitions N] [--files N] [--rows-per-file N] [catalog flags]
      Create an uncompacted merge-on-read sample table (many small files,
      position deletes or deletion vectors, equality deletes) to practise
      compact and health on.
  icekeeper health TABLE [--json] [--orphans [--orphans-older-than 72h]] [catalog flags]
      Print TABLE's health from its metadata: files, small files, deletes by
      kind, snapshots, manifests, per partition; a score (0 = healthy) and
      the recommended actions with what they would touch. --orphans also
      lists the table location for files no snapshot references. Read-only.
  icekeeper local-cloud [--addr 127.0.0.1:4566] [--prefix icekeeper] [--mode active] [--grants demo.*]
      Serve the emulator, create the pipeline's resources in it and print
      the environment to use with it (including ICEKEEPER_MODE and
      ICEKEEPER_GRANTS, so invoke works at once). Runs until interrupted.
  icekeeper signals TABLE [--json] [--days N] [catalog flags]
      The query signals recorded for TABLE (what its queries filter on, how
      often and with how many bytes scanned, decayed with a half-life of a
      week) and the layout they recommend: a sort, a z-order, or none, with
      the guard that keeps an order against noise. Reads ICEKEEPER_JOBS_TABLE.
  icekeeper log TABLE [--json] [--limit N]
      The table's maintenance log: one record per job (trigger, pinned and
      committed snapshots, files, bytes and rows in and out, durations,
      estimated cost, outcome and reason), from ICEKEEPER_BUCKET.
  icekeeper summary [TABLE ...] [--at TIME] [--json] [--html FILE] [--publish]
      The weekly summary of the last complete ISO week (of the tables named,
      else of every table with a maintenance log): jobs per table and kind,
      estimated cost, the ledger's measured saving, tables backed off and
      why, layout trial verdicts, partition proposals pending a human.
      Reads ICEKEEPER_BUCKET (and the lease and jobs tables when set).
      --publish writes it to summary/ and puts its event, as the planner's
      weekly rule does.
  icekeeper invoke planner --event FILE [catalog flags]
  icekeeper invoke rewriter|committer [--max N]
      Run one function's handler locally, as SAM's local invoke does: the
      planner with an EventBridge event; the rewriter and the committer by
      draining their queue at the configured endpoint.

Catalog flags (as iceberg-go's CLI; default from ICEKEEPER_CATALOG_*):
  --catalog TYPE  --catalog-name NAME  --uri URI  --warehouse LOC
  --config FILE (.iceberg-go.yaml)  --credential C  --token T
  --sql-driver D  --sql-dialect D  --rest-sigv4  --signing-name N  --signing-region R
  --prop key=value (repeatable: catalog and file IO properties)
`

// exitError carries a process exit code. reported means the message was
// already printed (the flag package prints a flag error with the usage), so
// main does not print it again.
type exitError struct {
	code     int
	err      error
	reported bool
}

// Exit codes, the same for every command (docs/FORMATS.md, "CLI exit
// codes").
const (
	exitDone        = 0   // the work was done (or help was shown)
	exitFailed      = 1   // it was attempted and failed (a job not committed, a check failed)
	exitUsage       = 2   // bad flags or arguments, or bad configuration
	exitNothingToDo = 3   // nothing needed doing (no file group worth rewriting)
	exitSkipped     = 4   // not done now: another job holds the table, or it is backed off
	exitInterrupted = 130 // interrupted (SIGINT or SIGTERM); what it wrote was removed
)

// errHelp: a --help or -h was answered with the command's usage; the
// process exits 0.
var errHelp = errors.New("help shown")

func (e exitError) Error() string { return e.err.Error() }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		if errors.Is(err, errHelp) {
			return
		}
		var ee exitError
		if !errors.As(err, &ee) || !ee.reported {
			fmt.Fprintln(os.Stderr, "icekeeper:", err)
		}
		switch {
		case errors.As(err, &ee):
			os.Exit(ee.code)
		case errors.Is(err, catalogs.ErrConfig), errors.Is(err, config.ErrInvalid):
			os.Exit(exitUsage) // bad configuration, wherever it was found
		}
		os.Exit(exitFailed)
	}
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 || args[0] == "-h" || args[0] == "--help" || args[0] == "help" {
		fmt.Fprint(stdout, usage)
		return nil
	}
	switch args[0] {
	case "demo":
		return runDemo(ctx, args[1:], stdout, stderr)
	case "compact":
		return runCompact(ctx, args[1:], stdout, stderr)
	case "expire":
		return runExpire(ctx, args[1:], stdout, stderr)
	case "maintain":
		return runJob(ctx, "maintain", args[1:], stdout, stderr, nil)
	case "remove-orphans":
		return runRemoveOrphans(ctx, args[1:], stdout, stderr)
	case "rewrite-manifests":
		return runJob(ctx, "rewrite-manifests", args[1:], stdout, stderr, localrun.RunManifestRewrite)
	case "rewrite-deletes":
		return runJob(ctx, "rewrite-deletes", args[1:], stdout, stderr, localrun.RunDeleteRewrite)
	case "sample":
		return runSample(ctx, args[1:], stdout, stderr)
	case "health":
		return runHealth(ctx, args[1:], stdout, stderr)
	case "local-cloud":
		return runLocalCloud(ctx, args[1:], stdout, stderr)
	case "invoke":
		return runInvoke(ctx, args[1:], stdout, stderr)
	case "log":
		return runLog(ctx, args[1:], stdout, stderr)
	case "signals":
		return runSignals(ctx, args[1:], stdout, stderr)
	case "summary":
		return runSummary(ctx, args[1:], stdout, stderr)
	default:
		fmt.Fprint(stderr, usage)
		return exitError{code: 2, err: fmt.Errorf("unknown command %q", args[0])}
	}
}

func newFlagSet(name string, stderr io.Writer) *flag.FlagSet {
	fs := flag.NewFlagSet("icekeeper "+name, flag.ContinueOnError)
	fs.SetOutput(stderr)
	return fs
}

// parseInterspersed parses flags that may come before or after positional
// arguments ("compact TABLE --local" and "compact --local TABLE").
func parseInterspersed(fs *flag.FlagSet, args []string) ([]string, error) {
	var pos []string
	for {
		if err := fs.Parse(args); err != nil {
			if errors.Is(err, flag.ErrHelp) {
				return nil, errHelp // the flag set printed its usage
			}
			return nil, exitError{code: 2, err: err, reported: true}
		}
		rest := fs.Args()
		if len(rest) == 0 {
			return pos, nil
		}
		pos = append(pos, rest[0])
		args = rest[1:]
	}
}
