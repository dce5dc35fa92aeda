// Package committer is the committer function's stage: Committer builds
// package commit's committer from the shared stage and a catalog (the only
// stage that commits to a catalog), and Handler decodes each commit
// request of an SQS batch and hands it to it, reporting failures per
// message. The handler knows nothing of AWS clients or configuration.
package committer

import (
	"errors"

	"github.com/apache/iceberg-go/catalog"

	"github.com/icekeeper/icekeeper/shared/audit"
	"github.com/icekeeper/icekeeper/shared/commit"
	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/joblog"
	"github.com/icekeeper/icekeeper/shared/lease"
	"github.com/icekeeper/icekeeper/shared/ledger"
	"github.com/icekeeper/icekeeper/shared/stage"
)

// Needs lists the committer's resources: the task queue carries the
// deletion tasks it fans out.
var Needs = []config.Need{config.NeedCatalog, config.NeedLeases, config.NeedJobs, config.NeedBucket, config.NeedTaskQueue}

// Committer builds the committer over cat.
func Committer(d *stage.Deps, cat catalog.Catalog) (*commit.Committer, error) {
	opts := commit.Options{
		Metrics: d.Metrics, Tracer: d.Tracer,
		// The maintenance log, and the ledger's entry of each rewrite
		// (next to the query signals, in the jobs table).
		Recorder:   joblog.Recorder{Log: joblog.New(d.Blobs), Ledger: ledger.Store{DB: d.Clients.DynamoDB, TableName: d.Config.JobsTable}},
		RewriterMB: d.Config.RewriterMemoryMB, CoordinatorMB: d.Config.CoordinatorMemoryMB,
	}
	if d.Tasks != nil {
		// Deletions of more than one part go to the rewriters.
		opts.DeletionTasks, opts.DeletionFanOutParts = d.Tasks, 2
	}
	// A compaction that left groups for later jobs starts the next one at
	// once: the table's cooldown in the lease table, and the announcement
	// on the bus the planner's rule listens to.
	cooldowns, cerr := lease.NewCooldownStore(d.Clients.DynamoDB, d.Config.LeaseTable)
	bus, berr := audit.NewPublisher(d.Events, d.Config.EventBus)
	if err := errors.Join(cerr, berr); err != nil {
		return nil, err
	}
	opts.Cooldowns, opts.Announcer = cooldowns, bus
	return commit.New(commit.Settings{
		LeaseTTL: d.Config.LeaseTTL, MaxRetries: d.Config.CommitRetries,
		CommitTakeover: d.Config.CommitTakeover, MaxAttempts: d.Config.MaxTaskAttempts,
		NoRebase: !d.Config.RebaseDeletes,
	}, cat, d.Jobs, d.Leases, d.Blobs, d.Tables, d.Log.With("stage", "committer"), d.Now, opts)
}
