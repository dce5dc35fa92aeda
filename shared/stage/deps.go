// Package stage is what every Lambda function's stage shares, and how each
// is started (one subpackage per function: planner, rewriter, committer).
//
//   - start.go: what a Lambda main does before it starts its handler: a
//     JSON logger on stdout, Go's soft memory limit from the function's
//     memory (unless GOMEMLIMIT is set, memory.go), the configuration from
//     the environment and the AWS clients from the standard SDK
//     configuration. A configuration error stops the function at init with
//     a message naming the setting.
//   - deps.go: what every stage shares, built from configuration and AWS
//     clients: the lease and job stores, icekeeper's bucket, both queues,
//     the pinned-table opener, the metrics emitter, the audit bus, the
//     tracer and the logger.
//   - handler.go: what the SQS handlers share: decoding a batch message by
//     message and reporting failures per message (SQSEventResponse batch
//     item failures, so one bad message never makes a batch's good ones
//     redeliver), the delivery count, and the idle handler outside mode
//     active.
//
// Each subpackage builds its function's stage from these (its wiring) and
// holds its Lambda handler, which only decodes its event and calls the
// domain package (plan and trigger, rewrite, commit). This package imports
// no stage and no catalog client, so a function's binary links only its
// own stage. The Lambda mains (functions/), the operator CLI and the tests
// all build their stages through these packages, so they run the same code
// with the same settings.
package stage

import (
	"fmt"
	"log/slog"
	"math"
	"os"
	"runtime/debug"
	"slices"
	"time"

	"github.com/icekeeper/icekeeper/shared/audit"
	"github.com/icekeeper/icekeeper/shared/awsclients"
	"github.com/icekeeper/icekeeper/shared/blob"
	"github.com/icekeeper/icekeeper/shared/config"
	"github.com/icekeeper/icekeeper/shared/fileio"
	"github.com/icekeeper/icekeeper/shared/jobs"
	"github.com/icekeeper/icekeeper/shared/lease"
	"github.com/icekeeper/icekeeper/shared/metrics"
	"github.com/icekeeper/icekeeper/shared/pin"
	"github.com/icekeeper/icekeeper/shared/queue"
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

// New validates cfg for the needs given and builds the stores.
func New(cfg config.Config, clients *awsclients.Clients, log *slog.Logger, need ...config.Need) (*Deps, error) {
	if err := cfg.Validate(need...); err != nil {
		return nil, err
	}
	if log == nil {
		log = slog.Default()
	}
	d := &Deps{Config: cfg, Clients: clients, Log: log, Now: time.Now, Tables: pin.Opener{Properties: cfg.Catalog.Properties, IO: fileio.Options{ReadAheadFiles: cfg.ReadAheadFiles, PartBytes: cfg.UploadPartBytes}}}
	d.Metrics = metrics.NewEmitter(os.Stdout, metrics.DefaultNamespace, d.Now)
	d.Events = clients.Events
	d.Tracer = tracing.FromEnv()
	var err error
	has := func(n config.Need) bool { return slices.Contains(need, n) }
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

// Describe names the resources, for errors and logs.
func (d *Deps) Describe() string {
	return fmt.Sprintf("leases=%s jobs=%s bucket=%s tasks=%s commits=%s", d.Config.LeaseTable, d.Config.JobsTable, d.Config.Bucket, d.Config.TaskQueueURL, d.Config.CommitQueueURL)
}

// MemoryLimit is Go's soft memory limit, which a function sets from its
// memory size (SetMemoryLimit); 0 without one. The planner
// plans within it; the rewriter sizes its sort window from it.
func MemoryLimit() int64 {
	if limit := debug.SetMemoryLimit(-1); limit < math.MaxInt64 {
		return limit
	}
	return 0
}
