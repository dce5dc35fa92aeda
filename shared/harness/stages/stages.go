// Package stages builds the whole pipeline in one process: all three stages
// over the shared wiring, for the operator CLI, the benchmarks and the
// tests. The Lambda functions do not use it: each builds only its own stage
// (packages stage/planner, stage/rewriter, stage/committer), so that
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
	"github.com/icekeeper/icekeeper/shared/harness/localrun"
	"github.com/icekeeper/icekeeper/shared/messages"
	"github.com/icekeeper/icekeeper/shared/plan"
	"github.com/icekeeper/icekeeper/shared/rewrite"
	"github.com/icekeeper/icekeeper/shared/stage"
	"github.com/icekeeper/icekeeper/shared/stage/committer"
	committerstage "github.com/icekeeper/icekeeper/shared/stage/committer"
	"github.com/icekeeper/icekeeper/shared/stage/planner"
	"github.com/icekeeper/icekeeper/shared/stage/rewriter"
	rewriterstage "github.com/icekeeper/icekeeper/shared/stage/rewriter"
	"github.com/icekeeper/icekeeper/shared/trigger"
)

// Deps are the shared wiring, with a builder for each stage.
type Deps struct {
	*stage.Deps
	// WakeUps adjust the planner's expiry wake-ups when the
	// configuration turns them on (the soak fires them itself).
	WakeUps planner.WakeUpOptions
}

// NewDeps validates cfg for the needs given and builds the stores.
func NewDeps(cfg config.Config, clients *awsclients.Clients, log *slog.Logger, need ...config.Need) (*Deps, error) {
	w, err := stage.New(cfg, clients, log, need...)
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
	PlannerNeeds   = planner.Needs
	RewriterNeeds  = rewriter.Needs
	CommitterNeeds = committer.Needs
	AllNeeds       = planner.Needs
)

// PlannerNeedsFor lists the planner function's resources in a mode.
func PlannerNeedsFor(mode config.Mode) []config.Need { return planner.NeedsFor(mode) }

// Planner builds the planner.
func (d *Deps) Planner(cat catalog.Catalog) (*plan.Planner, error) {
	return planner.Planner(d.Deps, cat)
}

// Dispatcher builds the planner function's trigger dispatcher.
func (d *Deps) Dispatcher(cat catalog.Catalog) (*trigger.Dispatcher, error) {
	return planner.DispatcherWith(d.Deps, cat, d.WakeUps)
}

// Rewriter builds the rewriter.
func (d *Deps) Rewriter() (*rewrite.Rewriter, error) { return rewriter.Rewriter(d.Deps) }

// Committer builds the committer.
func (d *Deps) Committer(cat catalog.Catalog) (*commit.Committer, error) {
	return committer.Committer(d.Deps, cat)
}

// LocalStages builds all three stages with their Lambda handlers, for
// running the pipeline outside Lambda (package localrun): an operator's
// cycle, which plans a table even while it is backed off after repeated
// failures.
func (d *Deps) LocalStages(cat catalog.Catalog) (localrun.Stages, *commit.Committer, error) {
	p, err := planner.PlannerWith(d.Deps, cat, func(o *plan.Options) { o.IgnoreBackoff = true })
	if err != nil {
		return localrun.Stages{}, nil, err
	}
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
		Rewriter:  rewriterstage.Handler{Rewrite: r, Delete: rewriter.Deleter(d.Deps, cat), List: rewriter.Lister(d.Deps, cat), Log: d.Log}.Handle,
		Committer: committerstage.Handler{Commit: c, Log: d.Log}.Handle,
		Tasks:     d.Tasks, Commits: d.Commits, Jobs: d.Jobs,
		End: end,
	}, c, nil
}
