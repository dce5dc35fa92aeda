// Package stages builds the planner, the rewriter and the committer from
// configuration and AWS clients. The Lambda mains, the operator CLI and the
// tests all build their stages here, so they run the same code with the
// same settings.
package stages

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"time"

	"github.com/apache/iceberg-go/catalog"

	"github.com/icekeeper/icekeeper/shared/audit"
	"github.com/icekeeper/icekeeper/shared/awsclients"
	"github.com/icekeeper/icekeeper/shared/blob"
	"github.com/icekeeper/icekeeper/shared/catalogs"
	"github.com/icekeeper/icekeeper/shared/commit"
	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/handler"
	"github.com/icekeeper/icekeeper/shared/joblog"
	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/lease"
	"github.com/icekeeper/icekeeper/shared/localrun"
	"github.com/icekeeper/icekeeper/shared/messages"
	"github.com/icekeeper/icekeeper/shared/metrics"
	"github.com/icekeeper/icekeeper/shared/pin"
	"github.com/icekeeper/icekeeper/shared/plan"
	"github.com/icekeeper/icekeeper/shared/queue"
	"github.com/icekeeper/icekeeper/shared/rewrite"
	"github.com/icekeeper/icekeeper/shared/tracing"
)

// Deps are the stores and queues every stage shares.
type Deps struct {
	Config  config.Config
	Clients *awsclients.Clients
	Leases  *lease.Store
	Jobs    *jobs.Store
	Blobs   *blob.Store
	Tasks   *queue.Queue
	Commits *queue.Queue
	Tables  pin.Opener
	// Metrics receives EMF metric lines (stdout in Lambda, where CloudWatch
	// Logs extracts them).
	Metrics *metrics.Emitter
	// Events receives audit events (the EventBridge client by default).
	Events audit.EventBridge
	// Tracer traces phases (off outside Lambda).
	Tracer tracing.Tracer
	Log    *slog.Logger
	Now    func() time.Time
}

// NewDeps validates cfg for the needs given and builds the stores.
func NewDeps(cfg config.Config, clients *awsclients.Clients, log *slog.Logger, need ...config.Need) (*Deps, error) {
	if err := cfg.Validate(need...); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	d := &Deps{Config: cfg, Clients: clients, Log: log, Now: time.Now, Tables: pin.Opener{Properties: cfg.Catalog.Properties}}
	d.Metrics = metrics.NewEmitter(os.Stdout, metrics.DefaultNamespace, d.Now)
	d.Events = clients.Events
	d.Tracer = tracing.FromEnv()
	var err error
	has := func(n config.Need) bool {
		for _, x := range need {
			if x == n {
				return true
			}
		}
		return false
	}
	if has(config.NeedLeases) {
		if d.Leases, err = lease.NewStore(clients.DynamoDB, cfg.LeaseTable, d.Now); err != nil {
			return nil, err
		}
	}
	if has(config.NeedJobs) {
		if d.Jobs, err = jobs.NewStore(clients.DynamoDB, cfg.JobsTable, d.Now); err != nil {
			return nil, err
		}
	}
	if has(config.NeedBucket) {
		if d.Blobs, err = blob.NewStore(clients.S3, cfg.Bucket, cfg.Prefix); err != nil {
			return nil, err
		}
	}
	if has(config.NeedTaskQueue) {
		if d.Tasks, err = queue.New(clients.SQS, cfg.TaskQueueURL, config.EnvTaskQueueURL); err != nil {
			return nil, err
		}
	}
	if has(config.NeedCommitQueue) {
		if d.Commits, err = queue.New(clients.SQS, cfg.CommitQueueURL, config.EnvCommitQueueURL); err != nil {
			return nil, err
		}
	}
	return d, nil
}

// OpenCatalog opens the configured catalog (reading .iceberg-go.yaml).
func OpenCatalog(ctx context.Context, cfg config.Config, clients *awsclients.Clients) (catalog.Catalog, error) {
	cc, err := cfg.Catalog.WithFile()
	if err != nil {
		return nil, err
	}
	return catalogs.Open(ctx, cc, clients.Config)
}

// PlannerNeeds, RewriterNeeds and CommitterNeeds list each stage's resources.
var (
	PlannerNeeds   = []config.Need{config.NeedCatalog, config.NeedLeases, config.NeedJobs, config.NeedBucket, config.NeedTaskQueue, config.NeedCommitQueue}
	RewriterNeeds  = []config.Need{config.NeedLeases, config.NeedJobs, config.NeedBucket, config.NeedTaskQueue, config.NeedCommitQueue}
	CommitterNeeds = []config.Need{config.NeedCatalog, config.NeedLeases, config.NeedJobs, config.NeedBucket}
	AllNeeds       = []config.Need{config.NeedCatalog, config.NeedLeases, config.NeedJobs, config.NeedBucket, config.NeedTaskQueue, config.NeedCommitQueue}
)

// Planner builds the planner.
func (d *Deps) Planner(cat catalog.Catalog) (*plan.Planner, error) {
	p, err := plan.New(plan.Settings{
		LeaseTTL: d.Config.LeaseTTL, MaxGroupBytes: d.Config.MaxGroupBytes,
		InlineTaskBytes: d.Config.InlineTaskBytes, TargetFileSize: d.Config.TargetFileSize,
	}, cat, d.Leases, d.Jobs, d.Blobs, d.Tasks, d.Commits, d.Log.With("stage", "planner"), d.Now)
	if err == nil {
		p.SetTracer(d.Tracer)
	}
	return p, err
}

// Rewriter builds the rewriter.
func (d *Deps) Rewriter() (*rewrite.Rewriter, error) {
	r, err := rewrite.New(rewrite.Settings{MaxAttempts: d.Config.MaxTaskAttempts, ScanConcurrency: d.Config.ScanConcurrency, LeaseTTL: d.Config.LeaseTTL},
		d.Jobs, d.Leases, d.Blobs, d.Commits, d.Tables, d.Log.With("stage", "rewriter"), d.Now)
	if err == nil {
		r.SetMetrics(d.Metrics)
		r.SetTracer(d.Tracer)
	}
	return r, err
}

// Committer builds the committer.
func (d *Deps) Committer(cat catalog.Catalog) (*commit.Committer, error) {
	c, err := commit.New(commit.Settings{
		LeaseTTL: d.Config.LeaseTTL, MaxRetries: d.Config.CommitRetries,
		CommitTakeover: d.Config.CommitTakeover, MaxAttempts: d.Config.MaxTaskAttempts,
	}, cat, d.Jobs, d.Leases, d.Blobs, d.Tables, d.Log.With("stage", "committer"), d.Now)
	if err == nil {
		c.SetMetrics(d.Metrics)
		c.SetTracer(d.Tracer)
		c.SetRecorder(joblog.New(d.Blobs), d.Config.RewriterMemoryMB, d.Config.CoordinatorMemoryMB)
	}
	return c, err
}

// Describe names the resources, for errors and logs.
func (d *Deps) Describe() string {
	return fmt.Sprintf("leases=%s jobs=%s bucket=%s tasks=%s commits=%s", d.Config.LeaseTable, d.Config.JobsTable, d.Config.Bucket, d.Config.TaskQueueURL, d.Config.CommitQueueURL)
}

// LocalStages builds all three stages with their Lambda handlers, for
// running the pipeline outside Lambda (package localrun): an operator's
// cycle, which plans a table even while it is backed off after repeated
// failures.
func (d *Deps) LocalStages(cat catalog.Catalog) (localrun.Stages, *commit.Committer, error) {
	p, err := d.Planner(cat)
	if err != nil {
		return localrun.Stages{}, nil, err
	}
	p.IgnoreBackoff()
	r, err := d.Rewriter()
	if err != nil {
		return localrun.Stages{}, nil, err
	}
	c, err := d.Committer(cat)
	if err != nil {
		return localrun.Stages{}, nil, err
	}
	end := func(ctx context.Context, jobID, reason string) (int, error) {
		res, err := c.Handle(ctx, messages.CommitRequest{Version: messages.FormatVersion, JobID: jobID, Abort: true, Reason: reason}, 1)
		return res.FilesRemoved, err
	}
	return localrun.Stages{
		Plan:      p,
		Rewriter:  handler.Rewriter{Rewrite: r, Log: d.Log}.Handle,
		Committer: handler.Committer{Commit: c, Log: d.Log}.Handle,
		Tasks:     d.Tasks, Commits: d.Commits, Jobs: d.Jobs,
		End: end,
	}, c, nil
}
