package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"os"
	"sync"
	"time"

	"github.com/apache/iceberg-go/catalog"
	"github.com/apache/iceberg-go/table"
	"github.com/apache/iceberg-go/table/compaction"
	lambdaevents "github.com/aws/aws-lambda-go/events"
	"github.com/aws/aws-sdk-go-v2/aws"

	"github.com/icekeeper/icekeeper/events"
	"github.com/icekeeper/icekeeper/shared/awsclients"
	"github.com/icekeeper/icekeeper/shared/catalogs"
	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/harness/localcloud"
	"github.com/icekeeper/icekeeper/shared/harness/localrun"
	"github.com/icekeeper/icekeeper/shared/harness/stages"
	"github.com/icekeeper/icekeeper/shared/messages"
	"github.com/icekeeper/icekeeper/shared/metrics"
	"github.com/icekeeper/icekeeper/shared/plan"
	"github.com/icekeeper/icekeeper/shared/stage"
	committerstage "github.com/icekeeper/icekeeper/shared/stage/committer"
	plannerstage "github.com/icekeeper/icekeeper/shared/stage/planner"
	rewriterstage "github.com/icekeeper/icekeeper/shared/stage/rewriter"
)

// RawArgs are the raw child's arguments.
type RawArgs struct {
	Paths  []string `json:"paths"`
	OutDir string   `json:"out_dir"`
	Target int64    `json:"target"`
}

// IcebergArgs are the iceberg-go child's arguments.
type IcebergArgs struct {
	Catalog catalogs.Config `json:"catalog"`
	Table   string          `json:"table"`
}

// IcebergOut is what the iceberg-go child did.
type IcebergOut struct {
	Groups   int   `json:"groups"`
	Rows     int64 `json:"rows"`
	FilesOut int   `json:"files_out"`
}

// RewriterArgs are the rewriter child's arguments (the rest comes from
// the ICEKEEPER_* environment, as for the Lambda function).
type RewriterArgs struct {
	// MaxGroups stops after that many tasks (0: until the queue is empty).
	MaxGroups int `json:"max_groups"`
}

// Child runs one measured engine in this process and returns its JSON
// output; the benchmark starts it as `<self> child <mode>`, args on its stdin.
func Child(ctx context.Context, mode string, args []byte) (any, error) {
	if path := os.Getenv(HeapProfileEnv); path != "" {
		pctx, stop := context.WithCancel(ctx)
		defer stop()
		go profilePeakHeap(pctx, fmt.Sprintf("%s.%s.%d", path, mode, os.Getpid()))
	}
	defer profileCPU(mode)()
	switch mode {
	case "raw":
		var a RawArgs
		if err := json.Unmarshal(args, &a); err != nil {
			return nil, err
		}
		return RawRewrite(ctx, a.Paths, a.OutDir, a.Target)
	case "iceberg":
		var a IcebergArgs
		if err := json.Unmarshal(args, &a); err != nil {
			return nil, err
		}
		return icebergRewrite(ctx, a)
	case "plan":
		var a PlanArgs
		if err := json.Unmarshal(args, &a); err != nil {
			return nil, err
		}
		if _, err := stage.SetMemoryLimit(os.Getenv); err != nil {
			return nil, err
		}
		return planChild(ctx, a)
	case "commit":
		if _, err := stage.SetMemoryLimit(os.Getenv); err != nil {
			return nil, err
		}
		return commitChild(ctx)
	case "sweep":
		var a SweepArgs
		if err := json.Unmarshal(args, &a); err != nil {
			return nil, err
		}
		if _, err := stage.SetMemoryLimit(os.Getenv); err != nil {
			return nil, err
		}
		return sweepChild(ctx, a)
	case "rewriter":
		var a RewriterArgs
		if err := json.Unmarshal(args, &a); err != nil {
			return nil, err
		}
		// As the rewriter function does at init: Go's soft memory limit
		// from AWS_LAMBDA_FUNCTION_MEMORY_SIZE (Options.RewriterMemoryMB),
		// and under it the rewriter's GC percent.
		if _, err := stage.SetMemoryLimit(os.Getenv); err != nil {
			return nil, err
		}
		stage.SetRewriterGC(os.Getenv)
		return rewriterDrain(ctx, a)
	}
	return nil, fmt.Errorf("unknown child mode %q", mode)
}

// icebergRewrite is iceberg-go's own in-process compaction, with its own
// file IO (catalogs.OpenNative): plan with its
// compaction planner (the same settings icekeeper's planner uses), rewrite
// every group with Table.RewriteDataFiles, expunge the dead equality deletes
// it reports, and commit once.
func icebergRewrite(ctx context.Context, a IcebergArgs) (IcebergOut, error) {
	var out IcebergOut
	cat, err := catalogs.OpenNative(ctx, a.Catalog, aws.Config{})
	if err != nil {
		return out, err
	}
	ident, err := messages.TableIdent(a.Table)
	if err != nil {
		return out, err
	}
	tbl, err := cat.LoadTable(ctx, ident)
	if err != nil {
		return out, err
	}
	tasks, err := tbl.Scan().PlanFiles(ctx)
	if err != nil {
		return out, err
	}
	cfg, _, err := plan.CompactionConfig(tbl.Properties(), 0)
	if err != nil {
		return out, err
	}
	p, err := cfg.PlanCompaction(tasks)
	if err != nil {
		return out, err
	}
	if len(p.Groups) == 0 {
		return out, fmt.Errorf("iceberg-go's planner found nothing to compact in %s (%d files)", a.Table, len(tasks))
	}
	groups := make([]table.CompactionTaskGroup, 0, len(p.Groups))
	rewritten := map[string]struct{}{}
	for _, g := range p.Groups {
		groups = append(groups, table.CompactionTaskGroup{PartitionKey: g.PartitionKey, Tasks: g.Tasks, TotalSizeBytes: g.TotalSizeBytes})
		for _, t := range g.Tasks {
			rewritten[t.File.FilePath()] = struct{}{}
		}
	}
	fs, err := tbl.FS(ctx)
	if err != nil {
		return out, err
	}
	deadEq, err := compaction.CollectDeadEqualityDeletesWithSpecs(ctx, fs, tbl.Metadata(), tbl.CurrentSnapshot(), rewritten)
	if err != nil {
		return out, err
	}
	res, err := tbl.RewriteDataFiles(ctx, groups, table.RewriteDataFilesOptions{ExtraDeleteFilesToRemove: deadEq})
	if err != nil {
		return out, err
	}
	out.Groups, out.FilesOut = res.RewrittenGroups, res.AddedDataFiles
	after, err := cat.LoadTable(ctx, ident)
	if err != nil {
		return out, err
	}
	if s := after.CurrentSnapshot(); s != nil && s.Summary != nil {
		fmt.Sscan(s.Summary.Properties["total-records"], &out.Rows)
	}
	return out, nil
}

// RewriterOut is a rewriter process's deliveries and the bytes it logged.
type RewriterOut struct {
	localrun.Stats
	LogBytes int64 `json:"log_bytes"`
	// Busy is the time spent in the handler, what Lambda bills: the
	// process's start and its polls of the queue are not in it.
	Busy time.Duration `json:"busy_ns"`
}

// LogCounter counts the bytes a stage logs (its slog JSON and its metrics'
// embedded metric format lines), as the function's stdout would send them
// to CloudWatch Logs, and keeps none of them.
type LogCounter struct {
	mu sync.Mutex
	n  int64
}

func (c *LogCounter) Write(p []byte) (int, error) {
	c.mu.Lock()
	c.n += int64(len(p))
	c.mu.Unlock()
	return len(p), nil
}

// Bytes is what was written so far.
func (c *LogCounter) Bytes() int64 {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.n
}

// rewriterDrain is one rewriter process: the same handler the Lambda
// function runs, fed from the task queue, logging as the function does
// (JSON at Info, counted, not kept).
func rewriterDrain(ctx context.Context, a RewriterArgs) (RewriterOut, error) {
	var out RewriterOut
	cfg, err := config.FromEnv()
	if err != nil {
		return out, err
	}
	clients, err := awsclients.Load(ctx, localcloud.PlainRequestBodies)
	if err != nil {
		return out, err
	}
	logs := &LogCounter{}
	deps, err := stages.NewDeps(cfg, clients, slog.New(slog.NewJSONHandler(logs, nil)).With("function", "rewriter"), append(stages.RewriterNeeds, config.NeedTaskQueue)...)
	if err != nil {
		return out, err
	}
	deps.Metrics = metrics.NewEmitter(logs, "", nil)
	r, err := deps.Rewriter()
	if err != nil {
		return out, err
	}
	handle := rewriterstage.Handler{Rewrite: r}.Handle
	h := func(ctx context.Context, ev lambdaevents.SQSEvent) (lambdaevents.SQSEventResponse, error) {
		start := time.Now()
		defer func() { out.Busy += time.Since(start) }()
		return handle(ctx, ev)
	}
	if a.MaxGroups > 0 {
		out.Stats, err = localrun.Drain(ctx, deps.Tasks, h, 1, a.MaxGroups)
		out.LogBytes = logs.Bytes()
		return out, err
	}
	// Keep polling briefly after the queue looks empty: a task another
	// rewriter released for redelivery, or one still becoming visible,
	// must not be stranded when this process exits.
	total := &out.Stats
	for idle := 0; idle < 3; {
		st, err := localrun.Drain(ctx, deps.Tasks, h, 1, 0)
		total.Batches, total.Delivered, total.Failed = total.Batches+st.Batches, total.Delivered+st.Delivered, total.Failed+st.Failed
		total.ReceiveErrors += st.ReceiveErrors
		total.RetriedReceives += st.RetriedReceives
		if st.LastReceiveError != "" {
			total.LastReceiveError = st.LastReceiveError
		}
		if err != nil {
			out.LogBytes = logs.Bytes()
			return out, err
		}
		if st.Delivered == 0 {
			idle++
			time.Sleep(300 * time.Millisecond)
		} else {
			idle = 0
		}
	}
	out.LogBytes = logs.Bytes()
	return out, nil
}

func decodeOut(p Proc, v any) error {
	if err := json.Unmarshal(p.Out, v); err != nil {
		return fmt.Errorf("child output %q: %w", string(p.Out), err)
	}
	return nil
}

// planChild is one planner invocation, as the Lambda function runs it: a
// commit event for the table through the function's handler, so the
// table's health is assessed (its own compaction plan) before the job is
// planned.
func planChild(ctx context.Context, a PlanArgs) (plan.Result, error) {
	deps, cat, err := childDeps(ctx, stages.PlannerNeeds)
	if err != nil {
		return plan.Result{}, err
	}
	disp, err := deps.Dispatcher(cat)
	if err != nil {
		return plan.Result{}, err
	}
	ident, err := messages.TableIdent(a.Table)
	if err != nil {
		return plan.Result{}, err
	}
	raw, err := json.Marshal(map[string]any{"version": "0", "id": "bench", "source": events.SourceCommit, "detail-type": events.DetailTypeCommit,
		"detail": map[string]any{"namespace": ident[:len(ident)-1], "table": ident[len(ident)-1]}})
	if err != nil {
		return plan.Result{}, err
	}
	resp, err := plannerstage.Handler{Dispatch: disp, Metrics: deps.Metrics, Log: deps.Log}.Handle(ctx, raw)
	if err != nil {
		return plan.Result{}, err
	}
	for _, o := range resp.Tables {
		if o.Table == a.Table && o.Plan != nil {
			return *o.Plan, nil
		}
	}
	return plan.Result{}, fmt.Errorf("bench: the planner planned nothing for %s: %+v", a.Table, resp)
}

// commitChild drains the commit queue with the real committer.
func commitChild(ctx context.Context) (localrun.Stats, error) {
	deps, cat, err := childDeps(ctx, append(stages.CommitterNeeds, config.NeedCommitQueue))
	if err != nil {
		return localrun.Stats{}, err
	}
	c, err := deps.Committer(cat)
	if err != nil {
		return localrun.Stats{}, err
	}
	return localrun.Drain(ctx, deps.Commits, committerstage.Handler{Commit: c}.Handle, 1, 0)
}

func childDeps(ctx context.Context, need []config.Need) (*stages.Deps, catalog.Catalog, error) {
	cfg, err := config.FromEnv()
	if err != nil {
		return nil, nil, err
	}
	clients, err := awsclients.Load(ctx, localcloud.PlainRequestBodies)
	if err != nil {
		return nil, nil, err
	}
	deps, err := stages.NewDeps(cfg, clients, slog.New(slog.NewJSONHandler(io.Discard, nil)), need...)
	if err != nil {
		return nil, nil, err
	}
	deps.Metrics = metrics.NewEmitter(io.Discard, "", nil)
	cat, err := stages.OpenCatalog(ctx, cfg, clients)
	return deps, cat, err
}
