// Package stages builds the whole pipeline in one process: all three stages
// over the shared wiring, for the operator CLI, the benchmarks and the
// tests. The Lambda functions do not use it: each builds only its own stage
// (packages wiring/planning, wiring/rewriting, wiring/committing), so that
// its binary links no other stage's code.
package stages

import (
	"context"
	"log/slog"

	"github.com/apache/iceberg-go/catalog"

	"github.com/icekeeper/icekeeper/shared/awsclients"
	"github.com/icekeeper/icekeeper/shared/catalogs"
	"github.com/icekeeper/icekeeper/shared/commit"
	"github.com/icekeeper/icekeeper/shared/config"
	committerhandler "github.com/icekeeper/icekeeper/shared/handler/committer"
	rewriterhandler "github.com/icekeeper/icekeeper/shared/handler/rewriter"
	"github.com/icekeeper/icekeeper/shared/harness/localrun"
	"github.com/icekeeper/icekeeper/shared/messages"
	"github.com/icekeeper/icekeeper/shared/plan"
	"github.com/icekeeper/icekeeper/shared/rewrite"
	"github.com/icekeeper/icekeeper/shared/trigger"
	"github.com/icekeeper/icekeeper/shared/wiring"
	"github.com/icekeeper/icekeeper/shared/wiring/committing"
	"github.com/icekeeper/icekeeper/shared/wiring/planning"
	"github.com/icekeeper/icekeeper/shared/wiring/rewriting"
)

// Deps are the shared wiring, with a builder for each stage.
type Deps struct {
	*wiring.Deps
}

// NewDeps validates cfg for the needs given and builds the stores.
func NewDeps(cfg config.Config, clients *awsclients.Clients, log *slog.Logger, need ...config.Need) (*Deps, error) {
	w, err := wiring.New(cfg, clients, log, need...)
	if err != nil {
		return nil, err
	}
	return &Deps{Deps: w}, nil
}

// OpenCatalog opens the configured catalog (reading .iceberg-go.yaml).
func OpenCatalog(ctx context.Context, cfg config.Config, clients *awsclients.Clients) (catalog.Catalog, error) {
	return catalogs.OpenWithFile(ctx, cfg.Catalog, clients.Config)
}

// Each stage's resources, and the whole pipeline's.
var (
	PlannerNeeds   = planning.Needs
	RewriterNeeds  = rewriting.Needs
	CommitterNeeds = committing.Needs
	AllNeeds       = planning.Needs
)

// PlannerNeedsFor lists the planner function's resources in a mode.
func PlannerNeedsFor(mode config.Mode) []config.Need { return planning.NeedsFor(mode) }

// Planner builds the planner.
func (d *Deps) Planner(cat catalog.Catalog) (*plan.Planner, error) {
	return planning.Planner(d.Deps, cat)
}

// Dispatcher builds the planner function's trigger dispatcher.
func (d *Deps) Dispatcher(cat catalog.Catalog) (*trigger.Dispatcher, error) {
	return planning.Dispatcher(d.Deps, cat)
}

// Rewriter builds the rewriter.
func (d *Deps) Rewriter() (*rewrite.Rewriter, error) { return rewriting.Rewriter(d.Deps) }

// Committer builds the committer.
func (d *Deps) Committer(cat catalog.Catalog) (*commit.Committer, error) {
	return committing.Committer(d.Deps, cat)
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
		res, err := c.Handle(ctx, messages.AbortJob(jobID, reason, ""), 1)
		return res.FilesRemoved, err
	}
	return localrun.Stages{
		Plan:      p,
		Rewriter:  rewriterhandler.Handler{Rewrite: r, Delete: rewriting.Deleter(d.Deps, cat), List: rewriting.Lister(d.Deps, cat), Log: d.Log}.Handle,
		Committer: committerhandler.Handler{Commit: c, Log: d.Log}.Handle,
		Tasks:     d.Tasks, Commits: d.Commits, Jobs: d.Jobs,
		End: end,
	}, c, nil
}
