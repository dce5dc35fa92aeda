package main

import (
	"context"

	"fmt"
	"github.com/apache/iceberg-go/catalog"
	"io"
	"os"

	"github.com/icekeeper/icekeeper/shared/awsclients"
	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/harness/localrun"
	"github.com/icekeeper/icekeeper/shared/harness/stages"
	"github.com/icekeeper/icekeeper/shared/queue"
	committerstage "github.com/icekeeper/icekeeper/shared/stage/committer"
	plannerstage "github.com/icekeeper/icekeeper/shared/stage/planner"
	"github.com/icekeeper/icekeeper/shared/stage/rewriter"
	rewriterstage "github.com/icekeeper/icekeeper/shared/stage/rewriter"
)

const invokeUsage = `usage: icekeeper invoke planner --event FILE [-q] [catalog flags]
       icekeeper invoke rewriter [--max N] [--batch N] [-q]
       icekeeper invoke committer [--max N] [--batch N] [-q] [catalog flags]
Run one function's handler locally; icekeeper invoke FUNCTION --help lists its flags.
`

func runInvoke(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return exitError{code: 2, err: fmt.Errorf("invoke needs a function: planner, rewriter or committer")}
	}
	fn := args[0]
	switch fn {
	case "-h", "-help", "--help":
		fmt.Fprint(stdout, invokeUsage)
		return errHelp
	case "planner", "rewriter", "committer":
	default:
		return exitError{code: 2, err: fmt.Errorf("unknown function %q: planner, rewriter or committer", fn)}
	}
	// Each function lists only its own flags.
	fs := newFlagSet("invoke "+fn, stderr)
	var (
		eventFile         = new(string)
		maxBatches, batch = new(int), new(int)
		cf                = &catalogFlags{}
	)
	if fn == "planner" {
		eventFile = fs.String("event", "", "EventBridge event JSON file (see events/)")
	} else {
		maxBatches = fs.Int("max", 0, "stop after this many batches (0: until the queue is empty)")
		batch = fs.Int("batch", 1, "messages per batch")
	}
	quiet := fs.Bool("q", false, "do not print the function's JSON logs to stderr")
	if fn != "rewriter" { // the rewriter never opens the catalog
		cf = addCatalogFlags(fs)
	}
	if _, err := parseInterspersed(fs, args[1:]); err != nil {
		return err
	}
	cfg, err := cf.envConfig()
	if err != nil {
		return err
	}
	cfg.Catalog.MustExist = true
	log := jsonLogger(stderr, !*quiet).With("function", fn)
	clients, err := awsclients.Load(ctx)
	if err != nil {
		return err
	}

	switch fn {
	case "planner":
		if *eventFile == "" {
			return exitError{code: 2, err: fmt.Errorf("invoke planner needs --event FILE")}
		}
		raw, err := os.ReadFile(*eventFile)
		if err != nil {
			return exitError{code: 2, err: err}
		}
		deps, err := stages.NewDeps(cfg, clients, log, stages.PlannerNeedsFor(cfg.Mode)...)
		if err != nil {
			return exitError{code: 2, err: err}
		}
		deps.Metrics = cliMetrics(stderr, !*quiet)
		var cat catalog.Catalog
		if cfg.Mode != config.ModeOff {
			if cat, err = stages.OpenCatalog(ctx, cfg, clients); err != nil {
				return err
			}
		}
		d, err := deps.Dispatcher(cat)
		if err != nil {
			return exitError{code: 2, err: err}
		}
		resp, herr := plannerstage.Handler{Dispatch: d, Metrics: deps.Metrics, Log: log}.Handle(ctx, raw)
		if err := printJSON(stdout, resp); err != nil {
			return err
		}
		if resp.Rejected != "" {
			return exitError{code: 1, err: fmt.Errorf("event rejected")}
		}
		return herr
	case "rewriter", "committer":
		need := append(stages.RewriterNeeds, config.NeedTaskQueue)
		if fn == "committer" {
			need = append(stages.CommitterNeeds, config.NeedCommitQueue)
		}
		deps, err := stages.NewDeps(cfg, clients, log, need...)
		if err != nil {
			return exitError{code: 2, err: err}
		}
		deps.Metrics = cliMetrics(stderr, !*quiet)
		q, h, err := stageHandler(ctx, fn, deps)
		if err != nil {
			return err
		}
		st, err := localrun.Drain(ctx, q, h, int32(*batch), *maxBatches)
		if ctx.Err() != nil {
			// Ctrl-C: the message being handled is redelivered after its
			// visibility timeout; say so rather than the queue's error.
			return exitError{code: exitInterrupted, err: fmt.Errorf("interrupted after %d messages; the one in progress will be redelivered", st.Delivered)}
		}
		if err != nil {
			return err
		}
		return printJSON(stdout, st)
	}
	return nil
}

// stageHandler builds the rewriter's or the committer's queue and handler.
func stageHandler(ctx context.Context, fn string, deps *stages.Deps) (*queue.Queue, localrun.BatchHandler, error) {
	if fn == "rewriter" {
		r, err := deps.Rewriter()
		if err != nil {
			return nil, nil, err
		}
		cat := rewriter.Catalog(deps.Deps)
		return deps.Tasks, rewriterstage.Handler{Rewrite: r, Delete: rewriter.Deleter(deps.Deps, cat), List: rewriter.Lister(deps.Deps, cat), Log: deps.Log}.Handle, nil
	}
	cat, err := stages.OpenCatalog(ctx, deps.Config, deps.Clients)
	if err != nil {
		return nil, nil, err
	}
	c, err := deps.Committer(cat)
	if err != nil {
		return nil, nil, err
	}
	return deps.Commits, committerstage.Handler{Commit: c, Log: deps.Log}.Handle, nil
}
