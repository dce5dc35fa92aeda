package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/icekeeper/icekeeper/shared/awsclients"
	"github.com/icekeeper/icekeeper/shared/harness/localcloud"
	"github.com/icekeeper/icekeeper/shared/harness/localrun"
	"github.com/icekeeper/icekeeper/shared/harness/stages"
	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/optin"
	"github.com/icekeeper/icekeeper/shared/plan"
)

func runCompact(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	return runJob(ctx, "compact", args, stdout, stderr, localrun.RunCycle)
}

// runJob runs one job of a kind on one table through the same pipeline the
// Lambda functions run (planner, rewriters, committer), in this process:
// compact (runCompact) or expire (runExpire).
func runJob(ctx context.Context, command string, args []string, stdout, stderr io.Writer, cycle func(context.Context, localrun.Stages, string, string) (localrun.Cycle, error)) error {
	fs := newFlagSet(command, stderr)
	local := fs.Bool("local", false, "start an in-process AWS emulator for the pipeline's queues, tables and bucket")
	asJSON := addOutputFlags(fs, "the result")
	verbose := fs.Bool("v", false, "print the pipeline's JSON logs to stderr")
	quiet := fs.Bool("q", false, "no progress on stderr")
	cf := addCatalogFlags(fs)
	var sorted *bool
	var zOrder *string
	if command == "compact" {
		sorted = fs.Bool("sort", false, "sort the rewritten files by the table's sort order (strategy sort), whatever icekeeper.compaction.strategy says")
		zOrder = fs.String("z-order", "", "cluster the rewritten files on these columns together (COL,COL: strategy z-order), rewriting every run of overlapping files")
	}
	pos, err := parseInterspersed(fs, args)
	if err != nil {
		return err
	}
	if len(pos) != 1 {
		return exitError{code: 2, err: fmt.Errorf("%s takes one table (namespace.table), got %d arguments", command, len(pos))}
	}
	tableName := pos[0]
	if _, err := tableIdent(tableName); err != nil {
		return err
	}
	switch {
	case sorted != nil && *sorted && *zOrder != "":
		return exitError{code: 2, err: fmt.Errorf("--sort and --z-order: choose one layout")}
	case sorted != nil && *sorted:
		cycle = localrun.RunLayoutCycle(plan.Layout{Strategy: optin.StrategySort})
	case zOrder != nil && *zOrder != "":
		cols, err := optin.ParseZOrderColumns(*zOrder)
		if err != nil {
			return exitError{code: 2, err: fmt.Errorf("--z-order: %w", err)}
		}
		cycle = localrun.RunLayoutCycle(plan.Layout{Strategy: optin.StrategyZOrder, ZOrderColumns: cols})
	}

	cfg, err := cf.envConfig()
	if err != nil {
		return err
	}
	cfg.Catalog.MustExist = true // the job needs an existing table
	log := jsonLogger(stderr, *verbose)

	var clients *awsclients.Clients
	if *local {
		cloud := localcloud.Start()
		defer cloud.Close()
		res, err := cloud.Provision(ctx, "icekeeper", "", cfg.MaxTaskAttempts)
		if err != nil {
			return err
		}
		res.Apply(&cfg)
		clients = cloud.Clients
		// The table's own catalog and storage are reached with the real
		// SDK configuration; only the pipeline's resources are emulated.
		real, err := awsclients.Load(ctx)
		if err != nil {
			return err
		}
		clients.Config = real.Config
	} else if clients, err = awsclients.Load(ctx); err != nil {
		return err
	}
	deps, err := stages.NewDeps(cfg, clients, log, stages.AllNeeds...)
	if err != nil {
		return exitError{code: 2, err: err}
	}
	deps.Metrics = cliMetrics(stderr, *verbose)
	cat, err := stages.OpenCatalog(ctx, cfg, clients)
	if err != nil {
		return err
	}
	st, _, err := deps.LocalStages(cat)
	if err != nil {
		return err
	}
	st.Progress = newProgress(stderr, *quiet)
	if command == "maintain" {
		ident, _ := tableIdent(tableName)
		tbl, err := cat.LoadTable(ctx, ident)
		if err != nil {
			return fmt.Errorf("maintain %s: load table: %w", tableName, err)
		}
		return maintain(ctx, st, tableName, optin.OrphansEnabled(tbl.Properties()), *asJSON, stdout)
	}
	c, err := cycle(ctx, st, tableName, "cli")
	if err != nil {
		return interrupted(err)
	}
	if *asJSON {
		if err := printJSON(stdout, c); err != nil {
			return err
		}
	} else {
		printCycle(stdout, c)
	}
	if c.Job != nil && !c.Committed {
		return exitError{code: exitFailed, err: fmt.Errorf("job %s %s: %s", c.Job.ID, c.Job.State, c.Job.Reason)}
	}
	switch c.Plan.Outcome {
	case plan.OutcomeNothingToDo:
		return exitError{code: exitNothingToDo, err: fmt.Errorf("nothing to do: %s", c.Plan.Reason), reported: true}
	case plan.OutcomeLeaseHeld, plan.OutcomeBackedOff:
		return exitError{code: exitSkipped, err: fmt.Errorf("skipped: %s", c.Plan.Reason), reported: true}
	}
	return nil
}

// maintain runs every maintenance action due on the table, in the chain's
// order: compaction, delete-file rewrite, manifest rewrite, snapshot expiry, and orphan cleanup
// when the owner asked for it (icekeeper.orphans.enabled). Each action is
// one job through the pipeline; an action with nothing to do is reported
// and the next one runs. It stops at the first job that does not commit.
func maintain(ctx context.Context, st localrun.Stages, tableName string, orphans, asJSON bool, stdout io.Writer) error {
	actions := []func(context.Context, localrun.Stages, string, string) (localrun.Cycle, error){
		localrun.RunCycle, localrun.RunDeleteRewrite, localrun.RunManifestRewrite, localrun.RunExpiry,
	}
	if orphans {
		actions = append(actions, localrun.RunOrphanCleanup(0))
	}
	var cycles []localrun.Cycle
	done := 0
	var failure error
	for _, run := range actions {
		c, err := run(ctx, st, tableName, "cli")
		if err != nil {
			return interrupted(err)
		}
		cycles = append(cycles, c)
		if !asJSON {
			printCycle(stdout, c)
		}
		if c.Job != nil && !c.Committed {
			failure = exitError{code: exitFailed, err: fmt.Errorf("%s job %s %s: %s", c.Job.Kind, c.Job.ID, c.Job.State, c.Job.Reason)}
			break
		}
		if c.Committed {
			done++
		}
	}
	if asJSON {
		if err := printJSON(stdout, cycles); err != nil {
			return err
		}
	}
	switch {
	case failure != nil:
		return failure
	case done == 0:
		return exitError{code: exitNothingToDo, err: errors.New("nothing to do: no maintenance action was due"), reported: true}
	}
	return nil
}

// interrupted turns an interrupted cycle into exit code 130 (as a shell
// reports a process ended by SIGINT), with the job's fate in the message.
func interrupted(err error) error {
	if errors.Is(err, localrun.ErrInterrupted) {
		return exitError{code: exitInterrupted, err: err}
	}
	return err
}

func printCycle(w io.Writer, c localrun.Cycle) {
	p := c.Plan
	fmt.Fprintf(w, "table %s: %s", p.Table, p.Outcome)
	if p.Reason != "" {
		fmt.Fprintf(w, " (%s)", p.Reason)
	}
	fmt.Fprintln(w)
	if p.JobID == "" {
		return
	}
	if c.Job != nil && c.Job.Kind != jobs.KindCompaction {
		fmt.Fprintf(w, "planned: %s job %s at snapshot %d\n", c.Job.Kind, p.JobID, p.SnapshotID)
	} else {
		commits := ""
		if p.Batches > 1 {
			commits = fmt.Sprintf(" in %d commits (partial progress)", p.Batches)
		}
		sorted := ""
		switch p.Strategy {
		case optin.StrategySort:
			sorted = " (sorted)"
		case optin.StrategyZOrder:
			sorted = " (z-ordered on " + strings.Join(p.ZOrderColumns, ", ") + ")"
		}
		fmt.Fprintf(w, "planned: job %s, snapshot %d, %d groups%s%s, %d input files, %s\n", p.JobID, p.SnapshotID, p.Groups, sorted, commits, p.InputFiles, humanBytes(p.InputBytes))
		if p.DeferredGroups > 0 {
			groups := "groups"
			if p.DeferredGroups == 1 {
				groups = "group"
			}
			why := "one job takes at most ICEKEEPER_MAX_JOB_FILES files: run compact again; a deployed planner starts it by itself once this job commits"
			if !p.Continues {
				why = "the table's icekeeper.compaction.max-bytes-per-job: run compact again; a deployed planner takes it on its next visits"
			}
			fmt.Fprintf(w, "left for the next job: %d %s, %s (%s)\n", p.DeferredGroups, groups, humanBytes(p.DeferredBytes), why)
		}
		if p.OverlappingSortRuns > 0 {
			fmt.Fprintf(w, "note: %d runs of overlapping files were larger than one rewriter's group (ICEKEEPER_MAX_GROUP_BYTES): only their small files and files with deletes were rewritten, and they stay overlapping\n", p.OverlappingSortRuns)
		}
		fmt.Fprintf(w, "rewrites: %d deliveries, %d failed\n", c.Rewrites.Delivered, c.Rewrites.Failed)
	}
	if c.Job != nil {
		switch {
		case c.Committed && c.Job.Kind != jobs.KindCompaction:
			fmt.Fprintf(w, "committed: %s\n", strings.TrimPrefix(c.Job.Reason, "committed: "))
		case c.Committed && c.Job.Batched():
			fmt.Fprintf(w, "committed: %s, latest snapshot %d\n", c.Job.Reason, c.Job.CommittedSnapshotID)
		case c.Committed:
			fmt.Fprintf(w, "committed: new snapshot %d\n", c.Job.CommittedSnapshotID)
		default:
			fmt.Fprintf(w, "not committed: job %s: %s\n", c.Job.State, c.Job.Reason)
		}
	}
}
