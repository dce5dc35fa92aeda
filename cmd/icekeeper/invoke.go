package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/icekeeper/icekeeper/shared/awsclients"
	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/handler"
	"github.com/icekeeper/icekeeper/shared/localrun"
	"github.com/icekeeper/icekeeper/shared/stages"
)

func runInvoke(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return exitError{code: 2, err: fmt.Errorf("invoke needs a function: planner, rewriter or committer")}
	}
	fn := args[0]
	fs := newFlagSet("invoke "+fn, stderr)
	eventFile := fs.String("event", "", "planner: EventBridge event JSON file (see events/)")
	maxBatches := fs.Int("max", 0, "rewriter/committer: stop after this many batches (0: until the queue is empty)")
	batch := fs.Int("batch", 1, "rewriter/committer: messages per batch")
	quiet := fs.Bool("q", false, "do not print the function's JSON logs to stderr")
	cf := addCatalogFlags(fs)
	if _, err := parseInterspersed(fs, args[1:]); err != nil {
		return err
	}
	cfg, err := config.FromEnv()
	if err != nil {
		return exitError{code: 2, err: err}
	}
	if err := cf.apply(&cfg); err != nil {
		return err
	}
	logOut := stderr
	if *quiet {
		logOut = io.Discard
	}
	log := slog.New(slog.NewJSONHandler(logOut, nil)).With("function", fn)
	clients, err := awsclients.Load(ctx)
	if err != nil {
		return err
	}
	enc := json.NewEncoder(stdout)
	enc.SetIndent("", "  ")

	switch fn {
	case "planner":
		if *eventFile == "" {
			return exitError{code: 2, err: fmt.Errorf("invoke planner needs --event FILE")}
		}
		raw, err := os.ReadFile(*eventFile)
		if err != nil {
			return exitError{code: 2, err: err}
		}
		deps, err := stages.NewDeps(cfg, clients, log, stages.PlannerNeeds...)
		if err != nil {
			return exitError{code: 2, err: err}
		}
		cat, err := stages.OpenCatalog(ctx, cfg, clients)
		if err != nil {
			return err
		}
		p, err := deps.Planner(cat)
		if err != nil {
			return err
		}
		resp, herr := handler.Planner{Plan: p, SweepTables: cfg.Tables, Log: log}.Handle(ctx, raw)
		if err := enc.Encode(resp); err != nil {
			return err
		}
		if resp.Rejected != "" {
			return exitError{code: 1, err: fmt.Errorf("event rejected")}
		}
		return herr
	case "rewriter":
		deps, err := stages.NewDeps(cfg, clients, log, append(stages.RewriterNeeds, config.NeedTaskQueue)...)
		if err != nil {
			return exitError{code: 2, err: err}
		}
		r, err := deps.Rewriter()
		if err != nil {
			return err
		}
		st, err := localrun.Drain(ctx, deps.Tasks, handler.Rewriter{Rewrite: r, Log: log}.Handle, int32(*batch), *maxBatches)
		if err != nil {
			return err
		}
		return enc.Encode(st)
	case "committer":
		deps, err := stages.NewDeps(cfg, clients, log, append(stages.CommitterNeeds, config.NeedCommitQueue)...)
		if err != nil {
			return exitError{code: 2, err: err}
		}
		cat, err := stages.OpenCatalog(ctx, cfg, clients)
		if err != nil {
			return err
		}
		c, err := deps.Committer(cat)
		if err != nil {
			return err
		}
		st, err := localrun.Drain(ctx, deps.Commits, handler.Committer{Commit: c, Log: log}.Handle, int32(*batch), *maxBatches)
		if err != nil {
			return err
		}
		return enc.Encode(st)
	default:
		return exitError{code: 2, err: fmt.Errorf("unknown function %q: planner, rewriter or committer", fn)}
	}
}
